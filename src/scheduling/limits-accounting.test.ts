/**
 * The accounting rules of `limits.ts` one by one, with real values: what a NodeClaim and a pool use, what is left,
 * and what a plan reserves (the scheduler-level behaviour is in `limits.test.ts`).
 */
import { describe, expect, it } from 'vitest';
import type { Node } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import {
  addUsage,
  copyUsage,
  exceeds,
  largestCapacity,
  nodeClaimCapacity,
  nodeLimitCapacity,
  planCapacity,
  poolUsage,
  remainingLimits,
  usageByPool,
  withinRemaining,
} from './limits.ts';
import { makeInstanceType, makeNodePool } from './testing.ts';

const GiB = 2 ** 30;
const small = makeInstanceType({ name: 'small', cpu: 2, memoryGiB: 4, price: 0.1 });
const large = makeInstanceType({ name: 'large', cpu: 8, memoryGiB: 16, price: 0.4 });
const index = new Map([small, large].map((t) => [t.name, t]));

function claim(
  name: string,
  pool: string,
  o: { capacity?: Record<string, string>; types?: string[] } = {},
): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': pool } },
    spec: {
      nodeClassRef: { group: 'g', kind: 'k', name: 'n' },
      requirements: o.types
        ? [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: o.types }]
        : [],
    },
    ...(o.capacity ? { status: { capacity: o.capacity } } : {}),
  };
}

function node(name: string, cpu: string): Node {
  return { metadata: { name, labels: { 'karpenter.sh/nodepool': 'p' } }, status: { capacity: { cpu } } };
}

describe('limits accounting', () => {
  it('a NodeClaim counts status.capacity once launched, else its largest option, else nothing', () => {
    expect(nodeClaimCapacity(claim('a', 'p', { capacity: { cpu: '3' } }), index)).toEqual({ cpu: 3000 });
    const planned = claim('b', 'p', { types: ['small', 'large', 'unknown'] });
    expect(nodeClaimCapacity(planned, index)).toEqual({ cpu: 8000, memory: 16 * GiB, pods: 110 });
    expect(nodeClaimCapacity(planned)).toEqual({});
    expect(nodeClaimCapacity(claim('c', 'p', { capacity: { cpu: 'lots' } }), index)).toEqual({});
  });

  it('usageByPool sums members per pool with nodes: 1 each; a Node without NodeClaim counts its capacity', () => {
    const members = [
      { nodePool: 'p', nodeClaim: claim('a', 'p', { capacity: { cpu: '2' } }) },
      { nodePool: 'p', nodeClaim: claim('b', 'p', { types: ['large'] }) },
      { nodePool: 'p', node: node('n', '4') },
      { nodePool: 'q', node: node('m', '1') },
      { node: node('unlabelled', '64') },
    ];
    const usage = usageByPool(members, index);
    expect(usage.p).toEqual({ cpu: 2000 + 8000 + 4000, memory: 16 * GiB, pods: 110, nodes: 3 });
    expect(usage.q).toEqual({ cpu: 1000, nodes: 1 });
    expect(Object.keys(usage).sort()).toEqual(['p', 'q']);
    // one pool, plus what is still on the wire
    expect(poolUsage('q', members, index, { cpu: 500, nodes: 1 })).toEqual({ cpu: 1500, nodes: 2 });
    expect(poolUsage('none', members, index)).toEqual({});
  });

  it('remaining, within and exceeds agree on the same numbers', () => {
    const left = remainingLimits({ cpu: 10_000, nodes: 3 }, { cpu: 6000, memory: 8 * GiB, nodes: 1 });
    expect(left).toEqual({ cpu: 4000, nodes: 2 });
    expect(withinRemaining(left, { cpu: 4000 })).toBe(true);
    expect(withinRemaining(left, { cpu: 4001 })).toBe(false);
    expect(withinRemaining({ nodes: 0 }, { cpu: 1 })).toBe(false);
    const pool = makeNodePool('p', { limits: { cpu: '10', nodes: '3' } });
    expect(exceeds(pool, { cpu: 6000, nodes: 1 }, { cpu: 4000, nodes: 1 })).toBeUndefined();
    expect(exceeds(pool, { cpu: 6000, nodes: 3 }, { cpu: 8000, nodes: 1 })).toBe(
      'cpu: 8 needed, 4 of 10 remaining; nodes: 1 needed, 0 of 3 remaining',
    );
  });

  it('a plan reserves the largest of its first maxOptions options, plus one node', () => {
    expect(largestCapacity([small, large]).cpu).toBe(8000);
    expect(planCapacity({ instanceTypeOptions: [small, large] }, 1)).toEqual({ ...small.capacity, nodes: 1 });
    expect(planCapacity({ instanceTypeOptions: [small, large] }, 60).cpu).toBe(8000);
  });

  it('a bare Node counts capacity, else allocatable, plus one node; running totals add, copy and subtract', () => {
    expect(nodeLimitCapacity(node('n', '4'))).toEqual({ cpu: 4000, nodes: 1 });
    expect(nodeLimitCapacity({ metadata: { name: 'a' }, status: { allocatable: { cpu: '1500m' } } })).toEqual(
      {
        cpu: 1500,
        nodes: 1,
      },
    );
    expect(nodeLimitCapacity({ metadata: { name: 'none' } })).toEqual({ nodes: 1 });
    expect(() => nodeLimitCapacity(node('bad', 'lots'))).toThrow(/lots/);
    const usage = addUsage({}, 'p', { cpu: 500, nodes: 1 }); // a create in flight
    addUsage(usage, 'p', nodeLimitCapacity(node('n', '4')));
    addUsage(usage, 'q', { cpu: 1000, nodes: 1 });
    expect(usage).toEqual({ p: { cpu: 4500, nodes: 2 }, q: { cpu: 1000, nodes: 1 } });
    const without = addUsage(copyUsage(usage), 'p', { cpu: 4000, nodes: 1 }, -1);
    expect(without).toEqual({ p: { cpu: 500, nodes: 1 }, q: { cpu: 1000, nodes: 1 } });
    expect(usage.p).toEqual({ cpu: 4500, nodes: 2 }); // the copy's totals are its own
  });
});
