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
  /** Plan cost ÷ lower bound (see {@link lowerBoundUSDPerHour}). */
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
 * Lower bound on the hourly cost of any plan: max(total cpu × cheapest USD per allocatable vCPU,
 * total memory × cheapest USD per allocatable GiB), both over the allowed types' cheapest allowed offerings.
 */
export function lowerBoundUSDPerHour(
  pods: Pod[],
  allowed: Array<{ type: InstanceType; price: number }>,
): number {
  let perVcpu = Number.POSITIVE_INFINITY;
  let perGiB = Number.POSITIVE_INFINITY;
  for (const { type: t, price } of allowed) {
    const cpu = (t.allocatable.cpu ?? 0) / 1000;
    const gib = (t.allocatable.memory ?? 0) / 2 ** 30;
    if (cpu > 0) perVcpu = Math.min(perVcpu, price / cpu);
    if (gib > 0) perGiB = Math.min(perGiB, price / gib);
  }
  let cpu = 0;
  let mem = 0;
  for (const p of pods) {
    const r = p.spec.containers[0]?.resources?.requests ?? {};
    cpu += parseCpu(String(r.cpu ?? '0')) / 1000;
    mem += parseMem(String(r.memory ?? '0Mi')) / 2 ** 30;
  }
  return Math.max(cpu * perVcpu, mem * perGiB);
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
