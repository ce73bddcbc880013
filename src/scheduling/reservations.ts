/**
 * Capacity-reservation accounting across one scheduling pass (upstream kubernetes-sigs/karpenter
 * `pkg/controllers/provisioning/scheduling/reservationmanager.go` `ReservationManager`, and `nodeclaim.go`
 * `offeringsToReserve` / `FinalizeScheduling`). Pure and synchronous.
 *
 * Each planned NodeClaim whose cheapest offering is `reserved` reserves one instance of that offering's
 * reservation; once a reservation's count is used up in the pass, its offerings are no longer available to later
 * NodeClaims of the pass, which fall back to the next cheapest offering their requirements allow (on-demand / spot),
 * or fail when their requirements allow only that reservation.
 *
 * Capenter deviations: a NodeClaim reserves one reservation (its cheapest offering's), not every compatible one as
 * upstream does pessimistically; accounting happens when plans are finalised rather than per pod; and a NodeClaim
 * that falls back gets `karpenter.k8s.aws/capacity-reservation-id NotIn [used-up ids]` so its launch does not try
 * (and get refused by) a reservation the pass already used up.
 */
import type { InstanceType, Offering } from '../apis/instancetype.ts';
import { LabelCapacityReservationID, LabelCapacityType } from '../apis/labels.ts';
import { Requirement, type Requirements } from './requirements.ts';

/** Instances left per reservation ID during one pass (upstream `ReservationManager.capacity`). */
export class ReservationLedger {
  private readonly left = new Map<string, number>();

  /**
   * Counts every reserved offering of `instanceTypes` (keyed by NodePool or not); a reservation seen with
   * different counts keeps the smallest, as upstream `NewReservationManager` does. A reserved offering without a
   * `reservationCapacity` counts as 0 left.
   */
  constructor(instanceTypes: Iterable<readonly InstanceType[]>) {
    for (const types of instanceTypes)
      for (const it of types)
        for (const o of it.offerings) {
          if (o.capacityType !== 'reserved' || o.reservationID === undefined) continue;
          const n = Math.max(0, o.reservationCapacity ?? 0);
          const cur = this.left.get(o.reservationID);
          if (cur === undefined || n < cur) this.left.set(o.reservationID, n);
        }
  }

  /** Instances of reservation `id` still free in this pass (0 for an unknown ID). */
  remaining(id: string): number {
    return this.left.get(id) ?? 0;
  }

  /** Takes one instance of reservation `id`. @throws Error when none is left (a scheduler bug). */
  reserve(id: string): void {
    const n = this.remaining(id);
    if (n <= 0) throw new Error(`capacity reservation "${id}": reserved with no instance left in this pass`);
    this.left.set(id, n - 1);
  }

  /** Reservation IDs with no instance left, sorted. */
  usedUp(): string[] {
    return [...this.left]
      .filter(([, n]) => n <= 0)
      .map(([id]) => id)
      .sort();
  }
}

/** The outcome of {@link reserveOffering}: requirements to launch with and the chosen offering's reservation. */
export interface ReservationChoice {
  /** `reqs` narrowed: reserved → `capacity-type In [reserved]` + `capacity-reservation-id In [id]`; else NotIn. */
  reqs: Requirements;
  /** The reservation ID the NodeClaim took, undefined when it launches without one. */
  reservationID?: string;
  /** True when `reqs` required reservations (`capacity-reservation-id In [...]`) and all of them are used up. */
  usedUp?: boolean;
}

/**
 * Narrows a finalised NodeClaim's requirements `reqs` by the ledger: used-up reservations are excluded
 * (`capacity-reservation-id NotIn [...]`, only when one is compatible with `reqs`); then, when `pick` (the
 * cheapest offering under the narrowed requirements, from the caller) is reserved, one instance of its
 * reservation is taken and the requirements pinned to it (upstream `FinalizeScheduling`).
 */
export function reserveOffering(
  ledger: ReservationLedger,
  reqs: Requirements,
  /** The offerings of each instance type the NodeClaim may launch as (read only when a reservation is used up). */
  offeringsOf: Iterable<readonly Offering[]>,
  pick: (reqs: Requirements) => Offering | undefined,
): ReservationChoice {
  const usedUp = new Set(ledger.usedUp());
  const blocked = new Set<string>();
  if (usedUp.size > 0)
    for (const offs of offeringsOf)
      for (const o of offs)
        if (o.reservationID !== undefined && usedUp.has(o.reservationID)) blocked.add(o.reservationID);
  const out = reqs.clone();
  if (blocked.size > 0) {
    out.add(Requirement.notIn(LabelCapacityReservationID, [...blocked].sort()));
    // In [a] ∩ NotIn [a] is DoesNotExist: a NodeClaim that needed those reservations cannot fall back.
    const before = reqs.get(LabelCapacityReservationID);
    if (before && !before.allowsAbsent() && out.get(LabelCapacityReservationID)!.allowsAbsent())
      return { reqs: out, usedUp: true };
  }
  const o = pick(out);
  if (o?.capacityType !== 'reserved' || o.reservationID === undefined) return { reqs: out };
  ledger.reserve(o.reservationID);
  out.add(
    Requirement.in(LabelCapacityType, ['reserved']),
    Requirement.in(LabelCapacityReservationID, [o.reservationID]),
  );
  return { reqs: out, reservationID: o.reservationID };
}
