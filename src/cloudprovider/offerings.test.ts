import { describe, expect, it } from 'vitest';
import { FakeClock } from '../kube/clock.ts';
import { selectLaunchOption, UNAVAILABLE_OFFERINGS_TTL_SECONDS, UnavailableOfferings } from './offerings.ts';
import type { InstanceType, Offering } from './types.ts';

function off(
  zone: string,
  capacityType: Offering['capacityType'],
  price: number,
  available = true,
): Offering {
  return { zone, capacityType, priceUSDPerHour: price, available, priceSource: 'provider' };
}
function type(name: string, cpu: string, offerings: Offering[]): InstanceType {
  return {
    name,
    labels: {
      'node.kubernetes.io/instance-type': name,
      'kubernetes.io/arch': 'amd64',
      'example.com/cpu': cpu,
    },
    capacity: { cpu: Number(cpu) * 1000 },
    overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
    allocatable: { cpu: Number(cpu) * 1000 - 100 },
    offerings,
  };
}

const small = type('small', '2', [
  off('z-a', 'on-demand', 0.1),
  off('z-b', 'on-demand', 0.1),
  off('z-a', 'spot', 0.04),
]);
const big = type('big', '8', [off('z-a', 'on-demand', 0.4), off('z-b', 'spot', 0.03, false)]);

describe('UnavailableOfferings', () => {
  it('expires entries after the 180 s TTL, extends on re-mark, and bumps seqNum', () => {
    const clock = new FakeClock();
    const ice = new UnavailableOfferings({ clock });
    expect(UNAVAILABLE_OFFERINGS_TTL_SECONDS).toBe(180);
    const s0 = ice.seqNum;
    ice.markUnavailable('small', 'z-a', 'spot', 'InsufficientInstanceCapacity');
    expect(ice.seqNum).toBe(s0 + 1);
    expect(ice.isUnavailable('small', 'z-a', 'spot')).toBe(true);
    expect(ice.isUnavailable('small', 'z-a', 'on-demand')).toBe(false);
    expect(ice.isUnavailable('small', 'z-b', 'spot')).toBe(false);
    clock.advance(120_000);
    ice.markUnavailable('small', 'z-a', 'spot');
    clock.advance(179_999);
    expect(ice.isUnavailable('small', 'z-a', 'spot')).toBe(true);
    expect(ice.list()).toEqual([
      expect.objectContaining({ scope: 'offering', instanceType: 'small', expiresAt: clock.now() + 1 }),
    ]);
    clock.advance(1);
    const before = ice.seqNum;
    expect(ice.isUnavailable('small', 'z-a', 'spot')).toBe(false);
    expect(ice.list()).toEqual([]);
    expect(ice.seqNum).toBe(before);
  });

  it('marks whole capacity types and zones, and flushes', () => {
    const clock = new FakeClock();
    const ice = new UnavailableOfferings({ clock, ttlSeconds: 10 });
    ice.markCapacityTypeUnavailable('spot');
    ice.markZoneUnavailable('z-b');
    expect(ice.isUnavailable('anything', 'z-a', 'spot')).toBe(true);
    expect(ice.isUnavailable('anything', 'z-b', 'on-demand')).toBe(true);
    expect(ice.isUnavailable('anything', 'z-a', 'on-demand')).toBe(false);
    ice.flush();
    expect(ice.isUnavailable('anything', 'z-a', 'spot')).toBe(false);
    expect(() => new UnavailableOfferings({ clock, ttlSeconds: 0 })).toThrow(/ttlSeconds must be a positive/);
  });

  it('apply() marks cached offerings unavailable on copies only', () => {
    const ice = new UnavailableOfferings({ clock: new FakeClock() });
    ice.markUnavailable('small', 'z-a', 'spot');
    const [s, b] = ice.apply([small, big]);
    expect(s!.offerings.map((o) => o.available)).toEqual([true, true, false]);
    expect(small.offerings[2]!.available).toBe(true);
    expect(b).toBe(big);
  });
});

describe('selectLaunchOption', () => {
  it('picks the cheapest available compatible offering', () => {
    const r = selectLaunchOption([small, big], []);
    expect(
      r.ok && [r.option.instanceType.name, r.option.offering.zone, r.option.offering.capacityType],
    ).toEqual(['small', 'z-a', 'spot']);
  });

  it('honors instance-type, zone, capacity-type, NotIn and numeric requirements', () => {
    const pick = (reqs: Parameters<typeof selectLaunchOption>[1]) => {
      const r = selectLaunchOption([small, big], reqs);
      return r.ok
        ? `${r.option.instanceType.name}/${r.option.offering.zone}/${r.option.offering.capacityType}`
        : r.reason;
    };
    expect(pick([{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }])).toBe(
      'small/z-a/on-demand',
    );
    expect(
      pick([
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
        { key: 'topology.kubernetes.io/zone', operator: 'NotIn', values: ['z-a'] },
      ]),
    ).toBe('small/z-b/on-demand');
    expect(pick([{ key: 'example.com/cpu', operator: 'Gt', values: ['4'] }])).toBe('big/z-a/on-demand');
    expect(pick([{ key: 'example.com/cpu', operator: 'Gte', values: ['9'] }])).toBe('NoCompatibleOffering');
    // A key the instance types do not define does not exclude them (it becomes a NodeClaim label).
    expect(pick([{ key: 'team', operator: 'In', values: ['a'] }])).toBe('small/z-a/spot');
  });

  it('reports unavailable compatible offerings and unknown instance types', () => {
    const r = selectLaunchOption(
      [small, big],
      [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['big', 'huge'] },
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
      ],
    );
    expect(r).toEqual({
      ok: false,
      reason: 'AllUnavailable',
      compatible: [{ instanceType: 'big', zone: 'z-b', capacityType: 'spot', priceUSDPerHour: 0.03 }],
      unknownInstanceTypes: ['huge'],
    });
  });

  it('consults the isUnavailable callback and breaks price ties by capacity type, name, zone', () => {
    const a = type('a', '2', [
      off('z-b', 'on-demand', 0.1),
      off('z-a', 'on-demand', 0.1),
      off('z-c', 'spot', 0.1),
    ]);
    const b = type('b', '2', [off('z-a', 'on-demand', 0.1)]);
    const first = selectLaunchOption([b, a], []);
    expect(first.ok && `${first.option.instanceType.name}/${first.option.offering.zone}`).toBe('a/z-c');
    const second = selectLaunchOption([b, a], [], (_it, _zone, ct) => ct === 'spot');
    expect(second.ok && `${second.option.instanceType.name}/${second.option.offering.zone}`).toBe('a/z-a');
  });
});
