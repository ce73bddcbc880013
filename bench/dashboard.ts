/**
 * Dashboard benchmark (issue 30): 1,000 nodes in 4 NodePools, 10,000 bound pods and 1,000 pending pods, a
 * 200-entry decision log and 720 chart points, all synthetic.
 * - Server side: `buildDashboardView` over the cluster snapshot, and `diffView` + JSON of a one-node change (ms).
 * - Browser (headless Chromium from the OS, playwright-core): the page served from a local `node:http` server with
 *   one SSE stream; `firstRenderMs` is navigation start → the snapshot rendered and laid out (wall clock in the
 *   page, `performance.now()`), `renderMs` the page's own render + layout of the snapshot, `updateMs` the page's
 *   apply + render + layout of one patch (one node's requests changed, a pending pod gone), `updateWallMs` the
 *   write of that patch → the page reporting it applied.
 * Targets (reported, never asserted): first render < 1,000 ms, one update < 100 ms.
 * Run directly: `tsx bench/dashboard.ts [--json]`; `bench/main.ts` calls {@link runDashboardBench}.
 */
import { existsSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import type { Node, Pod } from '../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../src/apis/karpenter.ts';
import { getInstanceTypes } from '../src/cloudprovider/aws/catalog/index.ts';
import type { DecisionEntry } from '../src/dashboard/decisions.ts';
import { dashboardPage } from '../src/dashboard/page.ts';
import { diffView } from '../src/dashboard/patch.ts';
import { uplotAssets } from '../src/dashboard/server.ts';
import { buildDashboardView, type DashboardInput, type Totals } from '../src/dashboard/view.ts';
import type { ClusterSnapshot } from '../src/state/cluster.ts';
import { testStateNode } from '../src/state/testing.ts';

/** Result of {@link runDashboardBench} (milliseconds). */
export interface DashboardBenchResult {
  nodes: number;
  pods: number;
  pendingPods: number;
  buildViewMs: number;
  diffMs: number;
  snapshotKB: number;
  patchBytes: number;
  firstRenderMs: number;
  renderMs: number;
  updateMs: number;
  updateWallMs: number;
}

const NOW = Date.parse('2026-12-03T04:00:00Z');
const TYPES = ['m5.large', 'm5.xlarge', 'c6a.large', 'c6a.2xlarge', 'r5.large'];

function pod(name: string, node?: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'bench' },
    spec: { ...(node ? { nodeName: node } : {}), containers: [] },
    status: node
      ? { phase: 'Running' }
      : {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              message: '0/1000 nodes are available: 1000 Insufficient cpu.',
            },
          ],
        },
  } as Pod;
}

/** The synthetic input: `nodes` nodes with `pods` bound pods spread evenly, `pending` pending pods. */
export function benchInput(nodes = 1000, pods = 10_000, pending = 1000): DashboardInput {
  const pools = ['general', 'compute', 'memory', 'spot'].map(
    (name, i) =>
      ({
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        metadata: { name },
        spec: {
          weight: i,
          limits: { cpu: '4000' },
          disruption: {
            consolidationPolicy: 'WhenEmptyOrUnderutilized',
            consolidateAfter: '0s',
            budgets: [{ nodes: '10%' }],
          },
          template: {
            spec: {
              requirements: [],
              nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            },
          },
        },
      }) as NodePool,
  );
  const state = [];
  const all: Pod[] = [];
  for (let i = 0; i < nodes; i++) {
    const name = `node-${String(i).padStart(4, '0')}`;
    const labels = {
      'karpenter.sh/nodepool': pools[i % pools.length]!.metadata.name ?? '',
      'node.kubernetes.io/instance-type': TYPES[i % TYPES.length]!,
      'topology.kubernetes.io/zone': `us-east-1${'abc'[i % 3]}`,
      'karpenter.sh/capacity-type': 'on-demand',
    };
    const meta = { name, labels, creationTimestamp: new Date(NOW - i * 60_000).toISOString() };
    const nc = {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: meta,
      spec: {},
    } as unknown as NodeClaim;
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: meta,
      status: { allocatable: { cpu: '1930m', memory: '7Gi' } },
    } as Node;
    const mine = Array.from({ length: Math.floor(pods / nodes) }, (_, j) => pod(`p-${i}-${j}`, name));
    all.push(...mine);
    state.push(
      testStateNode({
        name,
        node,
        nodeClaim: nc,
        pods: mine,
        podRequests: { cpu: 100 * mine.length + (i % 7) * 10, memory: 2 ** 28 * mine.length },
      }),
    );
  }
  for (let i = 0; i < pending; i++) all.push(pod(`pending-${i}`));
  const snapshot = {
    takenAt: NOW,
    stateNodes: state,
    pods: all,
    nodePools: pools,
    nodeClaims: [],
    nodes: [],
    daemonSets: [],
    podDisruptionBudgets: [],
    nodeClasses: [],
    namespaces: {},
    nominations: new Map(),
  } as unknown as ClusterSnapshot;
  const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;
  const instanceTypes = Object.fromEntries(pools.map((p) => [p.metadata.name ?? '', catalog]));
  const blocked = state.map((s, i) => ({
    node: s.name,
    reason:
      i % 2
        ? 'SingleNodeConsolidation: not underutilized enough to save money'
        : 'pod bench/p-0 has do-not-disrupt',
  }));
  return { snapshot, instanceTypes, disruption: { commands: [], blocked } };
}

function synthLog(n: number): DecisionEntry[] {
  return Array.from({ length: n }, (_, i) => ({
    id: n - i,
    at: NOW - i * 1000,
    kind: 'provisioning' as const,
    summary: `NodeClaim general-${i} (NodePool general): m5.large on-demand in us-east-1a at $0.0960/h for 10 pod(s)`,
    details: ['pods: bench/p-1, bench/p-2', 'not c6a.large ($0.0765/h on-demand): too small: memory'],
  }));
}

function synthHistory(n: number): Totals[] {
  return Array.from({ length: n }, (_, i) => ({
    at: NOW - (n - i) * 5000,
    costUSDPerHour: 90 + (i % 10),
    nodes: 1000 - (i % 5),
    pendingPods: i % 50,
  }));
}

/** Runs the benchmark (see the module doc). @throws when Chromium is not at /usr/bin/chromium (or CHROMIUM_PATH). */
export async function runDashboardBench(): Promise<DashboardBenchResult> {
  const exe = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(exe))
    throw new Error(`the dashboard benchmark needs Chromium at ${exe} (apt-get install chromium)`);
  const input = benchInput();
  let t = performance.now();
  const view = buildDashboardView(input);
  const buildViewMs = performance.now() - t;
  input.snapshot.stateNodes[500]!.podRequests = { cpu: 1900, memory: 2 ** 30 };
  input.snapshot.pods = input.snapshot.pods.filter((p) => p.metadata.name !== 'pending-7');
  const next = buildDashboardView(input);
  t = performance.now();
  const patch = JSON.stringify(diffView(view, next));
  const diffMs = performance.now() - t;
  const snapshot = JSON.stringify({ view, log: synthLog(200), history: synthHistory(720) });
  const a = uplotAssets();
  let stream: ServerResponse | undefined;
  const server = createServer((req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: snapshot\ndata: ${snapshot}\n\n`);
      stream = res;
    } else if (req.url === '/assets/uplot.js') res.end(a.js);
    else if (req.url === '/assets/uplot.css') res.end(a.css);
    else res.end(dashboardPage(a.missing));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.waitForFunction('window.__dashboard && window.__dashboard.snapshots === 1', undefined, {
      polling: 'raf',
    });
    const first = (await page.evaluate(
      '({ at: window.__dashboard.firstRenderAt, ms: window.__dashboard.renderMs })',
    )) as { at: number; ms: number };
    const wrote = performance.now();
    stream?.write(`event: patch\ndata: ${patch}\n\n`);
    await page.waitForFunction('window.__dashboard.patches === 1', undefined, { polling: 5 });
    const updateWallMs = performance.now() - wrote;
    const updateMs = (await page.evaluate('window.__dashboard.updateMs')) as number;
    return {
      nodes: view.nodes.length,
      pods: input.snapshot.pods.length - view.pendingPods.length + 1,
      pendingPods: view.pendingPods.length,
      buildViewMs,
      diffMs,
      snapshotKB: Math.round(snapshot.length / 1024),
      patchBytes: patch.length,
      firstRenderMs: first.at,
      renderMs: first.ms,
      updateMs,
      updateWallMs,
    };
  } finally {
    await browser.close();
    stream?.end();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/** Human-readable lines of {@link runDashboardBench}'s result. */
export function formatDashboardBench(r: DashboardBenchResult): string {
  const f = (n: number) => n.toFixed(1);
  return [
    `  ${r.nodes} nodes, ${r.pods} bound pods, ${r.pendingPods} pending; snapshot ${r.snapshotKB} KB, one-node patch ${r.patchBytes} B`,
    `  server: view ${f(r.buildViewMs)} ms, diff ${f(r.diffMs)} ms`,
    `  browser: first render ${f(r.firstRenderMs)} ms after navigation (render + layout ${f(r.renderMs)} ms; target < 1000)`,
    `  browser: one update ${f(r.updateMs)} ms (write → applied ${f(r.updateWallMs)} ms; target < 100)`,
  ].join('\n');
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  const r = await runDashboardBench();
  process.stdout.write(
    process.argv.includes('--json') ? `${JSON.stringify(r)}\n` : `${formatDashboardBench(r)}\n`,
  );
}
