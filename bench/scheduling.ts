/**
 * Scheduling benchmark: upstream Karpenter's "diverse" pod mix against the full us-east-1 catalog and the
 * default NodePool. Upstream: kubernetes-sigs/karpenter
 * `pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go` (`makeDiversePods`, seed 42);
 * here one fifth each of: plain pods; zonal topology spread; hostname topology spread; zonal self-affinity;
 * hostname anti-affinity (all anti-affinity pods repel each other, as upstream's `app: nginx` group).
 * CPU from {100m, 250m, 500m, 1, 1.5}, memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi}, label values
 * from a…g, all drawn from a seeded PRNG so every run schedules the same pods.
 *
 * Run directly (`tsx bench/scheduling.ts --pods 1000 [--json]`) it measures one size in this process;
 * `bench/main.ts` runs each size in a fresh child process so peak RSS is per size.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Pod } from '../src/apis/core.ts';
import type { NodePool } from '../src/apis/karpenter.ts';
import { getInstanceTypes } from '../src/cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../src/cloudprovider/types.ts';
import { selectorMatches } from '../src/scheduling/labelselector.ts';
import { Requirements } from '../src/scheduling/requirements.ts';
import { solve } from '../src/scheduling/scheduler.ts';
import type { SchedulingInput } from '../src/scheduling/types.ts';
import { DEFAULT_EC2NODECLASS, DEFAULT_NODEPOOL } from '../src/simulate/input.ts';

/** One measured size (the `--json` row). */
export interface SchedulingBenchRow {
  pods: number;
  podsPerSecond: number;
  nodeClaims: number;
  priceUSDPerHour: number;
  cpuUtilization: number;
  memoryUtilization: number;
  /** Plan cost ÷ lower bound (the LP relaxation of {@link lowerBoundUSDPerHour}). */
  costToLowerBound: number;
  /** Peak resident set size of the process, MB (process.resourceUsage().maxRSS). */
  peakRssMB: number;
  /** Pods the plan could not place (should be 0). */
  unschedulable: number;
  /** Median wall time of one `solve` call, seconds. */
  solveSeconds: number;
}

/** mulberry32: a tiny seeded PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CPUS = ['100m', '250m', '500m', '1', '1500m'];
const MEMORIES = ['100Mi', '256Mi', '512Mi', '1Gi', '2Gi', '4Gi'];
const LABEL_VALUES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
const ZONE = 'topology.kubernetes.io/zone';
const HOSTNAME = 'kubernetes.io/hostname';

/** Upstream's diverse mix (five kinds, one fifth each, remainder plain), deterministic for a seed. */
export function makeDiversePods(count: number, seed = 42): Pod[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const pods: Pod[] = [];
  const make = (labels: Record<string, string>, extra: Partial<Pod['spec']>): Pod => {
    const i = pods.length;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `bench-${i}`, namespace: 'default', uid: `bench-uid-${i}`, labels },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'registry.example/app:1',
            resources: { requests: { cpu: pick(CPUS), memory: pick(MEMORIES) } },
          },
        ],
        ...extra,
      },
      status: { phase: 'Pending' },
    };
  };
  const fifth = Math.floor(count / 5);
  for (let i = 0; i < fifth; i++) pods.push(make({ 'my-label': pick(LABEL_VALUES) }, {}));
  for (const key of [ZONE, HOSTNAME]) {
    for (let i = 0; i < fifth; i++) {
      const v = pick(LABEL_VALUES);
      pods.push(
        make(
          { 'my-label': v, spread: key === ZONE ? 'zone' : 'host' },
          {
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: key,
                whenUnsatisfiable: 'DoNotSchedule',
                labelSelector: { matchLabels: { 'my-label': v, spread: key === ZONE ? 'zone' : 'host' } },
              },
            ],
          },
        ),
      );
    }
  }
  for (let i = 0; i < fifth; i++) {
    const v = pick(LABEL_VALUES);
    pods.push(
      make(
        { 'my-affinity': v },
        {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { 'my-affinity': v } }, topologyKey: ZONE },
              ],
            },
          },
        },
      ),
    );
  }
  for (let i = 0; i < fifth; i++) {
    pods.push(
      make(
        { app: 'nginx' },
        {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'nginx' } }, topologyKey: HOSTNAME },
              ],
            },
          },
        },
      ),
    );
  }
  while (pods.length < count) pods.push(make({ 'my-label': pick(LABEL_VALUES) }, {}));
  return pods;
}

function parseCpu(q: string): number {
  return q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000;
}
function parseMem(q: string): number {
  const n = Number(q.slice(0, -2));
  return q.endsWith('Gi') ? n * 2 ** 30 : n * 2 ** 20;
}

/**
 * Instance types the NodePool allows, each with its cheapest allowed offering price (USD/hour): labels match
 * the NodePool's requirements and at least one available offering has an allowed zone and capacity type.
 */
export function allowedTypes(
  pool: NodePool,
  types: InstanceType[],
): Array<{ type: InstanceType; price: number }> {
  const all = pool.spec.template.spec.requirements;
  const offeringKeys = new Set(['karpenter.sh/capacity-type', ZONE]);
  const typeReqs = Requirements.fromNodeSelector(all.filter((r) => !offeringKeys.has(r.key)));
  const offeringReqs = Requirements.fromNodeSelector(all.filter((r) => offeringKeys.has(r.key)));
  const out: Array<{ type: InstanceType; price: number }> = [];
  for (const t of types) {
    if (!typeReqs.matchesLabels(t.labels)) continue;
    const prices = t.offerings
      .filter(
        (o) =>
          o.available &&
          offeringReqs.matchesLabels({ 'karpenter.sh/capacity-type': o.capacityType, [ZONE]: o.zone }),
      )
      .map((o) => o.priceUSDPerHour);
    if (prices.length > 0) out.push({ type: t, price: Math.min(...prices) });
  }
  return out;
}

/**
 * The largest set of pods of which no two may share a node through required pod anti-affinity on
 * `kubernetes.io/hostname`: for each such term (selector + namespace), the pods carrying it whose own labels the
 * selector matches (each repels every other). Returns that set (empty when there is none).
 */
export function hostnameExclusiveClique(pods: readonly Pod[]): Pod[] {
  const byTerm = new Map<string, Pod[]>();
  for (const p of pods) {
    const ns = p.metadata.namespace ?? 'default';
    for (const term of p.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ??
      []) {
      if (term.topologyKey !== HOSTNAME || term.namespaces?.length || term.namespaceSelector) continue;
      const key = `${ns}\u0000${JSON.stringify(term.labelSelector ?? null)}`;
      let members = byTerm.get(key);
      if (!members) {
        members = [];
        byTerm.set(key, members);
      }
      if (selectorMatches(term.labelSelector, p.metadata.labels ?? {})) members.push(p);
    }
  }
  let best: Pod[] = [];
  for (const members of byTerm.values()) if (members.length > best.length) best = members;
  return best;
}

/**
 * Optimum of the linear program min c·x s.t. A x ≥ b, x ≥ 0 (columns `cols[t]` = column t of A, costs `c[t]`
 * > 0), through its dual max b·y s.t. Aᵀy ≤ c, y ≥ 0 solved by a dense primal simplex (slack basis, Bland's rule).
 * The returned value is b·y for a dual-feasible y — scaled down, should rounding have left a dual row above its
 * price — so it never exceeds the primal optimum (weak duality), whatever the floating-point error. Infinity
 * when the dual is unbounded (some b_k > 0 that no column supplies).
 */
export function lpLowerBound(cols: readonly number[][], c: readonly number[], b: readonly number[]): number {
  const n = cols.length;
  const m = b.length;
  const w = m + n + 1;
  const t = new Float64Array((n + 1) * w);
  const basis = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < m; k++) t[i * w + k] = cols[i]![k]!;
    t[i * w + m + i] = 1;
    t[i * w + w - 1] = c[i]!;
    basis[i] = m + i;
  }
  const z = n * w;
  for (let k = 0; k < m; k++) t[z + k] = -b[k]!;
  for (let iter = 0; iter < 100 * (n + m); iter++) {
    let e = -1;
    for (let j = 0; j < w - 1 && e < 0; j++) if (t[z + j]! < -1e-12) e = j;
    if (e < 0) break;
    let r = -1;
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      const a = t[i * w + e]!;
      if (a <= 1e-12) continue;
      const q = t[i * w + w - 1]! / a;
      if (q < best || (q === best && basis[i]! < basis[r]!)) {
        best = q;
        r = i;
      }
    }
    if (r < 0) return Number.POSITIVE_INFINITY;
    const p = t[r * w + e]!;
    for (let j = 0; j < w; j++) t[r * w + j] = t[r * w + j]! / p;
    for (let i = 0; i <= n; i++) {
      const f = t[i * w + e]!;
      if (i === r || f === 0) continue;
      for (let j = 0; j < w; j++) t[i * w + j] = t[i * w + j]! - f * t[r * w + j]!;
    }
    basis[r] = e;
  }
  const y = new Array<number>(m).fill(0);
  for (let i = 0; i < n; i++) if (basis[i]! < m) y[basis[i]!] = Math.max(0, t[i * w + w - 1]!);
  let scale = 1;
  for (let i = 0; i < n; i++) {
    let row = 0;
    for (let k = 0; k < m; k++) row += cols[i]![k]! * y[k]!;
    if (row > c[i]!) scale = Math.min(scale, c[i]! / row);
  }
  let value = 0;
  for (let k = 0; k < m; k++) value += b[k]! * y[k]! * scale;
  return value;
}

/**
 * Lower bound on the hourly cost (USD) of any plan that places `pods` on new nodes of the `allowed` types: the
 * optimum of the LP relaxation over instance types, where x_t ≥ 0 is the (fractional) number of nodes of type t
 * and c_t its cheapest allowed offering:
 *
 *   min Σ c_t x_t  subject to  Σ cpu_t x_t ≥ total cpu requests,  Σ mem_t x_t ≥ total memory requests,
 *                              Σ pods_t x_t ≥ number of pods (allocatable cpu, memory, pods of type t),
 *                              Σ_{t holds m} x_t ≥ |K|.
 *
 * K is {@link hostnameExclusiveClique} (here the `app: nginx` pods, one fifth of the mix): no two of its pods
 * share a node, so any plan has at least |K| nodes each holding one of them, and each such node's type holds at
 * least m, the component-wise smallest request among K. Every feasible plan's type counts satisfy all four rows,
 * so the LP optimum (computed through its dual, {@link lpLowerBound}) never exceeds the cheapest plan's cost — a
 * valid bound for any packing, however clever. It relaxes integrality (fractional nodes, pods split across
 * nodes) and the zonal constraints (spread across zones, zonal affinity; the cheapest offering of each type over
 * the allowed zones is used). The earlier bound, max(cpu × cheapest $/vCPU, memory × cheapest $/GiB), is the
 * LP with only one resource row at a time, hence never tighter.
 */
export function lowerBoundUSDPerHour(
  pods: Pod[],
  allowed: Array<{ type: InstanceType; price: number }>,
): number {
  let cpu = 0;
  let mem = 0;
  const requestOf = (p: Pod) => {
    const r = p.spec.containers[0]?.resources?.requests ?? {};
    return { cpu: parseCpu(String(r.cpu ?? '0')) / 1000, mem: parseMem(String(r.memory ?? '0Mi')) / 2 ** 30 };
  };
  for (const p of pods) {
    const r = requestOf(p);
    cpu += r.cpu;
    mem += r.mem;
  }
  const clique = hostnameExclusiveClique(pods);
  let minCpu = Number.POSITIVE_INFINITY;
  let minMem = Number.POSITIVE_INFINITY;
  for (const p of clique) {
    const r = requestOf(p);
    minCpu = Math.min(minCpu, r.cpu);
    minMem = Math.min(minMem, r.mem);
  }
  const cols = allowed.map(({ type: t }) => {
    const a = { cpu: (t.allocatable.cpu ?? 0) / 1000, mem: (t.allocatable.memory ?? 0) / 2 ** 30 };
    const pods = t.allocatable.pods ?? 0;
    const holdsMin = clique.length > 0 && a.cpu >= minCpu && a.mem >= minMem && pods >= 1;
    return [a.cpu, a.mem, pods, holdsMin ? 1 : 0];
  });
  return lpLowerBound(
    cols,
    allowed.map((a) => a.price),
    [cpu, mem, pods.length, clique.length],
  );
}

/** Measures one size in this process. */
export async function runSchedulingBench(
  podCount: number,
  region = 'us-east-1',
): Promise<SchedulingBenchRow> {
  const instanceTypes = [...getInstanceTypes({ region, nodeClass: DEFAULT_EC2NODECLASS }).instanceTypes];
  const pool = structuredClone(DEFAULT_NODEPOOL);
  const pods = makeDiversePods(podCount);
  const input: SchedulingInput = {
    pods,
    existingNodes: [],
    nodePools: [pool],
    instanceTypes: { [pool.metadata.name]: instanceTypes },
    daemonSets: [],
  };
  // Small sizes: one warm-up run, then the median of a few timed runs. 5,000+ pods: one cold timed run
  // (JIT warm-up included), which is what a controller sees on its first large batch.
  const runs = podCount <= 100 ? 5 : podCount <= 1000 ? 3 : 1;
  let result = podCount <= 1000 ? solve(input) : undefined;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    result = solve(input);
    times.push((performance.now() - start) / 1000);
  }
  if (!result) throw new Error('no benchmark run');
  times.sort((a, b) => a - b);
  const seconds = times[Math.floor(times.length / 2)]!;

  let price = 0;
  let cpuReq = 0;
  let cpuAlloc = 0;
  let memReq = 0;
  let memAlloc = 0;
  for (const plan of result.newNodeClaims) {
    price += plan.cheapest.offering.priceUSDPerHour;
    cpuReq += plan.requests.cpu ?? 0;
    memReq += plan.requests.memory ?? 0;
    cpuAlloc += plan.cheapest.instanceType.allocatable.cpu ?? 0;
    memAlloc += plan.cheapest.instanceType.allocatable.memory ?? 0;
  }
  const lb = lowerBoundUSDPerHour(pods, allowedTypes(pool, instanceTypes));
  const r3 = (v: number) => Math.round(v * 1000) / 1000;
  return {
    pods: podCount,
    podsPerSecond: Math.round(podCount / seconds),
    nodeClaims: result.newNodeClaims.length,
    priceUSDPerHour: Math.round(price * 1e4) / 1e4,
    cpuUtilization: cpuAlloc ? r3(cpuReq / cpuAlloc) : 0,
    memoryUtilization: memAlloc ? r3(memReq / memAlloc) : 0,
    costToLowerBound: lb > 0 ? r3(price / lb) : 0,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    unschedulable: result.unschedulable.length,
    solveSeconds: r3(seconds),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--pods');
  const n = i >= 0 ? Number(argv[i + 1]) : 1000;
  const row = await runSchedulingBench(n);
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify(row)}\n`);
  else process.stdout.write(`${JSON.stringify(row, null, 2)}\n`);
}
