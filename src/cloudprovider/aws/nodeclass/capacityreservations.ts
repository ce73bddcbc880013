/**
 * Capacity reservations of an EC2NodeClass, after aws/karpenter-provider-aws v1.14.1
 * `pkg/providers/capacityreservation/{provider,types}.go` and `pkg/apis/v1/ec2nodeclass_status.go`
 * (`CapacityReservationFromEC2`):
 * - each `capacityReservationSelectorTerms[i]` is one `DescribeCapacityReservations` query (`id` → the reservation
 *   ID; else `tags` as `tag:k` / `tag-key` filters, `ownerID` as `owner-id`, `instanceMatchCriteria` as
 *   `instance-match-criteria`), always with `state=active`; the results are unioned by ID and sorted by ID;
 * - a reservation becomes a `status.capacityReservations[]` entry; a capacity block whose end is 40 minutes away or
 *   less is `expiring` (no new launches, its nodes are drained);
 * - {@link CapacityReservationAvailability} keeps each reservation's free instance count between describes: set by a
 *   describe, decremented on each launch into it, zeroed when a launch reports `ReservationCapacityExceeded`, as
 *   upstream's availability cache.
 * Capenter differs from upstream in one way, for bad input: a term that matches no active reservation is reported
 * (the controller sets `CapacityReservationsReady=False` naming the term), where upstream stays silent.
 */
import {
  type CapacityReservation,
  DescribeCapacityReservationsCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import type { NowClock } from '../../offerings.ts';
import { withThrottleRetry } from '../retry.ts';
import type { Filter } from './filters.ts';

/** One `spec.capacityReservationSelectorTerms[]` entry. */
export interface CapacityReservationSelectorTerm {
  id?: string;
  tags?: Record<string, string>;
  ownerID?: string;
  instanceMatchCriteria?: 'open' | 'targeted';
}

/** One `status.capacityReservations[]` entry (upstream `v1.CapacityReservation`). */
export interface CapacityReservationStatus {
  id: string;
  instanceType: string;
  availabilityZone: string;
  ownerID: string;
  instanceMatchCriteria: 'open' | 'targeted';
  /** `default` (an on-demand capacity reservation) or `capacity-block`. */
  reservationType: 'default' | 'capacity-block';
  /** `expiring` from 40 minutes before a capacity block ends. */
  state: 'active' | 'expiring';
  /** RFC 3339 end of the reservation, when it has one. */
  endTime?: string;
  interruptible?: boolean;
}

/** How long before its end a capacity block counts as `expiring` (upstream `capacityReservationExpirationPeriod`). */
export const CAPACITY_BLOCK_EXPIRING_SECONDS = 40 * 60;

/** The `DescribeCapacityReservations` input of one selector term (upstream `Query.DescribeCapacityReservationsInput`). */
export function capacityReservationQuery(term: CapacityReservationSelectorTerm): {
  CapacityReservationIds?: string[];
  Filters: Filter[];
} {
  const filters: Filter[] = [{ Name: 'state', Values: ['active'] }];
  if (term.id) return { CapacityReservationIds: [term.id], Filters: filters };
  if (term.ownerID) filters.push({ Name: 'owner-id', Values: [term.ownerID] });
  for (const [k, v] of Object.entries(term.tags ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    filters.push(v === '*' ? { Name: 'tag-key', Values: [k] } : { Name: `tag:${k}`, Values: [v] });
  }
  if (term.instanceMatchCriteria)
    filters.push({ Name: 'instance-match-criteria', Values: [term.instanceMatchCriteria] });
  return { Filters: filters };
}

/**
 * The status entry of an EC2 reservation at `nowMs`, or undefined when EC2 reports something capenter cannot use (an
 * unknown instance match criteria or reservation type, a missing field), as upstream skips those.
 */
export function capacityReservationFromEC2(
  cr: CapacityReservation,
  nowMs: number,
): CapacityReservationStatus | undefined {
  const mc = cr.InstanceMatchCriteria;
  if (mc !== 'open' && mc !== 'targeted') return undefined;
  const type = cr.ReservationType ?? 'default';
  if (type !== 'default' && type !== 'capacity-block') return undefined;
  if (!cr.CapacityReservationId || !cr.InstanceType || !cr.AvailabilityZone) return undefined;
  const end = cr.EndDate ? cr.EndDate.getTime() : undefined;
  const expiring =
    type === 'capacity-block' && end !== undefined && nowMs >= end - CAPACITY_BLOCK_EXPIRING_SECONDS * 1000;
  return {
    id: cr.CapacityReservationId,
    instanceType: cr.InstanceType,
    availabilityZone: cr.AvailabilityZone,
    ownerID: cr.OwnerId ?? '',
    instanceMatchCriteria: mc,
    reservationType: type,
    state: expiring ? 'expiring' : 'active',
    ...(cr.EndDate ? { endTime: cr.EndDate.toISOString() } : {}),
    ...(cr.Interruptible ? { interruptible: true } : {}),
  };
}

/**
 * Free instance counts of capacity reservations by ID (upstream `availabilityCache`). Unknown IDs count 0: a
 * reservation is launched into only after a describe saw room in it.
 */
export class CapacityReservationAvailability {
  private readonly counts = new Map<string, number>();
  /** Bumped on every change (instance-type caches compare it). */
  seq = 0;

  /** Sets the counts a describe reported. */
  sync(counts: ReadonlyMap<string, number>): void {
    for (const [id, n] of counts) {
      if (this.counts.get(id) === n) continue;
      this.counts.set(id, n);
      this.seq++;
    }
  }

  /** Free instances of reservation `id` (0 when unknown). */
  available(id: string): number {
    return this.counts.get(id) ?? 0;
  }

  /** One instance was launched into `id`. */
  markLaunched(id: string): void {
    const n = this.counts.get(id);
    if (n === undefined || n <= 0) return;
    this.counts.set(id, n - 1);
    this.seq++;
  }

  /** EC2 said `id` is full (`ReservationCapacityExceeded`): no launch goes there until the next describe. */
  markUnavailable(id: string): void {
    if ((this.counts.get(id) ?? 0) === 0) return;
    this.counts.set(id, 0);
    this.seq++;
  }
}

/** What {@link resolveCapacityReservations} found. */
export interface ResolvedCapacityReservations {
  /** The status entries, sorted by ID. */
  reservations: CapacityReservationStatus[];
  /** Indexes of the terms that matched no active reservation. */
  unmatchedTerms: number[];
  /** Free instances per reservation ID (`AvailableInstanceCount`). */
  available: Map<string, number>;
}

/**
 * Resolves the class's `capacityReservationSelectorTerms` (one paginated describe per term).
 * @throws Error naming the term when EC2 fails (the controller retries).
 */
export async function resolveCapacityReservations(
  ec2: EC2Client,
  nodeClass: EC2NodeClass,
  clock: NowClock,
): Promise<ResolvedCapacityReservations> {
  const terms = (nodeClass.spec.capacityReservationSelectorTerms ?? []) as CapacityReservationSelectorTerm[];
  const byID = new Map<string, CapacityReservation>();
  const unmatchedTerms: number[] = [];
  for (const [i, term] of terms.entries()) {
    let token: string | undefined;
    let matched = 0;
    do {
      const q = capacityReservationQuery(term);
      const page = await withThrottleRetry(() =>
        ec2.send(
          new DescribeCapacityReservationsCommand({
            ...q,
            ...(q.CapacityReservationIds ? {} : { MaxResults: 1000 }),
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      ).catch((err: unknown) => {
        // an unknown ID is an answer, not a failure: the term matched nothing
        if ((err as { name?: string }).name === 'InvalidCapacityReservationId.NotFound') return {};
        throw new Error(
          `DescribeCapacityReservations for capacityReservationSelectorTerms[${i}] failed: ${(err as Error).message}`,
        );
      });
      for (const cr of (page as { CapacityReservations?: CapacityReservation[] }).CapacityReservations ??
        []) {
        if (!cr.CapacityReservationId) continue;
        byID.set(cr.CapacityReservationId, cr);
        matched++;
      }
      token = (page as { NextToken?: string }).NextToken;
    } while (token);
    if (matched === 0) unmatchedTerms.push(i);
  }
  const now = clock.now();
  const reservations: CapacityReservationStatus[] = [];
  const available = new Map<string, number>();
  for (const cr of [...byID.values()].sort((a, b) =>
    (a.CapacityReservationId ?? '') < (b.CapacityReservationId ?? '') ? -1 : 1,
  )) {
    const r = capacityReservationFromEC2(cr, now);
    if (!r) continue;
    reservations.push(r);
    available.set(r.id, cr.AvailableInstanceCount ?? 0);
  }
  return { reservations, unmatchedTerms, available };
}
