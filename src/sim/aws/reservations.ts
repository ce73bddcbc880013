/**
 * Capacity reservations for the emulator proxy (moto 5.2.3 has none): an in-memory model of EC2's on-demand
 * capacity reservations and capacity blocks, per region, answering `CreateCapacityReservation`,
 * `DescribeCapacityReservations` and `CancelCapacityReservation` in EC2's query/XML protocol, and the launch-side
 * rules the proxy's `CreateFleet` applies: an instance launched from a launch template that targets a reservation
 * (`CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId`) takes one of its free
 * instances, fails with `ReservationCapacityExceeded` when none is left, and with `InvalidParameterCombination` when
 * its instance type or zone is not the reservation's; terminating the instance gives the slot back.
 * Capacity blocks (EC2 sells them through `PurchaseCapacityBlock`) and interruptible reservations are added with
 * {@link CapacityReservations.add}.
 */
import { randomUUID } from 'node:crypto';
import { formFilters, xmlEscape } from './query.ts';

/** One reservation as the emulator keeps it. */
export interface EmulatedReservation {
  id: string;
  region: string;
  instanceType: string;
  availabilityZone: string;
  ownerId: string;
  totalInstanceCount: number;
  availableInstanceCount: number;
  instanceMatchCriteria: 'open' | 'targeted';
  reservationType: 'default' | 'capacity-block';
  state: 'active' | 'expired' | 'cancelled';
  interruptible: boolean;
  /** ms since epoch, or undefined for an unlimited reservation. */
  endDate?: number;
  tags: Record<string, string>;
}

/** The account moto answers as (its default `ACCOUNT_ID`). */
export const EMULATED_ACCOUNT_ID = '123456789012';

function matches(r: EmulatedReservation, name: string, want: readonly string[]): boolean {
  const has = (v: string | undefined) => v !== undefined && want.includes(v);
  if (name.startsWith('tag:')) return has(r.tags[name.slice(4)]);
  switch (name) {
    case 'tag-key':
      return want.some((k) => k in r.tags);
    case 'state':
      return has(r.state);
    case 'owner-id':
      return has(r.ownerId);
    case 'instance-match-criteria':
      return has(r.instanceMatchCriteria);
    case 'instance-type':
      return has(r.instanceType);
    case 'availability-zone':
      return has(r.availabilityZone);
    case 'reservation-type':
      return has(r.reservationType);
    default:
      return false;
  }
}

function reservationXml(r: EmulatedReservation): string {
  const tags = Object.entries(r.tags)
    .map(([k, v]) => `<item><key>${xmlEscape(k)}</key><value>${xmlEscape(v)}</value></item>`)
    .join('');
  return (
    `<item><capacityReservationId>${r.id}</capacityReservationId><ownerId>${r.ownerId}</ownerId>` +
    `<capacityReservationArn>arn:aws:ec2:${r.region}:${r.ownerId}:capacity-reservation/${r.id}</capacityReservationArn>` +
    `<availabilityZone>${r.availabilityZone}</availabilityZone><instanceType>${xmlEscape(r.instanceType)}</instanceType>` +
    `<instancePlatform>Linux/UNIX</instancePlatform><tenancy>default</tenancy>` +
    `<totalInstanceCount>${r.totalInstanceCount}</totalInstanceCount>` +
    `<availableInstanceCount>${r.availableInstanceCount}</availableInstanceCount>` +
    `<state>${r.state}</state><instanceMatchCriteria>${r.instanceMatchCriteria}</instanceMatchCriteria>` +
    `<reservationType>${r.reservationType}</reservationType><interruptible>${r.interruptible}</interruptible>` +
    `<endDateType>${r.endDate === undefined ? 'unlimited' : 'limited'}</endDateType>` +
    (r.endDate !== undefined ? `<endDate>${new Date(r.endDate).toISOString()}</endDate>` : '') +
    `<tagSet>${tags}</tagSet></item>`
  );
}

/** A launch decision for one fleet override (see {@link CapacityReservations.checkLaunch}). */
export type ReservationLaunchCheck =
  | { ok: true; reservation: EmulatedReservation }
  | { ok: false; code: 'ReservationCapacityExceeded' | 'InvalidParameterCombination'; message: string };

/** The reservations of every region, and which instance runs in which. */
export class CapacityReservations {
  private readonly byID = new Map<string, EmulatedReservation>();
  private readonly instances = new Map<string, string>();

  /** Adds a reservation (defaults: active, targeted, default type, not interruptible); returns it. */
  add(
    r: Pick<EmulatedReservation, 'region' | 'instanceType' | 'availabilityZone' | 'totalInstanceCount'> &
      Partial<EmulatedReservation>,
  ): EmulatedReservation {
    const id = r.id ?? `cr-${randomUUID().replace(/-/g, '').slice(0, 17)}`;
    const full: EmulatedReservation = {
      ownerId: EMULATED_ACCOUNT_ID,
      availableInstanceCount: r.totalInstanceCount,
      instanceMatchCriteria: 'targeted',
      reservationType: 'default',
      state: 'active',
      interruptible: false,
      tags: {},
      ...r,
      id,
    };
    this.byID.set(id, full);
    return full;
  }

  /** The reservation `id`, if any. */
  get(id: string): EmulatedReservation | undefined {
    return this.byID.get(id);
  }

  /** Drops everything (the proxy's reset). */
  clear(): void {
    this.byID.clear();
    this.instances.clear();
  }

  /** Whether an override of `instanceType` in `zone` may launch into reservation `id` now. */
  checkLaunch(id: string, instanceType: string, zone: string): ReservationLaunchCheck {
    const r = this.byID.get(id);
    if (r?.state !== 'active') {
      return {
        ok: false,
        code: 'ReservationCapacityExceeded',
        message: `The capacity reservation ${id} is not active.`,
      };
    }
    if (r.instanceType !== instanceType || r.availabilityZone !== zone) {
      return {
        ok: false,
        code: 'InvalidParameterCombination',
        message: `The instance type ${instanceType} in ${zone} does not match capacity reservation ${id} (${r.instanceType} in ${r.availabilityZone}).`,
      };
    }
    if (r.availableInstanceCount <= 0) {
      return {
        ok: false,
        code: 'ReservationCapacityExceeded',
        message: `There is no capacity left in capacity reservation ${id}.`,
      };
    }
    return { ok: true, reservation: r };
  }

  /**
   * Takes one free instance of `r` for a launch about to be sent (synchronously after {@link checkLaunch}, so
   * concurrent fleets cannot both take the last one); {@link launched} records the instance, {@link release} gives
   * the slot back when the launch failed.
   */
  take(r: EmulatedReservation): void {
    r.availableInstanceCount--;
  }

  /** A taken slot whose launch failed. */
  release(r: EmulatedReservation): void {
    r.availableInstanceCount = Math.min(r.totalInstanceCount, r.availableInstanceCount + 1);
  }

  /** `instanceIds` were launched into `r` (its slot taken with {@link take}). */
  launched(r: EmulatedReservation, instanceIds: readonly string[]): void {
    for (const id of instanceIds) this.instances.set(id, r.id);
  }

  /** `instanceIds` were terminated: their slots are free again. */
  terminated(instanceIds: readonly string[]): void {
    for (const id of instanceIds) {
      const r = this.byID.get(this.instances.get(id) ?? '');
      this.instances.delete(id);
      if (r) r.availableInstanceCount = Math.min(r.totalInstanceCount, r.availableInstanceCount + 1);
    }
  }

  /** The reservation instance `instanceId` runs in. */
  reservationOf(instanceId: string): EmulatedReservation | undefined {
    return this.byID.get(this.instances.get(instanceId) ?? '');
  }

  /** `CreateCapacityReservation` of a query form in `region`: the response XML. @throws Error naming a missing field. */
  create(region: string, form: URLSearchParams): string {
    const need = (k: string): string => {
      const v = form.get(k);
      if (!v) throw new Error(`CreateCapacityReservation: ${k} is required`);
      return v;
    };
    const tags: Record<string, string> = {};
    for (const [k, v] of form) {
      const m = /^(TagSpecifications?\.\d+\.Tags?\.\d+)\.Key$/.exec(k);
      if (m) tags[v] = form.get(`${m[1]}.Value`) ?? '';
    }
    const end = form.get('EndDate');
    const r = this.add({
      region,
      instanceType: need('InstanceType'),
      availabilityZone: need('AvailabilityZone'),
      totalInstanceCount: Number(need('InstanceCount')),
      instanceMatchCriteria: form.get('InstanceMatchCriteria') === 'targeted' ? 'targeted' : 'open',
      tags,
      ...(end ? { endDate: Date.parse(end) } : {}),
    });
    return (
      `<?xml version="1.0" encoding="UTF-8"?><CreateCapacityReservationResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
      `<requestId>${randomUUID()}</requestId>${reservationXml(r)
        .replace(/^<item>/, '<capacityReservation>')
        .replace(/<\/item>$/, '</capacityReservation>')}` +
      `</CreateCapacityReservationResponse>`
    );
  }

  /** `CancelCapacityReservation`: the reservation is `cancelled`; its instances keep running as on-demand ones. */
  cancel(form: URLSearchParams): { status: number; body: string } {
    const r = this.byID.get(form.get('CapacityReservationId') ?? '');
    if (!r) return notFound(form.get('CapacityReservationId') ?? '');
    r.state = 'cancelled';
    // its instances keep running as on-demand instances, no longer in the reservation
    for (const [instance, id] of this.instances) if (id === r.id) this.instances.delete(instance);
    return {
      status: 200,
      body:
        `<?xml version="1.0" encoding="UTF-8"?><CancelCapacityReservationResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
        `<requestId>${randomUUID()}</requestId><return>true</return></CancelCapacityReservationResponse>`,
    };
  }

  /** `DescribeCapacityReservations` in `region` (IDs, filters; one page). */
  describe(region: string, form: URLSearchParams): { status: number; body: string } {
    const ids: string[] = [];
    for (const [k, v] of form) if (/^CapacityReservationId\.\d+$/.test(k)) ids.push(v);
    for (const id of ids) if (this.byID.get(id)?.region !== region) return notFound(id);
    const filters = formFilters(form);
    const items = [...this.byID.values()]
      .filter((r) => r.region === region && (ids.length === 0 || ids.includes(r.id)))
      .filter((r) => [...filters].every(([name, want]) => matches(r, name, want)))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    return {
      status: 200,
      body:
        `<?xml version="1.0" encoding="UTF-8"?><DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
        `<requestId>${randomUUID()}</requestId><capacityReservationSet>${items.map(reservationXml).join('')}` +
        `</capacityReservationSet></DescribeCapacityReservationsResponse>`,
    };
  }

  /**
   * A `DescribeInstances` answer with `<capacityReservationId>` (and, for capacity blocks, `<instanceLifecycle>
   * capacity-block`) added to the instances launched into a reservation.
   */
  annotateInstances(xml: string): string {
    if (this.instances.size === 0) return xml;
    return xml.replace(/<instanceId>(i-[0-9a-zA-Z]+)<\/instanceId>/g, (whole, id: string) => {
      const r = this.reservationOf(id);
      if (!r) return whole;
      const lifecycle =
        r.reservationType === 'capacity-block'
          ? '<instanceLifecycle>capacity-block</instanceLifecycle>'
          : r.interruptible
            ? '<instanceLifecycle>interruptible-capacity-reservation</instanceLifecycle>'
            : '';
      return `${whole}<capacityReservationId>${r.id}</capacityReservationId>${lifecycle}`;
    });
  }
}

function notFound(id: string): { status: number; body: string } {
  return {
    status: 400,
    body:
      `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>InvalidCapacityReservationId.NotFound</Code>` +
      `<Message>The capacity reservation ID '${xmlEscape(id)}' does not exist</Message></Error></Errors>` +
      `<RequestID>${randomUUID()}</RequestID></Response>`,
  };
}
