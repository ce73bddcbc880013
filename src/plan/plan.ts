/**
 * `capenter plan`'s engine: the live cluster's objects, the proposed objects and deletions in; what would happen
 * out (see docs/plan.md): which nodes drift and why (`drift.ts`), the waves the disruption budgets allow
 * (`waves.ts`), the replacements the scheduling core chooses for the drifted nodes' pods and today's pending pods
 * (`replace.ts`: one `solve` per wave), the pods left unschedulable, and the cost per hour before and after. Pure
 * apart from the catalog (injectable) and, for an EC2NodeClass whose selector terms change, AWS (`aws.ts`, through
 * the injected clients; read-only): it reads nothing from the cluster itself (`read.ts` does).
 */
import type { KubeObject, Node } from '../apis/core.ts';
import { isDoNotDisruptActive } from '../apis/donotdisrupt.ts';
import type { NodePool } from '../apis/karpenter.ts';
import {
  AnnotationDoNotDisrupt,
  LabelCapacityType,
  LabelInstanceType,
  LabelNodePool,
  LabelTopologyRegion,
  LabelTopologyZone,
} from '../apis/labels.ts';
import { isActive, isReschedulable } from '../apis/pod.ts';
import { DEFAULT_REGION, getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import { doNotDisruptBlock, offeringPrice } from '../disruption/candidates.ts';
import type { DisruptionNode } from '../disruption/types.ts';
import type { ExistingNode, NodeClaimPlan, Unschedulable } from '../scheduling/types.ts';
import {
  type BuiltInput,
  buildSchedulingInput,
  type CatalogFunction,
  podKey,
  type SourcedObject,
} from '../simulate/input.ts';
import { evaluateSelectorDrift, type PlanAwsAccess, type SelectorDriftEvaluation } from './aws.ts';
import { type NodeDrift, type NodeSelectorDrift, nodeDrift, type PlanObjects } from './drift.ts';
import { type Change, type Deletion, mergeProposed } from './merge.ts';
import { solveByWave } from './replace.ts';
import { computeWaves, type PoolState, type WaveNode } from './waves.ts';

/** Default wave duration: launch a replacement until Ready (~90 s on EC2) plus the drain (~90 s). */
export const DEFAULT_WAVE_SECONDS = 180;

/** A node the plan removes: drifted (replaced under the budgets) or of a deleted NodePool. */
export interface PlannedNode {
  node: string;
  /** The NodeClaim's name when the cluster has one for this node. */
  nodeClaim?: string;
  nodePool: string;
  instanceType: string;
  /**
   * `NodePoolDrifted`, `RequirementsDrifted`, `InstanceTypeNotFound`, `NodeClassDrift`, `AMIDrift`, `SubnetDrift`,
   * `SecurityGroupDrift`, `CapacityReservationDrift`, ..., or `NodePoolDeleted`.
   */
  reason: string;
  detail: string;
  /**
   * For `AMIDrift`, `SubnetDrift`, `SecurityGroupDrift`, `CapacityReservationDrift`: the instance's image, subnet,
   * security-group or capacity-reservation IDs (`current`) and those the planned EC2NodeClass resolves to now
   * (`resolved`; AMIs: those for its instance type).
   */
  selectors?: { current: string[]; resolved: string[] };
  /** Reschedulable pods it holds. */
  pods: number;
  /** USD/hour of its offering (0 when the catalog does not price it). */
  priceUSDPerHour: number;
  /** 1-based wave that disrupts it; absent when blocked. */
  wave?: number;
  /** Why it is never disrupted (budgets), when so. */
  blocked?: string;
}

/** One wave: when it starts and what it disrupts. */
export interface PlanWave {
  wave: number;
  /** RFC 3339. */
  start: string;
  /** Seconds after the plan's `now`. */
  offsetSeconds: number;
  nodes: string[];
}

/** A NodeClaim the plan launches: a replacement (`replaces` non-empty) or a launch for pending pods. */
export interface PlannedNodeClaim {
  nodePool: string;
  instanceType: string;
  /** Every instance type it allows, cheapest first. */
  instanceTypeOptions: string[];
  zone: string;
  capacityType: string;
  priceUSDPerHour: number;
  /** Nodes whose pods it takes. */
  replaces: string[];
  /** Wave it launches in (the earliest of `replaces`); absent for a launch for pending pods. */
  wave?: number;
  /** `namespace/name` of its pods. */
  pods: string[];
}

/** A pod no NodePool of the proposal can place. `from` is the node it runs on today (absent: pending today). */
export interface PlanUnschedulable {
  pod: string;
  code: string;
  reason: string;
  from?: string;
}

/** Everything `capenter plan` prints (the `-o json` document minus `built`/`scheduling`). */
export interface PlanReport {
  region: string;
  now: string;
  waveSeconds: number;
  changes: Change[];
  nodes: PlannedNode[];
  waves: PlanWave[];
  replacements: PlannedNodeClaim[];
  launches: PlannedNodeClaim[];
  unschedulable: PlanUnschedulable[];
  cost: { beforeUSDPerHour: number; afterUSDPerHour: number; deltaUSDPerHour: number };
  /**
   * Whether AMI/subnet/security-group/capacity-reservation drift was evaluated against AWS, for which
   * EC2NodeClasses, and why not.
   */
  selectorDrift: SelectorDriftEvaluation;
  notices: string[];
  /** Problems that stop the plan (a deletion of nothing): exit 1 when non-empty. */
  errors: string[];
}

/** Options of {@link computePlan}. */
export interface PlanOptions {
  /** Catalog region; default the Nodes' `topology.kubernetes.io/region`, else us-east-1. */
  region?: string;
  /** Plan time, ms since the epoch (budgets' schedules are evaluated from it); default `Date.now()`. */
  now?: number;
  /** Wave duration in seconds (see `waves.ts`); default {@link DEFAULT_WAVE_SECONDS}. */
  waveSeconds?: number;
  catalog?: CatalogFunction;
  /**
   * AWS access for AMI/subnet/security-group/capacity-reservation drift (`aws.ts`); default unavailable ("no AWS
   * access was given"): the report then says those drifts were not evaluated when there are classes to resolve.
   */
  aws?: PlanAwsAccess;
}

/** The plan's input: the live cluster, the proposed objects (validated, defaulted) and the deletions. */
export interface PlanInput {
  live: readonly KubeObject[];
  proposed: readonly SourcedObject[];
  deletions: readonly Deletion[];
}

/** The catalog's own notes (spot estimates, unpriced types), printed by `simulate`, noise for a plan. */
const CATALOG_NOTE = /^Spot prices are estimates|instance types? ha(s|ve) no known price/;

const round6 = (v: number) => Math.round(v * 1e6) / 1e6;

/** The region the Nodes say they are in (`topology.kubernetes.io/region`), if any. */
export function regionOf(live: readonly KubeObject[]): string | undefined {
  for (const o of live)
    if (o.kind === 'Node' && o.metadata?.labels?.[LabelTopologyRegion])
      return o.metadata.labels[LabelTopologyRegion];
  return undefined;
}

/** Live and proposed NodePools and NodeClasses by name. */
function planObjects(live: readonly KubeObject[], merged: readonly SourcedObject[]): PlanObjects {
  const pools = (objs: readonly KubeObject[]) =>
    new Map(objs.filter((o) => o.kind === 'NodePool').map((o) => [o.metadata?.name ?? '', o as NodePool]));
  const classes = (objs: readonly KubeObject[]) =>
    new Map(
      objs
        .filter((o) => o.kind === 'EC2NodeClass' || o.kind === 'KWOKNodeClass')
        .map((o) => [`${o.kind}/${o.metadata?.name ?? ''}`, o]),
    );
  const after = merged.map((s) => s.object);
  return {
    livePools: pools(live),
    proposedPools: pools(after),
    liveClasses: classes(live),
    proposedClasses: classes(after),
  };
}

/** The price of a Node's offering from its labels, 0 when the catalog does not have it. */
function nodePrice(node: Node, types: ReadonlyMap<string, InstanceType>): number {
  const l = node.metadata.labels ?? {};
  const it = types.get(l[LabelInstanceType] ?? '');
  if (!it) return 0;
  return (
    offeringPrice(it, l[LabelTopologyZone], l[LabelCapacityType]) ??
    offeringPrice(it, undefined, l[LabelCapacityType]) ??
    0
  );
}

/**
 * Computes the plan (see the module doc). Never throws for bad input: deletions of nothing are in `errors`,
 * NodePools that cannot launch (a missing NodeClass) in `notices`. Throws only if the catalog fails.
 */
export async function computePlan(input: PlanInput, opts: PlanOptions = {}): Promise<PlanReport> {
  const region = opts.region ?? regionOf(input.live) ?? DEFAULT_REGION;
  const now = opts.now ?? Date.now();
  const waveSeconds = opts.waveSeconds ?? DEFAULT_WAVE_SECONDS;
  const catalog: CatalogFunction = opts.catalog ?? ((args) => getInstanceTypes(args));
  const merged = mergeProposed(input.live, input.proposed, input.deletions);
  const built = await buildSchedulingInput(merged.objects, { region, catalog, noDefaultNodePool: true });
  const notices = [
    ...built.notices.filter((n) => !CATALOG_NOTE.test(n)),
    ...built.errors.map((e) =>
      e.message
        .replace(' is not in the input', ' does not exist in the planned cluster')
        .replace('this NodePool is not simulated', 'this NodePool can launch nothing'),
    ),
  ];
  const objs = planObjects(input.live, merged.objects);
  const types = new Map<string, InstanceType>();
  for (const t of (await catalog({ region })).instanceTypes) types.set(t.name, t);
  for (const list of Object.values(built.input.instanceTypes)) for (const t of list) types.set(t.name, t);

  const selector = await evaluateSelectorDrift(
    input.live,
    objs,
    opts.aws ?? { unavailable: 'no AWS access was given to plan' },
    () => now,
  );
  notices.push(...selector.notices);
  const drifted = driftedNodes(built, input.live, objs, types, notices, now, selector.drifts);
  const liveNodes = input.live.filter(
    (o): o is Node => o.kind === 'Node' && o.metadata?.labels?.[LabelNodePool] !== undefined,
  );
  const removed: PlannedNode[] = [...drifted.values()].map((d) => d.planned);
  for (const node of liveNodes) {
    const pool = merged.removedNodes.get(node.metadata.name ?? '');
    if (pool === undefined) continue;
    const pods = [...merged.evicted.values()].filter((n) => n === node.metadata.name).length;
    removed.push({
      node: node.metadata.name ?? '',
      nodePool: pool,
      instanceType: node.metadata.labels?.[LabelInstanceType] ?? '',
      reason: 'NodePoolDeleted',
      detail: `NodePool "${pool}" is deleted: its NodeClaims are deleted with it (no disruption budget applies)`,
      pods,
      priceUSDPerHour: round6(nodePrice(node, types)),
    });
  }
  const waves = planWaves(removed, built, objs, now, waveSeconds);
  const solved = solveByWave(built, waves, (n) => drifted.get(n)?.existing.pods, merged.evicted);
  const claims = solved.claims.map((c) => plannedClaim(c.plan, c.wave, solved.origin));
  const before = liveNodes.reduce((s, n) => s + nodePrice(n, types), 0);
  const after =
    before -
    removed.filter((n) => n.wave !== undefined).reduce((s, n) => s + n.priceUSDPerHour, 0) +
    claims.reduce((s, c) => s + c.priceUSDPerHour, 0);
  return {
    region,
    now: new Date(now).toISOString(),
    waveSeconds,
    changes: merged.changes,
    nodes: removed,
    waves,
    replacements: claims.filter((c) => c.replaces.length > 0),
    launches: claims.filter((c) => c.replaces.length === 0),
    unschedulable: unschedulableOf(solved.unschedulable, solved.origin),
    cost: {
      beforeUSDPerHour: round6(before),
      afterUSDPerHour: round6(after),
      deltaUSDPerHour: round6(after - before),
    },
    selectorDrift: selector.evaluation,
    notices,
    errors: merged.errors,
  };
}

/** A drifted node with its scheduling entry. */
interface DriftedNode {
  existing: ExistingNode;
  drift: NodeDrift;
  planned: PlannedNode;
}

/** Every managed node the proposal drifts, by node name. */
function driftedNodes(
  built: BuiltInput,
  live: readonly KubeObject[],
  objs: PlanObjects,
  types: ReadonlyMap<string, InstanceType>,
  notices: string[],
  now: number,
  selectorDrifts: ReadonlyMap<string, NodeSelectorDrift>,
): Map<string, DriftedNode> {
  const claims = new Map<string, KubeObject>();
  for (const o of live) {
    if (o.kind !== 'NodeClaim') continue;
    const nodeName = (o as { status?: { nodeName?: string } }).status?.nodeName;
    if (nodeName) claims.set(nodeName, o);
  }
  const usable = new Map(built.input.nodePools.map((np) => [np.metadata.name, np]));
  const out = new Map<string, DriftedNode>();
  for (const en of built.input.existingNodes) {
    const poolName = en.node.metadata.labels?.[LabelNodePool];
    if (poolName === undefined) continue;
    const pool = usable.get(poolName);
    if (!pool) {
      if (!objs.proposedPools.has(poolName))
        notices.push(
          `Node ${en.node.metadata.name}: its NodePool "${poolName}" does not exist; it is left as it is.`,
        );
      continue;
    }
    const claim = claims.get(en.node.metadata.name ?? '');
    const dn: DisruptionNode = { node: en.node, pods: en.pods };
    const nc = (claim ?? en.nodeClaim) as DisruptionNode['nodeClaim'];
    if (nc) dn.nodeClaim = nc;
    const nodeName = en.node.metadata.name ?? '';
    const drift = nodeDrift(
      dn,
      pool,
      built.input.instanceTypes[poolName] ?? [],
      objs,
      selectorDrifts.get(nodeName),
    );
    if (!drift) continue;
    const blocked = doNotDisruptBlocked(dn, now);
    out.set(en.node.metadata.name ?? '', {
      existing: en,
      drift,
      planned: {
        node: en.node.metadata.name ?? '',
        ...(claim?.metadata?.name ? { nodeClaim: claim.metadata.name } : {}),
        nodePool: poolName,
        instanceType: en.node.metadata.labels?.[LabelInstanceType] ?? '',
        reason: drift.reason,
        detail: drift.detail,
        ...(drift.selectors ? { selectors: drift.selectors } : {}),
        pods: en.pods.filter(isReschedulable).length,
        priceUSDPerHour: round6(nodePrice(en.node, types)),
        ...(blocked ? { blocked } : {}),
      },
    });
  }
  return out;
}

/**
 * Why a drifted node is never disrupted, as the disruption core's candidate check says it
 * (`disruption/candidates.ts`): the Node or NodeClaim annotated `karpenter.sh/do-not-disrupt: "true"`, or a pod
 * protected by it while the NodeClaim has no `terminationGracePeriod` (with one, drift proceeds and the drain is
 * bounded by it). PodDisruptionBudgets only slow the drain and are not predicted.
 */
function doNotDisruptBlocked(dn: DisruptionNode, now: number): string | undefined {
  const ann = (o: { metadata?: { annotations?: Record<string, string> } } | undefined) =>
    o?.metadata?.annotations?.[AnnotationDoNotDisrupt];
  if (ann(dn.node) === 'true' || ann(dn.nodeClaim) === 'true')
    return 'drifted, but the node is annotated karpenter.sh/do-not-disrupt';
  if (dn.nodeClaim?.spec.terminationGracePeriod) return undefined;
  const p = dn.pods.find((x) => isActive(x) && isDoNotDisruptActive(x, now));
  return p
    ? `drifted, but ${doNotDisruptBlock(p, now)} (and the NodeClaim has no terminationGracePeriod)`
    : undefined;
}

/** Waves for the removed nodes (sets each node's `wave` or `blocked`). */
function planWaves(
  removed: PlannedNode[],
  built: BuiltInput,
  objs: PlanObjects,
  now: number,
  waveSeconds: number,
): PlanWave[] {
  const state = new Map<string, PoolState>();
  for (const en of built.input.existingNodes) {
    const pool = en.node.metadata.labels?.[LabelNodePool];
    if (pool === undefined) continue;
    const s = state.get(pool) ?? { nodes: 0, disrupting: 0 };
    s.nodes++;
    if (en.markedForDeletion) s.disrupting++;
    state.set(pool, s);
  }
  const nodes: WaveNode[] = removed
    .filter((n) => !n.blocked)
    .map((n) => ({
      name: n.node,
      nodePool: n.nodePool,
      pods: n.pods,
      budgeted: n.reason !== 'NodePoolDeleted',
    }));
  const plan = computeWaves(nodes, objs.proposedPools, state, now, waveSeconds);
  const waveOf = new Map<string, number>();
  for (const w of plan.waves) for (const n of w.nodes) waveOf.set(n, w.index);
  for (const n of removed) {
    const w = waveOf.get(n.node);
    if (w !== undefined) n.wave = w;
    const b = plan.blocked.get(n.node);
    if (b !== undefined) n.blocked = b;
  }
  return plan.waves.map((w) => ({
    wave: w.index,
    start: new Date(w.startMs).toISOString(),
    offsetSeconds: Math.round((w.startMs - now) / 1000),
    nodes: w.nodes,
  }));
}

/** A launched NodeClaim, attributed to the nodes whose pods it takes (a launch when none) and its wave. */
function plannedClaim(
  plan: NodeClaimPlan,
  wave: number | undefined,
  origin: ReadonlyMap<string, string>,
): PlannedNodeClaim {
  const replaces = [
    ...new Set(plan.pods.map((p) => origin.get(podKey(p))).filter((n): n is string => !!n)),
  ].sort();
  return {
    nodePool: plan.nodePool,
    instanceType: plan.cheapest.instanceType.name,
    instanceTypeOptions: plan.instanceTypeOptions.map((t) => t.name),
    zone: plan.cheapest.offering.zone,
    capacityType: plan.cheapest.offering.capacityType,
    priceUSDPerHour: round6(plan.cheapest.offering.priceUSDPerHour),
    replaces,
    ...(replaces.length > 0 && wave !== undefined ? { wave } : {}),
    pods: plan.pods.map(podKey).sort(),
  };
}

/**
 * The pods no NodePool can place, sorted by name, with the node they run on today. Pending DaemonSet pods are left
 * out: capenter never provisions for them (their nodes come with the DaemonSet's own scheduling).
 */
function unschedulableOf(
  list: readonly Unschedulable[],
  origin: ReadonlyMap<string, string>,
): PlanUnschedulable[] {
  const out: PlanUnschedulable[] = list
    .map((u) => ({ pod: podKey(u.pod), code: u.code as string, reason: u.message }))
    .map((u) => {
      const from = origin.get(u.pod);
      return from ? { ...u, from } : u;
    });
  return out.sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
}
