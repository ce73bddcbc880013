import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { RecordingCloudProvider } from '../../../cloudprovider/testing.ts';
import { CreateError } from '../../../cloudprovider/types.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../testing.ts';
import { nodeClaimConditions } from './context.ts';
import { Launch, populateNodeClaimDetails } from './launch.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => env.stop());

async function create(nc: NodeClaim): Promise<NodeClaim> {
  return env.client.create(nc);
}

describe('Launch', () => {
  it('launches once, copies provider ID, capacity and labels, marks Launched=True', async () => {
    const nc = await create(testNodeClaim('launch-ok', { instanceType: 'm5.large' }));
    const launch = new Launch(env.ctx);
    expect(await launch.reconcile(nc)).toEqual({});
    expect(nc.status?.providerID).toMatch(/^kwok:\/\/us-east-1\/us-east-1[a-f]\/i-0+1$/);
    expect(nc.status?.capacity?.cpu).toBe('2');
    expect(nc.metadata.labels?.['node.kubernetes.io/instance-type']).toBe('m5.large');
    expect(nc.metadata.labels?.['karpenter.sh/capacity-type']).toBe('on-demand');
    expect(nc.metadata.labels?.['karpenter.sh/nodepool']).toBe('default');
    const conds = nodeClaimConditions(nc, env.clock);
    expect(conds.get('Launched')).toMatchObject({ status: 'True', reason: 'Launched' });
    expect(conds.get('Ready')?.status).toBe('Unknown');
    expect(await env.metric('karpenter_nodeclaims_launched_total', { nodepool: 'default' })).toBe(1);

    // a stale copy (status patch lost) must not launch a second instance: the UID cache answers
    const stale = await env.client.get('NodeClaim', 'launch-ok');
    await launch.reconcile(stale);
    expect(stale.status?.providerID).toBe(nc.status?.providerID);
    expect(env.provider.instanceCount).toBe(1);
  });

  it('deletes the NodeClaim with an InsufficientCapacityError event when the only offering is ICE', async () => {
    for (const z of ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d', 'us-east-1e', 'us-east-1f'])
      env.provider.markUnavailable('c5.xlarge', z, 'on-demand');
    const nc = await create(testNodeClaim('launch-ice', { instanceType: 'c5.xlarge' }));
    const r = await new Launch(env.ctx).reconcile(nc);
    expect(r).toEqual({ deleted: true });
    expect(await env.client.tryGet('NodeClaim', 'launch-ice')).toBeUndefined();
    const ev = (await env.events('launch-ice')).find((e) => e.reason === 'InsufficientCapacityError');
    expect(ev?.type).toBe('Warning');
    expect(ev?.message).toContain('NodeClaim launch-ice event: insufficient capacity');
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'insufficient_capacity',
        nodepool: 'default',
      }),
    ).toBe(1);
  });

  it('marks Launched=False NodeClassNotReady and requeues when the NodeClass is missing', async () => {
    const nc = testNodeClaim('launch-noclass', { instanceType: 'm5.large' });
    nc.spec.nodeClassRef.name = 'missing';
    const stored = await create(nc);
    const r = await new Launch(env.ctx).reconcile(stored);
    expect(r).toEqual({ requeue: true });
    const c = nodeClaimConditions(stored, env.clock).get('Launched');
    expect(c).toMatchObject({ status: 'False', reason: 'NodeClassNotReady' });
    expect(c?.message).toContain('KWOKNodeClass/missing not found');
    expect((await env.events('launch-noclass')).map((e) => e.reason)).toContain('NodeClassNotReady');
  });

  it('copies a CreateError reason into Launched=False and throws', async () => {
    const cloud = new RecordingCloudProvider(env.ctx.cloudProvider).fail(
      'create',
      new CreateError('no AMI', 'AMINotFound', 'no AMI matches amiSelectorTerms'),
    );
    const ctx = { ...env.ctx, cloudProvider: cloud };
    const nc = await create(testNodeClaim('launch-createerr'));
    await expect(new Launch(ctx).reconcile(nc)).rejects.toThrow(/creating nodeclaim, no AMI/);
    expect(cloud.callsOf('create').map((c) => [(c.arg as typeof nc).metadata.name, c.outcome])).toEqual([
      ['launch-createerr', 'CreateError'],
    ]);
    expect(nodeClaimConditions(nc, env.clock).get('Launched')).toMatchObject({
      status: 'False',
      reason: 'AMINotFound',
      message: 'no AMI matches amiSelectorTerms',
    });
  });
});

describe('populateNodeClaimDetails (upstream v1.14.1 PopulateNodeClaimDetails)', () => {
  const claim = (): NodeClaim => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name: 'nc',
      labels: { 'karpenter.sh/nodepool': 'default', team: 'a' },
      annotations: { 'example.com/a': 'mine' },
    },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
        { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1a'] },
        { key: 'team', operator: 'In', values: ['a'] },
        { key: 'example.com/tier', operator: 'In', values: ['gold'] },
      ],
    },
  });
  const created = (): NodeClaim => ({
    ...claim(),
    metadata: {
      name: 'nc',
      labels: {
        'node.kubernetes.io/instance-type': 'm5.xlarge',
        'karpenter.sh/capacity-type': 'on-demand',
        'topology.kubernetes.io/zone': 'us-east-1b',
        team: 'provider',
      },
      annotations: { 'example.com/a': 'provider', 'example.com/b': 'provider' },
    },
    status: { providerID: 'kwok://us-east-1/us-east-1b/i-1', imageID: 'ami-1', capacity: { cpu: '4' } },
  });

  it('keeps the provider-resolved well-known labels over requirement values; the NodeClaim labels win', () => {
    const nc = claim();
    populateNodeClaimDetails(nc, created());
    expect(nc.metadata.labels).toEqual({
      'node.kubernetes.io/instance-type': 'm5.xlarge',
      'karpenter.sh/capacity-type': 'on-demand',
      'topology.kubernetes.io/zone': 'us-east-1b',
      'karpenter.sh/nodepool': 'default',
      team: 'a',
    });
    // requirement values are resolved at creation (nodeClaimFromPlan), not at launch
    expect(nc.metadata.labels?.['example.com/tier']).toBeUndefined();
    expect(nc.metadata.annotations).toEqual({ 'example.com/a': 'provider', 'example.com/b': 'provider' });
    expect(nc.status).toEqual({
      providerID: 'kwok://us-east-1/us-east-1b/i-1',
      imageID: 'ami-1',
      capacity: { cpu: '4' },
    });
  });
});
