/**
 * Offerings at launch time: the unavailable-offerings cache (the "ICE cache") and the choice of the cheapest
 * available offering compatible with a NodeClaim's requirements. Shared by every provider.
 *
 * Sources: aws/karpenter-provider-aws `pkg/cache/unavailableofferings.go` (key capacity type × instance type ×
 * zone, TTL 3 minutes, a sequence number bumped on every change so instance-type caches can be invalidated);
 * kubernetes-sigs/karpenter `pkg/cloudprovider/types.go` (`Offerings.Available().Compatible(reqs).Cheapest()`)
 * and `kwok/cloudprovider` (cheapest compatible available offering across the NodeClaim's instance types).
 */
import type { NodeSelectorRequirement } from '../apis/core.ts';
import { LabelCapacityType, LabelInstanceType, LabelTopologyZone } from '../apis/labels.ts';
import { Requirements } from '../scheduling/requirements.ts';
import type { CapacityType, InstanceType, Offering, OfferingRef } from './types.ts';

/** The part of a clock the cache needs: current time in milliseconds since the epoch. */
export interface NowClock {
  now(): number;
}

/** How long an offering stays unavailable after an ICE, in seconds (upstream `UnavailableOfferingsTTL`). */
export const UNAVAILABLE_OFFERINGS_TTL_SECONDS = 180;

/** One entry of the cache, for inspection (`capenter` debug output, tests). */
export interface UnavailableEntry {
  /** `offering`: one instance type × zone × capacity type; `capacityType`/`zone`: everything in it. */
  scope: 'offering' | 'capacityType' | 'zone';
  instanceType?: string;
  zone?: string;
  capacityType?: CapacityType;
  /** Why it was marked, e.g. `InsufficientInstanceCapacity`. */
  reason: string;
  /** When the entry expires, ms since the epoch. */
  expiresAt: number;
}

/**
 * Offerings that recently failed to launch for lack of capacity. An entry expires `ttlSeconds` after it was
 * (last) marked; marking again extends it. Time comes only from the injected clock.
 *
 * Besides single offerings it can mark a whole capacity type (e.g. spot not permitted in the account) or a
 * whole zone (e.g. a zone with no usable subnet) unavailable, as upstream does in newer versions.
 */
export class UnavailableOfferings {
  private readonly entries = new Map<string, UnavailableEntry>();
  private readonly clock: NowClock;
  private readonly ttlMs: number;
  private seq = 0;

  /**
   * @param deps.clock time source (ms since epoch).
   * @param deps.ttlSeconds entry lifetime in seconds, default {@link UNAVAILABLE_OFFERINGS_TTL_SECONDS}.
   * @throws Error when `ttlSeconds` is not a positive finite number.
   */
  constructor(deps: { clock: NowClock; ttlSeconds?: number }) {
    const ttl = deps.ttlSeconds ?? UNAVAILABLE_OFFERINGS_TTL_SECONDS;
    if (!Number.isFinite(ttl) || ttl <= 0) {
      throw new Error(`UnavailableOfferings: ttlSeconds must be a positive number of seconds, got ${ttl}`);
    }
    this.clock = deps.clock;
    this.ttlMs = ttl * 1000;
  }

  /**
   * Sequence number, bumped whenever an entry is added, extended, flushed or found expired; callers caching
   * instance types with availability can compare it to know when to recompute.
   */
  get seqNum(): number {
    this.sweep();
    return this.seq;
  }

  /** Marks one offering unavailable for the TTL (extends the TTL when already marked). */
  markUnavailable(
    instanceType: string,
    zone: string,
    capacityType: CapacityType,
    reason = 'InsufficientCapacity',
  ): void {
    this.put(offeringKey(instanceType, zone, capacityType), {
      scope: 'offering',
      instanceType,
      zone,
      capacityType,
      reason,
      expiresAt: 0,
    });
  }

  /** Marks every offering of `capacityType` unavailable for the TTL. */
  markCapacityTypeUnavailable(capacityType: CapacityType, reason = 'CapacityTypeUnavailable'): void {
    this.put(`ct:${capacityType}`, { scope: 'capacityType', capacityType, reason, expiresAt: 0 });
  }

  /** Marks every offering in `zone` unavailable for the TTL. */
  markZoneUnavailable(zone: string, reason = 'ZoneUnavailable'): void {
    this.put(`zone:${zone}`, { scope: 'zone', zone, reason, expiresAt: 0 });
  }

  /** True when the offering, its capacity type or its zone is marked and not yet expired. */
  isUnavailable(instanceType: string, zone: string, capacityType: CapacityType): boolean {
    return (
      this.live(offeringKey(instanceType, zone, capacityType)) ||
      this.live(`ct:${capacityType}`) ||
      this.live(`zone:${zone}`)
    );
  }

  /** Removes every entry. */
  flush(): void {
    if (this.entries.size > 0) this.seq++;
    this.entries.clear();
  }

  /** Live entries, soonest expiry first. */
  list(): UnavailableEntry[] {
    this.sweep();
    return [...this.entries.values()].map((e) => ({ ...e })).sort((a, b) => a.expiresAt - b.expiresAt);
  }

  /**
   * Copies of `instanceTypes` whose offerings found in the cache have `available: false` (other fields and
   * the input are untouched). Upstream applies the cache the same way when building instance types.
   */
  apply(instanceTypes: readonly InstanceType[]): InstanceType[] {
    this.sweep();
    // the common case (nothing marked) costs one sweep, not a lookup per offering
    if (this.entries.size === 0) return [...instanceTypes];
    const down = (name: string, o: { zone: string; capacityType: CapacityType }) =>
      this.entries.has(offeringKey(name, o.zone, o.capacityType)) ||
      this.entries.has(`ct:${o.capacityType}`) ||
      this.entries.has(`zone:${o.zone}`);
    return instanceTypes.map((it) => {
      if (!it.offerings.some((o) => o.available && down(it.name, o))) return it;
      return {
        ...it,
        offerings: it.offerings.map((o) =>
          o.available && down(it.name, o) ? { ...o, available: false } : o,
        ),
      };
    });
  }

  private put(key: string, entry: UnavailableEntry): void {
    entry.expiresAt = this.clock.now() + this.ttlMs;
    this.entries.set(key, entry);
    this.seq++;
  }

  private live(key: string): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    if (e.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      this.seq++;
      return false;
    }
    return true;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [k, e] of this.entries) {
      if (e.expiresAt <= now) {
        this.entries.delete(k);
        this.seq++;
      }
    }
  }
}

function offeringKey(instanceType: string, zone: string, capacityType: CapacityType): string {
  return `${capacityType}:${instanceType}:${zone}`;
}

/**
 * Whether a node with `labels` can satisfy `requirements` (NodeClaim requirements as a {@link Requirements} set):
 * every requirement whose key `labels` defines must admit that value. Keys `labels` does not define are ignored
 * (the node carries them from the NodeClaim itself, e.g. custom NodePool labels), like upstream's
 * `Requirements.Intersects` / `AllowUndefinedWellKnownLabels` leniency at launch.
 */
export function labelsSatisfy(requirements: Requirements, labels: Readonly<Record<string, string>>): boolean {
  for (const req of requirements.values()) {
    const value = labels[req.key];
    if (value !== undefined && !req.has(value)) return false;
  }
  return true;
}

/** The labels a node launched on `offering` of `instanceType` carries (type labels + type name + zone + capacity type). */
export function offeringLabels(instanceType: InstanceType, offering: Offering): Record<string, string> {
  return {
    ...instanceType.labels,
    ...(offering.labels ?? {}),
    [LabelInstanceType]: instanceType.name,
    [LabelTopologyZone]: offering.zone,
    [LabelCapacityType]: offering.capacityType,
  };
}

/** A chosen launch: the instance type and one of its offerings. */
export interface LaunchOption {
  instanceType: InstanceType;
  offering: Offering;
}

/** Result of {@link selectLaunchOption}: the cheapest available option, or why there is none. */
export type LaunchSelection =
  | { ok: true; option: LaunchOption; compatible: OfferingRef[] }
  | {
      ok: false;
      /** `NoCompatibleOffering`: nothing satisfies the requirements; `AllUnavailable`: all compatible ones are ICE'd. */
      reason: 'NoCompatibleOffering' | 'AllUnavailable';
      /** Compatible but unavailable offerings (empty for `NoCompatibleOffering`). */
      compatible: OfferingRef[];
      /** Names in the instance-type requirement that are not in `instanceTypes`. */
      unknownInstanceTypes: string[];
    };

/** Tie-break order among equally priced offerings: reserved, then spot, then on-demand (upstream launch precedence). */
const CAPACITY_TYPE_ORDER: Record<CapacityType, number> = { reserved: 0, spot: 1, 'on-demand': 2 };

/**
 * Picks the offering a NodeClaim launches on: among `instanceTypes` named by the `node.kubernetes.io/instance-type`
 * `In` requirement (all when absent), whose labels and offering (zone, capacity type) satisfy `requirements`, the
 * cheapest (USD/hour) offering that is `available` and not reported unavailable by `isUnavailable`. Ties break
 * deterministically: capacity type (reserved < spot < on-demand), then instance type name, then zone.
 * Pure: no clock, no randomness (upstream samples ties at random; determinism keeps simulations reproducible).
 * Requirement semantics come from `scheduling/requirements.ts` (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte).
 * @throws RequirementError (`code: 'InvalidRequirement'`) for a malformed requirement.
 */
export function selectLaunchOption(
  instanceTypes: readonly InstanceType[],
  requirements: readonly NodeSelectorRequirement[],
  isUnavailable: (instanceType: string, zone: string, capacityType: CapacityType) => boolean = () => false,
): LaunchSelection {
  const reqs = Requirements.fromNodeSelector(requirements);
  const typeReq = requirements.filter((r) => r.key === LabelInstanceType && r.operator === 'In');
  const named = typeReq.length > 0 ? new Set(typeReq.flatMap((r) => r.values ?? [])) : undefined;
  const known = new Set(instanceTypes.map((it) => it.name));
  const unknownInstanceTypes = named ? [...named].filter((n) => !known.has(n)).sort() : [];
  const compatible: OfferingRef[] = [];
  const unavailable: OfferingRef[] = [];
  let best: LaunchOption | undefined;
  for (const it of instanceTypes) {
    if (named && !named.has(it.name)) continue;
    for (const offering of it.offerings) {
      if (!labelsSatisfy(reqs, offeringLabels(it, offering))) continue;
      const ref: OfferingRef = {
        instanceType: it.name,
        zone: offering.zone,
        capacityType: offering.capacityType,
        priceUSDPerHour: offering.priceUSDPerHour,
      };
      compatible.push(ref);
      if (!offering.available || isUnavailable(it.name, offering.zone, offering.capacityType)) {
        unavailable.push(ref);
        continue;
      }
      if (!best || compareOptions({ instanceType: it, offering }, best) < 0)
        best = { instanceType: it, offering };
    }
  }
  if (best) return { ok: true, option: best, compatible };
  return {
    ok: false,
    reason: compatible.length === 0 ? 'NoCompatibleOffering' : 'AllUnavailable',
    compatible: unavailable,
    unknownInstanceTypes,
  };
}

function compareOptions(a: LaunchOption, b: LaunchOption): number {
  return (
    a.offering.priceUSDPerHour - b.offering.priceUSDPerHour ||
    CAPACITY_TYPE_ORDER[a.offering.capacityType] - CAPACITY_TYPE_ORDER[b.offering.capacityType] ||
    (a.instanceType.name < b.instanceType.name ? -1 : a.instanceType.name > b.instanceType.name ? 1 : 0) ||
    (a.offering.zone < b.offering.zone ? -1 : a.offering.zone > b.offering.zone ? 1 : 0)
  );
}

/** Formats offering refs for error messages: `m5.large/us-east-1a/spot ($0.0400/h), ...` (at most `max`, then `+N more`). */
export function describeOfferings(refs: readonly OfferingRef[], max = 10): string {
  const parts = refs
    .slice(0, max)
    .map(
      (r) =>
        `${r.instanceType}/${r.zone}/${r.capacityType}${
          r.priceUSDPerHour === undefined ? '' : ` ($${r.priceUSDPerHour.toFixed(4)}/h)`
        }`,
    );
  if (refs.length > max) parts.push(`+${refs.length - max} more`);
  return parts.join(', ');
}
