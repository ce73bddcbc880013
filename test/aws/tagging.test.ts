/**
 * `nodeclaim.tagging` (upstream aws/karpenter-provider-aws v1.14.1 `pkg/controllers/nodeclaim/tagging`) against
 * moto behind the proxy and an embedded API server: instances get `Name=<node name>` once their NodeClaim knows its
 * Node, and the NodeClaim is annotated so it is not looked at again.
 */
import {
  DescribeImagesCommand,
  DescribeInstancesCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  AnnotationClusterNameTagged,
  AnnotationInstanceTagged,
  tagInstances,
} from '../../src/cloudprovider/aws/controllers/tagging.ts';
import { awsSettings } from '../../src/cloudprovider/aws/settings.ts';
import { awsControllers } from '../../src/cloudprovider/aws/setup.ts';
import { awsTestProvider } from '../../src/cloudprovider/aws/testing.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../src/kube/logger.ts';
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

/** One running instance tagged `tags`; returns its ID. */
async function runInstance(tags: Record<string, string>): Promise<string> {
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }));
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images?.[0]?.ImageId as string,
      InstanceType: 'm5.large',
      MinCount: 1,
      MaxCount: 1,
      Placement: { AvailabilityZone: 'us-west-2a' },
      ...(Object.keys(tags).length > 0
        ? {
            TagSpecifications: [
              {
                ResourceType: 'instance',
                Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
              },
            ],
          }
        : {}),
    }),
  );
  return out.Instances![0]!.InstanceId!;
}

/** A NodeClaim of instance `id` with `status.nodeName` (when given). */
async function nodeClaim(name: string, id: string, nodeName?: string): Promise<void> {
  await env.client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'default' } },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      requirements: [],
    },
  } satisfies NodeClaim);
  const status = { providerID: `aws:///us-west-2a/${id}`, ...(nodeName ? { nodeName } : {}) };
  await env.client.patchStatus('NodeClaim', name, undefined, { status }, { type: 'merge' });
}

async function tagsOf(id: string): Promise<Record<string, string>> {
  const out = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  const inst = out.Reservations![0]!.Instances![0]!;
  return Object.fromEntries((inst.Tags ?? []).map((t) => [t.Key!, t.Value!]));
}

describe('nodeclaim.tagging', () => {
  it('tags Name=<node name> (and the missing nodeclaim / cluster tags) once the Node is known, then annotates the NodeClaim', async () => {
    const launchedTags = { 'karpenter.sh/nodeclaim': 'nc-a', 'eks:eks-cluster-name': 'test-cluster' };
    const a = await runInstance(launchedTags);
    const b = await runInstance({});
    const c = await runInstance({ 'karpenter.sh/nodeclaim': 'nc-c' });
    await nodeClaim('nc-a', a, 'ip-10-0-0-1.us-west-2.compute.internal');
    await nodeClaim('nc-b', b, 'ip-10-0-0-2.us-west-2.compute.internal');
    await nodeClaim('nc-c', c); // not registered yet: no node name
    await nodeClaim('nc-gone', 'i-0123456789abcdef0', 'ip-10-0-0-9.us-west-2.compute.internal');
    const deps = {
      client: env.client,
      ec2,
      clusterName: 'test-cluster',
      clock: env.clock,
      logger: silentLogger(),
    };
    expect(await tagInstances(deps)).toEqual(['nc-a', 'nc-b']);
    expect(await tagsOf(a)).toEqual({ ...launchedTags, Name: 'ip-10-0-0-1.us-west-2.compute.internal' });
    expect(await tagsOf(b)).toEqual({
      Name: 'ip-10-0-0-2.us-west-2.compute.internal',
      'karpenter.sh/nodeclaim': 'nc-b',
      'eks:eks-cluster-name': 'test-cluster',
    });
    expect(await tagsOf(c)).toEqual({ 'karpenter.sh/nodeclaim': 'nc-c' });
    for (const name of ['nc-a', 'nc-b']) {
      expect((await env.client.get('NodeClaim', name)).metadata.annotations).toMatchObject({
        [AnnotationInstanceTagged]: 'true',
        [AnnotationClusterNameTagged]: 'true',
      });
    }
    expect(
      (await env.client.get('NodeClaim', 'nc-gone')).metadata.annotations?.[AnnotationInstanceTagged],
    ).toBe(undefined);
    expect(emu.proxy.calls.get('ec2:CreateTags')).toBe(2);
    // Annotated NodeClaims are not looked at again; nc-c once registered is.
    await env.client.patchStatus(
      'NodeClaim',
      'nc-c',
      undefined,
      { status: { nodeName: 'ip-10-0-0-3.us-west-2.compute.internal' } },
      { type: 'merge' },
    );
    expect(await tagInstances(deps)).toEqual(['nc-c']);
    expect((await tagsOf(c)).Name).toBe('ip-10-0-0-3.us-west-2.compute.internal');
    expect(emu.proxy.calls.get('ec2:CreateTags')).toBe(3);
  });

  it('is registered by the aws provider', () => {
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
    expect(all.map((c) => c.name)).toContain('nodeclaim.tagging');
    // registered beside it, always (upstream controllers.go): the instance-profile garbage collector
    expect(all.map((c) => c.name)).toContain('instanceprofile.garbagecollection');
    t.clients.destroy();
  });
});
