/**
 * Scenario C1 of ../shared/cases/controller-scenarios.md on the embedded API server: NodePool `spot` (spot, m5
 * large..2xlarge) and a spot NodeClaim `node-s` (m5.large, us-east-1a) running 2 replicas of `web` under a PDB
 * `maxUnavailable: 1`. An EC2 Spot Instance Interruption Warning arrives on the queue (a stand-in SQS client
 * delivering the EventBridge message, as EventBridge writes it): in the same poll the NodeClaim is deleted and the
 * offering goes into the unavailable-offerings cache; the drain taints the node and evicts one pod (the other is
 * refused by the PDB); the evicted replica's replacement pod gets a new NodeClaim while node-s still exists, and it
 * launches on an offering other than m5.large spot in us-east-1a. The message is counted and deleted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { Launch } from '../../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { NodeClaimTermination } from '../../../src/controllers/nodeclaim/lifecycle/termination.ts';
import { testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import {
  createNodePool,
  createPendingPod,
  type Env,
  eventually,
  readyNode,
  startEnv,
} from '../provisioning/harness.ts';
import {
  createSpotNode,
  lifecycleContext,
  metricOf as metric,
  nodeTermination,
  offeringOf,
  scenarioDeps,
  spotInterruption,
  spotNodePool,
  webPDB,
  webReplica,
} from '../scenarios.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

/** A Running, Ready `web` replica bound to node-s. */
async function replica(e: Env, name: string): Promise<void> {
  const { status: _s, ...rest } = webReplica(name);
  const meta = { ...rest.metadata };
  delete meta.uid;
  delete meta.creationTimestamp;
  const stored = (await e.client.create({
    ...rest,
    metadata: meta,
    spec: { ...rest.spec, nodeName: 'node-s' },
  } as Pod)) as Pod;
  await e.client.updateStatus({
    ...stored,
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  } as Pod);
}

describe('spot interruption (C1)', () => {
  it('deletes the NodeClaim in the same poll, drains under the PDB, and the replacement starts before the node is gone, avoiding the interrupted offering', async () => {
    const e = await startEnv();
    env = e;
    Object.defineProperty(e.sim.apiServer.store, 'now', { value: () => e.clock.now() });
    await createNodePool(e.client, spotNodePool());
    const node = readyNode('node-s', 'm5.large', 'spot');
    await createSpotNode(e.client, { labels: node.metadata.labels ?? {}, status: node.status ?? {} });
    for (const name of ['web-0', 'web-1']) await replica(e, name);
    await e.client.create(webPDB);
    const p = await e.startProcess();
    await eventually(() => p.cluster.getNodeClaim('node-s'), 'node-s in state');
    const deps = { ...scenarioDeps(e.client, e.clock, p), provider: p.provider };
    const ctx = lifecycleContext(deps);
    const termination = nodeTermination(deps);
    const { interruption, deleted } = spotInterruption(deps);

    // the warning: in the same poll the NodeClaim is deleted and the offering is marked unavailable
    expect(await interruption.poll()).toEqual({ received: 1, deleted: 1, nodeClaims: ['node-s'] });
    expect((await e.client.get('NodeClaim', 'node-s')).metadata.deletionTimestamp).toBeDefined();
    expect(deleted).toEqual(['r-0']);
    expect(
      await metric(p, 'karpenter_interruption_received_messages_total', { message_type: 'spot_interrupted' }),
    ).toBe(1);
    expect(await metric(p, 'karpenter_interruption_deleted_messages_total')).toBe(1);
    const offering = (await p.provider.instanceTypes(testNodePool('spot')))
      .find((t) => t.name === 'm5.large')
      ?.offerings.find((o) => o.zone === 'us-east-1a' && o.capacityType === 'spot');
    expect(offering?.available).toBe(false);

    // the NodeClaim's finalizer deletes the Node; the drain taints it and evicts one replica (the PDB refuses the other)
    await new NodeClaimTermination(ctx).reconcile(await e.client.get('NodeClaim', 'node-s'));
    expect(await termination.reconcile('node-s')).toEqual({ requeueAfter: 1 });
    const tainted = await e.client.get('Node', 'node-s');
    expect(tainted.spec?.taints).toContainEqual({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' });
    const pods = (await e.client.list('Pod', { namespace: 'default' })).items;
    expect(pods.filter((x) => x.metadata.deletionTimestamp)).toHaveLength(1);
    expect(await metric(p, 'karpenter_pods_eviction_requests_total', { code: '200' })).toBe(1);
    expect(await metric(p, 'karpenter_pods_eviction_requests_total', { code: '429' })).toBe(1);

    // the ReplicaSet replaces the evicted replica: the pending pod gets a NodeClaim while node-s still exists
    await createPendingPod(e.client, webReplica('web-2'));
    await eventually(() => p.cluster.pendingPods().length === 1, 'the replacement pod pending in state');
    const created = (await p.provisioner.provision()).created.map((c) => c.nodeClaim);
    expect(created).toHaveLength(1);
    expect(await e.client.tryGet('Node', 'node-s')).toBeDefined();
    // it launches on an offering other than the interrupted one
    const replacement = created[0] as NodeClaim;
    await new Launch(ctx).reconcile(replacement);
    expect(offeringOf(replacement)).not.toEqual(['m5.large', 'us-east-1a', 'spot']);
    expect(offeringOf(replacement)).toEqual(['m5.large', 'us-east-1b', 'spot']); // the cheapest offering still available
  });
});
