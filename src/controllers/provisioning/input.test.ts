import { describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { getInstanceTypes } from '../../cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../../cloudprovider/types.ts';
import { solve } from '../../scheduling/scheduler.ts';
import type { ClusterSnapshot, Nomination } from '../../state/cluster.ts';
import { testStateNode } from '../../state/testing.ts';
import { buildSchedulingInput, nodePoolUsability, selectPods } from './input.ts';
import { pendingPod, testDaemonSet, testNodePool } from './testing.ts';

const types = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];
const kwok = [{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }];
const kwokClass = {
  apiVersion: 'karpenter.kwok.sh/v1alpha1',
  kind: 'KWOKNodeClass',
  metadata: { name: 'default' },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
};

function snapshot(s: Partial<ClusterSnapshot>): ClusterSnapshot {
  return {
    takenAt: 0,
    stateNodes: [],
    pods: [],
    nodePools: [],
    nodeClaims: [],
    nodes: [],
    daemonSets: [],
    podDisruptionBudgets: [],
    nodeClasses: [kwokClass],
    namespaces: {},
    nominations: new Map(),
    ...s,
  };
}

function node(name: string, instanceType: string, extra: Partial<Node['metadata']> = {}): Node {
  const it = types.find((t) => t.name === instanceType)!;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'node.kubernetes.io/instance-type': instanceType,
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/os': 'linux',
        'karpenter.sh/nodepool': 'default',
        'karpenter.sh/initialized': 'true',
        'karpenter.sh/capacity-type': 'on-demand',
        'topology.kubernetes.io/zone': 'us-east-1a',
      },
      ...extra,
    },
    spec: { providerID: `kwok://us-east-1/us-east-1a/${name}` },
    status: {
      capacity: {
        cpu: String(it.capacity.cpu! / 1000),
        memory: `${it.capacity.memory! / 2 ** 20}Mi`,
        pods: String(it.capacity.pods),
      },
      allocatable: {
        cpu: `${it.allocatable.cpu}m`,
        memory: `${Math.floor(it.allocatable.memory! / 2 ** 20)}Mi`,
        pods: String(it.allocatable.pods),
      },
    },
  };
}

function bound(p: Pod, nodeName: string): Pod {
  return { ...p, spec: { ...p.spec, nodeName }, status: { phase: 'Running' } };
}

function inflightClaim(name: string, options: string[]): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'default' } },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: options }],
    },
  };
}

describe('selectPods', () => {
  it('takes provisionable pending pods, skips nominated and non-provisionable ones, adds pods of deleting nodes', () => {
    const a = pendingPod('a');
    const b = pendingPod('b');
    const notYet = pendingPod('c', { notYetUnschedulable: true });
    const ds = pendingPod('d', { ownerKind: 'DaemonSet' });
    const avoid = pendingPod('e');
    avoid.spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'karpenter.sh/nodepool', operator: 'DoesNotExist' }] },
          ],
        },
      },
    };
    const onDeleting = bound(pendingPod('moving'), 'old');
    const dsOnDeleting = bound(pendingPod('ds-pod', { ownerKind: 'DaemonSet' }), 'old');
    const nominations = new Map<string, Nomination>([
      ['default/b', { target: { kind: 'nodeclaim', name: 'default-x' }, until: 1e15, ttlSeconds: 20 }],
    ]);
    const sel = selectPods(
      snapshot({
        pods: [a, b, notYet, ds, avoid, onDeleting, dsOnDeleting],
        nominations,
        stateNodes: [
          testStateNode({
            name: 'old',
            node: node('old', 'm5.large'),
            markedForDeletion: true,
            pods: [onDeleting, dsOnDeleting],
          }),
        ],
      }),
    );
    expect(sel.pods.map((p) => p.metadata.name)).toEqual(['a', 'moving']);
    expect(sel.pods[1]!.spec.nodeName).toBeUndefined();
    expect(onDeleting.spec.nodeName).toBe('old'); // the state object is not modified
    expect([...sel.fromDeletingNodes]).toEqual(['default/moving']);
    expect(sel.nominated.map((p) => p.metadata.name)).toEqual(['b']);
    expect(sel.ignored.map((i) => [i.pod.metadata.name, i.reason])).toEqual([
      ['c', 'not marked Unschedulable by the scheduler yet (PodScheduled condition)'],
      ['d', 'owned by a DaemonSet'],
      [
        'e',
        'configured to not run on a Karpenter provisioned node via the karpenter.sh/nodepool DoesNotExist requirement',
      ],
    ]);
    // karpenter_scheduler_ignored_pods_count: only `e` is provisionable yet rejected by validation (upstream Validate)
    expect(sel.rejected).toBe(1);
  });

  it('pods of deleting nodes protected by do-not-disrupt get no capacity (upstream IsCurrentlyReschedulable)', () => {
    const started = (name: string, value: string, startTime: string): Pod => {
      const p = bound(pendingPod(name), 'old');
      p.metadata.annotations = { 'karpenter.sh/do-not-disrupt': value };
      p.status = { ...p.status, phase: 'Running', startTime };
      return p;
    };
    const pinned = started('pinned', 'true', '2026-11-01T00:00:00Z');
    const running = started('running', '1h', '2026-12-02T09:30:00Z');
    const elapsed = started('elapsed', '30m', '2026-12-02T09:29:00Z');
    const invalid = started('invalid', 'abc', '2026-12-02T09:59:00Z');
    const sel = selectPods(
      snapshot({
        takenAt: Date.parse('2026-12-02T10:00:00Z'),
        pods: [pinned, running, elapsed, invalid],
        stateNodes: [
          testStateNode({
            name: 'old',
            node: node('old', 'm5.large'),
            markedForDeletion: true,
            pods: [pinned, running, elapsed, invalid],
          }),
        ],
      }),
    );
    expect(sel.pods.map((p) => p.metadata.name)).toEqual(['elapsed', 'invalid']);
  });

  it('holds out only pods nominated to a NodeClaim that is not initialized; the others are scheduled again', () => {
    const [inFlight, registered, initialized, onNode] = [
      'in-flight',
      'registered',
      'initialized',
      'on-node',
    ].map((n) => pendingPod(n)) as [Pod, Pod, Pod, Pod];
    const nom = (name: string, kind: 'nodeclaim' | 'node' = 'nodeclaim'): Nomination => ({
      target: { kind, name },
      until: 1e15,
      ttlSeconds: 20,
    });
    const sel = selectPods(
      snapshot({
        pods: [inFlight, registered, initialized, onNode],
        nominations: new Map([
          ['default/in-flight', nom('default-a')],
          ['default/registered', nom('default-b')],
          ['default/initialized', nom('default-c')],
          ['default/on-node', nom('n1', 'node')],
        ]),
        stateNodes: [
          testStateNode({ name: 'default-a', nodeClaim: inflightClaim('default-a', ['m5.large']) }),
          // a Node that registered but is not initialized yet still holds its pods
          testStateNode({
            name: 'default-b',
            nodeClaim: inflightClaim('default-b', ['m5.large']),
            node: node('default-b', 'm5.large'),
            initialized: false,
          }),
          testStateNode({
            name: 'default-c',
            nodeClaim: inflightClaim('default-c', ['m5.large']),
            node: node('default-c', 'm5.large'),
          }),
          testStateNode({ name: 'n1', node: node('n1', 'm5.large') }),
        ],
      }),
    );
    expect(sel.nominated.map((p) => p.metadata.name)).toEqual(['in-flight', 'registered']);
    expect(sel.pods.map((p) => p.metadata.name)).toEqual(['initialized', 'on-node']);
  });
});

describe('buildSchedulingInput', () => {
  const np = testNodePool('default');
  const daemon = testDaemonSet('agent', '200m', '256Mi');

  it('reserves the pods held by in-flight NodeClaims, with daemon overhead; a nomination onto a Node reserves nothing', () => {
    const n1 = node('n1', 'm5.xlarge'); // 4 vCPU
    const running = bound(pendingPod('running', { cpu: '1' }), 'n1');
    const nomNode = pendingPod('nom-node', { cpu: '2' });
    const nomClaim = pendingPod('nom-claim', { cpu: '1500m', memory: '2Gi' });
    const nc = inflightClaim('default-abc', ['c5.large', 'm5.large']);
    const snap = snapshot({
      pods: [running, nomNode, nomClaim],
      nodePools: [np],
      daemonSets: [daemon],
      nominations: new Map([
        ['default/nom-node', { target: { kind: 'node', name: 'n1' }, until: 1e15, ttlSeconds: 20 }],
        [
          'default/nom-claim',
          { target: { kind: 'nodeclaim', name: 'default-abc' }, until: 1e15, ttlSeconds: 20 },
        ],
      ]),
      stateNodes: [
        testStateNode({ name: 'n1', node: n1, pods: [running] }),
        testStateNode({ name: 'default-abc', nodeClaim: nc }),
      ],
    });
    const input = buildSchedulingInput({
      snapshot: snap,
      pods: [],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    expect(input.existingNodes).toHaveLength(1);
    // nom-node is scheduled again in the pass (heldPods), so its requests are not reserved on n1 as well
    expect(input.existingNodes[0]!.pods.map((p) => p.metadata.name)).toEqual(['running']);
    expect(input.inFlight).toHaveLength(1);
    const inf = input.inFlight![0]!;
    expect(inf.nodePool).toBe('default');
    expect(inf.instanceTypeOptions.map((t) => t.name)).toEqual(['c5.large', 'm5.large']);
    // daemon 200m/256Mi + nominated 1500m/2Gi, pods 1 + 1
    expect(inf.requests).toEqual({ cpu: 1700, memory: 256 * 2 ** 20 + 2 * 2 ** 30, pods: 2 });
    // usage: n1 capacity + the largest capacity among the in-flight options (c5.large/m5.large: 2 vCPU)
    expect(input.nodePoolUsage!.default!.cpu).toBe(4000 + 2000);
  });

  it('an in-flight NodeClaim of a known type reserves only the DaemonSets that run on that type', () => {
    const onSize = (values: string[]) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'karpenter.k8s.aws/instance-size', operator: 'In' as const, values },
                ],
              },
            ],
          },
        },
      },
    });
    const small = testDaemonSet('agent-small', '200m', '256Mi');
    small.spec.template.spec = { ...small.spec.template.spec, ...onSize(['large', 'xlarge']) };
    const large = testDaemonSet('agent-large', '2', '2Gi');
    large.spec.template.spec = { ...large.spec.template.spec, ...onSize(['2xlarge']) };
    const launched = inflightClaim('default-xl', ['m5.xlarge', 'm5.2xlarge']);
    launched.metadata.labels = {
      ...launched.metadata.labels,
      'node.kubernetes.io/instance-type': 'm5.xlarge',
    };
    const open = inflightClaim('default-any', ['m5.xlarge', 'm5.2xlarge']);
    const input = buildSchedulingInput({
      snapshot: snapshot({
        nodePools: [np],
        daemonSets: [small, large],
        stateNodes: [
          testStateNode({ name: 'default-xl', nodeClaim: launched }),
          testStateNode({ name: 'default-any', nodeClaim: open }),
        ],
      }),
      pods: [],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    const byName = new Map(input.inFlight!.map((f) => [f.nodeClaim.metadata.name, f]));
    // launched as m5.xlarge: agent-small only
    expect(byName.get('default-xl')!.requests).toEqual({ cpu: 200, memory: 256 * 2 ** 20, pods: 1 });
    // type not known yet: every DaemonSet the NodePool template allows (both agents)
    expect(byName.get('default-any')!.requests).toEqual({ cpu: 2200, memory: 2304 * 2 ** 20, pods: 2 });
  });

  it('a pending pod fitting the in-flight NodeClaim is placed there, not on a new one', () => {
    const nc = inflightClaim('default-abc', ['m5.xlarge']);
    const pod = pendingPod('new', { cpu: '1' });
    const snap = snapshot({
      pods: [pod],
      nodePools: [np],
      stateNodes: [testStateNode({ name: 'default-abc', nodeClaim: nc })],
    });
    const input = buildSchedulingInput({
      snapshot: snap,
      pods: [pod],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    const res = solve(input);
    expect(res.newNodeClaims).toHaveLength(0);
    expect(res.placements).toEqual([{ pod, target: { kind: 'inflight', nodeClaim: 'default-abc' } }]);
    // ... unless the nominated pods already fill it (m5.xlarge: ~3.9 vCPU allocatable)
    const big = pendingPod('big', { cpu: '3500m' });
    const snap2 = snapshot({
      pods: [pod, big],
      nodePools: [np],
      nominations: new Map([
        ['default/big', { target: { kind: 'nodeclaim', name: 'default-abc' }, until: 1e15, ttlSeconds: 20 }],
      ]),
      stateNodes: [testStateNode({ name: 'default-abc', nodeClaim: nc })],
    });
    const res2 = solve(
      buildSchedulingInput({
        snapshot: snap2,
        pods: [pod],
        nodePools: [np],
        instanceTypes: { default: types },
      }),
    );
    expect(res2.newNodeClaims).toHaveLength(1);
  });

  it('leaves out in-flight NodeClaims marked for deletion and flags deleting nodes', () => {
    const nc = inflightClaim('default-gone', ['m5.large']);
    const snap = snapshot({
      nodePools: [np],
      stateNodes: [
        testStateNode({ name: 'default-gone', nodeClaim: nc, markedForDeletion: true }),
        testStateNode({ name: 'n2', node: node('n2', 'm5.large'), markedForDeletion: true }),
      ],
    });
    const input = buildSchedulingInput({
      snapshot: snap,
      pods: [],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    expect(input.inFlight).toEqual([]);
    expect(input.existingNodes.map((e) => [e.node.metadata.name, e.markedForDeletion])).toEqual([
      ['n2', true],
    ]);
  });
});

describe('pods nominated by kube-scheduler preemption (status.nominatedNodeName)', () => {
  const np = testNodePool('default', { ready: true });
  it('hold their requests on the nominated node: a pending pod that would fit only there gets a new node', () => {
    // m5.large: 1930m allocatable; 1 cpu bound, a 700m preemptor nominated there, a pending 500m pod
    const preemptor: Pod = {
      ...pendingPod('preemptor', { cpu: '700m', memory: '128Mi' }),
      status: { phase: 'Pending', nominatedNodeName: 'n1' },
    };
    const pending = pendingPod('web', { cpu: '500m', memory: '128Mi' });
    const stateNodes = [
      testStateNode({
        name: 'n1',
        node: node('n1', 'm5.large'),
        pods: [bound(pendingPod('a', { cpu: '1', memory: '128Mi' }), 'n1')],
      }),
    ];
    const input = buildSchedulingInput({
      snapshot: snapshot({ nodePools: [np], stateNodes, pods: [preemptor, pending] }),
      pods: [pending],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    expect(input.existingNodes[0]?.pods.map((p) => p.metadata.name)).toEqual(['a', 'preemptor']);
    const r = solve(input);
    expect(r.placements.map((p) => [p.pod.metadata.name, p.target.kind])).toEqual([['web', 'new']]);
    expect(r.newNodeClaims).toHaveLength(1);
    // without the nomination the pending pod fits on n1 (1000m + 500m of 1930m)
    const free = buildSchedulingInput({
      snapshot: snapshot({ nodePools: [np], stateNodes, pods: [pending] }),
      pods: [pending],
      nodePools: [np],
      instanceTypes: { default: types },
    });
    const placed = solve(free);
    expect(placed.newNodeClaims).toHaveLength(0);
    expect(placed.placements.map((p) => [p.pod.metadata.name, p.target.kind])).toEqual([['web', 'existing']]);
  });
});

describe('nodePoolUsability', () => {
  const snap = snapshot({});
  it('uses Ready=True NodePools and rejects Ready=False with its reason', () => {
    expect(nodePoolUsability(testNodePool('a', { ready: true }), snap, kwok)).toEqual({ ok: true });
    const np = testNodePool('b');
    np.status = {
      conditions: [{ type: 'Ready', status: 'False', reason: 'NodeClassNotReady', message: 'missing' }],
    };
    expect(nodePoolUsability(np, snap, kwok)).toEqual({
      ok: false,
      reason: 'NodePool Ready=False (NodeClassNotReady: missing)',
    });
  });
  it('without status: requires the NodeClass to exist and not be Ready=False', () => {
    expect(nodePoolUsability(testNodePool('c'), snap, kwok)).toEqual({ ok: true });
    expect(nodePoolUsability(testNodePool('d', { nodeClass: 'other' }), snap, kwok)).toEqual({
      ok: false,
      reason: 'KWOKNodeClass "other" not found',
    });
    const notReady = snapshot({
      nodeClasses: [{ ...kwokClass, status: { conditions: [{ type: 'Ready', status: 'False' }] } }],
    });
    expect(nodePoolUsability(testNodePool('e'), notReady, kwok)).toMatchObject({ ok: false });
  });
  it('rejects deleting, static and unsupported NodePools', () => {
    const del = testNodePool('f', { ready: true });
    del.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    expect(nodePoolUsability(del, snap, kwok)).toEqual({ ok: false, reason: 'NodePool is being deleted' });
    const stat = testNodePool('g', { ready: true });
    stat.spec.replicas = 3;
    expect(nodePoolUsability(stat, snap, kwok).ok).toBe(false);
    const aws = testNodePool('h', { ready: true });
    aws.spec.template.spec.nodeClassRef = {
      group: 'karpenter.k8s.aws',
      kind: 'EC2NodeClass',
      name: 'default',
    };
    expect(nodePoolUsability(aws, snap, kwok)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not supported'),
    });
  });
});
