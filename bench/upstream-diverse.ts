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
 * - Catalog (upstream `fake.InstanceTypes(400)`: `fake-it-i`, i = 0..399): i+1 vCPU, 2(i+1) GiB, 10(i+1) pods,
 *   kube-reserved 100m / 10Mi; five offerings (spot in test-zone-1/2, on-demand in test-zone-1/2/3), each priced
 *   as upstream's `fake.PriceFromResources`: 0.1 × vCPU + 0.1 × (memory bytes / 10^9) USD/hour (so 2 GiB costs
 *   0.2147, not 0.2).
 * - NodePool `default` with no requirements and upstream's limits (cpu 10000000, memory 10000000Gi).
 *
 * Run directly: `npx tsx bench/upstream-diverse.ts --pods 1000 [--json]`; `npm run bench -- --workload
 * upstream-diverse [--sizes 1000,2000]` runs 1k/2k/5k/10k, each in a fresh process, and prints them next to
 * upstream's own benchmark as measured on the same machine and recorded in `bench/upstream/upstream-measured.json`
 * ({@link formatUpstreamComparison}; how to re-measure: `bench/upstream/README.md`).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
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
    const price = Math.round((0.1 * cpu + (0.1 * memGiB * GiB) / 1e9) * 1e6) / 1e6;
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
  /** Wall and CPU seconds of the first `solve` in the process (the warm-up: V8 compiles as it goes). */
  firstSolveSeconds: number;
  firstSolveCpuSeconds: number;
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
  const w0 = performance.now();
  const cpu0 = process.cpuUsage();
  let result = solve(input);
  const firstCpu = process.cpuUsage(cpu0);
  const firstWall = (performance.now() - w0) / 1000;
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
    firstSolveSeconds: Math.round(firstWall * 1000) / 1000,
    firstSolveCpuSeconds: Math.round((firstCpu.user + firstCpu.system) / 1000) / 1000,
    nodeClaims: result.newNodeClaims.length,
    priceUSDPerHour: Math.round(price * 10000) / 10000,
    unschedulable: result.unschedulable.length,
  };
}

/** A human-readable line for one row. */
export function formatUpstreamDiverseRow(r: UpstreamDiverseRow): string {
  return (
    `  ${String(r.pods).padStart(6)} pods: ${String(r.podsPerSecond).padStart(7)} pods/s (${r.solveSeconds.toFixed(3)} s, CPU ${r.solveCpuSeconds.toFixed(3)} s; ` +
    `first solve ${r.firstSolveSeconds.toFixed(3)} s, CPU ${r.firstSolveCpuSeconds.toFixed(3)} s), ${r.nodeClaims} NodeClaims, $${r.priceUSDPerHour.toFixed(4)}/h${r.unschedulable ? `, ${r.unschedulable} unschedulable` : ''}`
  );
}

/** The target of issue 24: capenter's pods/s on this workload ≥ 20 × upstream's, on the same machine. */
export const UPSTREAM_TARGET_RATIO = 20;

/** One size of upstream's benchmark as recorded in `bench/upstream/upstream-measured.json`. */
export interface UpstreamMeasuredSize {
  pods: number;
  /** Median of {@link runs}: what `npm run bench` compares with. */
  podsPerSecond: number;
  /** pods/sec of each `BenchmarkScheduling<N>` run (one `go test` process each). */
  runs: number[];
  /** 1-minute load average when each run started. */
  loadAverage: number[];
  /** NodeClaims upstream's benchmark reports ("nodes"). */
  nodeClaims: number;
  /** Plan $/h per run (each NodeClaim's cheapest compatible offering), where measured. */
  priceUSDPerHour?: number[];
  /** CPU seconds (user + system) of upstream's `Solve` alone, per run, where measured. */
  solveCpuSeconds?: number[];
  /**
   * capenter measured right after each upstream run (ABAB) and the ratio of the two; `firstSolveRatio` the same
   * with capenter's first (cold) solve, null for pairs where it was not recorded.
   */
  backToBack: { capenterPodsPerSecond: number[]; ratio: number[]; firstSolveRatio?: (number | null)[] };
}

/** `bench/upstream/upstream-measured.json`: upstream's figures on this machine (numbers only, no upstream code). */
export interface UpstreamMeasured {
  date: string;
  upstream: { repository: string; tag: string; commit: string; file: string; benchmark: string };
  go: string;
  machine: string;
  /** How upstream's benchmark was built and run (the full steps: bench/upstream/README.md). */
  command: string;
  /** The one-line re-run of a size, printed by the bench. */
  rerun: string;
  method: string;
  sizes: UpstreamMeasuredSize[];
}

export const UPSTREAM_MEASURED_FILE = 'bench/upstream/upstream-measured.json';

/** Reads {@link UPSTREAM_MEASURED_FILE}. */
export function loadUpstreamMeasured(): UpstreamMeasured {
  return JSON.parse(
    readFileSync(join(here, 'upstream', 'upstream-measured.json'), 'utf8'),
  ) as UpstreamMeasured;
}

/** capenter's row against the recorded upstream figure for the same size (undefined if none is recorded). */
export interface UpstreamComparison {
  upstreamPodsPerSecond: number;
  /** capenter pods/s of this run ÷ the recorded upstream pods/s. */
  ratio: number;
  pass: boolean;
  /** The same with capenter's first (cold) solve. */
  firstSolveRatio: number;
}

export function compareWithUpstream(
  row: UpstreamDiverseRow,
  m: UpstreamMeasured,
): UpstreamComparison | undefined {
  const u = m.sizes.find((s) => s.pods === row.pods);
  if (!u) return undefined;
  const ratio = Math.round((row.podsPerSecond / u.podsPerSecond) * 10) / 10;
  const first = row.firstSolveSeconds > 0 ? row.pods / row.firstSolveSeconds : 0;
  return {
    upstreamPodsPerSecond: u.podsPerSecond,
    ratio,
    pass: ratio >= UPSTREAM_TARGET_RATIO,
    firstSolveRatio: Math.round((first / u.podsPerSecond) * 10) / 10,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = Math.floor(s.length / 2);
  return s.length % 2 ? s[h]! : ((s[h - 1] ?? 0) + (s[h] ?? 0)) / 2;
};

const range = (xs: number[], digits = 1) => {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return lo === hi ? lo.toFixed(digits) : `${lo.toFixed(digits)}–${hi.toFixed(digits)}`;
};

/** The side-by-side lines `npm run bench -- --workload upstream-diverse` prints after its rows. */
export function formatUpstreamComparison(
  rows: UpstreamDiverseRow[],
  m: UpstreamMeasured,
  loadNow = loadavg()[0] ?? 0,
): string {
  const loads = m.sizes.flatMap((s) => s.loadAverage);
  const out = [
    `Side by side with upstream Karpenter ${m.upstream.tag} (${m.upstream.commit.slice(0, 12)}), ${m.upstream.benchmark}:`,
    `  upstream's figures are RECORDED in ${UPSTREAM_MEASURED_FILE} (${m.date}, ${m.machine},`,
    `  ${m.go}, load average ${range(loads)}), NOT measured in this run (load average now ${loadNow.toFixed(1)}).`,
    '  A ratio against a recorded figure holds only at a similar load; "back to back" is the ratio measured',
    '  alternately (upstream, capenter, upstream, ...) when the figures were recorded.',
    `  Re-measure upstream: bench/upstream/README.md (in a ${m.upstream.tag} checkout: ${m.rerun}).`,
    `  ${'pods'.padStart(6)}  ${'capenter'.padStart(8)}  ${'upstream'.padStart(8)}  ${'ratio'.padStart(6)}  ` +
      `>= ${UPSTREAM_TARGET_RATIO}x  first solve  ${'back to back'.padEnd(26)}  NodeClaims   $/h capenter | upstream`,
  ];
  for (const r of rows) {
    const u = m.sizes.find((s) => s.pods === r.pods);
    const c = compareWithUpstream(r, m);
    if (!u || !c) {
      out.push(
        `  ${String(r.pods).padStart(6)}  ${String(r.podsPerSecond).padStart(9)}  no upstream figure recorded`,
      );
      continue;
    }
    const b2b = u.backToBack.ratio;
    const b2bText = `${median(b2b).toFixed(1)}x (${range(b2b)}x, ${b2b.length} pairs)`;
    const price = u.priceUSDPerHour?.length ? `$${range(u.priceUSDPerHour, 2)}` : 'not recorded';
    out.push(
      `  ${String(r.pods).padStart(6)}  ${String(r.podsPerSecond).padStart(8)}  ${u.podsPerSecond.toFixed(1).padStart(8)}  ` +
        `${`${c.ratio.toFixed(1)}x`.padStart(6)}  ${c.pass ? 'PASS ' : 'FAIL '}  ${`${c.firstSolveRatio.toFixed(1)}x`.padStart(11)}  ` +
        `${b2bText.padEnd(26)}  ${`${r.nodeClaims} | ${u.nodeClaims}`.padEnd(11)}  $${r.priceUSDPerHour.toFixed(2)} | ${price}`,
    );
  }
  const firstB2b = rows.flatMap((r) => {
    const xs = (m.sizes.find((s) => s.pods === r.pods)?.backToBack.firstSolveRatio ?? []).filter(
      (x): x is number => typeof x === 'number',
    );
    return xs.length ? [`${r.pods}: ${median(xs).toFixed(1)}x (${range(xs)}x, ${xs.length} pairs)`] : [];
  });
  if (firstB2b.length) out.push(`  back to back, capenter's first solve: ${firstB2b.join('; ')}`);
  out.push(
    '  capenter = pods/s of this run (median of 3 warm solves); upstream = median pods/s of its recorded runs (one',
    '  solve per fresh go test process, -benchtime=1x); ratio = capenter ÷ upstream; first solve = the same ratio with',
    "  capenter's first (cold, JIT warming up) solve; $/h: each NodeClaim's cheapest offering, upstream's fake prices.",
  );
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const podsArg = argv.indexOf('--pods');
  const row = runUpstreamDiverse(podsArg >= 0 ? Number(argv[podsArg + 1]) : 1000);
  process.stdout.write(
    argv.includes('--json') ? `${JSON.stringify(row)}\n` : `${formatUpstreamDiverseRow(row)}\n`,
  );
}
