/**
 * Disruption cost of a candidate (upstream kubernetes-sigs/karpenter `pkg/utils/disruption/disruption.go`):
 * the eviction cost of its reschedulable pods, scaled down as the node approaches its `expireAfter`.
 * Candidates are ranked by this cost, cheapest to disrupt first.
 */
import type { Pod } from '../apis/core.ts';
import { tryParseDuration } from '../apis/duration.ts';
import type { NodeClaim } from '../apis/karpenter.ts';

/** Annotation Kubernetes uses to rank pods for deletion (ReplicaSet scale-down); higher = costlier to evict. */
export const AnnotationPodDeletionCost = 'controller.kubernetes.io/pod-deletion-cost';

/**
 * Eviction cost of one pod, in [-10, 10] (default 1): `1 + pod-deletion-cost / 2^27 + priority / 2^25`, clamped.
 * A malformed `pod-deletion-cost` is ignored (as upstream, which only logs it).
 */
export function evictionCost(pod: Pod): number {
  let cost = 1;
  const raw = pod.metadata.annotations?.[AnnotationPodDeletionCost];
  if (raw !== undefined) {
    const v = Number(raw);
    if (raw.trim() !== '' && Number.isFinite(v)) cost += v / 2 ** 27;
  }
  const prio = pod.spec?.priority;
  if (typeof prio === 'number' && Number.isFinite(prio)) cost += prio / 2 ** 25;
  return Math.min(10, Math.max(-10, cost));
}

/** Σ {@link evictionCost} over `pods` (upstream `ReschedulingCost`). */
export function reschedulingCost(pods: readonly Pod[]): number {
  let sum = 0;
  for (const p of pods) sum += evictionCost(p);
  return sum;
}

/**
 * Fraction of the NodeClaim's lifetime left, in [0, 1] (upstream `LifetimeRemaining`): 1 when `expireAfter` is
 * unset, `Never` or unparseable, or the creation time is unknown; else `(expireAfter − age) / expireAfter`, clamped.
 * @param createdMs creation time of the NodeClaim, ms since the epoch (undefined: unknown)
 * @param nowMs current time, ms since the epoch
 */
export function lifetimeRemaining(
  expireAfter: string | undefined,
  createdMs: number | undefined,
  nowMs: number,
): number {
  if (expireAfter === undefined || createdMs === undefined) return 1;
  const d = tryParseDuration(expireAfter);
  if (!d.ok || !Number.isFinite(d.seconds) || d.seconds <= 0) return 1;
  const age = (nowMs - createdMs) / 1000;
  return Math.min(1, Math.max(0, (d.seconds - age) / d.seconds));
}

/** Parses an RFC 3339 timestamp to ms since the epoch; undefined when absent or malformed. */
export function parseTime(ts: string | undefined): number | undefined {
  if (!ts) return undefined;
  const v = Date.parse(ts);
  return Number.isNaN(v) ? undefined : v;
}

/** Creation time of a NodeClaim (ms), undefined when unknown. */
export function nodeClaimCreated(nc: NodeClaim): number | undefined {
  return parseTime(nc.metadata.creationTimestamp);
}

/** Upstream candidate disruption cost: {@link reschedulingCost} × {@link lifetimeRemaining}. */
export function disruptionCost(
  pods: readonly Pod[],
  expireAfter: string | undefined,
  createdMs: number | undefined,
  nowMs: number,
): number {
  return reschedulingCost(pods) * lifetimeRemaining(expireAfter, createdMs, nowMs);
}

/** Upstream `PerNodeBaseDisruptionCost`: the inherent cost of draining one node (cordon, drain, replacement). */
export const PER_NODE_BASE_DISRUPTION_COST = 1;

/**
 * True when no reschedulable pod of the candidate adds a positive eviction cost (upstream v1.14 `IsEmpty`:
 * reschedule disruption cost ≤ {@link PER_NODE_BASE_DISRUPTION_COST}): a node without reschedulable pods, or whose
 * pods all have an eviction cost ≤ 0 (a very negative `controller.kubernetes.io/pod-deletion-cost` or priority).
 * Emptiness deletes such nodes under the `Empty` budget; consolidation leaves them to it. Pure.
 */
export function isEmptyCandidate(c: { rescheduleDisruptionCost: number }): boolean {
  return c.rescheduleDisruptionCost <= PER_NODE_BASE_DISRUPTION_COST;
}

/** 1 + Σ max(0, eviction cost) over `pods` (upstream `computeRescheduleDisruptionCost` / `StateNode.DisruptionCost`). */
export function rescheduleDisruptionCost(pods: readonly Pod[]): number {
  let cost = PER_NODE_BASE_DISRUPTION_COST;
  for (const p of pods) cost += Math.max(0, evictionCost(p));
  return cost;
}
