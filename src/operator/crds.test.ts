/**
 * The operator against a cluster without capenter's CRDs (embedded API server, which like a real one serves
 * no karpenter.sh resources until their CRDs are created): one error naming the missing CRDs and the fix,
 * `/readyz` naming them, controllers started once they are applied; `installCRDs` applies them itself.
 * The same flow through the real CLI against a real control plane: test/cluster/controller.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { crdObjects } from '../apis/crds.ts';
import { KarpenterKinds } from '../apis/schemas.ts';
import { KubeClient } from '../kube/client.ts';
import { createLogger } from '../kube/logger.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../sim/apiserver/index.ts';
import { whenObjects } from '../testing/watch.ts';
import { checkCRDs, crdProblem, installCRDs, requiredCRDs, ShippedCRDKinds } from './crds.ts';
import { createOperator, type Operator } from './operator.ts';
import { embeddedOptions } from './options.ts';

const KWOK_AND_EC2 = [
  { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' },
  { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' },
];
const ALL = [
  'nodepools.karpenter.sh',
  'nodeclaims.karpenter.sh',
  'kwoknodeclasses.karpenter.kwok.sh',
  'ec2nodeclasses.karpenter.k8s.aws',
];

let srv: EmbeddedCluster | undefined;
let op: Operator | undefined;
let client: KubeClient | undefined;
afterEach(async () => {
  await op?.stop();
  client?.close();
  await srv?.stop();
  op = srv = client = undefined;
});

interface LogLine {
  level: string;
  message: string;
  missing?: string[];
  fix?: string;
}

/** The operator's log lines, and a wait for the first line that matches (resolved as the line is written). */
interface Log {
  lines: LogLine[];
  line(match: (l: LogLine) => boolean): Promise<LogLine>;
}

function start(installCRDsFlag: boolean): Log {
  const lines: LogLine[] = [];
  const waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  const logger = createLogger({
    level: 'info',
    destination: {
      write: (s: string) => {
        const l = JSON.parse(s) as LogLine;
        lines.push(l);
        for (const w of waiters)
          if (w.match(l)) {
            waiters.delete(w);
            w.resolve(l);
          }
      },
    },
  });
  op = createOperator({
    client: client as KubeClient,
    logger,
    options: { ...embeddedOptions(), leaderElect: false },
    installCRDs: installCRDsFlag,
    defaultMetrics: false,
    tuning: { crdRecheckSeconds: 0.05 },
  });
  return {
    lines,
    line: (match) => {
      const seen = lines.find(match);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.add({ match, resolve }));
    },
  };
}

/**
 * Counts the CRD checks `c` answers: each check lists every required resource (limit 1), NodePools among them.
 * `after(n)` resolves once `n` more checks have been answered.
 */
function countChecks(c: KubeClient): { after(n: number): Promise<void> } {
  let answered = 0;
  const waiters: Array<{ at: number; resolve: () => void }> = [];
  const list = c.list.bind(c);
  c.list = (async (ref, opts) => {
    try {
      return await list(ref, opts);
    } finally {
      if (typeof ref === 'object' && ref.kind === 'NodePool' && opts?.limit === 1) {
        answered++;
        for (const w of waiters.filter((x) => x.at <= answered)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    }
  }) as KubeClient['list'];
  return { after: (n) => new Promise((resolve) => waiters.push({ at: answered + n, resolve })) };
}

/** Resolves once every required CRD reports `Established=True` (an informer on CustomResourceDefinitions). */
function established(c: KubeClient, names: string[]): Promise<unknown> {
  return whenObjects(c, 'CustomResourceDefinition', (crds) =>
    names.every((n) =>
      crds.some(
        (crd) =>
          crd.metadata.name === n &&
          (
            crd.status as { conditions?: Array<{ type: string; status: string }> } | undefined
          )?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'),
      ),
    ),
  );
}

async function readyz(): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${op?.healthProbePort}/readyz`);
  return { status: res.status, body: await res.text() };
}

describe('required CRDs', () => {
  it('NodePool, NodeClaim and the CRD of each supported NodeClass capenter ships', () => {
    expect(requiredCRDs(KWOK_AND_EC2).map((r) => r.name)).toEqual(ALL);
    expect(requiredCRDs([{ group: 'example.com', kind: 'OtherNodeClass' }]).map((r) => r.name)).toEqual([
      'nodepools.karpenter.sh',
      'nodeclaims.karpenter.sh',
    ]);
  });

  it('ShippedCRDKinds are the kinds of the schemas, the CRDs crdObjects() generates', () => {
    const served = (r: { group: string; version: string; plural: string; kind: string }) =>
      `${r.plural}.${r.group}/${r.version}/${r.kind}`;
    expect(ShippedCRDKinds.map(served).sort()).toEqual(Object.values(KarpenterKinds).map(served).sort());
    const crds = Object.values(crdObjects());
    for (const r of ShippedCRDKinds) {
      const crd = crds.find((c) => c.metadata.name === `${r.plural}.${r.group}`);
      expect(crd?.spec.scope).toBe('Cluster');
      expect(crd?.spec.versions.map((v) => v.name)).toContain(r.version);
    }
  });

  it('checkCRDs names the missing ones until installCRDs applies crds/', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const req = requiredCRDs(KWOK_AND_EC2);
    const before = await checkCRDs(client, req);
    expect(before).toEqual({ missing: ALL });
    expect(crdProblem(before)).toBe(
      'CustomResourceDefinitions not installed: nodepools.karpenter.sh, nodeclaims.karpenter.sh, ' +
        'kwoknodeclasses.karpenter.kwok.sh, ec2nodeclasses.karpenter.k8s.aws; install with ' +
        '`kubectl apply -f crds/` (or run `capenter controller --install-crds`)',
    );
    expect(await installCRDs(client)).toEqual(Object.values(crdObjects()).map((c) => c.metadata.name));
    await established(client, ALL);
    const after = await checkCRDs(client, req);
    expect(after).toEqual({ missing: [] });
    expect(crdProblem(after)).toBeUndefined();
    // applying again (an existing copy) is a no-op, not an error
    await installCRDs(client);
  });
});

describe('operator without the CRDs', () => {
  it('logs one error naming the CRDs and the fix, /readyz names them, controllers start once applied', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const checks = countChecks(client);
    const { lines, line } = start(false);
    await op?.start();
    const error = await line((l) => l.level === 'ERROR');
    expect(error.missing).toEqual(ALL);
    expect(error.fix).toBe('kubectl apply -f crds/');
    expect(error.message).toContain('nodepools.karpenter.sh');
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body).toContain('not ready: CustomResourceDefinitions not installed: nodepools.karpenter.sh');
    expect(r.body).toContain('kubectl apply -f crds/');
    // five more checks answered (every 50 ms; four of them decided and logged): still exactly one error, no
    // controller started
    await checks.after(5);
    expect(lines.filter((l) => l.level === 'ERROR')).toHaveLength(1);
    expect(lines.some((l) => l.message === 'starting controllers')).toBe(false);
    // a user applies the CRDs (as kubectl apply -f crds/): the operator proceeds on its own
    await installCRDs(client);
    await line((l) => l.message === 'CustomResourceDefinitions served');
    await op?.informers.waitForSync(); // they start once the CRDs are served
    expect(op?.readiness()).toBeUndefined();
    expect((await readyz()).status).toBe(200);
    expect(lines.map((l) => l.message)).toContain('CustomResourceDefinitions served');
    expect(lines.map((l) => l.message)).toContain('starting controllers');
    expect(lines.filter((l) => l.level === 'ERROR')).toHaveLength(1);
  });

  it('installCRDs (--install-crds) applies them: no error, ready', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const { lines } = start(true);
    await op?.start();
    await op?.informers.waitForSync(); // they start once the CRDs are applied and served
    expect(op?.readiness()).toBeUndefined();
    expect(lines.filter((l) => l.level === 'ERROR')).toEqual([]);
    expect(lines.find((l) => l.message.startsWith('applied CustomResourceDefinitions'))).toMatchObject({
      level: 'INFO',
    });
    expect((await checkCRDs(client, requiredCRDs(KWOK_AND_EC2))).missing).toEqual([]);
  });
});
