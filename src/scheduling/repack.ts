/**
 * The repacking post-pass (capenter addition, not upstream; internal to `scheduler.ts`): after every pod is
 * placed, a pod that no topology group concerns moves from one planned NodeClaim to another when that lowers the
 * plan's total price — its NodeClaim shrinks to a cheaper instance type by more than the other one grows. This
 * undoes the first-fit decreasing packing's typical waste at the end of a run: a NodeClaim that grew into the next
 * size (e.g. c6a.xlarge → c6a.2xlarge) for a few hundred millicores that fit elsewhere.
 *
 * Upstream's decision shape is kept: each NodeClaim still takes its cheapest option that fits its pods, and a
 * moved pod lands only on a NodeClaim that satisfies its requirements, taints and host ports as it stands.
 * Movable pods (`topology.ts` `trackedKeys`): for every non-hostname key of a topology group that concerns them
 * (e.g. a zonal spread or affinity) both NodeClaims are pinned to the same single domain, so those counts stay;
 * hostname-keyed groups only where the target is checked as for any placement (their own spread and
 * anti-affinity, others' inverse anti-affinity) and re-counted; no host ports; requirements already met by the
 * target's requirements (nothing narrows). NodeClaims of NodePools
 * with `minValues` or `spec.limits` are left alone (their option sets carry extra rules).
 *
 * Deterministic: NodeClaims in creation order, pods largest first, targets by price increase then creation order.
 */
import { vectorFits } from './instancetypes.ts';
import { type NewNodeClaim, type PendingAdd, subsumes } from './nodeclaim.ts';
import type { PodInfo } from './podinfo.ts';
import { untoleratedTaint } from './taints.ts';
import type { Topology } from './topology.ts';

/** How many sweeps over the NodeClaims at most (each sweep only lowers the total price). */
const MAX_SWEEPS = 3;
/** Price differences below this (USD/hour) are treated as no gain (floating-point noise). */
const EPSILON = 1e-9;

/**
 * Moves movable pods between `plans` while a move lowers the total price (see the module doc). Mutates the plans
 * (pods, requests, options) and reports each move to `onMove`; returns the number of pods moved.
 */
export function repack(
  plans: readonly NewNodeClaim[],
  topology: Topology,
  onMove: (pod: PodInfo, to: NewNodeClaim) => void,
): number {
  const eligible = plans.filter((p) => !p.pool.hasMinValues && p.limited === undefined && p.pods.length > 0);
  if (eligible.length < 2) return 0;
  let moved = 0;
  // Bookkeeping that keeps later sweeps cheap without changing their outcome: when a plan last changed (in moves),
  // and when a pod's target search last failed. A failed pod whose own plan is unchanged only needs to look at the
  // plans that changed since (every other plan was already found not to take it for less than the same gain).
  const changedAt = new Map<NewNodeClaim, number>();
  const failedAt = new Map<PodInfo, number>();
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    let movedThisSweep = 0;
    for (const source of eligible) {
      const candidates: Array<{ pod: PodInfo; keys: ReadonlySet<string> }> = [];
      for (const pod of source.pods) {
        const keys =
          pod.hostPorts.length === 0 ? topology.trackedKeys(pod, pod.groups, pod.inverse) : undefined;
        if (keys && [...keys].every((k) => singleDomain(source, k) !== undefined))
          candidates.push({ pod, keys });
      }
      candidates.sort((a, b) => b.pod.vec[0]! - a.pod.vec[0]! || b.pod.vec[1]! - a.pod.vec[1]!);
      for (const { pod, keys } of candidates) {
        if (source.pods.length <= 1) break;
        const price = source.price();
        const gain = price - source.priceAfter(undefined, pod, price);
        if (!(gain > EPSILON)) continue;
        const failed = failedAt.get(pod);
        const targets =
          failed !== undefined && (changedAt.get(source) ?? -1) < failed
            ? eligible.filter((p) => (changedAt.get(p) ?? -1) >= failed)
            : eligible;
        const target =
          targets.length > 0 ? cheapestTarget(targets, source, pod, keys, gain, topology) : undefined;
        if (!target) {
          failedAt.set(pod, moved + movedThisSweep);
          continue;
        }
        topology.record(
          pod,
          pod.inverse,
          { kind: 'new', hostname: source.hostname, requirements: source.requirements },
          -1,
        );
        source.remove(pod);
        target.plan.commit(pod, target.add, topology);
        onMove(pod, target.plan);
        changedAt.set(source, moved + movedThisSweep);
        changedAt.set(target.plan, moved + movedThisSweep);
        failedAt.delete(pod);
        movedThisSweep++;
      }
    }
    moved += movedThisSweep;
    if (movedThisSweep === 0) break;
  }
  return moved;
}

/** True when `pod` fits the free room of the plan's current cheapest option. */
function fitsCheapest(plan: NewNodeClaim, pod: PodInfo): boolean {
  const left = plan.cheapLeft;
  for (let i = 0; i < left.length; i++) if (pod.vec[i]! > left[i]!) return false;
  return true;
}

/** The single domain of `key` a NodeClaim is pinned to, else undefined. */
function singleDomain(plan: NewNodeClaim, key: string): string | undefined {
  const r = plan.requirements.get(key);
  if (!r || r.complement || r.values.size !== 1) return undefined;
  const [d] = r.values;
  return d !== undefined && r.has(d) ? d : undefined;
}

/**
 * The NodeClaim (other than `source`) that takes `pod` for the smallest price increase, when that increase is
 * below `gain`; ties by creation order.
 */
function cheapestTarget(
  plans: readonly NewNodeClaim[],
  source: NewNodeClaim,
  pod: PodInfo,
  keys: ReadonlySet<string>,
  gain: number,
  topology: Topology,
): { plan: NewNodeClaim; add: PendingAdd } | undefined {
  const accepts = (plan: NewNodeClaim): boolean => {
    if (plan === source || !subsumes(plan.requirements, pod.requirements)) return false;
    for (const k of keys) if (singleDomain(plan, k) !== singleDomain(source, k)) return false;
    if (topology.hostnameBlocked(pod, pod.groups, plan.hostname)) return false;
    return !untoleratedTaint(pod.constraints.tolerations, plan.pool.taints, { preferNoSchedule: true });
  };
  let best: NewNodeClaim | undefined;
  // no extra price first (the current cheapest option still holds the pod), then the smallest increase
  for (const plan of plans) {
    if (fitsCheapest(plan, pod) && accepts(plan)) {
      best = plan;
      break;
    }
  }
  let bestInc = gain - EPSILON;
  if (!best) {
    for (const plan of plans) {
      if (!plan.mayHold(pod)) continue;
      const price = plan.price();
      const inc = plan.priceAfter(pod, undefined, price + bestInc) - price;
      if (!(inc < bestInc) || !accepts(plan)) continue;
      best = plan;
      bestInc = inc;
    }
  }
  if (!best) return undefined;
  const need = best.requests.slice();
  for (let i = 0; i < need.length; i++) need[i] = need[i]! + pod.vec[i]!;
  let firstFit = best.start;
  while (firstFit < best.options.length && !vectorFits(need, best.options[firstFit]!.t.alloc)) firstFit++;
  return { plan: best, add: { requirements: best.requirements, need, firstFit } };
}
