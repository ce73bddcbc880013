import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Node } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import { pendingPod, testDaemonSet } from '../controllers/provisioning/testing.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../embedded/cluster.ts';
import { FakeClock } from '../kube/clock.ts';
import { SharedInformers } from '../kube/informer.ts';
import { nodeClaimCapacity } from '../scheduling/limits.ts';
import { eventually } from '../testing/eventually.ts';
import { Cluster, type ClusterChange } from './cluster.ts';

const types = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];
const typeIndex = new Map(types.map((t) => [t.name, t]));

function nodeClaim(name: string, extra: Partial<NodeClaim['metadata']> = {}): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'default' }, ...extra },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large', 'm5.xlarge'] },
      ],
    },
  };
}

function node(name: string, providerID: string, extra: Partial<Node> = {}): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'default', 'karpenter.sh/initialized': 'true' } },
    spec: { providerID },
    status: {
      capacity: { cpu: '4', memory: '16Gi', pods: '58' },
      allocatable: { cpu: '3920m', memory: '15Gi', pods: '58' },
    },
    ...extra,
  };
}

describe('Cluster state (embedded API server)', () => {
  let sim: SimulatedCluster;
  let clock: FakeClock;
  let informers: SharedInformers;
  let cluster: Cluster;
  const changes: ClusterChange[] = [];

  beforeAll(async () => {
    clock = new FakeClock();
    sim = await startSimulatedCluster({
      clock,
      components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    });
    informers = new SharedInformers(sim.client, { clock });
    cluster = new Cluster({
      client: sim.client,
      informers,
      clock,
      nodeClassKinds: [{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }],
    });
    cluster.onChange((c) => changes.push(c));
    informers.start();
    await informers.waitForSync(10_000);
  });
  afterAll(async () => {
    cluster.close();
    await informers.stop();
    await sim.stop();
  });

  it('joins NodeClaims and Nodes by provider ID; in-flight and unmanaged nodes; pods and requests per node', async () => {
    const { client } = sim;
    const launched = (await client.create(nodeClaim('default-a'))) as NodeClaim;
    await client.updateStatus({
      ...launched,
      status: { providerID: 'kwok://r/z/i-a', capacity: { cpu: '4', memory: '16Gi' } },
    });
    await client.create(nodeClaim('default-b')); // not launched: in-flight
    await client.create(node('node-a', 'kwok://r/z/i-a'));
    await client.create({ ...node('unmanaged', 'aws:///z/i-u'), metadata: { name: 'unmanaged' } });
    const web = pendingPod('web', { cpu: '500m', memory: '1Gi' });
    await client.create({
      ...web,
      metadata: { name: 'web', namespace: 'default' },
      spec: { ...web.spec, nodeName: 'node-a' },
    });
    const ds = pendingPod('agent', { cpu: '100m', memory: '128Mi', ownerKind: 'DaemonSet' });
    await client.create({
      ...ds,
      metadata: { name: 'agent', namespace: 'default', ownerReferences: ds.metadata.ownerReferences! },
      spec: { ...ds.spec, nodeName: 'node-a' },
    });
    await client.create(testDaemonSet('agent'));
    await eventually(
      () =>
        cluster.listDaemonSets().length === 1 &&
        cluster.stateNodes().length === 3 &&
        (cluster.stateNodes().find((s) => s.name === 'node-a')?.pods.length ?? 0) === 2,
      'state to see everything',
    );
    const sns = cluster.stateNodes();
    const a = sns.find((s) => s.name === 'node-a')!;
    expect(a).toMatchObject({
      key: 'kwok://r/z/i-a',
      managed: true,
      inFlight: false,
      initialized: true,
      nodePool: 'default',
    });
    expect(a.nodeClaim?.metadata.name).toBe('default-a');
    expect(a.podRequests).toEqual({ cpu: 600, memory: 2 ** 30 + 128 * 2 ** 20, pods: 2 });
    expect(a.daemonSetRequests).toEqual({ cpu: 100, memory: 128 * 2 ** 20, pods: 1 });
    expect(a.daemonSetPods.map((p) => p.metadata.name)).toEqual(['agent']);
    const b = sns.find((s) => s.name === 'default-b')!;
    expect(b).toMatchObject({
      key: 'nodeclaim/default-b',
      managed: true,
      inFlight: true,
      initialized: false,
    });
    expect(b.node).toBeUndefined();
    const u = sns.find((s) => s.name === 'unmanaged')!;
    expect(u).toMatchObject({ managed: false, inFlight: false, initialized: true });
    expect(u.nodePool).toBeUndefined();
    expect(cluster.listDaemonSets().map((d) => d.metadata.name)).toEqual(['agent']);

    // usage: launched claim counts status.capacity; the in-flight one its largest option (m5.xlarge: 4 vCPU)
    expect(cluster.nodePoolUsage().default).toEqual({ cpu: 4000, memory: 16 * 2 ** 30, nodes: 2 });
    expect(cluster.nodePoolUsage(typeIndex).default!.cpu).toBe(8000);
    expect(nodeClaimCapacity(b.nodeClaim!, typeIndex).cpu).toBe(4000);

    expect(await cluster.synced()).toBe(true);
    expect(changes.some((c) => c.kind === 'Pod' && c.type === 'add')).toBe(true);
  });

  it('marks nodes for deletion: deleting NodeClaim, disrupted taint, explicit marks', async () => {
    const { client } = sim;
    const cur = (await client.get('Node', 'node-a')) as Node;
    await client.update({
      ...cur,
      spec: { ...cur.spec, taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] },
    });
    await eventually(
      () => cluster.stateNodes().find((s) => s.name === 'node-a')!.markedForDeletion,
      'disrupted taint',
    );
    cluster.markForDeletion('default-b');
    expect(cluster.stateNodes().find((s) => s.name === 'default-b')!.markedForDeletion).toBe(true);
    cluster.unmarkForDeletion('default-b');
    expect(cluster.stateNodes().find((s) => s.name === 'default-b')!.markedForDeletion).toBe(false);
    const withFinalizer = (await client.get('NodeClaim', 'default-b')) as NodeClaim;
    await client.update({
      ...withFinalizer,
      metadata: { ...withFinalizer.metadata, finalizers: ['karpenter.sh/termination'] },
    });
    await client.delete('NodeClaim', 'default-b');
    await eventually(
      () => cluster.stateNodes().find((s) => s.name === 'default-b')?.markedForDeletion === true,
      'deleting NodeClaim',
    );
  });

  it('nominations: TTL for nodes, kept while the NodeClaim has no initialized node, dropped when the target goes', async () => {
    const { client } = sim;
    await client.create(nodeClaim('default-c'));
    await eventually(() => !!cluster.getNodeClaim('default-c'), 'default-c');
    const p1 = pendingPod('p1');
    const p2 = pendingPod('p2');
    cluster.nominate(p1, { kind: 'nodeclaim', name: 'default-c' });
    cluster.nominate(p2, { kind: 'node', name: 'unmanaged' });
    expect(cluster.isNominated('default-c')).toBe(true);
    clock.advance(25_000);
    expect(cluster.nominationFor(p1)?.target).toEqual({ kind: 'nodeclaim', name: 'default-c' }); // not initialized
    expect(cluster.nominationFor(p2)).toBeUndefined(); // 20 s TTL on a node
    // why each ended is kept for the launcher's warning
    expect(cluster.endedNomination('default/p2')).toEqual({
      target: { kind: 'node', name: 'unmanaged' },
      reason: 'expired',
      at: clock.now(),
    });
    expect(cluster.endedNomination('default/p1')).toBeUndefined();
    cluster.markForDeletion('default-c');
    expect(cluster.nominationFor(p1)).toBeUndefined();
    expect(cluster.endedNomination('default/p1')?.reason).toBe('its NodeClaim is marked for deletion');
    cluster.unmarkForDeletion('default-c');
    cluster.nominate(p1, { kind: 'nodeclaim', name: 'default-c' });
    await client.delete('NodeClaim', 'default-c');
    await eventually(() => !cluster.getNodeClaim('default-c'), 'default-c deleted');
    expect(cluster.nominationFor(p1)).toBeUndefined();
    expect(cluster.endedNomination('default/p1')?.reason).toBe('its NodeClaim is gone');
  });

  it('a nomination onto a node ends once the pods bound there leave no room for the pod', async () => {
    const { client } = sim;
    await client.create(node('fill-1', 'kwok://fill-1'));
    const strip = (p: ReturnType<typeof pendingPod>) => {
      delete p.metadata.uid;
      return p;
    };
    await client.create(strip(pendingPod('wants-2', { cpu: '2' })));
    await eventually(
      () => !!cluster.getNode('fill-1') && cluster.pendingPods().some((p) => p.metadata.name === 'wants-2'),
      'node and pod',
    );
    cluster.nominate(cluster.pendingPods().find((p) => p.metadata.name === 'wants-2')!, {
      kind: 'node',
      name: 'fill-1',
    });
    expect(cluster.nominationFor('default/wants-2')?.target.name).toBe('fill-1'); // 3920m free
    const small = strip(pendingPod('bound-1', { cpu: '1' }));
    small.spec.nodeName = 'fill-1';
    await client.create(small);
    await eventually(
      () => cluster.stateNodes().find((s) => s.name === 'fill-1')?.pods.length === 1,
      'bound-1',
    );
    expect(cluster.nominationFor('default/wants-2')?.target.name).toBe('fill-1'); // 2920m free: still fits
    const big = strip(pendingPod('bound-2', { cpu: '1500m' }));
    big.spec.nodeName = 'fill-1';
    await client.create(big);
    await eventually(
      () => cluster.stateNodes().find((s) => s.name === 'fill-1')?.pods.length === 2,
      'bound-2',
    );
    expect(cluster.nominationFor('default/wants-2')).toBeUndefined(); // 1420m free < 2 cpu
    expect(cluster.endedNomination('default/wants-2')?.reason).toBe('its node is full with other pods');
    // a bound pod that finishes frees its requests (the node's cached sum is rebuilt on the pod's update)
    await client.patch(
      'Pod',
      'bound-2',
      'default',
      { status: { phase: 'Succeeded' } },
      {
        type: 'merge',
        subresource: 'status',
      },
    );
    await eventually(
      () => cluster.stateNodes().find((s) => s.name === 'fill-1')?.pods.length === 1,
      'bound-2 finished',
    );
    expect(cluster.stateNodes().find((s) => s.name === 'fill-1')?.podRequests.cpu).toBe(1000);
    cluster.nominate(cluster.pendingPods().find((p) => p.metadata.name === 'wants-2')!, {
      kind: 'node',
      name: 'fill-1',
    });
    expect(cluster.nominationFor('default/wants-2')?.target.name).toBe('fill-1'); // 2920m free again
    for (const n of ['wants-2', 'bound-1', 'bound-2'])
      await client.delete('Pod', n, 'default', { gracePeriodSeconds: 0 });
    await client.delete('Node', 'fill-1');
  });

  it('an optimistic add counts at once, is replaced by the watch and never resurrects a deleted NodeClaim', async () => {
    const { client } = sim;
    const created = (await client.create(nodeClaim('default-d'))) as NodeClaim;
    cluster.updateNodeClaim(created);
    expect(cluster.stateNodes().some((s) => s.name === 'default-d' && s.inFlight)).toBe(true);
    await client.delete('NodeClaim', 'default-d');
    await eventually(() => !cluster.getNodeClaim('default-d'), 'default-d deleted');
    cluster.updateNodeClaim(created); // late optimistic add of a deleted object
    expect(cluster.getNodeClaim('default-d')).toBeUndefined();
  });

  it('synced() is false while the API has a NodeClaim the state has not seen', async () => {
    const lagging = new Cluster({
      client: sim.client,
      informers: new SharedInformers(sim.client, { clock }),
      clock,
    });
    expect(await lagging.synced()).toBe(false); // informers not even started
    lagging.close();
    expect(await cluster.synced()).toBe(true);
  });

  it('consolidationState changes with state and at least every 5 minutes', async () => {
    const t0 = cluster.consolidationState();
    clock.advance(60_000);
    expect(cluster.consolidationState()).toBe(t0);
    cluster.markUnconsolidated();
    expect(cluster.consolidationState()).toBe(t0 + 60_000);
    clock.advance(300_000);
    expect(cluster.consolidationState()).toBe(t0 + 360_000);
  });
});
