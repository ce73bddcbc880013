import { describe, expect, it } from 'vitest';
import type { CapacityType, InstanceType, Offering } from '../../apis/instancetype.ts';
import { type Candidate, filterUnwantedSpot } from './provider.ts';

/** One candidate of instance type `name` with a single offering in us-east-1a at `price` USD/hour. */
function cand(name: string, capacityType: CapacityType, price: number): Candidate {
  const o: Offering = {
    zone: 'us-east-1a',
    capacityType,
    priceUSDPerHour: price,
    available: true,
    priceSource: capacityType === 'spot' ? 'spot-estimate' : 'on-demand',
  };
  return { it: { name, offerings: [o] } as unknown as InstanceType, offerings: [o], price };
}

describe('filterUnwantedSpot (upstream instance.go filterUnwantedSpot)', () => {
  it('drops spot candidates priced above the cheapest on-demand candidate; equal price is kept', () => {
    // us-east-1 on-demand: c5.large $0.085, m5.large $0.096, m5.2xlarge $0.384
    const onDemand = [cand('m5.large', 'on-demand', 0.096), cand('c5.large', 'on-demand', 0.085)];
    const spot = [
      cand('m5.large', 'spot', 0.0412),
      cand('r5.large', 'spot', 0.085),
      cand('m5.2xlarge', 'spot', 0.1651),
      cand('c5.xlarge', 'spot', 0.0851),
    ];
    const kept = filterUnwantedSpot(spot, [...onDemand, cand('m5.2xlarge', 'on-demand', 0.384)]);
    expect(kept.map((c) => [c.it.name, c.price])).toEqual([
      ['m5.large', 0.0412],
      ['r5.large', 0.085],
    ]);
  });

  it('keeps every spot candidate when there is no on-demand candidate, or when all would be dropped', () => {
    const spot = [cand('m5.2xlarge', 'spot', 0.1651), cand('m5.4xlarge', 'spot', 0.3302)];
    expect(filterUnwantedSpot(spot, []).map((c) => c.it.name)).toEqual(['m5.2xlarge', 'm5.4xlarge']);
    expect(filterUnwantedSpot(spot, [cand('c5.large', 'on-demand', 0.085)]).map((c) => c.it.name)).toEqual([
      'm5.2xlarge',
      'm5.4xlarge',
    ]);
  });
});
