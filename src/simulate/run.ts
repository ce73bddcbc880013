/**
 * `capenter simulate`'s engine: loaded manifests in, a provisioning plan out. Pure apart from the catalog
 * load (injectable): the same objects and region give the same {@link SimulationResult}.
 * The plan comes from the shared scheduler (`scheduling/scheduler.ts`), exactly as the provisioning
 * controller would compute it for the same cluster snapshot.
 */
import type { KubeObject, Pod } from '../apis/core.ts';
import { formatResources, type Resources } from '../apis/quantity.ts';
import { DEFAULT_REGION, getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { solve } from '../scheduling/scheduler.ts';
import type { Explanation, MinValuesPolicy, NodeClaimPlan, SchedulingResult } from '../scheduling/types.ts';
import {
  type BuiltInput,
  buildSchedulingInput,
  type CatalogFunction,
  podKey,
  type SimulationIssue,
  type SourcedObject,
} from './input.ts';

/** One new NodeClaim of the plan, as printed (`-o json` → `nodeClaims[]`). */
export interface NodeClaimSummary {
  /** Simulated NodeClaim name, `<nodePool>-<n>` (n from 1, per NodePool). */
  name: string;
  nodePool: string;
  /** Cheapest available instance type among the options (the one priced). */
  instanceType: string;
  /** Every instance type the NodeClaim allows, cheapest first. */
  instanceTypeOptions: string[];
  /** Zone of the cheapest offering. */
  zone: string;
  capacityType: string;
  /** Price of the cheapest offering, USD per hour. */
  priceUSDPerHour: number;
  /** `namespace/name` of the pods placed on it. */
  pods: string[];
  /** Pods' requests + daemon overhead, as kubectl prints quantities (`{"cpu": "1930m", "memory": "6903Mi", "pods": "29"}`). */
  requests: Record<string, string>;
  /** Allocatable of the cheapest type, same format. */
  allocatable: Record<string, string>;
  /**
   * Present (true) only when `--min-values-policy BestEffort` lowered a `minValues` of this NodeClaim (it would
   * carry `karpenter.sh/nodeclaim-min-values-relaxed: "true"`).
   */
  minValuesRelaxed?: true;
}

/** Where a pending pod went. `node` is an existing Node's name or a new NodeClaim's `name`. */
export interface PlacementSummary {
  pod: string;
  node: string;
  /** `existing` node, `inflight` NodeClaim, or `new` NodeClaim of this plan. */
  target: 'existing' | 'inflight' | 'new';
}

/** A pending pod that ends with no node. `code` is the scheduler's (or `OwnedByDaemonSet`). */
export interface UnschedulableSummary {
  pod: string;
  code: string;
  reason: string;
}

/** Sums over the new NodeClaims. Utilisation = requested ÷ allocatable of the cheapest types, 0..1, 3 decimals. */
export interface Totals {
  nodeClaims: number;
  /** USD per hour, rounded to 6 decimals. */
  priceUSDPerHour: number;
  /** USD per month = per hour × 730, rounded to 2 decimals. */
  priceUSDPerMonth: number;
  cpuUtilization: number;
  memoryUtilization: number;
}

/** Everything `capenter simulate` prints, plus the raw scheduler data (not serialised). */
export interface SimulationResult {
  region: string;
  nodeClaims: NodeClaimSummary[];
  placements: PlacementSummary[];
  unschedulable: UnschedulableSummary[];
  totals: Totals;
  notices: string[];
  unknownKinds: Record<string, number>;
  /** Input problems (load/validation errors and NodePools that could not be resolved): exit code 2. */
  errors: SimulationIssue[];
  explanations: Explanation[];
  /** Raw scheduler output and input, for tests and `--explain`. */
  scheduling: SchedulingResult;
  built: BuiltInput;
}

/** Options of {@link simulate}. */
export interface SimulateOptions {
  /** AWS region (default: the catalog's DEFAULT_REGION, us-east-1). */
  region?: string;
  /** Record per-pod explanations. */
  explain?: boolean;
  /** Instance-type source; defaults to the embedded AWS catalog (`getInstanceTypes`). */
  catalog?: CatalogFunction;
  /** Upstream `MIN_VALUES_POLICY` (`--min-values-policy`): `Strict` (default) or `BestEffort`. */
  minValuesPolicy?: MinValuesPolicy;
  /** The `NodeOverlay` feature gate (default false, as upstream): apply the input's NodeOverlays. */
  nodeOverlay?: boolean;
}

/** A load result (as from `apis/load.ts`) or a plain list of objects. */
export type SimulationSource =
  | ReadonlyArray<SourcedObject | KubeObject>
  | {
      objects: ReadonlyArray<SourcedObject>;
      errors?: ReadonlyArray<SimulationIssue>;
      unknownKinds?: Readonly<Record<string, number>>;
    };

function isSourced(o: SourcedObject | KubeObject): o is SourcedObject {
  return (
    typeof (o as SourcedObject).object === 'object' && (o as SourcedObject).object !== null && !('kind' in o)
  );
}

const round = (v: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

/**
 * Simulates provisioning for the given objects: builds the scheduler input (see `input.ts`), runs `solve`,
 * and summarises. Never throws for bad input (problems are in `errors`); throws only if the catalog or the
 * scheduler fails unexpectedly.
 */
export async function simulate(
  source: SimulationSource,
  opts: SimulateOptions = {},
): Promise<SimulationResult> {
  const region = opts.region ?? DEFAULT_REGION;
  let objects: SourcedObject[];
  const errors: SimulationIssue[] = [];
  let unknownKinds: Record<string, number> = {};
  if (Array.isArray(source)) {
    objects = (source as ReadonlyArray<SourcedObject | KubeObject>).map((o) =>
      isSourced(o) ? o : { object: o },
    );
  } else {
    const s = source as Exclude<SimulationSource, ReadonlyArray<unknown>>;
    objects = [...s.objects];
    errors.push(...(s.errors ?? []));
    unknownKinds = { ...(s.unknownKinds ?? {}) };
  }
  const catalog: CatalogFunction = opts.catalog ?? ((args) => getInstanceTypes(args));
  const invalidNodePools = errors.filter((e) => e.kind === 'NodePool').length;
  const built = await buildSchedulingInput(objects, {
    region,
    explain: opts.explain ?? false,
    catalog,
    invalidNodePools,
    nodeOverlay: opts.nodeOverlay ?? false,
  });
  errors.push(...built.errors);
  if (opts.minValuesPolicy === 'BestEffort') built.input.minValuesPolicy = 'BestEffort';
  const result = solve(built.input);
  return summarise(region, built, result, errors, unknownKinds);
}

function planPodCount(plan: NodeClaimPlan): number {
  return plan.pods.length + ((plan.cheapest.daemonOverhead ?? plan.daemonOverhead).pods ?? 0);
}

/** `requests` with daemon overhead `from` replaced by `to` (internal units; zero entries dropped). */
export function plusDaemons(requests: Resources, from: Resources, to: Resources): Resources {
  const out: Resources = { ...requests };
  for (const [k, v] of Object.entries(from)) out[k] = (out[k] ?? 0) - v;
  for (const [k, v] of Object.entries(to)) out[k] = (out[k] ?? 0) + v;
  for (const k of Object.keys(out)) if (out[k] === 0) delete out[k];
  return out;
}

function summarise(
  region: string,
  built: BuiltInput,
  result: SchedulingResult,
  errors: SimulationIssue[],
  unknownKinds: Record<string, number>,
): SimulationResult {
  const taken = new Set(built.input.existingNodes.map((n) => n.node.metadata.name ?? ''));
  const perPool = new Map<string, number>();
  const names = result.newNodeClaims.map((plan) => {
    let n = perPool.get(plan.nodePool) ?? 0;
    let name: string;
    do {
      n++;
      name = `${plan.nodePool}-${n}`;
    } while (taken.has(name));
    perPool.set(plan.nodePool, n);
    taken.add(name);
    return name;
  });

  let cpuReq = 0;
  let cpuAlloc = 0;
  let memReq = 0;
  let memAlloc = 0;
  let price = 0;
  const nodeClaims: NodeClaimSummary[] = result.newNodeClaims.map((plan, i) => {
    // the pods plus the daemon overhead of the type shown (the NodeClaim's own requests carry the smallest
    // overhead over its options, upstream addDaemonRequests)
    const shown = plan.cheapest.daemonOverhead ?? plan.daemonOverhead;
    const requests = plusDaemons(plan.requests, plan.daemonOverhead, shown);
    if (requests.pods === undefined) requests.pods = planPodCount(plan);
    const { instanceType, offering } = plan.cheapest;
    cpuReq += requests.cpu ?? 0;
    memReq += requests.memory ?? 0;
    cpuAlloc += instanceType.allocatable.cpu ?? 0;
    memAlloc += instanceType.allocatable.memory ?? 0;
    price += offering.priceUSDPerHour;
    return {
      name: names[i]!,
      nodePool: plan.nodePool,
      instanceType: instanceType.name,
      instanceTypeOptions: plan.instanceTypeOptions.map((t) => t.name),
      zone: offering.zone,
      capacityType: offering.capacityType,
      priceUSDPerHour: offering.priceUSDPerHour,
      pods: plan.pods.map(podKey),
      requests: formatResources(requests),
      allocatable: formatResources(instanceType.allocatable),
      ...(plan.minValuesRelaxed ? { minValuesRelaxed: true as const } : {}),
    };
  });

  const placements: PlacementSummary[] = result.placements.map((p) => {
    const t = p.target;
    if (t.kind === 'existing') return { pod: podKey(p.pod), node: t.node, target: 'existing' };
    if (t.kind === 'inflight') return { pod: podKey(p.pod), node: t.nodeClaim, target: 'inflight' };
    return { pod: podKey(p.pod), node: names[t.index] ?? `#${t.index}`, target: 'new' };
  });

  const unschedulable: UnschedulableSummary[] = [
    ...result.unschedulable.map((u) => ({ pod: podKey(u.pod), code: u.code, reason: u.message })),
    ...built.ignored.map((u) => ({ pod: podKey(u.pod), code: u.code, reason: u.reason })),
  ].sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));

  const hourly = round(price, 6);
  return {
    region,
    nodeClaims,
    placements,
    unschedulable,
    totals: {
      nodeClaims: nodeClaims.length,
      priceUSDPerHour: hourly,
      priceUSDPerMonth: round(price * 730, 2),
      cpuUtilization: cpuAlloc > 0 ? round(cpuReq / cpuAlloc, 3) : 0,
      memoryUtilization: memAlloc > 0 ? round(memReq / memAlloc, 3) : 0,
    },
    notices: [...built.notices],
    unknownKinds,
    errors,
    explanations: result.explanations,
    scheduling: result,
    built,
  };
}

/** The pods of a plan, for callers that only hold the summary (`namespace/name` → Pod). */
export function podsByKey(result: SimulationResult): Map<string, Pod> {
  const m = new Map<string, Pod>();
  for (const p of result.built.input.pods) m.set(podKey(p), p);
  for (const u of result.built.ignored) m.set(podKey(u.pod), u.pod);
  return m;
}
