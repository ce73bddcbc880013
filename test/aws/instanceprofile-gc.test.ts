/**
 * `instanceprofile.garbagecollection` (upstream aws/karpenter-provider-aws v1.14.1
 * `pkg/controllers/nodeclass/garbagecollection`) against moto behind the proxy and an embedded API server: the
 * cluster's managed profiles (path `/karpenter/<region>/<cluster>/`) that no EC2NodeClass, NodeClaim or instance
 * uses and that are not protected are deleted; everything else is kept, and profiles outside the path are never
 * touched.
 */
import { DescribeImagesCommand, EC2Client, RunInstancesCommand } from '@aws-sdk/client-ec2';
import {
  AddRoleToInstanceProfileCommand,
  CreateInstanceProfileCommand,
  CreateRoleCommand,
  IAMClient,
  ListInstanceProfilesCommand,
} from '@aws-sdk/client-iam';
import { SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EC2NodeClass, NodeClaim } from '../../src/apis/karpenter.ts';
import {
  garbageCollectInstanceProfiles,
  type InstanceProfileGCDeps,
} from '../../src/cloudprovider/aws/controllers/instanceprofile-gc.ts';
import { EC2NodeClassController } from '../../src/cloudprovider/aws/controllers/nodeclass.ts';
import {
  InstanceProfileResolver,
  ProtectedProfileTTLMs,
} from '../../src/cloudprovider/aws/nodeclass/instanceprofile.ts';
import { AnnotationInstanceProfile } from '../../src/cloudprovider/aws/provider.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { type AwsEmulator, startAwsEmulator } from './moto.ts';

// moto answers slowly on a loaded machine; a test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let moto: AwsEmulator;
let env: TestEnv;
let ec2: EC2Client;
let iam: IAMClient;

beforeAll(async () => {
  [moto, env] = await Promise.all([startAwsEmulator(), startTestEnv()]);
  ec2 = new EC2Client(moto.clientConfig);
  iam = new IAMClient(moto.clientConfig);
});
afterAll(async () => {
  ec2?.destroy();
  iam?.destroy();
  await env?.stop();
  await moto?.stop();
});
afterEach(async () => {
  for (const kind of ['NodeClaim', 'EC2NodeClass'] as const)
    for (const o of (await env.client.list(kind)).items) {
      const name = o.metadata.name as string;
      await env.client.patch(kind, name, undefined, { metadata: { finalizers: null } }, { type: 'merge' });
      await env.client.tryDelete(kind, name);
    }
  await moto.reset();
});

const cluster = 'test-cluster';

function deps(profiles: InstanceProfileResolver): InstanceProfileGCDeps {
  return {
    client: env.client,
    ec2,
    profiles,
    region: moto.region,
    clusterName: cluster,
    clock: env.clock,
    logger: silentLogger(),
  };
}

function resolver(): InstanceProfileResolver {
  return new InstanceProfileResolver({
    iam,
    region: moto.region,
    clusterName: cluster,
    now: () => env.clock.now(),
  });
}

/** A profile at `path` with `tags`, carrying role `KarpenterNodeRole`. */
async function profile(name: string, path: string, tags: Record<string, string>): Promise<void> {
  await iam.send(
    new CreateInstanceProfileCommand({
      InstanceProfileName: name,
      Path: path,
      Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
    }),
  );
  await iam.send(
    new AddRoleToInstanceProfileCommand({ InstanceProfileName: name, RoleName: 'KarpenterNodeRole' }),
  );
}

/** capenter's tags of a managed profile of class `cls` in cluster `c`. */
function managedTags(cls: string, c = cluster): Record<string, string> {
  return {
    [`kubernetes.io/cluster/${c}`]: 'owned',
    'eks:eks-cluster-name': c,
    'karpenter.k8s.aws/ec2nodeclass': cls,
    'topology.kubernetes.io/region': moto.region,
  };
}

async function allProfiles(): Promise<string[]> {
  const out = await iam.send(new ListInstanceProfilesCommand({}));
  return (out.InstanceProfiles ?? []).map((p) => p.InstanceProfileName as string).sort();
}

async function nodeClassWithProfile(name: string, instanceProfile: string): Promise<void> {
  await env.client.create({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name },
    spec: {
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': cluster } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': cluster } }],
      role: 'KarpenterNodeRole',
    },
  } satisfies EC2NodeClass);
  await env.client.patchStatus(
    'EC2NodeClass',
    name,
    undefined,
    { status: { instanceProfile } },
    { type: 'merge' },
  );
}

async function nodeClaimWithProfile(name: string, instanceProfile: string): Promise<void> {
  await env.client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      labels: { 'karpenter.sh/nodepool': 'default' },
      annotations: { [AnnotationInstanceProfile]: instanceProfile },
    },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'gone' },
      requirements: [],
    },
  } satisfies NodeClaim);
}

async function runInstanceWithProfile(instanceProfile: string): Promise<void> {
  const images = await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }));
  await ec2.send(
    new RunInstancesCommand({
      ImageId: images.Images?.[0]?.ImageId as string,
      InstanceType: 'm5.large',
      MinCount: 1,
      MaxCount: 1,
      IamInstanceProfile: { Name: instanceProfile },
      TagSpecifications: [
        { ResourceType: 'instance', Tags: [{ Key: `kubernetes.io/cluster/${cluster}`, Value: 'owned' }] },
      ],
    }),
  );
}

describe('instanceprofile.garbagecollection', () => {
  it('deletes orphans under the cluster path; keeps profiles in use or protected; never touches others', async () => {
    await iam.send(new CreateRoleCommand({ RoleName: 'KarpenterNodeRole', AssumeRolePolicyDocument: '{}' }));
    const base = `/karpenter/${moto.region}/${cluster}`;
    await profile(`${cluster}_1001`, `${base}/uid-gone/`, managedTags('gone'));
    await profile(`${cluster}_1002`, `${base}/uid-a/`, managedTags('a'));
    await profile(`${cluster}_1003`, `${base}/uid-b/`, managedTags('b'));
    await profile(`${cluster}_1004`, `${base}/uid-c/`, managedTags('c'));
    await profile(`${cluster}_1005`, `${base}/uid-d/`, managedTags('d'));
    // another cluster's managed profile, an unmanaged one, and one with our tags outside our path
    await profile('other-cluster_2001', `/karpenter/${moto.region}/other-cluster/uid-x/`, {
      ...managedTags('x', 'other-cluster'),
    });
    await profile('hand-made', '/', {});
    await profile(`${cluster}_3001`, '/custom/', managedTags('e'));
    await nodeClassWithProfile('a', `${cluster}_1002`); // current profile of a class
    await nodeClaimWithProfile('claim-b', `${cluster}_1003`); // launched with it (annotation)
    await runInstanceWithProfile(`${cluster}_1004`); // an instance of the cluster carries it
    const profiles = resolver();
    profiles.protect(`${cluster}_1005`); // just created or replaced
    expect(await garbageCollectInstanceProfiles(deps(profiles))).toEqual([`${cluster}_1001`]);
    expect(await allProfiles()).toEqual(
      [
        `${cluster}_1002`,
        `${cluster}_1003`,
        `${cluster}_1004`,
        `${cluster}_1005`,
        `${cluster}_3001`,
        'hand-made',
        'other-cluster_2001',
      ].sort(),
    );
    // the protection lasts upstream's hour: a minute before, still kept; then collected
    env.clock.advance(ProtectedProfileTTLMs - 60_000);
    expect(await garbageCollectInstanceProfiles(deps(profiles))).toEqual([]);
    env.clock.advance(60_000);
    expect(await garbageCollectInstanceProfiles(deps(profiles))).toEqual([`${cluster}_1005`]);
    expect(await allProfiles()).toEqual(
      [
        `${cluster}_1002`,
        `${cluster}_1003`,
        `${cluster}_1004`,
        `${cluster}_3001`,
        'hand-made',
        'other-cluster_2001',
      ].sort(),
    );
  });

  it("a role change leaves the old profile protected for an hour, then it is collected; the class's stays", async () => {
    for (const r of ['RoleA', 'RoleB'])
      await iam.send(new CreateRoleCommand({ RoleName: r, AssumeRolePolicyDocument: '{}' }));
    const profiles = resolver();
    const controller = new EC2NodeClassController({
      client: env.client,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      ec2,
      ssm: new SSMClient(moto.clientConfig),
      iam,
      region: moto.region,
      clusterName: cluster,
      kubernetesVersion: async () => '1.32',
      instanceProfiles: profiles,
    });
    await env.client.create({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'default' },
      spec: {
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': cluster } }],
        securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': cluster } }],
        role: 'RoleA',
      },
    } satisfies EC2NodeClass);
    const current = async () =>
      ((await env.client.get('EC2NodeClass', 'default')) as EC2NodeClass).status?.instanceProfile as string;
    await controller.reconcile('default');
    const first = await current();
    expect(first).toMatch(/^test-cluster_\d+$/);
    await env.client.patch(
      'EC2NodeClass',
      'default',
      undefined,
      { spec: { role: 'RoleB' } },
      { type: 'merge' },
    );
    await controller.reconcile('default');
    const second = await current();
    expect(second).toMatch(/^test-cluster_\d+$/);
    expect(second).not.toBe(first);
    expect(await allProfiles()).toEqual([first, second].sort());
    // right after the change the old profile is protected (instances launched with it may not be listed yet)
    expect(await garbageCollectInstanceProfiles(deps(profiles))).toEqual([]);
    env.clock.advance(ProtectedProfileTTLMs);
    expect(await garbageCollectInstanceProfiles(deps(profiles))).toEqual([first]);
    expect(await allProfiles()).toEqual([second]);
  });
});
