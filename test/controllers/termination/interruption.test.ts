/**
 * Scenario C1 of ../shared/cases/controller-scenarios.md on the embedded API server: NodePool `spot` (spot, m5
 * large..2xlarge) and a spot NodeClaim `node-s` (m5.large, us-east-1a) running 2 replicas of `web` under a PDB
 * `maxUnavailable: 1`. An EC2 Spot Instance Interruption Warning arrives on the queue (a stand-in SQS client
 * delivering the EventBridge message, as EventBridge writes it): in the same poll the NodeClaim is deleted and the
 * offering goes into the unavailable-offerings cache; the drain taints the node and evicts one pod (the other is
 * refused by the PDB); the evicted replica's replacement pod gets a new NodeClaim while node-s still exists, and it
 * launches on an offering other than m5.large spot in us-east-1a. The message is counted and deleted.
 */
import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { InterruptionController } from '../../../src/cloudprovider/aws/controllers/interruption/controller.ts';
import { NodeTerminationController } from '../../../src/controllers/node/termination/controller.ts';
import type { LifecycleContext } from '../../../src/controllers/nodeclaim/lifecycle/context.ts';
import { Launch } from '../../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { NodeClaimTermination } from '../../../src/controllers/nodeclaim/lifecycle/termination.ts';
import { lifecycleMetrics } from '../../../src/controllers/nodeclaim/metrics.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type ControllerProcess,
  createNodePool,
  createPendingPod,
  type Env,
  eventually,
  readyNode,
  startEnv,
} from '../provisioning/harness.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const PROVIDER_ID = 'aws:///us-east-1a/i-0spot';

/** A stand-in SQS client: one queue holding `bodies` until received and deleted. */
function fakeSQS(bodies: string[]): { sqs: SQSClient; deleted: string[] } {
  const deleted: string[] = [];
  let queue: Message[] = bodies.map((Body, i) => ({ Body, MessageId: `m-${i}`, ReceiptHandle: `r-${i}` }));
  const sqs = {
    send: async (cmd: unknown) => {
      if (cmd instanceof GetQueueUrlCommand) return { QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/q' };
      if (cmd instanceof ReceiveMessageCommand) return { Messages: queue };
      if (cmd instanceof DeleteMessageCommand) {
        deleted.push(cmd.input.ReceiptHandle ?? '');
        queue = queue.filter((m) => m.ReceiptHandle !== cmd.input.ReceiptHandle);
        return {};
      }
      throw new Error(`unexpected SQS call ${String(cmd)}`);
    },
  } as unknown as SQSClient;
  return { sqs, deleted };
}

/** A Running, Ready `web` replica bound to node-s. */
async function replica(e: Env, name: string): Promise<void> {
  const { status: _s, ...rest } = pendingPod(name, {
    cpu: '500m',
    memory: '1Gi',
    labels: { app: 'web' },
    ownerKind: 'ReplicaSet',
  });
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

/** node-s: a launched, registered, initialized spot m5.large in us-east-1a (NodeClaim and Node with finalizers). */
async function spotNode(e: Env): Promise<void> {
  const node = readyNode('node-s', 'm5.large', 'spot');
  const labels = { ...node.metadata.labels, 'karpenter.sh/capacity-type': 'spot' };
  const nc = (await e.client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'node-s', labels, finalizers: ['karpenter.sh/termination'] },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }],
    },
  } satisfies NodeClaim)) as NodeClaim;
  await e.client.updateStatus({
    ...nc,
    status: {
      providerID: PROVIDER_ID,
      nodeName: 'node-s',
      conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
        type,
        status: 'True',
        reason: type,
        message: '',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      })),
    },
  } as NodeClaim);
  const n = await e.client.create({
    ...node,
    metadata: { ...node.metadata, labels, finalizers: ['karpenter.sh/termination'] },
    spec: { providerID: PROVIDER_ID },
  });
  await e.client.updateStatus({ ...n, status: node.status });
}

const metric = async (p: ControllerProcess, name: string, labels: Record<string, string> = {}) => {
  const v = (await p.registry.getSingleMetric(name)?.get())?.values.find((x) =>
    Object.entries(labels).every(([k, val]) => String(x.labels[k] ?? '') === val),
  );
  return v?.value ?? 0;
};

describe('spot interruption (C1)', () => {
  it('deletes the NodeClaim in the same poll, drains under the PDB, and the replacement starts before the node is gone, avoiding the interrupted offering', async () => {
    const e = await startEnv();
    env = e;
    Object.defineProperty(e.sim.apiServer.store, 'now', { value: () => e.clock.now() });
    await createNodePool(
      e.client,
      testNodePool('spot', {
        requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
          { key: 'karpenter.k8s.aws/instance-size', operator: 'In', values: ['large', 'xlarge', '2xlarge'] },
        ],
      }),
    );
    await spotNode(e);
    for (const name of ['web-0', 'web-1']) await replica(e, name);
    await e.client.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 1 },
    });
    const p = await e.startProcess();
    await eventually(() => p.cluster.getNodeClaim('node-s'), 'node-s in state');
    const deps = {
      client: e.client,
      cloudProvider: p.provider,
      clock: e.clock,
      logger: silentLogger(),
      recorder: p.recorder,
      registry: p.registry,
    };
    const ctx: LifecycleContext = {
      ...deps,
      metrics: lifecycleMetrics(p.registry),
      nodesFor: async (nc) =>
        (await e.client.list('Node')).items.filter((n) => n.spec?.providerID === nc.status?.providerID),
    };
    const termination = new NodeTerminationController({
      ...deps,
      nodeClaimsFor: async (n) =>
        (await e.client.list('NodeClaim')).items.filter((c) => c.status?.providerID === n.spec?.providerID),
    });
    const { sqs, deleted } = fakeSQS([
      JSON.stringify({
        version: '0',
        id: 'spot-1',
        'detail-type': 'EC2 Spot Instance Interruption Warning',
        source: 'aws.ec2',
        account: '123456789012',
        time: new Date(e.clock.now()).toISOString(),
        region: 'us-east-1',
        resources: ['arn:aws:ec2:us-east-1a:instance/i-0spot'],
        detail: { 'instance-id': 'i-0spot', 'instance-action': 'terminate' },
      }),
    ]);
    const interruption = new InterruptionController({
      ...deps,
      sqs,
      queue: 'capenter-interruption',
      unavailableOfferings: p.provider,
      waitTimeSeconds: 0,
    });

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
    const node = await e.client.get('Node', 'node-s');
    expect(node.spec?.taints).toContainEqual({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' });
    const pods = (await e.client.list('Pod', { namespace: 'default' })).items;
    expect(pods.filter((x) => x.metadata.deletionTimestamp)).toHaveLength(1);
    expect(await metric(p, 'karpenter_pods_eviction_requests_total', { code: '200' })).toBe(1);
    expect(await metric(p, 'karpenter_pods_eviction_requests_total', { code: '429' })).toBe(1);

    // the ReplicaSet replaces the evicted replica: the pending pod gets a NodeClaim while node-s still exists
    await createPendingPod(
      e.client,
      pendingPod('web-2', { cpu: '500m', memory: '1Gi', labels: { app: 'web' }, ownerKind: 'ReplicaSet' }),
    );
    await eventually(() => p.cluster.pendingPods().length === 1, 'the replacement pod pending in state');
    const created = (await p.provisioner.provision()).created.map((c) => c.nodeClaim);
    expect(created).toHaveLength(1);
    expect(await e.client.tryGet('Node', 'node-s')).toBeDefined();
    // it launches on an offering other than the interrupted one
    const replacement = created[0] as NodeClaim;
    await new Launch(ctx).reconcile(replacement);
    const l = replacement.metadata.labels ?? {};
    const offeringOf = [
      l['node.kubernetes.io/instance-type'],
      l['topology.kubernetes.io/zone'],
      l['karpenter.sh/capacity-type'],
    ];
    expect(offeringOf).not.toEqual(['m5.large', 'us-east-1a', 'spot']);
    expect(offeringOf).toEqual(['m5.large', 'us-east-1b', 'spot']); // the cheapest offering still available
  });
});
