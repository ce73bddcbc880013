/**
 * NodeOverlay evaluation and application (alpha, `NodeOverlay` feature gate): which `karpenter.sh/v1alpha1`
 * NodeOverlays are valid and conflict-free, and the instance types of each NodePool with their prices and
 * capacity overlaid. Pure and synchronous; the nodeoverlay controller, the CloudProvider decorator,
 * `capenter simulate` and `capenter instance-types` all call it.
 *
 * Mirrors kubernetes-sigs/karpenter v1.14.1:
 * - `pkg/apis/v1alpha1/nodeoverlay.go` `OrderByWeight`: higher `spec.weight` first (unset = 0); equal
 *   weights ordered by name, the name later in the alphabet first.
 * - `nodeoverlay_validation.go` `RuntimeValidate`: requirements must be valid (operator/values, no
 *   restricted label) and `capacity` may not name cpu, memory, ephemeral-storage or pods → reason
 *   `RuntimeValidation`, the overlay is not applied.
 * - `pkg/controllers/nodeoverlay/controller.go` + `store.go`: an overlay matches an instance type of a
 *   NodePool when its requirements are compatible with the NodePool label (`karpenter.sh/nodepool`), the
 *   NodePool's template labels and the instance type's requirements; it then applies to the offerings its
 *   requirements are compatible with (zone, capacity type). Overlays are applied in weight order: the first
 *   (heaviest) price per offering wins, and per capacity resource the first value wins. An overlay whose
 *   price touches an offering, or whose capacity touches a resource, that an overlay of the *same* weight
 *   already set conflicts: it is marked `Conflict` ("conflict with another overlay") and applied nowhere
 *   (validation across all NodePools first, then storage, so never partially).
 * - `pkg/cloudprovider/types.go` `AdjustedPrice` (price override, `+/-` absolute or percent, floored at 0)
 *   and `ApplyCapacityOverlay` (capacity = capacity ∪ overlay, overlay values replacing same-named ones).
 * - aws/karpenter-provider-aws v1.14.1 `pkg/providers/instancetype/offering/offering.go` `GetOverlayPrice`
 *   (preview instance types, PR #9249): {@link unpricedTypeOverlayPrices}, the prices a provider gives offerings
 *   that have none of their own.
 */

import type { InstanceType, Offering } from '../apis/instancetype.ts';
import type { NodeOverlay, NodePool } from '../apis/karpenter.ts';
import {
  isRestrictedLabel,
  LabelCapacityType,
  LabelInstanceType,
  LabelNodePool,
  LabelTopologyZone,
  NormalizedLabels,
  WellKnownLabels,
  wellKnownValuesProblem,
} from '../apis/labels.ts';
import { parseResource, type Resources } from '../apis/quantity.ts';
import { offeringLabelKeys } from './instancetypes.ts';
import { Requirement, Requirements, requirementProblem } from './requirements.ts';

/** Why a NodeOverlay is not applied (the `ValidationSucceeded=False` reason upstream sets). */
export type NodeOverlayFailureReason = 'RuntimeValidation' | 'Conflict';

/** The verdict on one NodeOverlay: applied (`ok`), or not with upstream's reason and message. */
export type NodeOverlayVerdict =
  | { ok: true }
  | { ok: false; reason: NodeOverlayFailureReason; message: string };

/** A price change stored for one offering: the overlay's `price` or `priceAdjustment` text. */
interface PriceUpdate {
  change: string;
  overlay: string;
  lowestWeight: number;
}

/** Capacity stored for one instance type: the merged resources and the lightest overlay's own ones. */
interface CapacityUpdate {
  resources: Record<string, string>;
  overlays: Record<string, string>;
  lowestWeightResources: Record<string, string>;
  lowestWeight: number;
}

interface InstanceTypeUpdate {
  /** Keyed by {@link offeringKey}. */
  price: Map<string, PriceUpdate>;
  capacity?: CapacityUpdate;
}

/**
 * The outcome of {@link evaluateNodeOverlays}: a verdict per overlay (by name), the overlays in application
 * order, and the per-NodePool, per-instance-type updates that {@link applyNodeOverlays} applies.
 */
export interface NodeOverlayEvaluation {
  /** Overlay names in upstream application order (weight desc, then name desc). */
  order: string[];
  verdicts: Map<string, NodeOverlayVerdict>;
  /** NodePool name → instance type name → updates. */
  updates: Map<string, Map<string, InstanceTypeUpdate>>;
  /** NodePools whose instance types were evaluated (upstream `evaluatedNodePools`). */
  evaluatedNodePools: Set<string>;
}

/** One NodePool with the instance types its NodeClass resolves to (before overlays). */
export interface NodePoolInstanceTypes {
  nodePool: NodePool;
  instanceTypes: readonly InstanceType[];
}

/**
 * Upstream `AdjustedPrice`: `change` without a sign is an absolute price (USD/hour); `+x`/`-x` adds to
 * `price`; `+x%`/`-x%` scales it. The result is floored at 0. An empty change returns `price`.
 * @throws Error when `change` is not a number (schema validation rejects such overlays first).
 */
export function adjustedPrice(price: number, change: string): number {
  if (change === '') return price;
  const num = (s: string): number => {
    const v = Number(s);
    if (s.trim() === '' || !Number.isFinite(v)) throw new Error(`price change "${change}" is not a number`);
    return v;
  };
  if (!change.startsWith('+') && !change.startsWith('-')) return num(change);
  const out = change.endsWith('%') ? price * (1 + num(change.slice(0, -1)) / 100) : price + num(change);
  return Math.max(out, 0);
}

/** `spec.weight`, 0 when unset (upstream `lo.FromPtr`). */
function weightOf(o: NodeOverlay): number {
  return o.spec?.weight ?? 0;
}

/** Upstream `OrderByWeight`: heavier first; equal weights by name, the later name first. A new array. */
export function orderByWeight(overlays: readonly NodeOverlay[]): NodeOverlay[] {
  return [...overlays].sort((a, b) => {
    const wa = weightOf(a);
    const wb = weightOf(b);
    if (wa !== wb) return wb - wa;
    const na = a.metadata.name;
    const nb = b.metadata.name;
    return na > nb ? -1 : na < nb ? 1 : 0;
  });
}

/**
 * Resources a NodeOverlay may not set in `capacity` (upstream `v1.WellKnownResources`; the CRD's rule is in
 * `apis/schemas.ts`, which this pure core does not import so that the controller does not load zod).
 */
const RestrictedResources: readonly string[] = ['cpu', 'memory', 'ephemeral-storage', 'pods'];

/**
 * Upstream `RuntimeValidate` (kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1alpha1/nodeoverlay_validation.go`, which
 * runs core `ValidateRequirement`): every requirement well-formed, not on a restricted label and, for a key with
 * `WellKnownValuesForRequirements` (e.g. `karpenter.sh/capacity-type`), naming a known value; no well-known
 * resource in `capacity`, every capacity a quantity. Returns the messages joined, or `undefined`.
 */
export function nodeOverlayRuntimeProblem(o: NodeOverlay): string | undefined {
  const problems: string[] = [];
  for (const r of o.spec?.requirements ?? []) {
    const p = requirementProblem(r);
    if (p) problems.push(`invalid value: ${p} in requirements, restricted`);
    const restricted = isRestrictedLabel(NormalizedLabels[r.key] ?? r.key);
    if (restricted) problems.push(`invalid value: ${restricted} in requirements, restricted`);
    const unknownValues = wellKnownValuesProblem(r.key, r.operator, r.values ?? [], undefined);
    if (unknownValues) problems.push(`invalid value: ${unknownValues} in requirements, restricted`);
    if (r.operator === 'NotIn' && (r.values ?? []).length === 0)
      problems.push(`key ${r.key} with operator ${r.operator} must have a value defined`);
  }
  for (const [name, value] of Object.entries(o.spec?.capacity ?? {})) {
    if (RestrictedResources.includes(name))
      problems.push(`invalid capacity: ${name} in resource, restricted`);
    else {
      try {
        parseResource(name, value);
      } catch (e) {
        problems.push(`invalid capacity: ${name}: ${(e as Error).message}`);
      }
    }
  }
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** The key of one offering's price update: `<zone>/<capacity type>` (upstream `Requirements.String()`). */
function offeringKey(o: Offering): string {
  return `${o.zone}/${o.capacityType}`;
}

/** The requirements of one offering: its zone, capacity type and labels (aws `topology.k8s.aws/zone-id`). */
function offeringRequirements(o: Offering): Requirements {
  const reqs = new Requirements([
    Requirement.in(LabelTopologyZone, [o.zone]),
    Requirement.in(LabelCapacityType, [o.capacityType]),
  ]);
  for (const [k, v] of Object.entries(o.labels ?? {})) reqs.add(Requirement.in(k, [v]));
  return reqs;
}

/**
 * Upstream `getOverlaidOfferings`: the offerings of `it` the overlay applies to in `nodePool`, empty when the
 * overlay does not select the instance type. The instance type's requirements are its labels, its offerings'
 * zones, capacity types and labels (aws `topology.k8s.aws/zone-id`, as upstream aws adds it to both the instance
 * type's and each offering's requirements), the NodePool label and the NodePool's template labels.
 */
function overlaidOfferings(nodePool: NodePool, it: InstanceType, overlayReqs: Requirements): Offering[] {
  const itReqs = new Requirements([Requirement.in(LabelNodePool, [nodePool.metadata.name])]);
  itReqs.addAll(Requirements.fromLabels(nodePool.spec?.template?.metadata?.labels));
  itReqs.addAll(Requirements.fromLabels(it.labels));
  itReqs.add(Requirement.in(LabelTopologyZone, [...new Set(it.offerings.map((o) => o.zone))]));
  itReqs.add(Requirement.in(LabelCapacityType, [...new Set(it.offerings.map((o) => o.capacityType))]));
  for (const key of offeringLabelKeys(it.offerings)) {
    const values = new Set<string>();
    for (const o of it.offerings) {
      const v = o.labels?.[key];
      if (v !== undefined) values.add(v);
    }
    if (values.size) itReqs.add(Requirement.in(key, [...values]));
  }
  if (itReqs.compatible(overlayReqs) !== undefined) return [];
  return it.offerings.filter(
    (o) => overlayReqs.compatible(offeringRequirements(o), WellKnownLabels) === undefined,
  );
}

/** The price text an overlay sets (`price` wins over `priceAdjustment`), or undefined. */
function priceChangeOf(o: NodeOverlay): string | undefined {
  return o.spec?.price ?? o.spec?.priceAdjustment;
}

/** Upstream `isOfferingUpdateConflicting` + `isCapacityUpdateConflicting` for one instance type. */
function conflicts(u: InstanceTypeUpdate | undefined, offerings: Offering[], o: NodeOverlay): boolean {
  if (!u) return false;
  const w = weightOf(o);
  if (priceChangeOf(o) !== undefined) {
    for (const of of offerings) {
      const p = u.price.get(offeringKey(of));
      if (p && p.lowestWeight === w) return true;
    }
  }
  if (o.spec?.capacity && u.capacity && u.capacity.lowestWeight === w) {
    for (const r of Object.keys(o.spec.capacity)) if (r in u.capacity.lowestWeightResources) return true;
  }
  return false;
}

/** Upstream `updateInstanceTypeOffering` + `updateInstanceTypeCapacity` (no conflict check). */
function store(u: InstanceTypeUpdate, offerings: Offering[], o: NodeOverlay): void {
  const w = weightOf(o);
  const change = priceChangeOf(o);
  if (change !== undefined) {
    for (const of of offerings) {
      const existing = u.price.get(offeringKey(of));
      if (existing) existing.lowestWeight = w;
      else u.price.set(offeringKey(of), { change, overlay: o.metadata.name, lowestWeight: w });
    }
  }
  const cap = o.spec?.capacity;
  if (!cap) return;
  if (!u.capacity) {
    u.capacity = { resources: {}, overlays: {}, lowestWeightResources: cap, lowestWeight: w };
  }
  for (const [r, q] of Object.entries(cap)) {
    if (r in u.capacity.resources) continue;
    u.capacity.resources[r] = q;
    u.capacity.overlays[r] = o.metadata.name;
  }
  u.capacity.lowestWeightResources = cap;
  u.capacity.lowestWeight = w;
}

/** The matched offerings of every instance type of every NodePool for one overlay. */
function matchesOf(
  pools: readonly NodePoolInstanceTypes[],
  o: NodeOverlay,
): Array<{ pool: string; it: string; offerings: Offering[] }> {
  const reqs = Requirements.fromNodeSelector(o.spec?.requirements ?? []);
  const out: Array<{ pool: string; it: string; offerings: Offering[] }> = [];
  for (const p of pools) {
    for (const it of p.instanceTypes) {
      const offerings = overlaidOfferings(p.nodePool, it, reqs);
      if (offerings.length > 0) out.push({ pool: p.nodePool.metadata.name, it: it.name, offerings });
    }
  }
  return out;
}

/**
 * Upstream nodeoverlay controller `Reconcile` (without the API calls): orders the overlays, validates each
 * at run time, checks it for conflicts against the overlays already stored across all NodePools and stores
 * it when clean. Never throws for bad overlays: they get a failed verdict.
 */
export function evaluateNodeOverlays(
  overlays: readonly NodeOverlay[],
  pools: readonly NodePoolInstanceTypes[],
): NodeOverlayEvaluation {
  const ev: NodeOverlayEvaluation = {
    order: [],
    verdicts: new Map(),
    updates: new Map(),
    evaluatedNodePools: new Set(pools.map((p) => p.nodePool.metadata.name)),
  };
  for (const o of orderByWeight(overlays)) {
    const name = o.metadata.name;
    ev.order.push(name);
    const problem = nodeOverlayRuntimeProblem(o);
    if (problem) {
      ev.verdicts.set(name, { ok: false, reason: 'RuntimeValidation', message: problem });
      continue;
    }
    const matches = matchesOf(pools, o);
    if (matches.some((m) => conflicts(ev.updates.get(m.pool)?.get(m.it), m.offerings, o))) {
      ev.verdicts.set(name, { ok: false, reason: 'Conflict', message: 'conflict with another overlay' });
      continue;
    }
    for (const m of matches) {
      const byType = ev.updates.get(m.pool) ?? new Map<string, InstanceTypeUpdate>();
      ev.updates.set(m.pool, byType);
      const u = byType.get(m.it) ?? { price: new Map<string, PriceUpdate>() };
      byType.set(m.it, u);
      store(u, m.offerings, o);
    }
    ev.verdicts.set(name, { ok: true });
  }
  return ev;
}

/** `it` with one capacity update: capacity ∪ overlay (overlay wins), allocatable = capacity − overhead. */
function withCapacity(it: InstanceType, cap: CapacityUpdate): InstanceType {
  const capacity: Resources = { ...it.capacity };
  const allocatable: Resources = { ...it.allocatable };
  const { kubeReserved, systemReserved, evictionThreshold } = it.overhead;
  for (const [r, q] of Object.entries(cap.resources)) {
    capacity[r] = parseResource(r, q);
    const overhead = (kubeReserved[r] ?? 0) + (systemReserved[r] ?? 0) + (evictionThreshold[r] ?? 0);
    allocatable[r] = Math.max(0, capacity[r] - overhead);
  }
  return { ...it, capacity, allocatable, capacityOverlaid: true };
}

/** Upstream `InstanceType.IsPricingOverlayApplied`: some offering's price was set or adjusted by a NodeOverlay. */
export function isPriceOverlaid(it: InstanceType): boolean {
  return it.offerings.some((o) => o.priceSource === 'node-overlay');
}

/**
 * Upstream `InstanceTypeStore.ApplyAll`: the instance types of `nodePool` with the stored updates applied
 * (copies; unchanged types are returned as they are). Price-overlaid offerings get `priceSource`
 * `'node-overlay'`.
 * @throws Error when `nodePool` was not evaluated (upstream `UnevaluatedNodePoolError`): its instance types
 * cannot be trusted until the next evaluation.
 */
export function applyNodeOverlays(
  ev: NodeOverlayEvaluation,
  nodePool: string,
  instanceTypes: readonly InstanceType[],
): InstanceType[] {
  if (!ev.evaluatedNodePools.has(nodePool))
    throw new Error(
      `NodePool "${nodePool}" has not been evaluated against the NodeOverlays yet (upstream UnevaluatedNodePoolError); it is retried after the next nodeoverlay evaluation`,
    );
  const byType = ev.updates.get(nodePool);
  if (!byType) return [...instanceTypes];
  return instanceTypes.map((it) => {
    const u = byType.get(it.name);
    if (!u) return it;
    let out = u.capacity && Object.keys(u.capacity.resources).length > 0 ? withCapacity(it, u.capacity) : it;
    if (u.price.size > 0) {
      out = {
        ...out,
        offerings: it.offerings.map((of) => {
          const p = u.price.get(offeringKey(of));
          if (!p) return of;
          return {
            ...of,
            priceUSDPerHour: adjustedPrice(of.priceUSDPerHour, p.change),
            priceSource: 'node-overlay',
          };
        }),
      };
    }
    return out;
  });
}

/**
 * Evaluates `overlays` over `pools` and applies them: the overlaid instance types by NodePool name, and the
 * evaluation (verdicts per overlay). The convenience `capenter simulate` and `capenter instance-types` use.
 */
export function overlayInstanceTypes(
  overlays: readonly NodeOverlay[],
  pools: readonly NodePoolInstanceTypes[],
): { instanceTypes: Record<string, InstanceType[]>; evaluation: NodeOverlayEvaluation } {
  const evaluation = evaluateNodeOverlays(overlays, pools);
  const instanceTypes: Record<string, InstanceType[]> = {};
  for (const p of pools)
    instanceTypes[p.nodePool.metadata.name] = applyNodeOverlays(
      evaluation,
      p.nodePool.metadata.name,
      p.instanceTypes,
    );
  return { instanceTypes, evaluation };
}

/**
 * Upstream aws `GetOverlayPrice` (aws/karpenter-provider-aws v1.14.1 `pkg/providers/instancetype/offering/offering.go`,
 * "preview instance types", PR #9249): the price in USD/hour a provider gives an offering of an instance type that has
 * no price of its own (a preview type listed by `DescribeInstanceTypes` but absent from the pricing data; on-demand
 * and spot alike, as upstream's `BaseResolver` asks for both capacity types), by instance type name. Without an
 * entry such an offering stays unlaunchable. Only overlays of this exact shape count, as upstream:
 * - condition `ValidationSucceeded` True (set by the nodeoverlay controller: a new overlay counts from the
 *   reconcile after the one that validated it);
 * - an absolute `spec.price` (a `priceAdjustment` never prices an offering that has no price to adjust);
 * - exactly one requirement, `node.kubernetes.io/instance-type` `In` (any other requirement, capacity type,
 *   zone or NodePool included, makes upstream skip the overlay here).
 * Every NodePool sees these prices (upstream: "applies to all NodePools"); weights are not compared: for a type
 * named by several such overlays the one listed last wins, as upstream's map fill. Pure.
 */
export function unpricedTypeOverlayPrices(overlays: readonly NodeOverlay[]): Map<string, number> {
  const prices = new Map<string, number>();
  for (const o of overlays) {
    const validated = (o.status?.conditions ?? []).some(
      (c) => c.type === 'ValidationSucceeded' && c.status === 'True',
    );
    if (!validated || o.spec?.price === undefined) continue;
    const reqs = o.spec.requirements ?? [];
    if (reqs.length !== 1 || reqs[0]!.key !== LabelInstanceType || reqs[0]!.operator !== 'In') continue;
    const price = Number(o.spec.price);
    if (o.spec.price.trim() === '' || !Number.isFinite(price)) continue;
    for (const name of reqs[0]!.values ?? []) prices.set(name, price);
  }
  return prices;
}
