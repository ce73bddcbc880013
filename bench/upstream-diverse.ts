/**
 * The `upstream-diverse` bench workload: upstream Karpenter's own scheduling benchmark
 * (kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go`), pod for
 * pod and with its fake catalog, so capenter's `solve` can be compared with upstream's on identical input.
 *
 * - Pods: `makeDiversePods(count)` with Go's `math/rand` seeded 42 (ported below bit for bit; the 607 seed
 *   values of Go's generator are vendored in `bench/upstream/go-rng-cooked.json`). count/5 each of: generic;
 *   zonal spread; hostname spread (selector drawn independently of the pod's own label); zonal self-affinity
 *   (upstream's key `my-affininity`); hostname anti-affinity `app: nginx`; the remainder generic. Checked against
 *   `diverse-pods.py` (the shared reproduction of upstream's pods) in `test/upstream-diverse.test.ts` through
 *   the digests in `bench/upstream/diverse-pods.expected.json`.
 * - Catalog (upstream `fake.InstanceTypesAssorted`-style `fake-it-i`, i = 0..399): i+1 vCPU, 2(i+1) GiB,
 *   10(i+1) pods, kube-reserved 100m / 10Mi; five offerings (spot in test-zone-1/2, on-demand in
 *   test-zone-1/2/3), each priced 0.1 × vCPU + 0.1 × GiB USD/hour.
 * - NodePool `default` with no requirements and upstream's limits (cpu 10000000, memory 10000000Gi).
 *
 * Run directly: `npx tsx bench/upstream-diverse.ts --pods 1000 [--json]`; `npm run bench -- --workload
 * upstream-diverse [--sizes 1000,2000]` runs 1k/2k/5k/10k, each in a fresh process.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Pod } from '../src/apis/core.ts';
import { applyDefaults } from '../src/apis/defaults.ts';
import type { InstanceType, Offering } from '../src/apis/instancetype.ts';
import type { NodePool } from '../src/apis/karpenter.ts';
import { solve } from '../src/scheduling/scheduler.ts';

const here = dirname(fileURLToPath(import.meta.url));
const RNG_LEN = 607;
const RNG_TAP = 273;
const INT32MAX = 2147483647;
const M64 = (1n << 64n) - 1n;

function toI64(u: bigint): bigint {
  return BigInt.asIntN(64, u);
}

function seedrand(x: number): number {
  const a = 48271;
  const q = 44488;
  const r = 3399;
  const hi = Math.trunc(x / q);
  const lo = x - hi * q;
  let y = a * lo - r * hi;
  if (y < 0) y += INT32MAX;
  return y;
}

/** Go's `math/rand` source (`rngSource`) and `Rand.Intn`, bit-exact for n < 2^31. */
export class GoRand {
  private tap = 0;
  private feed = RNG_LEN - RNG_TAP;
  private readonly vec: bigint[] = new Array<bigint>(RNG_LEN).fill(0n);

  constructor(seed: number) {
    const cooked = (
      JSON.parse(readFileSync(join(here, 'upstream', 'go-rng-cooked.json'), 'utf8')) as { values: string[] }
    ).values.map((v) => BigInt(v));
    let s = seed % INT32MAX;
    if (s === 0) s = 89482311;
    let x = s;
    for (let i = -20; i < RNG_LEN; i++) {
      x = seedrand(x);
      if (i >= 0) {
        let u = toI64(BigInt(x) << 40n);
        x = seedrand(x);
        u ^= toI64(BigInt(x) << 20n);
        x = seedrand(x);
        u ^= BigInt(x);
        u ^= cooked[i]!;
        this.vec[i] = toI64(u);
      }
    }
  }

  private uint64(): bigint {
    this.tap = (this.tap - 1 + RNG_LEN) % RNG_LEN;
    this.feed = (this.feed - 1 + RNG_LEN) % RNG_LEN;
    const x = toI64(this.vec[this.feed]! + this.vec[this.tap]!);
    this.vec[this.feed] = x;
    return x & M64;
  }

  private int31(): number {
    return Number((this.uint64() & ((1n << 63n) - 1n)) >> 32n);
  }

  /** A uniform integer in [0, n). */
  intn(n: number): number {
    if ((n & (n - 1)) === 0) return this.int31() & (n - 1);
    const max = INT32MAX - (2147483648 % n);
    let v = this.int31();
    while (v > max) v = this.int31();
    return v % n;
  }
}

const LABEL_VALUES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
const CPUS = [100, 250, 500, 1000, 1500];
const MEMS = [100, 256, 512, 1024, 2048, 4096];
const ZONE = 'topology.kubernetes.io/zone';
const HOST = 'kubernetes.io/hostname';

/** One generated pod, as `diverse-pods.py` describes it: kind, labels, extra spec, cpu and memory requests. */
export interface DiversePod {
  kind: 'generic' | 'spread-zone' | 'spread-host' | 'affinity-zone' | 'anti-affinity-host';
  labels: Record<string, string>;
  extra: Partial<Pod['spec']> | null;
  cpu: string;
  memory: string;
}

/** Upstream's `makeDiversePods(count)` (Go math/rand seed `seed`, default 42), draw for draw. */
export function makeUpstreamDiversePods(count: number, seed = 42): DiversePod[] {
  const r = new GoRand(seed);
  const lab = () => LABEL_VALUES[r.intn(LABEL_VALUES.length)]!;
  const cpu = () => `${CPUS[r.intn(CPUS.length)]}m`;
  const mem = () => `${MEMS[r.intn(MEMS.length)]}Mi`;
  const out: DiversePod[] = [];
  const n = Math.floor(count / 5);
  const generic = (k: number) => {
    for (let i = 0; i < k; i++) {
      const labels = { 'my-label': lab() };
      out.push({ kind: 'generic', labels, extra: null, cpu: cpu(), memory: mem() });
    }
  };
  generic(n);
  for (const key of [ZONE, HOST]) {
    for (let i = 0; i < n; i++) {
      const labels = { 'my-label': lab() };
      const sel = { 'my-label': lab() };
      const c = cpu();
      const m = mem();
      const tsc = [
        {
          maxSkew: 1,
          topologyKey: key,
          whenUnsatisfiable: 'DoNotSchedule' as const,
          labelSelector: { matchLabels: sel },
        },
      ];
      const kind = key === ZONE ? 'spread-zone' : 'spread-host';
      out.push({ kind, labels, extra: { topologySpreadConstraints: tsc }, cpu: c, memory: m });
    }
  }
  for (let i = 0; i < n; i++) {
    const labels = { 'my-affininity': lab() };
    const c = cpu();
    const m = mem();
    const term = { labelSelector: { matchLabels: { ...labels } }, topologyKey: ZONE };
    const extra = { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } } };
    out.push({ kind: 'affinity-zone', labels, extra, cpu: c, memory: m });
  }
  for (let i = 0; i < n; i++) {
    const labels = { app: 'nginx' };
    const c = cpu();
    const m = mem();
    const term = { labelSelector: { matchLabels: { app: 'nginx' } }, topologyKey: HOST };
    const extra = {
      affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } },
    };
    out.push({ kind: 'anti-affinity-host', labels, extra, cpu: c, memory: m });
  }
  generic(count - out.length);
  return out;
}

/** The pods of {@link makeUpstreamDiversePods} as Pod objects (`bench-<i>` in `default`, as diverse-pods.py). */
export function upstreamDiversePods(count: number): Pod[] {
  return makeUpstreamDiversePods(count).map((d, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `bench-${i}`,
      namespace: 'default',
      uid: `bench-uid-${i}`,
      labels: d.labels,
      annotations: { 'bench/kind': d.kind },
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.example/app:1',
          resources: { requests: { cpu: d.cpu, memory: d.memory } },
        },
      ],
      ...(d.extra ?? {}),
    },
    status: { phase: 'Pending' },
  }));
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Upstream's fake catalog: `fake-it-0` … `fake-it-399` (see the module doc). */
export function upstreamFakeCatalog(count = 400): InstanceType[] {
  const out: InstanceType[] = [];
  for (let i = 0; i < count; i++) {
    const cpu = i + 1;
    const memGiB = 2 * (i + 1);
    const price = Math.round((0.1 * cpu + 0.1 * memGiB) * 1e6) / 1e6;
    const offering = (zone: string, capacityType: Offering['capacityType']): Offering => ({
      zone,
      capacityType,
      priceUSDPerHour: price,
      available: true,
      priceSource: 'provider',
    });
    const capacity = { cpu: cpu * 1000, memory: memGiB * GiB, pods: 10 * (i + 1) };
    const kubeReserved = { cpu: 100, memory: 10 * MiB };
    out.push({
      name: `fake-it-${i}`,
      labels: {
        'node.kubernetes.io/instance-type': `fake-it-${i}`,
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
      },
      capacity,
      overhead: { kubeReserved, systemReserved: {}, evictionThreshold: {} },
      allocatable: { cpu: capacity.cpu - 100, memory: capacity.memory - 10 * MiB, pods: capacity.pods },
      offerings: [
        offering('test-zone-1', 'spot'),
        offering('test-zone-2', 'spot'),
        offering('test-zone-1', 'on-demand'),
        offering('test-zone-2', 'on-demand'),
        offering('test-zone-3', 'on-demand'),
      ],
    });
  }
  return out;
}

/** Upstream's benchmark NodePool: no requirements, limits cpu 10000000 and memory 10000000Gi. */
export const UPSTREAM_NODEPOOL: NodePool = applyDefaults({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'default' },
  spec: {
    template: {
      spec: {
        requirements: [],
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      },
    },
    limits: { cpu: '10000000', memory: '10000000Gi' },
  },
} as unknown as NodePool);

/** One measured size. */
export interface UpstreamDiverseRow {
  pods: number;
  podsPerSecond: number;
  /** Median wall seconds of one `solve`. */
  solveSeconds: number;
  /** Median CPU seconds (user + system) of one `solve`: steadier than wall time on a loaded machine. */
  solveCpuSeconds: number;
  nodeClaims: number;
  /** USD/hour of the plan (each NodeClaim's cheapest offering). */
  priceUSDPerHour: number;
  unschedulable: number;
}

/** Solves `pods` pods of the workload (median of `runs` solves after one warm-up). */
export function runUpstreamDiverse(pods: number, runs = 3): UpstreamDiverseRow {
  const input = {
    pods: upstreamDiversePods(pods),
    existingNodes: [],
    nodePools: [UPSTREAM_NODEPOOL],
    instanceTypes: { default: upstreamFakeCatalog() },
    daemonSets: [],
  };
  let result = solve(input);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    result = solve(input);
    const c = process.cpuUsage(c0);
    times.push((performance.now() - t0) / 1000);
    cpu.push((c.user + c.system) / 1e6);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  const price = result.newNodeClaims.reduce((s, nc) => s + nc.cheapest.offering.priceUSDPerHour, 0);
  return {
    pods,
    podsPerSecond: Math.round(pods / median),
    solveSeconds: Math.round(median * 1000) / 1000,
    solveCpuSeconds: Math.round(cpu[Math.floor(cpu.length / 2)]! * 1000) / 1000,
    nodeClaims: result.newNodeClaims.length,
    priceUSDPerHour: Math.round(price * 10000) / 10000,
    unschedulable: result.unschedulable.length,
  };
}

/** A human-readable line for one row. */
export function formatUpstreamDiverseRow(r: UpstreamDiverseRow): string {
  return (
    `  ${String(r.pods).padStart(6)} pods: ${String(r.podsPerSecond).padStart(7)} pods/s (${r.solveSeconds.toFixed(3)} s, CPU ${r.solveCpuSeconds.toFixed(3)} s), ` +
    `${r.nodeClaims} NodeClaims, $${r.priceUSDPerHour.toFixed(4)}/h${r.unschedulable ? `, ${r.unschedulable} unschedulable` : ''}`
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const podsArg = argv.indexOf('--pods');
  const row = runUpstreamDiverse(podsArg >= 0 ? Number(argv[podsArg + 1]) : 1000);
  process.stdout.write(
    argv.includes('--json') ? `${JSON.stringify(row)}\n` : `${formatUpstreamDiverseRow(row)}\n`,
  );
}
