import { describe, expect, it } from 'vitest';
import type { Pod, Taint, TopologySpreadConstraint } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { solve } from './scheduler.ts';
import { makeNode, makeNodePool, makePod, smallCatalog } from './testing.ts';
import type { ExistingNode } from './types.ts';

const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };
const K = 'capacity-spread';
const pool = (
  name: string,
  values: string[],
  o: { labels?: Record<string, string>; taints?: Taint[] } = {},
) =>
  makeNodePool(name, {
    requirements: [onDemand, { key: K, operator: 'In', values }],
    ...(o.labels ? { labels: o.labels } : {}),
    ...(o.taints ? { taints: o.taints } : {}),
  });
const spread = (extra: Partial<TopologySpreadConstraint>): TopologySpreadConstraint => ({
  maxSkew: 1,
  topologyKey: K,
  whenUnsatisfiable: 'DoNotSchedule',
  labelSelector: { matchLabels: { app: 'a' } },
  ...extra,
});
const app = (name: string, tsc: TopologySpreadConstraint, spec: Partial<Pod['spec']> = {}) =>
  makePod(name, { cpu: '1', labels: { app: 'a' }, spec: { topologySpreadConstraints: [tsc], ...spec } });

function run(pods: Pod[], pools: NodePool[], existing: ExistingNode[]) {
  return solve({
    pods,
    existingNodes: existing,
    nodePools: pools,
    instanceTypes: Object.fromEntries(pools.map((p) => [p.metadata.name, smallCatalog()])),
    daemonSets: [],
  });
}
/** A full node in domain `d` running one pod of the app (so domain d counts 1). */
function full(d: string, labels: Record<string, string> = {}, taints?: Taint[]): ExistingNode {
  const node = makeNode(`n-${d}`, {
    labels: { [K]: d, ...labels },
    allocatable: { cpu: '1', memory: '2Gi', pods: '2' },
    ...(taints ? { taints } : {}),
  });
  const bound = makePod(`bound-${d}`, { cpu: '1', labels: { app: 'a' } });
  bound.spec.nodeName = `n-${d}`;
  return { node, pods: [bound] };
}

describe('topology spread node inclusion policies', () => {
  it('nodeAffinityPolicy Honor counts only domains of NodePools the pod can use; Ignore counts them all', () => {
    const pools = [pool('pool-a', ['1'], { labels: { grp: 'x' } }), pool('pool-b', ['2', '3'])];
    const sel = { nodeSelector: { grp: 'x' } };
    const honor = run([app('p1', spread({}), sel)], pools, [full('1', { grp: 'x' })]);
    expect(honor.unschedulable).toEqual([]);
    expect(honor.newNodeClaims.map((n) => n.nodePool)).toEqual(['pool-a']);
    const ignore = run([app('p1', spread({ nodeAffinityPolicy: 'Ignore' }), sel)], pools, [
      full('1', { grp: 'x' }),
    ]);
    expect(ignore.unschedulable.map((u) => u.code)).toEqual(['TopologyUnsatisfiable']);
  });

  it('nodeTaintsPolicy Honor leaves out domains whose nodes and NodePools carry untolerated taints', () => {
    const taint: Taint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };
    const pools = [pool('plain', ['1']), pool('tainted', ['2'], { taints: [taint] })];
    const honor = run([app('p1', spread({ nodeTaintsPolicy: 'Honor' }))], pools, [full('1')]);
    expect(honor.unschedulable).toEqual([]);
    expect(honor.newNodeClaims.map((n) => n.nodePool)).toEqual(['plain']);
    // Ignore (the default): domain 2 counts with 0 pods, so domain 1 is full at skew 1 and 2 is untolerated
    const ignore = run([app('p1', spread({}))], pools, [full('1')]);
    expect(ignore.unschedulable.map((u) => u.code)).toEqual(['TopologyUnsatisfiable']);
    // an existing tainted node's pods do not count with Honor either
    const node2 = full('2', {}, [taint]);
    const counted = run([app('p1', spread({ nodeTaintsPolicy: 'Honor' }))], [pools[0]!], [full('1'), node2]);
    expect(counted.unschedulable).toEqual([]);
  });

  it('minDomains: fewer eligible domains than minDomains keep the global minimum at 0', () => {
    const pools = [pool('pool-a', ['1'])];
    const r = run([app('p1', spread({ minDomains: 2 }))], pools, [full('1')]);
    // only domain 1 exists: count 1 + 1 − 0 > maxSkew 1, so the pod stays pending
    expect(r.unschedulable.map((u) => u.code)).toEqual(['TopologyUnsatisfiable']);
    const without = run([app('p1', spread({}))], pools, [full('1')]);
    expect(without.unschedulable).toEqual([]);
  });

  it('node affinity matchFields picks the named existing node', () => {
    const nodes = [
      { node: makeNode('node-a'), pods: [] },
      { node: makeNode('node-b'), pods: [] },
    ];
    const p = makePod('p', {
      cpu: '500m',
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-b'] }] },
              ],
            },
          },
        },
      },
    });
    const r = run([p], [pool('pool-a', ['1'])], nodes);
    expect(r.placements.map((x) => x.target)).toEqual([{ kind: 'existing', node: 'node-b' }]);
  });
});

describe('pod affinity label keys in the core', () => {
  const tenantPod = (name: string, tenant: string) =>
    makePod(name, {
      cpu: '100m',
      labels: { app: 'x', tenant },
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                labelSelector: { matchLabels: { app: 'x' } },
                topologyKey: 'kubernetes.io/hostname',
                mismatchLabelKeys: ['tenant'],
              },
            ],
          },
        },
      },
    });

  it('mismatchLabelKeys: tenants never share a node, one tenant packs together', () => {
    const r = run(
      [tenantPod('a-1', 'a'), tenantPod('a-2', 'a'), tenantPod('b-1', 'b')],
      [pool('pool-a', ['1'])],
      [],
    );
    expect(r.unschedulable).toEqual([]);
    const byClaim = r.newNodeClaims.map((n) =>
      n.pods
        .map((p) => p.metadata.labels?.tenant)
        .sort()
        .join(''),
    );
    expect(byClaim.sort()).toEqual(['aa', 'b']);
  });
});
