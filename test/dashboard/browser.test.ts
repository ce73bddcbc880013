/**
 * The dashboard in a real browser (issue 30): headless Chromium from the OS packages (`/usr/bin/chromium`, which
 * `.ci/run` installs) driven by playwright-core, against `capenter start` (`runStart`, the command's own code) on
 * test/fixtures/dashboard/scale.yaml. The page shows the NodeClaims the API holds with their catalog prices,
 * follows a Deployment scaled up (new NodeClaims appear without a reload) and shows the Emptiness consolidation of
 * the scale-down in the decision log; against an API server that refuses the controller's token it says so.
 * Screenshots go to `test-artifacts/dashboard/` (gitignored). Waits are Playwright's DOM waits, never sleeps.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  LabelCapacityType,
  LabelInstanceType,
  LabelNodePool,
  LabelTopologyZone,
} from '../../src/apis/labels.ts';
import { runStart } from '../../src/cli/start.ts';
import { getInstanceTypes } from '../../src/cloudprovider/aws/catalog/index.ts';
import { startDashboard } from '../../src/dashboard/server.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { createOperator } from '../../src/operator/operator.ts';
import { embeddedOptions } from '../../src/operator/options.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts', 'dashboard');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'dashboard', 'scale.yaml');

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `the dashboard's browser test needs Chromium at ${CHROMIUM}: install it (Debian: apt-get install chromium; ` +
        '.ci/run does) or set CHROMIUM_PATH',
    );
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
});

/** Resolves with the first match of `re` in the text `read` returns, checking whenever `wake` fires. */
function waitForText(read: () => string, re: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = (): void => {
      const m = re.exec(read());
      if (m) resolve(m);
      else if (Date.now() - started > timeoutMs) reject(new Error(`no ${re} in:\n${read()}`));
      else setTimeout(tick, 100);
    };
    tick();
  });
}

/** NodeClaims that have a Node, with the node's name and the catalog price of their offering. */
async function launched(client: KubeClient): Promise<Array<{ node: string; type: string; price: number }>> {
  const list = (await client.list('NodeClaim')).items as NodeClaim[];
  const types = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;
  return list
    .filter((nc) => nc.status?.nodeName && !nc.metadata.deletionTimestamp)
    .map((nc) => {
      const l = nc.metadata.labels ?? {};
      const type = l[LabelInstanceType] ?? '';
      const o = types
        .find((t) => t.name === type)
        ?.offerings.find((x) => x.zone === l[LabelTopologyZone] && x.capacityType === l[LabelCapacityType]);
      expect(l[LabelNodePool]).toBe('web-pool');
      return { node: nc.status?.nodeName ?? '', type, price: o?.priceUSDPerHour ?? Number.NaN };
    });
}

/** Waits until each row shows its NodeClaim's instance type and price (the page follows the API within ~250 ms). */
/** Polls the API (every 100 ms, up to `timeoutMs`) until `more` NodeClaims than `than` have a Node; returns them. */
async function launchedMoreThan(
  client: KubeClient,
  than: number,
  timeoutMs = 60_000,
): Promise<Awaited<ReturnType<typeof launched>>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const l = await launched(client);
    if (l.length > than) return l;
    if (Date.now() > end) throw new Error(`only ${l.length} launched NodeClaim(s) after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function expectRows(
  page: Page,
  rows: Array<{ node: string; type: string; price: number }>,
): Promise<void> {
  for (const r of rows) {
    const price = `$${r.price.toFixed(4)}`;
    // a string: the test is compiled without the DOM library
    await page.waitForFunction(
      `(() => { const t = document.querySelector('tr[data-node="${r.node}"]')?.textContent ?? '';
        return t.includes(${JSON.stringify(r.type)}) && t.includes(${JSON.stringify(price)}); })()`,
      undefined,
      { timeout: 30_000, polling: 100 },
    );
    const text = (await page.locator(`tr[data-node="${r.node}"]`).textContent()) ?? '';
    expect(text).toContain(r.type);
    expect(text).toContain(price);
  }
}

describe('the dashboard of capenter start in Chromium', () => {
  it('shows the NodeClaims and prices, follows a scale-up and logs the consolidation of a scale-down', async () => {
    let err = '';
    const ac = new AbortController();
    const run = runStart(
      { filename: [FIXTURE], logLevel: 'warn' },
      {
        stdout: () => {},
        stderr: (t) => (err += t),
        env: {},
        signal: ac.signal,
        // disruption polls every second and validates for one (upstream: 10 s and 15 s), nominations live 2 s
        // (upstream 20 s): the scale-down's consolidation is logged within seconds instead of ~40 s
        tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 }, nominationTTLSeconds: 2 },
      },
    );
    let client: KubeClient | undefined;
    try {
      const url = (await waitForText(() => err, /capenter: dashboard (\S+)/, 60_000))[1]!;
      const kubeconfig = (await waitForText(() => err, /kubeconfig (\S+kubeconfig)/, 1000))[1]!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      client = KubeClient.fromKubeconfig(kubeconfig);
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(url);
      const first = await launchedMoreThan(client, 0);
      await expectRows(page, first);
      expect(await page.locator('header').textContent()).toMatch(/\$\d+\.\d{4}\/hour/);
      await page.screenshot({ path: join(ARTIFACTS, '1-started.png'), fullPage: true });

      await client.patch('Deployment', 'web', 'default', { spec: { replicas: 12 } }, { type: 'merge' });
      // a string: the test is compiled without the DOM library
      await page.waitForFunction(
        `document.querySelectorAll('tr[data-node]').length > ${first.length}`,
        undefined,
        {
          timeout: 60_000,
          polling: 100,
        },
      );
      const grown = await launchedMoreThan(client, first.length);
      await expectRows(page, grown);
      // the pods column adds up to the 12 replicas once they are bound (the fixture has no DaemonSets)
      await page.waitForFunction(
        `[...document.querySelectorAll('tr[data-node] td:nth-child(8)')].reduce((s, td) => s + Number(td.textContent), 0) === 12`,
        undefined,
        { timeout: 60_000, polling: 100 },
      );
      expect(await page.locator('#pending-count').textContent()).toBe('0');
      await page.screenshot({ path: join(ARTIFACTS, '2-scaled-up.png'), fullPage: true });

      await client.patch('Deployment', 'web', 'default', { spec: { replicas: 0 } }, { type: 'merge' });
      const entry = page
        .locator('#log li', { hasText: /Emptiness: delete|Consolidation: (delete|replace)/ })
        .first();
      await entry.waitFor({ timeout: 120_000 });
      expect(await entry.textContent()).toMatch(
        /disruption .*(Emptiness|Consolidation): (delete|replace) web-pool-/,
      );
      await page.screenshot({ path: join(ARTIFACTS, '3-consolidated.png'), fullPage: true });
      // read-only and no secrets: the EC2NodeClass's user data never reaches the page
      expect(await page.content()).not.toContain('SECRET-USER-DATA');
      expect((await fetch(new URL('events', url), { method: 'POST' })).status).toBe(405);
      await page.close();
    } finally {
      client?.close();
      ac.abort();
      await run;
    }
  }, 240_000);

  it('says the API server refused the credentials when the controller has a wrong token', async () => {
    const sim = await startSimulatedCluster({ components: { workloads: false } });
    const bad = sim.kubeconfig.replace(/token: \S+/, 'token: not-the-token');
    expect(bad).not.toBe(sim.kubeconfig);
    const op = createOperator({ kubeconfig: bad, options: { ...embeddedOptions(), leaderElect: false } });
    await op.start();
    const dash = await startDashboard(op, { port: 0 });
    try {
      const page = await browser.newPage();
      await page.goto(dash.url);
      const banner = page.locator('#error');
      await banner.waitFor({ state: 'visible', timeout: 30_000 });
      expect(await banner.textContent()).toMatch(
        /Cannot show the cluster: the API server refused the controller's credentials \(401 Unauthorized\)/,
      );
      await page.screenshot({ path: join(ARTIFACTS, '4-wrong-token.png') });
      await page.close();
    } finally {
      await dash.close();
      await op.stop();
      await sim.stop();
    }
  }, 60_000);
});
