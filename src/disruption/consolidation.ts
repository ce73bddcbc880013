/**
 * Shared consolidation logic (upstream kubernetes-sigs/karpenter `pkg/controllers/disruption/consolidation.go`):
 * `computeConsolidation` simulates removing a set of candidates and turns the outcome into a command:
 * - some pod would not schedule → no command;
 * - no new NodeClaim needed → `delete`;
 * - more than one new NodeClaim needed → no command;
 * - one new NodeClaim → `replace`, keeping only the instance types whose worst launch price (the most expensive
 *   compatible available offering of the capacity type it would launch as: reserved, else spot, else on-demand)
 *   is below the candidates' summed current price; none left → no command;
 * - all candidates spot and the replacement may be spot: only with the `SpotToSpotConsolidation` gate, with at
 *   least {@link MIN_SPOT_TO_SPOT_TYPES} cheaper types for a single candidate, truncated to the 15 cheapest
 *   (upstream's guard against continual consolidation) and pinned to spot;
 * - on-demand candidates and a replacement allowing both spot and on-demand: pinned to spot (the prices were
 *   filtered assuming spot; if spot is unavailable the launch fails instead of costing more), as upstream.
 *
 * By default, as upstream, an on-demand replacement keeps every type cheaper than the candidates, so a capacity
 * error on the cheapest still leaves a launch that saves money. Opt-in capenter narrowing
 * (`options.flexibleOnDemandReplacements: false`, {@link narrowReplacement}): an on-demand-only replacement allows
 * only its cheapest-priced types (extended as far as `minValues` needs).
 */

import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeSelectorRequirementWithMinValues } from '../apis/karpenter.ts';
import {
  CapacityTypeOnDemand,
  CapacityTypeReserved,
  CapacityTypeSpot,
  LabelCapacityType,
  LabelInstanceType,
} from '../apis/labels.ts';
import { cheapestOffering, minValuesShortfall } from '../scheduling/instancetypes.ts';
import { Requirement, Requirements } from '../scheduling/requirements.ts';
import type { NodeClaimPlan } from '../scheduling/types.ts';
import type { PassContext } from './context.ts';
import type { Candidate, Command } from './types.ts';

/** Upstream `MinInstanceTypesForSpotToSpotConsolidation`. */
export const MIN_SPOT_TO_SPOT_TYPES = 15;

/**
 * A command, or why there is none: `reason` in capenter's words and, where upstream publishes one for a single
 * candidate, `event`: upstream's `Unconsolidatable` message (consolidation.go `computeConsolidation`).
 */
export type ConsolidationOutcome = { command: Command } | { reason: string; event?: string };

const fmt = (v: number) => `$${Number(v.toFixed(4))}/h`;

/** Σ candidate prices (USD/hour), or undefined when one is unknown. */
export function candidatesPrice(cands: readonly Candidate[]): number | undefined {
  let sum = 0;
  for (const c of cands) {
    if (c.priceUSDPerHour === undefined) return undefined;
    sum += c.priceUSDPerHour;
  }
  return sum;
}

function offeringOk(o: { zone: string; capacityType: string }, reqs: Requirements): boolean {
  const z = reqs.get('topology.kubernetes.io/zone');
  const ct = reqs.get(LabelCapacityType);
  return (!z || z.has(o.zone)) && (!ct || ct.has(o.capacityType));
}

/**
 * Upstream `Offerings.WorstLaunchPrice`: among the available offerings compatible with `reqs`, those of the first
 * capacity type present in the order reserved, spot, on-demand; the highest price (USD/hour). Infinity when none.
 */
export function worstLaunchPrice(it: InstanceType, reqs: Requirements): number {
  const compat = it.offerings.filter((o) => o.available && offeringOk(o, reqs));
  for (const ct of [CapacityTypeReserved, CapacityTypeSpot, CapacityTypeOnDemand]) {
    const of = compat.filter((o) => o.capacityType === ct);
    if (of.length) return Math.max(...of.map((o) => o.priceUSDPerHour));
  }
  return Number.POSITIVE_INFINITY;
}

/** Upstream `filterByPrice`: options whose {@link worstLaunchPrice} is below `price`, in their order. */
export function filterByPrice(
  options: readonly InstanceType[],
  reqs: Requirements,
  price: number,
): InstanceType[] {
  return options.filter((it) => worstLaunchPrice(it, reqs) < price);
}

/** Rebuilds a plan with `options` (price-ordered) and `reqs`; undefined when no option can launch. */
export function withOptions(
  plan: NodeClaimPlan,
  options: InstanceType[],
  reqs: Requirements,
): NodeClaimPlan | undefined {
  const r = reqs.clone();
  r.delete(LabelInstanceType);
  r.add(
    Requirement.in(
      LabelInstanceType,
      options.map((t) => t.name),
    ),
  );
  let cheapest: NodeClaimPlan['cheapest'] | undefined;
  for (const it of options) {
    const o = cheapestOffering(it.offerings, r);
    if (o && (!cheapest || o.priceUSDPerHour < cheapest.offering.priceUSDPerHour))
      cheapest = {
        instanceType: it,
        offering: o,
        ...(it === plan.cheapest.instanceType && plan.cheapest.daemonOverhead
          ? { daemonOverhead: plan.cheapest.daemonOverhead }
          : {}),
      };
  }
  if (!cheapest) return undefined;
  const sorted = [...options].sort(
    (a, b) =>
      (cheapestOffering(a.offerings, r)?.priceUSDPerHour ?? Number.POSITIVE_INFINITY) -
        (cheapestOffering(b.offerings, r)?.priceUSDPerHour ?? Number.POSITIVE_INFINITY) ||
      (a.name < b.name ? -1 : 1),
  );
  return { ...plan, requirements: r.toNodeSelector(), instanceTypeOptions: sorted, cheapest };
}

function planRequirements(plan: NodeClaimPlan): Requirements {
  return Requirements.fromNodeSelector(plan.requirements as NodeSelectorRequirementWithMinValues[]);
}

/** Keeps the first `n` options, extended while `minValues` is short (upstream spot-to-spot truncation). */
function truncate(options: InstanceType[], reqs: Requirements, n: number): InstanceType[] {
  let k = Math.min(n, options.length);
  while (k < options.length && minValuesShortfall(options.slice(0, k), reqs)) k++;
  return options.slice(0, k);
}

/**
 * capenter's on-demand narrowing (see the module doc): when the plan can only launch on-demand, keep the options
 * priced like the cheapest one, extended in price order while `minValues` is short. Other plans are returned as is.
 * Consolidation narrows only with `flexibleOnDemandReplacements: false`; drift (`always`) narrows always: its
 * replacement is not priced against the candidate, so a pricier option would only cost more.
 */
export function narrowReplacement(plan: NodeClaimPlan, ctx: PassContext, always = false): NodeClaimPlan {
  if (!always && ctx.options.flexibleOnDemandReplacements) return plan;
  const reqs = planRequirements(plan);
  const ct = reqs.get(LabelCapacityType);
  if (!ct || ct.has(CapacityTypeSpot) || ct.has(CapacityTypeReserved)) return plan;
  const priced = plan.instanceTypeOptions.map((it) => ({
    it,
    price: cheapestOffering(it.offerings, reqs)?.priceUSDPerHour ?? Number.POSITIVE_INFINITY,
  }));
  priced.sort((a, b) => a.price - b.price || (a.it.name < b.it.name ? -1 : 1));
  const min = priced[0]?.price;
  if (min === undefined || !Number.isFinite(min)) return plan;
  let k = priced.filter((p) => p.price <= min + 1e-12).length;
  const all = priced.map((p) => p.it);
  while (k < all.length && minValuesShortfall(all.slice(0, k), reqs)) k++;
  if (k >= all.length) return plan;
  return withOptions(plan, all.slice(0, k), reqs) ?? plan;
}

/** Σ candidate prices − replacement prices, USD/hour (0 when a candidate price is unknown). */
export function savings(cands: readonly Candidate[], replacements: readonly NodeClaimPlan[]): number {
  const p = candidatesPrice(cands);
  if (p === undefined) return 0;
  let r = 0;
  for (const plan of replacements) r += plan.cheapest.offering.priceUSDPerHour;
  return Math.round((p - r) * 1e6) / 1e6;
}

/** See the module doc. `method` names the calling method in the command. */
export function computeConsolidation(
  ctx: PassContext,
  cands: readonly Candidate[],
  method: string,
): ConsolidationOutcome {
  const price = candidatesPrice(cands);
  if (price === undefined) {
    const c = cands.find((x) => x.priceUSDPerHour === undefined)!;
    return { reason: `price of node ${c.name} is unknown (instance type or offering not in the catalog)` };
  }
  const sim = ctx.simulator().simulate(cands, true);
  if (!sim.ok) return { reason: sim.reason, event: sim.reason };
  const base = { reason: 'Underutilized' as const, method, candidates: [...cands] };
  if (sim.newNodeClaims.length === 0)
    return {
      command: { ...base, decision: 'delete', replacements: [], savingsUSDPerHour: savings(cands, []) },
    };
  if (sim.newNodeClaims.length > 1)
    return {
      reason: `its pods would need ${sim.newNodeClaims.length} new NodeClaims (at most 1 may replace it)`,
      event: `Can't remove without creating ${sim.newNodeClaims.length} candidates`,
    };
  const plan = sim.newNodeClaims[0]!;
  const reqs = planRequirements(plan);
  const ct = reqs.get(LabelCapacityType);
  const allowsSpot = !ct || ct.has(CapacityTypeSpot);
  const allSpot = cands.every((c) => c.capacityType === CapacityTypeSpot);

  if (allSpot && allowsSpot) {
    if (!ctx.options.spotToSpotConsolidation)
      return {
        reason: 'replacing spot with spot needs the SpotToSpotConsolidation feature gate (off)',
        event: "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
      };
    const spotReqs = reqs.clone().add(Requirement.in(LabelCapacityType, [CapacityTypeSpot]));
    const options = filterByPrice(plan.instanceTypeOptions, spotReqs, price);
    if (options.length === 0)
      return {
        reason: `no cheaper spot replacement than ${fmt(price)}`,
        event: "Can't replace with a cheaper node",
      };
    if (cands.length === 1 && options.length < MIN_SPOT_TO_SPOT_TYPES)
      return {
        reason: `spot-to-spot consolidation needs ${MIN_SPOT_TO_SPOT_TYPES} cheaper instance types, found ${options.length}`,
        event: `SpotToSpotConsolidation requires ${MIN_SPOT_TO_SPOT_TYPES} cheaper instance type options than the current candidate to consolidate, got ${options.length}`,
      };
    const mv = minValuesShortfall(options, spotReqs);
    if (mv) return { reason: mv };
    const replacement = withOptions(plan, truncate(options, spotReqs, MIN_SPOT_TO_SPOT_TYPES), spotReqs);
    if (!replacement) return { reason: 'no available spot offering for the replacement' };
    return {
      command: {
        ...base,
        decision: 'replace',
        replacements: [replacement],
        savingsUSDPerHour: savings(cands, [replacement]),
      },
    };
  }

  const options = filterByPrice(plan.instanceTypeOptions, reqs, price);
  if (options.length === 0) {
    const cheapest = plan.instanceTypeOptions[0];
    const worst = cheapest ? worstLaunchPrice(cheapest, reqs) : Number.POSITIVE_INFINITY;
    return {
      reason: `no cheaper replacement: cheapest option ${cheapest?.name ?? '?'} costs ${fmt(worst)}, not below ${fmt(price)}`,
      event: "Can't replace with a cheaper node",
    };
  }
  const mv = minValuesShortfall(options, reqs);
  if (mv) return { reason: mv };
  const finalReqs = reqs.clone();
  if (ct?.has(CapacityTypeSpot) && ct.has(CapacityTypeOnDemand))
    finalReqs.add(Requirement.in(LabelCapacityType, [CapacityTypeSpot]));
  // Reserved capacity never moves to on-demand or spot: the options cheaper than reserved candidates are reserved
  // offerings, and the replacement is pinned to them so a used-up reservation fails the launch instead of falling
  // back (upstream pins it in the scheduler's reservation manager).
  if ((!ct || ct.has(CapacityTypeReserved)) && cands.every((c) => c.capacityType === CapacityTypeReserved))
    finalReqs.add(Requirement.in(LabelCapacityType, [CapacityTypeReserved]));
  let replacement = withOptions(plan, options, finalReqs);
  if (!replacement) return { reason: 'no available offering for the replacement' };
  replacement = narrowReplacement(replacement, ctx);
  return {
    command: {
      ...base,
      decision: 'replace',
      replacements: [replacement],
      savingsUSDPerHour: savings(cands, [replacement]),
    },
  };
}
