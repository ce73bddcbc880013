import { describe, expect, it } from 'vitest';
import type { InstanceType } from '../apis/instancetype.ts';
import { GROWTH_EFFICIENCY, NewNodeClaim, openNewNodeClaim, paretoFrontier } from './nodeclaim.ts';
import { buildPodInfo } from './podinfo.ts';
import { makeInstanceType, makeNodePool, makePod, poolFixture, smallCatalog } from './testing.ts';

function setup(types: InstanceType[] = smallCatalog()) {
  const np = makeNodePool('p', {
    requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
  });
  const { index, pool, topology } = poolFixture(np, types);
  const pod = (name: string, cpu: string, memory = '100Mi') =>
    buildPodInfo(makePod(name, { cpu, memory }), index, topology);
  return { pool, topology, pod };
}

describe('NewNodeClaim', () => {
  it('narrows options as pods join and grows into larger types', () => {
    const { pool, topology, pod } = setup();
    const plan = openNewNodeClaim(pool, pod('a', '1500m'), topology, 'h1');
    if (!(plan instanceof NewNodeClaim)) throw new Error(plan.message);
    expect(plan.fittingOptions()[0]!.t.it.name).toBe('c5.large');
    const add = plan.canAdd(pod('b', '1500m'), topology, true, false);
    expect('code' in add && add.message).toBe('would need a larger (more expensive) instance type');
    const grow = plan.canAdd(pod('b', '1500m'), topology, true, true);
    if ('code' in grow) throw new Error(grow.message);
    plan.commit(pod('b', '1500m'), grow, topology);
    expect(plan.fittingOptions().map((p) => p.t.it.name)).toEqual([
      'c5.xlarge',
      'm5.xlarge',
      'r5.xlarge',
      'c5.2xlarge',
      'm5.2xlarge',
      'r5.2xlarge',
      'c5.4xlarge',
      'm5.4xlarge',
      'r5.4xlarge',
    ]);
    // no capacity-type requirement: the spot offering (40% of $0.17) is the cheapest
    expect(plan.price()).toBeCloseTo(0.068, 6);
  });

  it(`stops growing into a type that costs more than ${GROWTH_EFFICIENCY}x the best price for its mix`, () => {
    const types = [
      makeInstanceType({ name: 'c5.large', cpu: 2, memoryGiB: 4, price: 0.08 }),
      makeInstanceType({ name: 'c5.xlarge', cpu: 4, memoryGiB: 8, price: 0.16 }),
      makeInstanceType({ name: 'x9.huge', cpu: 64, memoryGiB: 2048, price: 20 }),
    ];
    const { pool, topology, pod } = setup(types);
    const plan = openNewNodeClaim(pool, pod('a', '3'), topology, 'h1') as NewNodeClaim;
    const r = plan.canAdd(pod('b', '1500m'), topology, true, true);
    expect('code' in r && r.message).toBe('NodeClaim reached its cost-efficient size');
    expect(plan.growthCapped).toBe(true);
  });

  it('paretoFrontier keeps only non-dominated allocatable vectors', () => {
    const { pool } = setup();
    const f = paretoFrontier(pool.types);
    // the 4xlarge of each family dominates its smaller sizes; c5/m5/r5.4xlarge differ in memory only → r5 dominates
    expect(f).toHaveLength(1);
  });
});
