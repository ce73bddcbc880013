/**
 * Instance-type filtering and ordering for NodeClaims: compatibility with requirements (labels and
 * offerings), prices, fit, `minValues`. Mirrors upstream Karpenter `pkg/cloudprovider/types.go`
 * (`InstanceTypes.Compatible`, `Offerings.Compatible/Available/Cheapest`, `SatisfiesMinValues`) and
 * `nodeclaim.go` `filterInstanceTypesByRequirements`.
 *
 * Hot-path data is precomputed once per instance type in {@link TypeInfo} (allocatable as a dense vector over a
 * {@link ResourceIndex}, available offerings).
 */

import type { InstanceType, Offering } from '../apis/instancetype.ts';
import {
  LabelCapacityReservationID,
  LabelCapacityReservationInterruptible,
  LabelCapacityReservationType,
  LabelCapacityType,
  LabelTopologyZone,
} from '../apis/labels.ts';
import type { Resources } from '../apis/quantity.ts';
import { formatValues, Requirement, type Requirements } from './requirements.ts';

/** Dense indexing of resource names so requests/allocatable become number arrays. `cpu`, `memory`, `pods` come first. */
export class ResourceIndex {
  readonly names: string[] = ['cpu', 'memory', 'pods', 'ephemeral-storage'];
  private readonly idx = new Map<string, number>(this.names.map((n, i) => [n, i]));

  /** Registers the keys of `r` (call for every list before building vectors). */
  register(r: Resources | undefined): void {
    if (!r) return;
    for (const k of Object.keys(r)) {
      if (!this.idx.has(k)) {
        this.idx.set(k, this.names.length);
        this.names.push(k);
      }
    }
  }
  get size(): number {
    return this.names.length;
  }
  /** The dense vector of `r`; keys not registered are dropped (register first). */
  vector(r: Resources | undefined): Float64Array {
    const v = new Float64Array(this.names.length);
    if (r)
      for (const [k, x] of Object.entries(r)) {
        const i = this.idx.get(k);
        if (i !== undefined) v[i] = x;
      }
    return v;
  }
  /** Back to a sparse Resources object (zero entries dropped). */
  resources(v: Float64Array): Resources {
    const out: Resources = {};
    for (let i = 0; i < this.names.length; i++) if (v[i]) out[this.names[i]!] = v[i]!;
    return out;
  }
}

/** Per-type precomputed data. */
export interface TypeInfo {
  it: InstanceType;
  /** Allocatable by {@link ResourceIndex}. */
  alloc: Float64Array;
  /** Offerings with `available: true`. */
  offerings: Offering[];
}

/** Builds {@link TypeInfo} for each type (register their allocatable in `index` first). */
export function typeInfos(types: readonly InstanceType[], index: ResourceIndex): TypeInfo[] {
  return types.map((it) => ({
    it,
    alloc: index.vector(it.allocatable),
    offerings: it.offerings.filter((o) => o.available),
  }));
}

/** The label keys instance types define (a type lacking one of them has it as "DoesNotExist"). */
export function providerKeys(types: readonly InstanceType[]): Set<string> {
  const keys = new Set<string>([LabelTopologyZone, LabelCapacityType]);
  for (const t of types) for (const k of Object.keys(t.labels)) keys.add(k);
  return keys;
}

/**
 * Label keys an offering (not its instance type) defines that every provider's offerings may carry: the
 * `karpenter.k8s.aws/capacity-reservation-*` labels of a reserved offering. Every other offering lacks them, like
 * upstream aws `offering/base_resolver.go`, whose non-reserved offerings carry `DoesNotExist` requirements on these
 * keys. An offering's `reservationID` stands for its `capacity-reservation-id` label when it has no labels. Besides
 * these, any key some offering of an instance type carries in {@link Offering.labels} is offering-derived for that
 * type ({@link offeringLabelKeys}): the provider declares such keys (aws: `topology.k8s.aws/zone-id`) by putting
 * them on its offerings, and the core never names them.
 */
export const OfferingLabelKeys: readonly string[] = [
  LabelCapacityReservationID,
  LabelCapacityReservationType,
  LabelCapacityReservationInterruptible,
];

const labelKeysMemo = new WeakMap<readonly Offering[], readonly string[]>();

/**
 * The offering-derived label keys of an instance type whose offerings are `offerings` (besides zone and capacity
 * type): {@link OfferingLabelKeys} plus every key of the offerings' `labels`, in first-seen order. Upstream: the keys
 * of `Offering.Requirements` (aws `offering/base_resolver.go` adds `topology.k8s.aws/zone-id` there). Memoized per
 * offerings array (arrays are never mutated by the scheduler).
 */
export function offeringLabelKeys(offerings: readonly Offering[]): readonly string[] {
  let keys = labelKeysMemo.get(offerings);
  if (keys) return keys;
  const extra: string[] = [];
  for (const o of offerings) {
    if (!o.labels) continue;
    for (const k of Object.keys(o.labels))
      if (!OfferingLabelKeys.includes(k) && !extra.includes(k)) extra.push(k);
  }
  keys = extra.length ? [...OfferingLabelKeys, ...extra] : OfferingLabelKeys;
  labelKeysMemo.set(offerings, keys);
  return keys;
}

/** True when `key` is a label each offering gives its node (zone, capacity type, {@link offeringLabelKeys}) for a type with `offerings`. */
export function isOfferingKey(offerings: readonly Offering[], key: string): boolean {
  return key === LabelTopologyZone || key === LabelCapacityType || offeringLabelKeys(offerings).includes(key);
}

/**
 * The value of label `key` on a node launched from offering `o`: its zone, its capacity type, or its `labels` entry
 * (a reserved offering's `reservationID` for `capacity-reservation-id`); undefined when the offering lacks it.
 */
export function offeringValue(o: Offering, key: string): string | undefined {
  if (key === LabelTopologyZone) return o.zone;
  if (key === LabelCapacityType) return o.capacityType;
  return o.labels?.[key] ?? (key === LabelCapacityReservationID ? o.reservationID : undefined);
}

/** The requirements of `reqs` on the offering label keys of `offerings` (empty in the common case). */
function offeringLabelRequirements(reqs: Requirements, offerings: readonly Offering[]): Requirement[] {
  const out: Requirement[] = [];
  for (const k of offeringLabelKeys(offerings)) {
    const r = reqs.get(k);
    if (r) out.push(r);
  }
  return out;
}

function offeringOk(
  o: Offering,
  zone: Requirement | undefined,
  ct: Requirement | undefined,
  labelReqs: readonly Requirement[],
): boolean {
  if ((zone && !zone.has(o.zone)) || (ct && !ct.has(o.capacityType))) return false;
  for (const r of labelReqs) {
    const v = offeringValue(o, r.key);
    if (v === undefined ? !r.allowsAbsent() : !r.has(v)) return false;
  }
  return true;
}

/**
 * Adds to `out` the values of `key` (an offering key, {@link isOfferingKey}) of the available `offerings` that meet
 * every offering requirement of `reqs` (zone, capacity type, offering labels; the one on `key` included). Upstream
 * builds the same domains from instance-type and offering requirements (`topology.go` `buildDomainGroups`).
 */
export function addOfferingDomains(
  offerings: readonly Offering[],
  reqs: Requirements,
  key: string,
  out: Set<string>,
): void {
  const zone = reqs.get(LabelTopologyZone);
  const ct = reqs.get(LabelCapacityType);
  const labelReqs = offeringLabelRequirements(reqs, offerings);
  for (const o of offerings) {
    if (!o.available || !offeringOk(o, zone, ct, labelReqs)) continue;
    const v = offeringValue(o, key);
    if (v !== undefined) out.add(v);
  }
}

/**
 * The cheapest available offering of `t` allowed by `reqs` (zone, capacity type, and the offering label keys of
 * {@link offeringLabelKeys}: an offering without one of them meets a requirement on it only when the requirement
 * allows absence), or undefined. Ties: lower zone name, then capacity type, for determinism.
 */
export function cheapestOffering(offerings: readonly Offering[], reqs: Requirements): Offering | undefined {
  const zone = reqs.get(LabelTopologyZone);
  const ct = reqs.get(LabelCapacityType);
  const labelReqs = offeringLabelRequirements(reqs, offerings);
  let best: Offering | undefined;
  for (const o of offerings) {
    if (!o.available || !offeringOk(o, zone, ct, labelReqs)) continue;
    if (
      !best ||
      o.priceUSDPerHour < best.priceUSDPerHour ||
      (o.priceUSDPerHour === best.priceUSDPerHour &&
        (o.zone < best.zone || (o.zone === best.zone && o.capacityType < best.capacityType)))
    )
      best = o;
  }
  return best;
}

/**
 * Why instance type `it` is not compatible with `reqs`, or `undefined` when it is: every requirement on a
 * label the type defines must allow its value; a key the provider defines (`keys`) but this type lacks must
 * allow absence; and at least one AVAILABLE offering must satisfy the zone and capacity-type requirements.
 * Keys neither the type nor the provider define (NodePool labels, hostname...) are not checked here.
 */
export function instanceTypeIncompatibility(
  it: InstanceType,
  reqs: Requirements,
  keys: ReadonlySet<string> = providerKeys([it]),
): string | undefined {
  const offKeys = offeringLabelKeys(it.offerings);
  for (const r of reqs.values()) {
    if (r.key === LabelTopologyZone || r.key === LabelCapacityType || offKeys.includes(r.key)) continue;
    const v = it.labels[r.key];
    if (v !== undefined) {
      if (!r.has(v)) return `${it.name}: key "${r.key}" value ${v} not in ${r.toString()}`;
    } else if (keys.has(r.key) && !r.allowsAbsent()) {
      return `${it.name}: has no label "${r.key}" (required ${r.toString()})`;
    }
  }
  if (!cheapestOffering(it.offerings, reqs)) {
    const zone = reqs.get(LabelTopologyZone);
    const ct = reqs.get(LabelCapacityType);
    const extra = offeringLabelRequirements(reqs, it.offerings)
      .map((r) => ` and ${r.key} ${r.toString()}`)
      .join('');
    return `${it.name}: no available offering in zones ${zone ? zone.toString() : 'any'} with capacity type ${ct ? ct.toString() : 'any'}${extra}`;
  }
  return undefined;
}

/** True when instance type `it` satisfies `reqs` (see {@link instanceTypeIncompatibility}). */
export function instanceTypeCompatible(
  it: InstanceType,
  reqs: Requirements,
  keys?: ReadonlySet<string>,
): boolean {
  return instanceTypeIncompatibility(it, reqs, keys) === undefined;
}

/** True when vector `need` ≤ `alloc` in every dimension. */
export function vectorFits(need: Float64Array, alloc: Float64Array): boolean {
  for (let i = 0; i < need.length; i++) if (need[i]! > alloc[i]!) return false;
  return true;
}

/**
 * How many distinct values of `r.key` that `r` allows the types offer (offering keys such as zone / capacity type:
 * from available offerings; other keys: from labels), counting no further than `limit`.
 */
function offeredValues(types: readonly InstanceType[], r: Requirement, limit: number): Set<string> {
  const seen = new Set<string>();
  for (const t of types) {
    if (isOfferingKey(t.offerings, r.key)) {
      for (const o of t.offerings) {
        if (!o.available) continue;
        const v = offeringValue(o, r.key);
        if (v !== undefined && r.has(v)) seen.add(v);
      }
    } else {
      const v = t.labels[r.key];
      if (v !== undefined && r.has(v)) seen.add(v);
    }
    if (seen.size >= limit) break;
  }
  return seen;
}

/**
 * `minValues` check (upstream `InstanceTypes.SatisfiesMinValues`): for each requirement with `minValues`, the
 * types must offer at least that many distinct values of the key. Returns a message for the first key that
 * falls short, or `undefined`.
 */
export function minValuesShortfall(types: readonly InstanceType[], reqs: Requirements): string | undefined {
  for (const r of reqs.values()) {
    if (r.minValues === undefined) continue;
    const seen = offeredValues(types, r, r.minValues);
    if (seen.size < r.minValues) {
      return `minValues requirement not met: key "${r.key}" needs at least ${r.minValues} distinct values, the remaining instance types offer ${seen.size} ${formatValues(seen)}`;
    }
  }
  return undefined;
}

/**
 * `MIN_VALUES_POLICY=BestEffort` relaxation (upstream `filterInstanceTypesByRequirements` with `relaxMinValues`,
 * which lowers each unmet requirement's `MinValues` to the count `SatisfiesMinValues` reports): a copy of `reqs`
 * where every requirement whose `minValues` the types cannot meet has `minValues` lowered to the number of
 * distinct values they do offer (removed when they offer none, as `minValues` must be at least 1). Returns
 * `undefined` when every `minValues` is met (nothing to relax).
 */
export function relaxMinValues(types: readonly InstanceType[], reqs: Requirements): Requirements | undefined {
  let out: Requirements | undefined;
  for (const r of reqs.values()) {
    if (r.minValues === undefined) continue;
    const n = offeredValues(types, r, r.minValues).size;
    if (n >= r.minValues) continue;
    out ??= reqs.clone();
    out.replace(
      new Requirement(r.key, r.complement, r.values, r.greaterThan, r.lessThan, n > 0 ? n : undefined),
    );
  }
  return out;
}

/** Sorts by price (USD/hour) ascending, ties by instance-type name. */
export function byPriceThenName<T extends { price: number; t: TypeInfo }>(a: T, b: T): number {
  return a.price - b.price || (a.t.it.name < b.t.it.name ? -1 : a.t.it.name > b.t.it.name ? 1 : 0);
}
