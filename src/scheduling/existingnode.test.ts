import { describe, expect, it } from 'vitest';
import { existingNodeCapacity, inFlightCapacity } from './existingnode.ts';
import { ResourceIndex } from './instancetypes.ts';
import { buildPodInfo } from './podinfo.ts';
import { makeDaemonSet, makeNode, makePod, smallCatalog } from './testing.ts';
import { Topology } from './topology.ts';

describe('existing capacity', () => {
  const index = new ResourceIndex();
  const topology = new Topology(() => new Set());

  it('subtracts bound pods and missing daemons; ignores ephemeral and startup taints', () => {
    const node = makeNode('n1', {
      labels: { 'karpenter.sh/nodepool': 'p' },
      taints: [
        { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
        { key: 'cni-starting', effect: 'NoSchedule' },
      ],
    });
    const bound = {
      ...makePod('b', { cpu: '1' }),
      spec: { ...makePod('b', { cpu: '1' }).spec, nodeName: 'n1' },
    };
    const nodeClaim = {
      apiVersion: 'karpenter.sh/v1' as const,
      kind: 'NodeClaim' as const,
      metadata: { name: 'n1' },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [],
        startupTaints: [{ key: 'cni-starting', effect: 'NoSchedule' as const }],
      },
    };
    const cap = existingNodeCapacity({ node, pods: [bound], nodeClaim }, index, [makeDaemonSet('d', '300m')]);
    expect(cap.taints).toEqual([]);
    expect(index.resources(cap.available)).toMatchObject({ cpu: 1930 - 1000 - 300, pods: 27 });
    const fits = buildPodInfo(makePod('x', { cpu: '630m' }), index, topology);
    expect(cap.canAdd(fits, topology, index, true)).toBeUndefined();
    const tooBig = buildPodInfo(makePod('y', { cpu: '700m' }), index, topology);
    expect(cap.canAdd(tooBig, topology, index, true)?.message).toBe(
      'not enough resources: cpu: need 700m, have 630m (short 70m)',
    );
  });

  it('takes a node no NodeClaim owns with its taints as they are (a Cluster API Machine nobody claimed, issue 29)', () => {
    const unclaimed = makeNode('spare', {
      taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }],
    });
    const cap = existingNodeCapacity({ node: unclaimed, pods: [] }, index, []);
    expect(cap.taints).toEqual([{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }]);
    const pod = buildPodInfo(makePod('p', { cpu: '100m' }), index, topology);
    expect(cap.canAdd(pod, topology, index, true)?.message).toContain('karpenter.sh/unregistered');
    // A managed node that is not initialized yet: CAPI's uninitialized taint will go, as the ephemeral ones.
    const starting = makeNode('claimed', {
      labels: { 'karpenter.sh/nodepool': 'p' },
      taints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
    });
    expect(existingNodeCapacity({ node: starting, pods: [] }, index, []).taints).toEqual([]);
  });

  it('in-flight NodeClaims only take pods whose requirements hold for every value they may still take', () => {
    const types = smallCatalog().filter((t) => t.name.endsWith('.xlarge'));
    for (const t of types) index.register(t.allocatable);
    const cap = inFlightCapacity(
      {
        nodeClaim: {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodeClaim',
          metadata: { name: 'nc-1' },
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [
              { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['test-zone-a', 'test-zone-b'] },
            ],
          },
        },
        nodePool: 'p',
        instanceTypeOptions: types,
        requests: { cpu: 1000 },
      },
      index,
    );
    expect(index.resources(cap.available).cpu).toBe(2900);
    const zoned = buildPodInfo(
      makePod('z', { cpu: '1', spec: { nodeSelector: { 'topology.kubernetes.io/zone': 'test-zone-a' } } }),
      index,
      topology,
    );
    expect(cap.canAdd(zoned, topology, index, true)?.message).toBe(
      'key "topology.kubernetes.io/zone": NodeClaim allows In [test-zone-a, test-zone-b], pod requires In [test-zone-a]',
    );
    expect(
      cap.canAdd(buildPodInfo(makePod('ok', { cpu: '1' }), index, topology), topology, index, true),
    ).toBeUndefined();
  });
});
