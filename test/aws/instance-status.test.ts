/**
 * EC2 instance status checks (issue 28 item 5; upstream aws v1.14.1 `interruption.instancestatus`) against moto
 * behind the emulator proxy: the proxy's DescribeInstanceStatus fill, the provider's unhealthy-instance list
 * (`src/cloudprovider/aws/instancestatus.ts`) and the controller the aws provider registers, on the test API
 * server's fake clock.
 */
import {
  DescribeImagesCommand,
  DescribeInstanceStatusCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  InstanceStatusController,
  METRIC_INSTANCE_STATUS_UNHEALTHY,
} from '../../src/cloudprovider/aws/controllers/interruption/instancestatus.ts';
import { listUnhealthyInstances } from '../../src/cloudprovider/aws/instancestatus.ts';
import { awsSettings } from '../../src/cloudprovider/aws/settings.ts';
import { awsControllers } from '../../src/cloudprovider/aws/setup.ts';
import { awsTestProvider } from '../../src/cloudprovider/aws/testing.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { FakeClock } from '../../src/kube/clock.ts';
import { createLogger, silentLogger } from '../../src/kube/logger.ts';
import { type AwsEmulator, startAwsEmulator } from './moto.ts';

// moto answers slowly on a loaded machine; a test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
let env: TestEnv;
let ec2: EC2Client;

beforeAll(async () => {
  [emu, env] = await Promise.all([startAwsEmulator(), startTestEnv()]);
  ec2 = new EC2Client(emu.clientConfig);
});
afterAll(async () => {
  ec2?.destroy();
  await env?.stop();
  await emu?.stop();
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
  await emu.reset();
});

/** Launches `n` running instances in us-west-2a through moto; returns their IDs. */
async function runInstances(n: number): Promise<string[]> {
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }));
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images?.[0]?.ImageId as string,
      InstanceType: 'm5.large',
      MinCount: n,
      MaxCount: n,
      Placement: { AvailabilityZone: 'us-west-2a' },
    }),
  );
  return (out.Instances ?? []).map((i) => i.InstanceId as string);
}

/** A launched on-demand NodeClaim (with the termination finalizer) and its Node, for instance `id`. */
async function launched(name: string, id: string): Promise<void> {
  const providerID = `aws:///us-west-2a/${id}`;
  const labels = {
    'karpenter.sh/nodepool': 'default',
    'karpenter.sh/capacity-type': 'on-demand',
    'node.kubernetes.io/instance-type': 'm5.large',
    'topology.kubernetes.io/zone': 'us-west-2a',
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

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const reasons = async (name: string) => (await env.events(name)).map((e) => `${e.type}/${e.reason}`);

describe('DescribeInstanceStatus through the emulator proxy', () => {
  it('moto alone reports every running instance ok and ignores the status filter; the proxy fills it', async () => {
    const [a, b] = await runInstances(2);
    emu.proxy.setInstanceHealth(a!, { instanceStatus: 'impaired', impairedSince: '2024-01-01T00:00:00Z' });
    const impaired = [{ Name: 'instance-status.status', Values: ['impaired'] }];
    // moto: both instances, both ok (the gap the proxy fills)
    const raw = new EC2Client(emu.moto.clientConfig);
    const direct = await raw.send(new DescribeInstanceStatusCommand({ Filters: impaired }));
    raw.destroy();
    expect(direct.InstanceStatuses?.map((s) => [s.InstanceId, s.InstanceStatus?.Status]).sort()).toEqual(
      [
        [a, 'ok'],
        [b, 'ok'],
      ].sort(),
    );
    // proxy: only the impaired one, with its failed reachability check since the injected time
    const out = await ec2.send(new DescribeInstanceStatusCommand({ Filters: impaired }));
    expect(out.InstanceStatuses).toHaveLength(1);
    const s = out.InstanceStatuses![0]!;
    expect([s.InstanceId, s.AvailabilityZone, s.InstanceState?.Name, s.SystemStatus?.Status]).toEqual([
      a,
      'us-west-2a',
      'running',
      'ok',
    ]);
    expect(s.InstanceStatus?.Status).toBe('impaired');
    expect(s.InstanceStatus?.Details).toEqual([
      { Name: 'reachability', Status: 'failed', ImpairedSince: new Date('2024-01-01T00:00:00Z') },
    ]);
    // a scheduled event is found by event.code; pagination and an unknown filter behave as EC2
    emu.proxy.setInstanceHealth(b!, {
      events: [{ code: 'instance-retirement', notBefore: '2024-01-03T00:00:00Z' }],
    });
    const ev = await ec2.send(
      new DescribeInstanceStatusCommand({
        Filters: [{ Name: 'event.code', Values: ['instance-retirement'] }],
      }),
    );
    expect(
      ev.InstanceStatuses?.map((x) => [x.InstanceId, x.Events?.[0]?.Code, x.Events?.[0]?.NotBefore]),
    ).toEqual([[b, 'instance-retirement', new Date('2024-01-03T00:00:00Z')]]);
    const ids = await runInstances(5);
    const first = await ec2.send(new DescribeInstanceStatusCommand({ MaxResults: 5 }));
    expect(first.InstanceStatuses).toHaveLength(5);
    const second = await ec2.send(
      new DescribeInstanceStatusCommand({ MaxResults: 5, NextToken: first.NextToken }),
    );
    expect(second.InstanceStatuses).toHaveLength(2);
    expect(second.NextToken).toBeUndefined();
    expect(ids).toHaveLength(5);
    await expect(
      ec2.send(new DescribeInstanceStatusCommand({ Filters: [{ Name: 'no-such-filter', Values: ['x'] }] })),
    ).rejects.toThrow(/The filter 'no-such-filter' is invalid/);
    expect(() => emu.proxy.setInstanceHealth(a!, { instanceStatus: 'broken' as never })).toThrow(
      /instanceStatus "broken" is not one of ok, impaired/,
    );
  });

  it('listUnhealthyInstances: impaired 2 min or more, or a scheduled event; a younger impairment and healthy instances are left out', async () => {
    const clock = new FakeClock(Date.parse('2024-01-01T00:10:00Z'));
    const [old, young, system, event, healthy] = await runInstances(5);
    emu.proxy.setInstanceHealth(old!, { instanceStatus: 'impaired', impairedSince: '2024-01-01T00:08:00Z' });
    emu.proxy.setInstanceHealth(young!, {
      instanceStatus: 'impaired',
      impairedSince: '2024-01-01T00:08:01Z',
    });
    emu.proxy.setInstanceHealth(system!, {
      instanceStatus: 'impaired',
      systemStatus: 'impaired',
      impairedSince: '2024-01-01T00:00:00Z',
    });
    emu.proxy.setInstanceHealth(event!, {
      events: [{ code: 'system-maintenance', notBefore: '2024-01-05T00:00:00Z' }],
    });
    const got = await listUnhealthyInstances(ec2, clock);
    const byId = new Map(got.map((h) => [h.instanceID, h]));
    expect([...byId.keys()].sort()).toEqual([old, system, event].sort());
    expect(byId.has(young!)).toBe(false);
    expect(byId.has(healthy!)).toBe(false);
    expect(byId.get(old!)).toEqual({
      instanceID: old,
      impairedSince: Date.parse('2024-01-01T00:08:00Z'),
      details: [
        {
          category: 'InstanceStatus',
          name: 'reachability',
          status: 'failed',
          impairedSince: Date.parse('2024-01-01T00:08:00Z'),
        },
      ],
    });
    expect(byId.get(system!)?.details.map((d) => d.category)).toEqual(['InstanceStatus', 'SystemStatus']);
    // a scheduled event counts at once, impaired since the clock's now
    expect(byId.get(event!)?.details).toEqual([
      { category: 'EventStatus', name: 'system-maintenance', status: 'failed', impairedSince: clock.now() },
    ]);
    // one minute later the younger one passed the 120 s threshold
    await clock.tick(60_000);
    expect((await listUnhealthyInstances(ec2, clock)).map((h) => h.instanceID)).toContain(young);
    // three describes (one per filter set) per list
    expect(emu.proxy.calls.get('ec2:DescribeInstanceStatus')).toBe(6);
  });
});

describe('interruption.instancestatus controller (registered by the aws provider)', () => {
  function controller(): InstanceStatusController {
    const t = awsTestProvider(emu.clientConfig, new Map());
    const all = awsControllers(
      { clients: t.clients, settings: awsSettings({ clusterName: 'test-cluster' }), region: emu.region },
      {
        client: env.client,
        clock: env.clock,
        logger: silentLogger(),
        recorder: env.recorder,
        registry: env.registry,
        cloudProvider: t.provider,
      },
    );
    // upstream registers it with or without an interruption queue; the queue's controller needs the queue
    expect(all.map((c) => c.name)).toContain('interruption.instancestatus');
    expect(all.map((c) => c.name)).not.toContain('interruption');
    return all.find((c) => c.name === 'interruption.instancestatus') as InstanceStatusController;
  }

  it('failed instance check: termination timestamp now, NodeClaim deleted, InstanceUnhealthy, metric once; a scheduled event drains gracefully', async () => {
    const [bad, retiring, sick2, fine] = await runInstances(4);
    const now = env.clock.now();
    emu.proxy.setInstanceHealth(bad!, { instanceStatus: 'impaired', impairedSince: iso(now - 180_000) });
    emu.proxy.setInstanceHealth(retiring!, { events: [{ code: 'instance-retirement' }] });
    emu.proxy.setInstanceHealth(sick2!, { systemStatus: 'impaired', impairedSince: iso(now - 300_000) });
    await launched('bad', bad!);
    await launched('retiring', retiring!);
    await launched('fine', fine!);
    // sick2 has no NodeClaim (another owner's instance): nothing happens to it, not counted
    const c = controller();
    const r = await c.poll();
    expect(r.unhealthy.map((h) => h.instanceID).sort()).toEqual([bad, retiring, sick2].sort());
    expect(r.nodeClaims.sort()).toEqual(['bad', 'retiring']);

    const badNC = await env.client.get('NodeClaim', 'bad');
    expect(badNC.metadata.deletionTimestamp).toBeDefined();
    expect(badNC.metadata.annotations?.['karpenter.sh/nodeclaim-termination-timestamp']).toBe(iso(now));
    const retiringNC = await env.client.get('NodeClaim', 'retiring');
    expect(retiringNC.metadata.deletionTimestamp).toBeDefined();
    expect(retiringNC.metadata.annotations?.['karpenter.sh/nodeclaim-termination-timestamp']).toBeUndefined();
    expect((await env.client.get('NodeClaim', 'fine')).metadata.deletionTimestamp).toBeUndefined();

    for (const name of ['bad', 'ip-bad', 'retiring', 'ip-retiring'])
      expect(await reasons(name), name).toEqual(
        expect.arrayContaining(['Warning/InstanceUnhealthy', 'Warning/TerminatingOnInterruption']),
      );
    expect(await reasons('fine')).toEqual([]);

    const metric = (category: string) => env.metric(METRIC_INSTANCE_STATUS_UNHEALTHY, { category });
    expect([
      await metric('InstanceStatus'),
      await metric('EventStatus'),
      await metric('SystemStatus'),
    ]).toEqual([1, 1, 0]);
    const text = await env.registry.metrics();
    expect(text).toContain(
      'karpenter_interruption_instance_status_unhealthy_total{category="InstanceStatus"} 1',
    );
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'instance_status',
        nodepool: 'default',
        capacity_type: 'on-demand',
      }),
    ).toBe(1);
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'event_status',
        nodepool: 'default',
        capacity_type: 'on-demand',
      }),
    ).toBe(1);

    // still reported a minute later: not counted again, nothing deleted again
    await env.clock.tick(60_000);
    const again = await c.poll();
    expect(again.nodeClaims).toEqual([]);
    expect(await metric('InstanceStatus')).toBe(1);
    // healthy again, then impaired again: counted again
    emu.proxy.clearFaults();
    expect((await c.poll()).unhealthy).toEqual([]);
    emu.proxy.setInstanceHealth(bad!, { instanceStatus: 'impaired', impairedSince: iso(now - 120_000) });
    await c.poll();
    expect(await metric('InstanceStatus')).toBe(2);
  });

  it('an instance failing both checks is deleted once; the loop polls every 60 s on the clock', async () => {
    const [both] = await runInstances(1);
    await launched('both', both!);
    const c = controller();
    const ac = new AbortController();
    const polls: number[] = [];
    const poll = c.poll.bind(c);
    let polled: () => void = () => {};
    c.poll = async () => {
      const r = await poll();
      polls.push(r.unhealthy.length);
      polled();
      return r;
    };
    const nth = (n: number) =>
      new Promise<void>((resolve) => {
        polled = () => {
          if (polls.length >= n) resolve();
        };
        polled();
      });
    const running = c.start(ac.signal);
    await nth(1);
    expect(polls).toEqual([0]);
    emu.proxy.setInstanceHealth(both!, {
      instanceStatus: 'impaired',
      systemStatus: 'impaired',
      impairedSince: iso(env.clock.now() - 600_000),
    });
    await env.clock.tick(59_000);
    expect(polls).toEqual([0]);
    await env.clock.tick(1_000);
    await nth(2);
    expect(polls).toEqual([0, 1]);
    ac.abort();
    await running;
    expect((await env.client.get('NodeClaim', 'both')).metadata.deletionTimestamp).toBeDefined();
    expect((await reasons('both')).filter((x) => x === 'Warning/TerminatingOnInterruption')).toHaveLength(1);
    const disrupted = await env.metric('karpenter_nodeclaims_disrupted_total', {
      reason: 'instance_status',
      nodepool: 'default',
      capacity_type: 'on-demand',
    });
    const system = await env.metric('karpenter_nodeclaims_disrupted_total', {
      reason: 'system_status',
      nodepool: 'default',
      capacity_type: 'on-demand',
    });
    expect(disrupted + system).toBe(2); // 1 from the test before + this one
  });

  it('without ec2:DescribeInstanceStatus it logs the permission once and stops calling EC2', async () => {
    const lines: Array<{ level: string; message: string; err?: string }> = [];
    const logger = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
    let sends = 0;
    const denied = {
      send: async () => {
        sends++;
        throw Object.assign(new Error('You are not authorized to perform this operation.'), {
          name: 'UnauthorizedOperation',
        });
      },
    } as unknown as EC2Client;
    const c = new InstanceStatusController({
      client: env.client,
      ec2: denied,
      clock: env.clock,
      logger,
      recorder: env.recorder,
      registry: env.registry,
    });
    expect(await c.poll()).toEqual({ unhealthy: [], nodeClaims: [] });
    expect(await c.poll()).toEqual({ unhealthy: [], nodeClaims: [] });
    expect(sends).toBe(1);
    expect(lines.map((l) => [l.level, l.message, l.err])).toEqual([
      [
        'ERROR',
        'ec2:DescribeInstanceStatus permission is not allowed, update the IAM policy and restart the Karpenter deployment to enable instance status health checks',
        'failed describing ec2 instance status checks, You are not authorized to perform this operation.',
      ],
    ]);
    const failing = new InstanceStatusController({
      client: env.client,
      ec2: {
        send: async () => {
          throw Object.assign(new Error('Request limit exceeded.'), { name: 'RequestLimitExceeded' });
        },
      } as unknown as EC2Client,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
    });
    await expect(failing.poll()).rejects.toThrow(
      'getting instance statuses, failed describing ec2 instance status checks, Request limit exceeded.',
    );
  });
});
