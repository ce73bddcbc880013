/**
 * API-server benchmark: the embedded API server driven through the real client layer (src/kube).
 * Starts the embedded server in-process, runs three Pod informers and three Node informers, creates
 * 1,000 Nodes and 10,000 Pods with bounded concurrency, and measures:
 * - create throughput (objects/s over all creates),
 * - pods end-to-end (ms from the first pod create until all pod informers have seen every pod),
 * - watch fan-out lag (ms from the last create acknowledged until every informer has seen every object),
 * - list latency (ms to list all 10,000 pods in one request, and paged by 500),
 * - peak RSS of the process (MB; server + client + informer caches, sampled every 20 ms).
 * Targets: 10,000 pods created and seen by all informers in < 10 s; < 400 MB RSS.
 *
 * Usage: `tsx bench/apiserver.ts [--json]`; `bench/main.ts` calls {@link runApiServerBench}.
 */
import { pathToFileURL } from 'node:url';
import type { Node, Pod } from '../src/apis/core.ts';
import { Informer, KubeClient, RealClock } from '../src/kube/index.ts';
import { startEmbeddedCluster } from '../src/sim/apiserver/index.ts';

/** Benchmark size and shape. */
export interface ApiServerBenchOptions {
  /** Pods to create (default 10 000). */
  pods?: number;
  /** Nodes to create (default 1 000). */
  nodes?: number;
  /** Requests in flight (default 48). */
  concurrency?: number;
  /** Informers per kind (default 3). */
  informers?: number;
}

/** Figures measured by {@link runApiServerBench}. Times in ms, memory in MB (2^20 bytes). */
export interface ApiServerBenchResult {
  pods: number;
  nodes: number;
  concurrency: number;
  informersPerKind: number;
  /** Wall time of all creates (nodes then pods), seconds. */
  createSeconds: number;
  /** Objects created per second over all creates. */
  createThroughput: number;
  /** First pod create → every pod informer has every pod, ms. Target < 10 000. */
  podsEndToEndMs: number;
  /** Last create acknowledged → every informer has seen every object, ms. */
  watchFanoutLagMs: number;
  /** One unpaginated list of all pods, ms. */
  listPodsMs: number;
  /** Listing all pods in pages of 500, ms. */
  listPodsPagedMs: number;
  /** Items the list returned (must equal `pods`). */
  listedPods: number;
  /** Process CPU time (user + system) from the first create until all informers saw everything, s. */
  cpuSeconds: number;
  /** Peak resident set size of the process, MB. Target < 400. */
  peakRssMB: number;
  /** Whether the targets were met. */
  targetsMet: { podsUnder10s: boolean; rssUnder400MB: boolean };
}

async function pool(total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

function node(i: number): Node {
  const name = `bench-node-${i}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'node.kubernetes.io/instance-type': 'm5.xlarge',
        'topology.kubernetes.io/zone': `us-west-2${'abc'[i % 3]}`,
        'karpenter.sh/nodepool': 'default',
        'karpenter.sh/capacity-type': i % 2 ? 'spot' : 'on-demand',
      },
    },
    spec: { providerID: `kwok://${name}` },
    status: {
      capacity: { cpu: '4', memory: '16Gi', pods: '58' },
      allocatable: { cpu: '3920m', memory: '15Gi', pods: '58' },
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

function pod(i: number, nodes: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `bench-pod-${i}`,
      namespace: 'bench',
      labels: { app: `app-${i % 50}`, 'pod-template-hash': 'abc123' },
    },
    spec: {
      nodeName: `bench-node-${i % nodes}`,
      containers: [
        {
          name: 'main',
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
        },
      ],
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
    },
  };
}

/** Counts distinct objects an informer has seen; resolves `done` with the time the target was reached. */
function tracker(inf: Informer<'Pod' | 'Node'>, target: number): { done: Promise<number> } {
  let resolve!: (t: number) => void;
  const done = new Promise<number>((r) => {
    resolve = r;
  });
  let seen = 0;
  inf.on({
    add: () => {
      if (++seen === target) resolve(performance.now());
    },
  });
  return { done };
}

/** Runs the benchmark once (about 10–20 s) and returns the figures. Throws if the server or client fail. */
export async function runApiServerBench(opts: ApiServerBenchOptions = {}): Promise<ApiServerBenchResult> {
  const podCount = opts.pods ?? 10_000;
  const nodeCount = opts.nodes ?? 1_000;
  const concurrency = opts.concurrency ?? 48;
  const perKind = opts.informers ?? 3;

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);
  const srv = await startEmbeddedCluster({ watchHistory: podCount + nodeCount + 1000 });
  const client = KubeClient.fromKubeconfig(srv.kubeconfig, { maxSockets: concurrency });
  const clock = new RealClock();
  const informers: Array<Informer<'Pod' | 'Node'>> = [];
  try {
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    const podTrackers: Array<Promise<number>> = [];
    const nodeTrackers: Array<Promise<number>> = [];
    for (let i = 0; i < perKind; i++) {
      // each informer gets its own client (own connection), as separate controllers/processes would
      const own = KubeClient.fromKubeconfig(srv.kubeconfig, { maxSockets: 4 });
      const pi = new Informer(own, 'Pod', { clock, namespace: 'bench' }) as Informer<'Pod' | 'Node'>;
      const ni = new Informer(own, 'Node', { clock }) as Informer<'Pod' | 'Node'>;
      podTrackers.push(tracker(pi, podCount).done);
      nodeTrackers.push(tracker(ni, nodeCount).done);
      informers.push(pi, ni);
    }
    for (const i of informers) i.start();
    await Promise.all(informers.map((i) => i.waitForSync(30_000)));

    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await pool(nodeCount, concurrency, async (i) => {
      await client.create(node(i));
    });
    const tPods = performance.now();
    await pool(podCount, concurrency, async (i) => {
      await client.create(pod(i, nodeCount));
    });
    const tCreated = performance.now();
    const podsSeen = Math.max(...(await Promise.all(podTrackers)));
    const allSeen = Math.max(podsSeen, ...(await Promise.all(nodeTrackers)));
    const cpu = process.cpuUsage(cpu0);

    const sl = performance.now();
    const listed = (await client.list('Pod', { namespace: 'bench' })).items.length;
    const listMs = performance.now() - sl;
    const sp = performance.now();
    const paged = await client.list('Pod', { namespace: 'bench', pageSize: 500 });
    const pagedMs = performance.now() - sp;
    if (paged.items.length !== listed)
      throw new Error(`paged list returned ${paged.items.length}, not ${listed}`);

    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const createSeconds = (tCreated - t0) / 1000;
    const podsEndToEndMs = podsSeen - tPods;
    const peakRssMB = peakRss / 2 ** 20;
    return {
      pods: podCount,
      nodes: nodeCount,
      concurrency,
      informersPerKind: perKind,
      createSeconds: round(createSeconds, 2),
      createThroughput: Math.round((podCount + nodeCount) / createSeconds),
      podsEndToEndMs: Math.round(podsEndToEndMs),
      watchFanoutLagMs: Math.round(Math.max(0, allSeen - tCreated)),
      listPodsMs: Math.round(listMs),
      listPodsPagedMs: Math.round(pagedMs),
      listedPods: listed,
      cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
      peakRssMB: Math.round(peakRssMB),
      targetsMet: { podsUnder10s: podsEndToEndMs < 10_000, rssUnder400MB: peakRssMB < 400 },
    };
  } finally {
    clearInterval(sampler);
    await Promise.all(informers.map((i) => i.stop()));
    client.close();
    await srv.stop();
  }
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Renders the result as a two-column table. */
export function formatApiServerBench(r: ApiServerBenchResult): string {
  const rows: Array<[string, string]> = [
    [
      'objects',
      `${r.pods} pods + ${r.nodes} nodes, ${r.concurrency} in flight, ${r.informersPerKind} informers/kind`,
    ],
    ['create time', `${r.createSeconds} s`],
    ['create throughput', `${r.createThroughput} objects/s`],
    ['process CPU during creates', `${r.cpuSeconds} s`],
    [
      'pods created + seen by all informers',
      `${r.podsEndToEndMs} ms (target < 10000) ${r.targetsMet.podsUnder10s ? 'OK' : 'MISSED'}`,
    ],
    ['watch fan-out lag', `${r.watchFanoutLagMs} ms`],
    [`list ${r.listedPods} pods`, `${r.listPodsMs} ms (paged by 500: ${r.listPodsPagedMs} ms)`],
    ['peak RSS', `${r.peakRssMB} MB (target < 400) ${r.targetsMet.rssUnder400MB ? 'OK' : 'MISSED'}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const json = process.argv.includes('--json');
  runApiServerBench().then(
    (r) => {
      process.stdout.write(json ? `${JSON.stringify(r, null, 2)}\n` : `${formatApiServerBench(r)}\n`);
    },
    (err: unknown) => {
      process.stderr.write(`apiserver bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
