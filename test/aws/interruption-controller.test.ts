/**
 * The interruption controller end to end through moto: EventBridge `PutEvents` → rule → SQS → the controller's
 * long poll → NodeClaims deleted / Events / offerings marked unavailable, messages deleted, upstream metrics.
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  InterruptionController,
  type PollResult,
} from '../../src/cloudprovider/aws/controllers/interruption/controller.ts';
import type { CapacityType } from '../../src/cloudprovider/types.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { interruptionQueue, putEvent, spotInterruption } from './e2e-events.ts';
import { type MotoServer, startMoto } from './moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let moto: MotoServer;
let env: TestEnv;
let sqs: SQSClient;
let queueURL: string;
let controller: InterruptionController;
let marked: Array<[string, string, CapacityType]>;
let markedReservations: string[];

beforeAll(async () => {
  [moto, env] = await Promise.all([startMoto(), startTestEnv()]);
  sqs = new SQSClient(moto.clientConfig);
});
afterAll(async () => {
  sqs?.destroy();
  await env?.stop();
  await moto?.stop();
});
beforeEach(async () => {
  queueURL = await interruptionQueue(moto, 'capenter-interruption');
  marked = [];
  markedReservations = [];
  controller = new InterruptionController({
    client: env.client,
    sqs,
    queue: 'capenter-interruption',
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
    unavailableOfferings: {
      markUnavailable: (t, z, c) => marked.push([t, z, c]),
      capacityReservations: { markUnavailable: (id) => markedReservations.push(id) },
    },
    waitTimeSeconds: 1,
  });
});
afterEach(async () => {
  for (const kind of ['NodeClaim', 'Node'] as const)
    for (const o of (await env.client.list(kind)).items) {
      await env.client.patch(
        kind,
        o.metadata.name as string,
        undefined,
        { metadata: { finalizers: null } },
        { type: 'merge' },
      );
      await env.client.tryDelete(kind, o.metadata.name as string);
    }
  await moto.reset();
});

/** A launched NodeClaim (with the termination finalizer) and its Node, for instance `id` in `zone`. */
async function launched(
  name: string,
  id: string,
  capacityType = 'spot',
  zone = 'us-west-2a',
  extra: Record<string, string> = {},
): Promise<void> {
  const providerID = `aws:///${zone}/${id}`;
  const labels = {
    ...extra,
    'karpenter.sh/nodepool': 'default',
    'karpenter.sh/capacity-type': capacityType,
    'node.kubernetes.io/instance-type': 'm5.large',
    'topology.kubernetes.io/zone': zone,
  };
  await env.client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels, finalizers: ['karpenter.sh/termination'] },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      requirements: [],
    },
  } satisfies NodeClaim);
  await env.client.patchStatus('NodeClaim', name, undefined, { status: { providerID } }, { type: 'merge' });
  await env.client.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: `ip-${name}`, labels },
    spec: { providerID },
  });
}

/** Polls until `n` messages were received in total. */
async function pollFor(n: number): Promise<PollResult> {
  const total: PollResult = { received: 0, deleted: 0, nodeClaims: [] };
  for (let i = 0; i < 20 && total.received < n; i++) {
    const r = await controller.poll();
    total.received += r.received;
    total.deleted += r.deleted;
    total.nodeClaims.push(...r.nodeClaims);
  }
  return total;
}

async function queueDepth(): Promise<number> {
  const a = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueURL,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(a.Attributes?.ApproximateNumberOfMessages) +
    Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible)
  );
}

const reasons = async (name: string) => (await env.events(name)).map((e) => `${e.type}/${e.reason}`);

describe('interruption controller (EventBridge → SQS → controller)', () => {
  it('spot interruption: offering marked unavailable, NodeClaim deleted, Events, message deleted, metrics', async () => {
    await launched('spot-a', 'i-0aaa');
    await launched('spot-b', 'i-0bbb');
    await spotInterruption(moto, 'i-0aaa');
    const r = await pollFor(1);
    expect(r).toEqual({ received: 1, deleted: 1, nodeClaims: ['spot-a'] });
    expect((await env.client.get('NodeClaim', 'spot-a')).metadata.deletionTimestamp).toBeDefined();
    expect((await env.client.get('NodeClaim', 'spot-b')).metadata.deletionTimestamp).toBeUndefined();
    expect(marked).toEqual([['m5.large', 'us-west-2a', 'spot']]);
    expect(await reasons('spot-a')).toEqual(
      expect.arrayContaining(['Warning/SpotInterrupted', 'Warning/TerminatingOnInterruption']),
    );
    expect(await reasons('ip-spot-a')).toEqual(
      expect.arrayContaining(['Warning/SpotInterrupted', 'Warning/TerminatingOnInterruption']),
    );
    expect(await queueDepth()).toBe(0);
    expect(
      await env.metric('karpenter_interruption_received_messages_total', {
        message_type: 'spot_interrupted',
      }),
    ).toBe(1);
    expect(await env.metric('karpenter_interruption_deleted_messages_total', {})).toBe(1);
    // one observation of the time the message spent in the queue (upstream's histogram; its +Inf bucket counts all)
    expect(await env.metric('karpenter_interruption_message_queue_duration_seconds', { le: '+Inf' })).toBe(1);
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'spot_interrupted',
        nodepool: 'default',
        capacity_type: 'spot',
      }),
    ).toBe(1);
  });

  it('state change, scheduled change and rebalance act as upstream; running/unparseable messages are dropped', async () => {
    await launched('stopping', 'i-0s01', 'on-demand');
    await launched('terminated', 'i-0t01', 'on-demand');
    await launched('health', 'i-0h01', 'on-demand');
    await launched('rebalance', 'i-0r01');
    await launched('running', 'i-0u01', 'on-demand');
    await putEvent(moto, 'aws.ec2', 'EC2 Instance State-change Notification', {
      'instance-id': 'i-0s01',
      state: 'stopping',
    });
    await putEvent(moto, 'aws.ec2', 'EC2 Instance State-change Notification', {
      'instance-id': 'i-0t01',
      state: 'terminated',
    });
    await putEvent(moto, 'aws.ec2', 'EC2 Instance State-change Notification', {
      'instance-id': 'i-0u01',
      state: 'running',
    });
    await putEvent(moto, 'aws.health', 'AWS Health Event', {
      service: 'EC2',
      eventTypeCategory: 'scheduledChange',
      eventTypeCode: 'AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED',
      affectedEntities: [{ entityValue: 'i-0h01' }],
    });
    await putEvent(moto, 'aws.ec2', 'EC2 Instance Rebalance Recommendation', { 'instance-id': 'i-0r01' });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueURL, MessageBody: 'this is not json' }));
    const r = await pollFor(6);
    expect(r.received).toBe(6);
    expect(r.deleted).toBe(6);
    expect(r.nodeClaims.sort()).toEqual(['health', 'stopping', 'terminated']);
    for (const [name, deleting] of [
      ['stopping', true],
      ['terminated', true],
      ['health', true],
      ['rebalance', false],
      ['running', false],
    ] as const)
      expect(!!(await env.client.get('NodeClaim', name)).metadata.deletionTimestamp, name).toBe(deleting);
    expect(await reasons('stopping')).toContain('Warning/InstanceStopping');
    expect(await reasons('terminated')).toContain('Warning/InstanceTerminating');
    expect(await reasons('health')).toContain('Warning/InstanceUnhealthy');
    expect(await reasons('rebalance')).toEqual(['Normal/SpotRebalanceRecommendation']);
    expect(await reasons('running')).toEqual([]);
    expect(marked).toEqual([]);
    expect(await queueDepth()).toBe(0);
    expect(
      await env.metric('karpenter_interruption_received_messages_total', { message_type: 'no_op' }),
    ).toBe(1);
    expect(await env.metric('karpenter_interruption_deleted_messages_total', {})).toBe(7); // 1 from the first test
  });

  it('capacity_reservation_interrupted: the interruptible reservation marked full, NodeClaim deleted, Events (issue 28)', async () => {
    await launched('cr-a', 'i-0cr1', 'reserved', 'us-west-2a', {
      'karpenter.k8s.aws/capacity-reservation-id': 'cr-0123456789abcdef0',
      'karpenter.k8s.aws/capacity-reservation-interruptible': 'true',
    });
    await putEvent(moto, 'aws.ec2', 'EC2 Capacity Reservation Instance Interruption Warning', {
      'instance-id': 'i-0cr1',
      'instance-action': 'terminate',
    });
    expect(await pollFor(1)).toEqual({ received: 1, deleted: 1, nodeClaims: ['cr-a'] });
    expect((await env.client.get('NodeClaim', 'cr-a')).metadata.deletionTimestamp).toBeDefined();
    expect(markedReservations).toEqual(['cr-0123456789abcdef0']);
    expect(marked).toEqual([]);
    expect(await reasons('cr-a')).toEqual(
      expect.arrayContaining([
        'Warning/CapacityReservationInstanceInterrupted',
        'Warning/TerminatingOnInterruption',
      ]),
    );
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'capacity_reservation_interrupted',
        nodepool: 'default',
        capacity_type: 'reserved',
      }),
    ).toBe(1);
  });

  it('runs as a loop until stopped; a missing queue is an error naming --interruption-queue', async () => {
    await launched('looped', 'i-0l01');
    // each poll the loop makes, as it returns (the loop calls `this.poll`)
    const polls: PollResult[] = [];
    let polled: () => void = () => {};
    const poll = controller.poll.bind(controller);
    controller.poll = async (signal) => {
      const r = await poll(signal);
      polls.push(r);
      polled();
      return r;
    };
    const nthPoll = (n: number): Promise<PollResult> =>
      new Promise((resolve) => {
        polled = () => {
          if (polls.length >= n) resolve(polls[n - 1] as PollResult);
        };
        polled();
      });
    const ac = new AbortController();
    const running = controller.start(ac.signal);
    // the first long poll finds the queue empty; the loop then waits requeueAfter 0 on the cluster's clock
    expect(await nthPoll(1)).toEqual({ received: 0, deleted: 0, nodeClaims: [] });
    await spotInterruption(moto, 'i-0l01');
    await env.clock.tick(0); // ends that wait (tick first lets the loop's pending continuations register it)
    expect(await nthPoll(2)).toEqual({ received: 1, deleted: 1, nodeClaims: ['looped'] });
    expect((await env.client.get('NodeClaim', 'looped')).metadata.deletionTimestamp).toBeDefined();
    ac.abort();
    await running;
    expect(polls).toHaveLength(2);
    const missing = new InterruptionController({
      client: env.client,
      sqs,
      queue: 'no-such-queue',
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      waitTimeSeconds: 1,
    });
    await expect(missing.poll()).rejects.toThrow(
      /interruption queue "no-such-queue" not found \(--interruption-queue\)/,
    );
  });
});
