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
  // Bookkeeping that keeps the search cheap without changing its outcome: the plans in the order they changed (two
  // per move: source, target) and the failed target searches, keyed so that pods every target treats alike but
  // for their size share a key ({@link failureKey}). A pod at least as large in every resource as one whose search
  // failed, with no more gain, only needs the plans changed since that failure plus its source (every other plan
  // was found not to take the smaller pod for less, and a larger pod never costs a target less).
  const changes: NewNodeClaim[] = [];
  const failures = new Map<
    string,
    Array<{ vec: Float64Array; gain: number; at: number; source: NewNodeClaim }>
  >();
  // NodeClaims by the single domains of some keys (requirements do not change here): the only possible targets of
  // a pod whose topology pins those keys.
  const buckets = new Map<string, NewNodeClaim[]>();
  const bucket = (keys: ReadonlySet<string>, source: NewNodeClaim): readonly NewNodeClaim[] => {
    if (keys.size === 0) return eligible;
    let sig = '';
    for (const k of keys) sig += `${k}=${singleDomain(source, k)}\u0000`;
    let hit = buckets.get(sig);
    if (!hit) {
      hit = eligible.filter((p) => [...keys].every((k) => singleDomain(p, k) === singleDomain(source, k)));
      buckets.set(sig, hit);
    }
    return hit;
  };
  // Per NodeClaim: a version bumped by every move in or out, and its movable pods with their gains at a version.
  const version = new Map<NewNodeClaim, number>();
  const movable = new Map<NewNodeClaim, { version: number; list: Candidate[] }>();
  for (let sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    let movedThisSweep = 0;
    for (const source of eligible) {
      const v = version.get(source) ?? 0;
      let entry = movable.get(source);
      if (!entry || entry.version !== v) {
        entry = { version: v, list: candidatesOf(source, topology) };
        movable.set(source, entry);
      }
      for (const { pod, keys, gain: cachedGain } of entry.list) {
        if (source.pods.length <= 1) break;
        let gain = cachedGain;
        if ((version.get(source) ?? 0) !== entry.version) {
          const price = source.price();
          gain = price - source.priceAfter(undefined, pod, price);
        }
        if (!(gain > EPSILON)) continue;
        const fk = failureKey(pod, keys, source, topology);
        let known = failures.get(fk);
        if (!known) {
          known = [];
          failures.set(fk, known);
        }
        // a failure for a pod no larger in any resource, with at least this gain, holds for this pod too
        const failed = known.find((f) => f.gain >= gain && vectorFits(f.vec, pod.vec));
        let targets = bucket(keys, source);
        if (failed) {
          const since = new Set(changes.slice(2 * failed.at));
          since.add(failed.source);
          since.delete(source);
          targets = [...since].sort((a, b) => a.seq - b.seq);
        }
        const target =
          targets.length > 0 ? cheapestTarget(targets, source, pod, keys, gain, topology) : undefined;
        if (!target) {
          known.push({ vec: pod.vec, gain, at: moved + movedThisSweep, source });
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
        changes.push(source, target.plan);
        version.set(source, (version.get(source) ?? 0) + 1);
        version.set(target.plan, (version.get(target.plan) ?? 0) + 1);
        movedThisSweep++;
      }
    }
    moved += movedThisSweep;
    if (movedThisSweep === 0) break;
  }
  return moved;
}

/** A movable pod of a NodeClaim: the topology keys whose single domain must stay, the gain of taking it off. */
interface Candidate {
  pod: PodInfo;
  keys: ReadonlySet<string>;
  /** Price drop (USD/hour) of the NodeClaim without the pod. */
  gain: number;
}

/** The movable pods of `plan` (see the module doc), largest cpu then memory first, with their gains. */
function candidatesOf(plan: NewNodeClaim, topology: Topology): Candidate[] {
  const out: Candidate[] = [];
  const price = plan.price();
  for (const pod of plan.pods) {
    const keys = pod.hostPorts.length === 0 ? topology.trackedKeys(pod, pod.groups, pod.inverse) : undefined;
    if (!keys || ![...keys].every((k) => singleDomain(plan, k) !== undefined)) continue;
    out.push({ pod, keys, gain: price - plan.priceAfter(undefined, pod, price) });
  }
  return out.sort((a, b) => b.pod.vec[0]! - a.pod.vec[0]! || b.pod.vec[1]! - a.pod.vec[1]!);
}

/**
 * Pods every target treats alike but for their size share a key: requirements, tolerations, what hostname topology decides for
 * them ({@link Topology.hostnameKey}) and the pinned domains that must stay.
 */
function failureKey(
  pod: PodInfo,
  keys: ReadonlySet<string>,
  source: NewNodeClaim,
  topology: Topology,
): string {
  let k = `${pod.requirements.signature()}|${JSON.stringify(pod.constraints.tolerations)}|${
    topology.hostnameKey(pod, pod.groups) ?? ''
  }`;
  for (const key of keys) k += `|${key}=${singleDomain(source, key)}`;
  return k;
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
  // the smallest price increase (0 when the current cheapest option still holds the pod), ties by order
  let best: NewNodeClaim | undefined;
  let bestInc = gain - EPSILON;
  for (const plan of plans) {
    let inc = 0;
    if (!fitsCheapest(plan, pod)) {
      if (!plan.mayHold(pod)) continue;
      const price = plan.price();
      inc = plan.priceAfter(pod, undefined, price + bestInc) - price;
    }
    if (!(inc < bestInc) || !accepts(plan)) continue;
    best = plan;
    bestInc = inc;
    if (inc <= 0) break;
  }
  if (!best) return undefined;
  const need = best.requests.slice();
  for (let i = 0; i < need.length; i++) need[i] = need[i]! + pod.vec[i]!;
  let firstFit = best.start;
  while (firstFit < best.options.length && !vectorFits(need, best.options[firstFit]!.t.alloc)) firstFit++;
  return { plan: best, add: { requirements: best.requirements, need, firstFit } };
}
