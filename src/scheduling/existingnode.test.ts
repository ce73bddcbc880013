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

  // Upstream pkg/scheduling/taints.go `KnownEphemeralTaintKeyPrefixes` + pkg/controllers/state/statenode.go
  // `Taints()`: a `readiness.k8s.io/` taint is dropped only while a managed node is not initialized (issue 27 #1).
  it('a readiness.k8s.io/ taint blocks an initialized node and is ignored on an uninitialized managed node', () => {
    const readiness = { key: 'readiness.k8s.io/foo', effect: 'NoSchedule' as const };
    const pod = buildPodInfo(makePod('r', { cpu: '100m' }), index, topology);
    const initialized = makeNode('ready-1', {
      labels: { 'karpenter.sh/nodepool': 'p', 'karpenter.sh/initialized': 'true' },
      taints: [readiness],
    });
    const upCap = existingNodeCapacity({ node: initialized, pods: [] }, index, []);
    expect(upCap.initialized).toBe(true);
    expect(upCap.taints).toEqual([readiness]);
    expect(upCap.canAdd(pod, topology, index, true)).toEqual({
      code: 'Untolerated',
      message: 'did not tolerate taint readiness.k8s.io/foo:NoSchedule',
    });
    const tolerant = buildPodInfo(
      makePod('t', {
        cpu: '100m',
        spec: { tolerations: [{ key: 'readiness.k8s.io/foo', operator: 'Exists', effect: 'NoSchedule' }] },
      }),
      index,
      topology,
    );
    expect(upCap.canAdd(tolerant, topology, index, true)).toBeUndefined();
    const starting = makeNode('starting-1', {
      labels: { 'karpenter.sh/nodepool': 'p' },
      taints: [readiness],
    });
    const startCap = existingNodeCapacity({ node: starting, pods: [] }, index, []);
    expect(startCap.initialized).toBe(false);
    expect(startCap.taints).toEqual([]);
    expect(startCap.canAdd(pod, topology, index, true)).toBeUndefined();
    // A node no NodeClaim owns is always initialized: it keeps the taint (issue 29 #2).
    const unowned = existingNodeCapacity(
      { node: makeNode('plain-1', { taints: [readiness] }), pods: [] },
      index,
      [],
    );
    expect(unowned.taints).toEqual([readiness]);
    expect(unowned.canAdd(pod, topology, index, true)?.code).toBe('Untolerated');
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
