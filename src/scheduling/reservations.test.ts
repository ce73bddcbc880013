/**
 * Capacity reservations in one scheduling pass (upstream `reservationmanager.go`, `nodeclaim.go`
 * `offeringsToReserve` / `FinalizeScheduling`) and requirements on `karpenter.k8s.aws/capacity-reservation-*`.
 */
import { describe, expect, it } from 'vitest';
import type { NodeSelectorRequirement } from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { ReservationLedger } from './reservations.ts';
import { nodeClaimPrice, solve } from './scheduler.ts';
import { makeInstanceType, makeNodePool, makePod } from './testing.ts';
import type { SchedulingInput } from './types.ts';

const CR_ID = 'karpenter.k8s.aws/capacity-reservation-id';
const CT = 'karpenter.sh/capacity-type';

/** m5.large ($0.096) and m5.xlarge ($0.192) on-demand in all zones; m5.large also reserved in cr-123 (zone a). */
function catalog(capacity: number): InstanceType[] {
  const large = makeInstanceType({ name: 'm5.large', cpu: 2, memoryGiB: 8, price: 0.096 });
  large.offerings.push({
    zone: 'test-zone-a',
    capacityType: 'reserved',
    priceUSDPerHour: 0.096 / 10_000_000,
    available: capacity > 0,
    priceSource: 'provider',
    reservationID: 'cr-123',
    reservationCapacity: capacity,
    labels: {
      [CR_ID]: 'cr-123',
      'karpenter.k8s.aws/capacity-reservation-type': 'default',
      'karpenter.k8s.aws/capacity-reservation-interruptible': 'false',
    },
  });
  return [large, makeInstanceType({ name: 'm5.xlarge', cpu: 4, memoryGiB: 16, price: 0.192 })];
}

const pool = () =>
  makeNodePool('reserved-first', {
    requirements: [{ key: CT, operator: 'In', values: ['reserved', 'on-demand'] }],
  });

function input(n: number, capacity: number, podReqs: NodeSelectorRequirement[] = [], np: NodePool = pool()) {
  const pods = Array.from({ length: n }, (_, i) =>
    makePod(`p-${i}`, {
      cpu: '1500m',
      memory: '1Gi',
      ...(podReqs.length
        ? {
            spec: {
              affinity: {
                nodeAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [{ matchExpressions: podReqs }],
                  },
                },
              },
            },
          }
        : {}),
    }),
  );
  const s: SchedulingInput = {
    pods,
    existingNodes: [],
    nodePools: [np],
    instanceTypes: { [np.metadata.name]: catalog(capacity) },
    daemonSets: [],
  };
  return s;
}

const req = (reqs: readonly NodeSelectorRequirement[], key: string) => reqs.find((r) => r.key === key);

describe('capacity reservations in one scheduling pass', () => {
  it('a reservation of 2 and 3 pods each needing its own node: 2 NodeClaims reserved in cr-123, 1 on-demand', () => {
    const r = solve(input(3, 2));
    expect(r.unschedulable).toEqual([]);
    expect(r.newNodeClaims).toHaveLength(3);
    const [a, b, c] = r.newNodeClaims;
    for (const nc of [a!, b!]) {
      expect(nc.cheapest.instanceType.name).toBe('m5.large');
      expect(nc.cheapest.offering.capacityType).toBe('reserved');
      expect(nc.cheapest.offering.reservationID).toBe('cr-123');
      expect(nc.cheapest.offering.zone).toBe('test-zone-a');
      expect(nodeClaimPrice(nc)).toBeCloseTo(0.096 / 10_000_000, 15);
      expect(req(nc.requirements, CT)).toEqual({ key: CT, operator: 'In', values: ['reserved'] });
      expect(req(nc.requirements, CR_ID)).toEqual({ key: CR_ID, operator: 'In', values: ['cr-123'] });
      expect(nc.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large']);
    }
    expect(c!.cheapest.instanceType.name).toBe('m5.large');
    expect(c!.cheapest.offering.capacityType).toBe('on-demand');
    expect(c!.cheapest.offering.reservationID).toBeUndefined();
    expect(nodeClaimPrice(c!)).toBe(0.096);
    expect(req(c!.requirements, CR_ID)).toEqual({ key: CR_ID, operator: 'NotIn', values: ['cr-123'] });
    expect(c!.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large', 'm5.xlarge']);
  });

  it('the ledger keeps the smallest count of a reservation seen twice and refuses to over-reserve', () => {
    const l = new ReservationLedger([catalog(3), catalog(1)]);
    expect(l.remaining('cr-123')).toBe(1);
    l.reserve('cr-123');
    expect(l.remaining('cr-123')).toBe(0);
    expect(l.usedUp()).toEqual(['cr-123']);
    expect(() => l.reserve('cr-123')).toThrow(
      'capacity reservation "cr-123": reserved with no instance left',
    );
  });
});

describe('requirements on karpenter.k8s.aws/capacity-reservation-id', () => {
  const inCR = (id: string): NodeSelectorRequirement => ({ key: CR_ID, operator: 'In', values: [id] });

  it('a pod requiring cr-123 lands only on that reservation; the second pod is unschedulable once it is used up', () => {
    const r = solve(input(2, 1, [inCR('cr-123')]));
    expect(r.newNodeClaims).toHaveLength(1);
    const nc = r.newNodeClaims[0]!;
    expect(nc.cheapest.instanceType.name).toBe('m5.large');
    expect(nc.cheapest.offering.reservationID).toBe('cr-123');
    expect(req(nc.requirements, CR_ID)).toEqual({ key: CR_ID, operator: 'In', values: ['cr-123'] });
    expect(nc.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large']);
    expect(r.unschedulable).toHaveLength(1);
    expect(r.unschedulable[0]!.pod.metadata.name).toBe('p-1');
    expect(r.unschedulable[0]!.message).toContain(
      'no instance left in capacity reservation(s) [cr-123] in this scheduling pass',
    );
  });

  it('a pod requiring an absent reservation cr-999 is unschedulable naming the requirement', () => {
    const r = solve(input(1, 2, [inCR('cr-999')]));
    expect(r.newNodeClaims).toEqual([]);
    expect(r.unschedulable).toHaveLength(1);
    expect(r.unschedulable[0]!.message).toContain(`${CR_ID} In [cr-999]`);
  });

  it('a pod with capacity-reservation-id DoesNotExist skips the reservation (on-demand $0.096)', () => {
    const r = solve(input(1, 2, [{ key: CR_ID, operator: 'DoesNotExist' }]));
    expect(r.unschedulable).toEqual([]);
    expect(r.newNodeClaims[0]!.cheapest.offering.capacityType).toBe('on-demand');
    expect(nodeClaimPrice(r.newNodeClaims[0]!)).toBe(0.096);
  });

  it('a NodePool requiring capacity-reservation-type default takes the reservation for its first NodeClaim', () => {
    const np = makeNodePool('crt', {
      requirements: [
        { key: CT, operator: 'In', values: ['reserved'] },
        { key: 'karpenter.k8s.aws/capacity-reservation-type', operator: 'In', values: ['default'] },
      ],
    });
    const r = solve(input(1, 1, [], np));
    expect(r.unschedulable).toEqual([]);
    expect(r.newNodeClaims[0]!.cheapest.offering.reservationID).toBe('cr-123');
  });
});
