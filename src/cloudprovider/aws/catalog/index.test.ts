import { describe, expect, it } from 'vitest';
import {
  getInstanceTypes,
  listInstanceTypeSpecs,
  lookupInstanceTypes,
  onDemandPrice,
  SUPPORTED_REGIONS,
  spotPriceEstimate,
  UnsupportedRegionError,
} from './index.ts';

describe('getInstanceTypes', () => {
  it('lists the types offered in each region, sorted, leaving out types no zone offers', () => {
    expect(listInstanceTypeSpecs()).toHaveLength(1373);
    const counts = Object.fromEntries(
      SUPPORTED_REGIONS.map((r) => [r, getInstanceTypes({ region: r }).instanceTypes.length]),
    );
    expect(counts).toEqual({ 'us-east-1': 1354, 'us-west-2': 1331, 'eu-west-1': 1150, 'eu-central-1': 1139 });
    const names = getInstanceTypes({ region: 'us-east-1' }).instanceTypes.map((t) => t.name);
    expect(names).toEqual([...names].sort());
    expect(names).not.toContain('trn2.48xlarge'); // described but offered in no us-east-1 zone
  });

  it('gives m5.large on-demand and spot offerings in every zone that offers it', () => {
    const m5 = getInstanceTypes({ region: 'us-east-1' }).instanceTypes.find((t) => t.name === 'm5.large')!;
    const zones = [...new Set(m5.offerings.map((o) => o.zone))];
    expect(zones).toEqual(['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d', 'us-east-1f']);
    const od = m5.offerings.filter((o) => o.capacityType === 'on-demand');
    expect(od).toHaveLength(5);
    expect(od[0]).toEqual({
      zone: 'us-east-1a',
      capacityType: 'on-demand',
      priceUSDPerHour: 0.096,
      available: true,
      priceSource: 'on-demand',
    });
  });

  it('estimates spot as on-demand × (1 − advisor savings): m5.large 0.096 × (1 − 0.66) = 0.03264 in us-east-1', () => {
    const m5 = getInstanceTypes({ region: 'us-east-1' }).instanceTypes.find((t) => t.name === 'm5.large')!;
    const spot = m5.offerings.filter((o) => o.capacityType === 'spot');
    expect(spot).toHaveLength(5);
    expect(spot[0]!.priceSource).toBe('spot-estimate');
    expect(spot[0]!.priceUSDPerHour).toBe(0.03264);
    expect(spotPriceEstimate('m5.large', 'us-east-1')).toEqual({
      priceUSDPerHour: 0.03264,
      savingsPercent: 66,
      interruption: '15-20%',
    });
  });

  it('eu-west-1 falls back to us-east-1 on-demand prices and says so', () => {
    const res = getInstanceTypes({ region: 'eu-west-1' });
    expect(res.notices.some((n) => n.includes('eu-west-1') && n.includes('on-demand-fallback'))).toBe(true);
    const m5 = res.instanceTypes.find((t) => t.name === 'm5.large')!;
    const od = m5.offerings.find((o) => o.capacityType === 'on-demand')!;
    expect(od).toMatchObject({
      zone: 'eu-west-1a',
      priceUSDPerHour: 0.096,
      priceSource: 'on-demand-fallback',
    });
    // spot uses eu-west-1's advisor savings (57%) on the fallback price: 0.096 × 0.43 = 0.04128
    expect(m5.offerings.find((o) => o.capacityType === 'spot')!.priceUSDPerHour).toBe(0.04128);
    expect(onDemandPrice('m5.large', 'eu-west-1')).toEqual({
      priceUSDPerHour: 0.096,
      priceSource: 'on-demand-fallback',
    });
    expect(getInstanceTypes({ region: 'us-east-1' }).notices.some((n) => n.includes('fallback'))).toBe(false);
  });

  it('types without a known price get no offerings (mac types) and a notice', () => {
    const res = getInstanceTypes({ region: 'us-east-1' });
    expect(res.instanceTypes.find((t) => t.name === 'mac1.metal')!.offerings).toEqual([]);
    expect(res.notices.some((n) => n.includes('mac1.metal'))).toBe(true);
  });

  it('types the advisor does not list for the region get on-demand offerings only', () => {
    const res = getInstanceTypes({ region: 'us-east-1' });
    const noSpot = res.instanceTypes.find(
      (t) => t.offerings.length > 0 && t.offerings.every((o) => o.capacityType === 'on-demand'),
    );
    expect(noSpot).toBeDefined();
    expect(spotPriceEstimate(noSpot!.name, 'us-east-1')).toBeUndefined();
  });

  it('memoizes per region and relevant node-class fields, and freezes the result', () => {
    const a = getInstanceTypes({ region: 'us-east-1' });
    expect(getInstanceTypes({ region: 'us-east-1' })).toBe(a);
    const nc = (kubelet: Record<string, unknown>) => ({
      apiVersion: 'karpenter.k8s.aws/v1' as const,
      kind: 'EC2NodeClass' as const,
      metadata: { name: 'default' },
      spec: { amiSelectorTerms: [{ alias: 'al2023@latest' }], kubelet },
    });
    // imageGC settings do not change instance types: same memo entry as no kubelet at all
    expect(getInstanceTypes({ region: 'us-east-1', nodeClass: nc({ imageGCLowThresholdPercent: 65 }) })).toBe(
      a,
    );
    const b = getInstanceTypes({ region: 'us-east-1', nodeClass: nc({ maxPods: 50 }) });
    expect(b).not.toBe(a);
    expect(b.instanceTypes.find((t) => t.name === 'm5.large')!.allocatable.pods).toBe(50);
    expect(Object.isFrozen(a.instanceTypes[0]!.offerings[0])).toBe(true);
    expect(() => {
      (a.instanceTypes[0]!.allocatable as Record<string, number>).cpu = 1;
    }).toThrow(TypeError);
  });

  it('a class with connectionTracking gets Nitro types only (upstream connectionTrackingCompatibility)', () => {
    const all = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;
    const nitro = getInstanceTypes({
      region: 'us-east-1',
      nodeClass: {
        apiVersion: 'karpenter.k8s.aws/v1',
        kind: 'EC2NodeClass',
        metadata: { name: 'ct' },
        spec: { amiSelectorTerms: [{ alias: 'al2023@latest' }], connectionTracking: { udpTimeout: 30 } },
      },
    }).instanceTypes;
    const hypervisor = new Map(listInstanceTypeSpecs().map((s) => [s.name, s.hypervisor]));
    expect(hypervisor.get('m4.large')).toBe('xen');
    expect(all.map((t) => t.name)).toContain('m4.large');
    expect(nitro.map((t) => t.name)).not.toContain('m4.large');
    expect(nitro.map((t) => t.name)).toContain('m5.large');
    expect(nitro.every((t) => hypervisor.get(t.name) === 'nitro')).toBe(true);
    expect(nitro.length).toBe(all.filter((t) => hypervisor.get(t.name) === 'nitro').length);
  });

  it('rejects an unsupported region listing the supported ones', () => {
    expect(() => getInstanceTypes({ region: 'ap-south-1' })).toThrow(UnsupportedRegionError);
    expect(() => getInstanceTypes({ region: 'ap-south-1' })).toThrow(
      'region "ap-south-1" is not in capenter\'s embedded AWS catalog; supported regions: us-east-1, us-west-2, eu-west-1, eu-central-1',
    );
    const r = lookupInstanceTypes({ region: 'ap-south-1' });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.code).toBe('UnsupportedRegion');
  });
});
