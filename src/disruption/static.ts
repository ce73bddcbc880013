/**
 * Static capacity decisions (upstream kubernetes-sigs/karpenter v1.14 `pkg/controllers/static/provisioning` and
 * `pkg/controllers/static/deprovisioning`, `pkg/controllers/disruption/staticdrift.go`): how many NodeClaims a
 * static NodePool (`spec.replicas` set) needs created under its `limits.nodes`, and which NodeClaims a scale-down
 * deletes. Pure and synchronous; the `static.capacity` controller (`controllers/static/controller.ts`) feeds it
 * cluster state and acts on the answer.
 */

import type { Pod } from '../apis/core.ts';
import { isDoNotDisruptActive } from '../apis/donotdisrupt.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import { isOwnedByDaemonSet } from '../apis/pod.ts';
import { parseQuantity } from '../apis/quantity.ts';
import { cheapestOffering, instanceTypeCompatible, providerKeys } from '../scheduling/instancetypes.ts';
import { Requirements } from '../scheduling/requirements.ts';
import type { NodeClaimPlan } from '../scheduling/types.ts';
import { lifetimeRemaining, nodeClaimCreated, reschedulingCost } from './cost.ts';

/**
 * A static NodePool's NodeClaims by state, as upstream `NodePoolState.GetNodeCount` counts them: `active`
 * (neither deleting nor pending disruption), `deleting` (deletion requested or marked for deletion),
 * `pendingDisruption` (a disruption command is replacing it); `reserved` are creates still on the wire.
 */
export interface StaticCounts {
  active: number;
  deleting: number;
  pendingDisruption: number;
  reserved?: number;
}

/** What {@link staticScaleUp} decided: NodeClaims to create; `limited` when `limits.nodes` cut the count. */
export interface StaticScaleUp {
  /** NodeClaims to create now (≥ 0). */
  create: number;
  /** True when `limits.nodes` allowed fewer than were wanted (upstream logs "nodepool node limit reached"). */
  limited: boolean;
  /** Replicas still missing after this decision (wanted − create). */
  short: number;
}

/**
 * The `limits.nodes` of a NodePool as a count (upstream `np.Spec.Limits[resources.Node]`), `Infinity` when
 * unset. @throws Error naming the NodePool and field when the quantity is malformed.
 */
export function nodeLimitOf(nodePool: NodePool): number {
  const raw = nodePool.spec.limits?.nodes;
  if (raw === undefined) return Number.POSITIVE_INFINITY;
  try {
    return Math.floor(parseQuantity(String(raw)));
  } catch (err) {
    throw new Error(
      `NodePool "${nodePool.metadata.name}" spec.limits.nodes "${String(raw)}" is not a quantity (${(err as Error).message}); set it to a whole number of nodes`,
    );
  }
}

/**
 * Upstream static provisioning `Reconcile`: nothing when `active + pendingDisruption ≥ replicas` (replacements of
 * drifted nodes are already coming); else wants `replicas − active` and is granted at most
 * `nodeLimit − (active + deleting + pendingDisruption) − reserved` (upstream `ReserveNodeCount`, never negative).
 * @param replicas `spec.replicas` (≥ 0)
 * @param nodeLimit {@link nodeLimitOf} (`Infinity` when unset)
 */
export function staticScaleUp(replicas: number, counts: StaticCounts, nodeLimit: number): StaticScaleUp {
  const { active, deleting, pendingDisruption } = counts;
  if (active + pendingDisruption >= replicas) return { create: 0, limited: false, short: 0 };
  const wanted = replicas - active;
  const remaining = nodeLimit - (active + deleting + pendingDisruption) - (counts.reserved ?? 0);
  const create = Math.max(0, Math.min(wanted, remaining));
  return { create, limited: create < wanted, short: wanted - create };
}

/** Upstream static deprovisioning: NodeClaims to delete, `active − replicas` (0 when not above replicas). */
export function staticScaleDownCount(replicas: number, counts: StaticCounts): number {
  return Math.max(0, counts.active - replicas);
}

/** One NodeClaim of a static NodePool as scale-down sees it. */
export interface StaticMember {
  nodeClaim: NodeClaim;
  /** Every pod bound to its Node (DaemonSet pods included); empty when it has no Node. */
  pods: readonly Pod[];
  /** True when deletion was requested or it is marked for deletion (never picked). */
  deleting: boolean;
}

/** A picked NodeClaim and why (for the log and the Event). */
export interface StaticPick {
  nodeClaim: NodeClaim;
  /** `unresolved` (no provider ID yet), `empty` (only DaemonSet pods, none do-not-disrupt) or `cost`. */
  why: 'unresolved' | 'empty' | 'cost';
}

/** True when `pods` are none, or all DaemonSet-owned with no active do-not-disrupt (upstream emptiness filter). */
function isEmpty(pods: readonly Pod[], nowMs: number): boolean {
  return pods.every(isOwnedByDaemonSet) && !pods.some((p) => isDoNotDisruptActive(p, nowMs));
}

/**
 * Which `count` NodeClaims a scale-down deletes, in upstream `getDeprovisioningCandidates` order: first unresolved
 * NodeClaims (no `status.providerID`: never launched or the create failed), by name; then resolved ones that are
 * empty ({@link isEmpty}), by name; then the rest with no active do-not-disrupt pod before those with one, each
 * by `reschedulingCost(pods) × lifetimeRemaining` ascending (ties by name). Deleting members are never picked.
 * @param nowMs cluster clock, ms since the epoch (do-not-disrupt durations, lifetime remaining)
 */
export function staticScaleDownCandidates(
  nodePool: NodePool,
  members: readonly StaticMember[],
  count: number,
  nowMs: number,
): StaticPick[] {
  const byName = (a: StaticMember, b: StaticMember) =>
    (a.nodeClaim.metadata.name ?? '').localeCompare(b.nodeClaim.metadata.name ?? '');
  const live = members.filter((m) => !m.deleting).sort(byName);
  const unresolved = live.filter((m) => !m.nodeClaim.status?.providerID);
  const resolved = live.filter((m) => !!m.nodeClaim.status?.providerID);
  const empty = resolved.filter((m) => isEmpty(m.pods, nowMs));
  const expireAfter = nodePool.spec.template.spec.expireAfter;
  const rest = resolved
    .filter((m) => !isEmpty(m.pods, nowMs))
    .map((m) => ({
      m,
      dnd: m.pods.some((p) => isDoNotDisruptActive(p, nowMs)),
      cost:
        reschedulingCost(m.pods) *
        lifetimeRemaining(m.nodeClaim.spec.expireAfter ?? expireAfter, nodeClaimCreated(m.nodeClaim), nowMs),
    }))
    .sort((a, b) => Number(a.dnd) - Number(b.dnd) || a.cost - b.cost || byName(a.m, b.m));
  const picks: StaticPick[] = [
    ...unresolved.map((m) => ({ nodeClaim: m.nodeClaim, why: 'unresolved' as const })),
    ...empty.map((m) => ({ nodeClaim: m.nodeClaim, why: 'empty' as const })),
    ...rest.map((r) => ({ nodeClaim: r.m.nodeClaim, why: 'cost' as const })),
  ];
  return picks.slice(0, Math.max(0, count));
}

/**
 * The launch plan of one static NodeClaim (upstream `NewNodeClaimTemplate` + `ToNodeClaim` with
 * `IsStaticNodeClaim`): the template requirements, no instance-type options (the cloud provider's `create` picks
 * the cheapest compatible offering), no pods, no requests. `cheapest` is the cheapest available offering of a type
 * the requirements allow, for logs and prices. Returns a reason string naming the NodePool when the requirements
 * are malformed or no type in `instanceTypes` fits them.
 * @param instanceTypes the NodePool's instance types (the cloud provider's list for its NodeClass)
 */
export function staticPlan(
  nodePool: NodePool,
  instanceTypes: readonly InstanceType[],
): NodeClaimPlan | string {
  const name = nodePool.metadata.name ?? '';
  const requirements = structuredClone(nodePool.spec.template.spec.requirements ?? []);
  let reqs: Requirements;
  try {
    reqs = Requirements.fromNodeSelector(requirements);
  } catch (err) {
    return `NodePool "${name}" spec.template.spec.requirements are malformed: ${(err as Error).message}`;
  }
  const keys = providerKeys(instanceTypes);
  let best: NodeClaimPlan['cheapest'] | undefined;
  for (const it of instanceTypes) {
    if (!instanceTypeCompatible(it, reqs, keys)) continue;
    const o = cheapestOffering(it.offerings, reqs);
    if (!o) continue;
    const better =
      !best ||
      o.priceUSDPerHour < best.offering.priceUSDPerHour ||
      (o.priceUSDPerHour === best.offering.priceUSDPerHour && it.name < best.instanceType.name);
    if (better) best = { instanceType: it, offering: o };
  }
  if (!best)
    return `no instance type with an available offering satisfies NodePool "${name}" spec.template.spec.requirements`;
  return {
    nodePool: name,
    requirements,
    instanceTypeOptions: [],
    pods: [],
    requests: {},
    daemonOverhead: {},
    cheapest: best,
  };
}
