import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import { limitCapacity, limitUse } from './limits.ts';
import { solve } from './scheduler.ts';
import { makeInstanceType, makeNodePool, makePod, smallCatalog } from './testing.ts';
import type { SchedulingInput } from './types.ts';

const amd64 = { key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] };
const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };
const hostnameAnti = (app: string) => ({
  labels: { app },
  spec: {
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    },
  },
});

function input(pods: Pod[], pools: NodePool[], extra: Partial<SchedulingInput> = {}, types = smallCatalog()) {
  return {
    pods,
    existingNodes: [],
    nodePools: pools,
    instanceTypes: Object.fromEntries(pools.map((p) => [p.metadata.name, types])),
    daemonSets: [],
    ...extra,
  } satisfies SchedulingInput;
}

describe('NodePool limits as running totals', () => {
  it('limitUse counts 1 per node for nodes and capacity otherwise', () => {
    expect(limitUse('nodes', { cpu: 2000 })).toBe(1);
    expect(limitUse('cpu', { cpu: 2000 })).toBe(2000);
    expect(limitUse('nvidia.com/gpu', { cpu: 2000 })).toBe(0);
    expect(limitCapacity({ cpu: 2000 })).toEqual({ cpu: 2000, nodes: 1 });
  });

  it('nodes: 3 caps one pass at 3 NodeClaims; the rest fall to the next pool or stay pending', () => {
    const capped = makeNodePool('capped', {
      weight: 10,
      limits: { nodes: '3' },
      requirements: [amd64, onDemand],
    });
    const pods = Array.from({ length: 5 }, (_, i) =>
      makePod(`w-${i}`, { cpu: '500m', ...hostnameAnti('w') }),
    );
    const alone = solve(input(pods, [capped]));
    expect(alone.newNodeClaims).toHaveLength(3);
    expect(alone.unschedulable.map((u) => u.code)).toEqual([
      'NodePoolLimitsExceeded',
      'NodePoolLimitsExceeded',
    ]);
    // with 2 nodes already in the pool only 1 more may launch
    const used = solve(input(pods, [capped], { nodePoolUsage: { capped: { nodes: 2, cpu: 4000 } } }));
    expect(used.newNodeClaims).toHaveLength(1);
    const other = makeNodePool('other', { requirements: [amd64, onDemand] });
    const both = solve(input(pods, [capped, other]));
    expect(both.newNodeClaims.map((n) => n.nodePool).sort()).toEqual([
      'capped',
      'capped',
      'capped',
      'other',
      'other',
    ]);
  });

  it('cpu: each planned NodeClaim counts its largest option against the rest of the pass', () => {
    const pool = makeNodePool('p', { limits: { cpu: '5' }, requirements: [amd64, onDemand] });
    const pods = Array.from({ length: 3 }, (_, i) => makePod(`w-${i}`, { cpu: '1', ...hostnameAnti('w') }));
    const r = solve(input(pods, [pool]));
    // the first NodeClaim may still be any type up to 4 vCPUs (counts 4 of 5), the second only a 1-vCPU budget: none
    const planned = r.newNodeClaims.reduce(
      (s, n) => s + Math.max(...n.instanceTypeOptions.map((t) => t.capacity.cpu ?? 0)),
      0,
    );
    expect(planned).toBeLessThanOrEqual(5000);
    expect(r.newNodeClaims.length + r.unschedulable.length).toBe(3);
    expect(r.unschedulable.every((u) => u.code === 'NodePoolLimitsExceeded')).toBe(true);
  });

  it('an extended resource in limits counts the capacity of each NodeClaim', () => {
    const gpu: InstanceType[] = [
      makeInstanceType({
        name: 'g5.xlarge',
        cpu: 4,
        memoryGiB: 16,
        price: 1,
        extra: { 'nvidia.com/gpu': 1 },
      }),
    ];
    const pool = makeNodePool('gpu', { limits: { 'nvidia.com/gpu': '2' }, requirements: [amd64, onDemand] });
    const pods = Array.from({ length: 3 }, (_, i) => makePod(`g-${i}`, { cpu: '1', ...hostnameAnti('g') }));
    const r = solve(input(pods, [pool], {}, gpu));
    expect(r.newNodeClaims).toHaveLength(2);
    expect(r.unschedulable.map((u) => u.code)).toEqual(['NodePoolLimitsExceeded']);
  });
});
