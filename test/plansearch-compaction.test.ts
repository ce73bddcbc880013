/**
 * Regression: `PlanSearch` (src/scheduling/plansearch.ts) retires NodeClaims that can take no further pod and
 * compacts its rows. It compacted inside `update()`, which the growth scan of `place()` calls while it still holds
 * row indices (`top`): the indices then pointed at other NodeClaims or past the end, and `solve()` threw
 * `TypeError: Cannot read properties of undefined (reading 'reqKey')` on the disruption benchmark's 10,000-pod
 * workload (the first size with more than 64 retired rows during a growth scan). Compaction now runs at the start
 * of the next `place()`.
 */
import { describe, expect, it } from 'vitest';
import { benchNodePool, makePods, provision } from '../bench/disruption.ts';
import { getInstanceTypes } from '../src/cloudprovider/aws/catalog/index.ts';
import { DEFAULT_EC2NODECLASS } from '../src/simulate/input.ts';

describe('PlanSearch row compaction', () => {
  it('solve places the disruption benchmark’s 10,000 seeded pods on 1,112 NodeClaims without throwing', () => {
    const np = benchNodePool();
    const types = [
      ...getInstanceTypes({ region: 'us-east-1', nodeClass: DEFAULT_EC2NODECLASS }).instanceTypes,
    ];
    const nodes = provision(makePods(10_000), np, types);
    expect(nodes).toHaveLength(1112);
    expect(nodes.reduce((n, dn) => n + dn.pods.length, 0)).toBe(10_000);
  });
});
