/**
 * The EC2NodeClass controller against the embedded API server and moto: subnets, security groups, AMIs and the
 * instance profile resolved into `status` with upstream's shapes and conditions; a class selecting nothing says
 * what matched nothing; the finalizer waits for the class's NodeClaims, then deletes its instance profiles.
 */
import {
  CancelCapacityReservationCommand,
  CreateCapacityReservationCommand,
  CreateFleetCommand,
  CreatePlacementGroupCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateTagsCommand,
  CreateVpcCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import type { EKSClient } from '@aws-sdk/client-eks';
import {
  CreateRoleCommand,
  GetInstanceProfileCommand,
  IAMClient,
  ListInstanceProfilesCommand,
} from '@aws-sdk/client-iam';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EC2NodeClass, NodeClaim } from '../../src/apis/karpenter.ts';
import { resolveClusterCIDR } from '../../src/cloudprovider/aws/cluster.ts';
import {
  expireCapacityBlockNodeClaims,
  syncReservedCapacityTypes,
} from '../../src/cloudprovider/aws/controllers/capacityreservation.ts';
import { EC2NodeClassController } from '../../src/cloudprovider/aws/controllers/nodeclass.ts';
import { resolveCapacityReservations } from '../../src/cloudprovider/aws/nodeclass/capacityreservations.ts';
import {
  type EC2NodeClassStatus,
  ec2NodeClassNotReadyReason,
} from '../../src/cloudprovider/aws/nodeclass/types.ts';
import { ec2NodeClassHash } from '../../src/cloudprovider/aws/nodeclass-hash.ts';
import { staticFieldsDrifted } from '../../src/cloudprovider/aws/provider.ts';
import { awsSettings } from '../../src/cloudprovider/aws/settings.ts';
import {
  awsNodeClaim,
  awsTestProvider,
  createTestNetwork,
  testNodeClass,
} from '../../src/cloudprovider/aws/testing.ts';
import type { CloudProvider } from '../../src/cloudprovider/types.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { NodeClassStatusController } from '../../src/controllers/nodepool/nodeclass.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { prepareEmulator } from '../../src/sim/aws/emulator.ts';
import { type AwsEmulator, startAwsEmulator } from './moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let moto: AwsEmulator;
let env: TestEnv;
let ec2: EC2Client;
let iam: IAMClient;
let ssm: SSMClient;
let controller: EC2NodeClassController;

beforeAll(async () => {
  [moto, env] = await Promise.all([startAwsEmulator(), startTestEnv()]);
  ec2 = new EC2Client(moto.clientConfig);
  iam = new IAMClient(moto.clientConfig);
  ssm = new SSMClient(moto.clientConfig);
});
afterAll(async () => {
  await env?.stop();
  await moto?.stop();
});
beforeEach(() => {
  controller = new EC2NodeClassController({
    client: env.client,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
    ec2,
    ssm,
    iam,
    region: moto.region,
    clusterName: 'test-cluster',
    kubernetesVersion: async () => '1.32',
  });
});
afterEach(async () => {
  for (const nc of (await env.client.list('NodeClaim')).items) {
    await env.client.patch(
      'NodeClaim',
      nc.metadata.name as string,
      undefined,
      { metadata: { finalizers: null } },
      { type: 'merge' },
    );
    await env.client.tryDelete('NodeClaim', nc.metadata.name as string);
  }
  for (const c of (await env.client.list('EC2NodeClass')).items) {
    await env.client.patch(
      'EC2NodeClass',
      c.metadata.name as string,
      undefined,
      { metadata: { finalizers: null } },
      { type: 'merge' },
    );
    await env.client.tryDelete('EC2NodeClass', c.metadata.name as string);
  }
  await moto.reset();
});

interface Network {
  subnets: Array<{ id: string; zone: string }>;
  sg: string;
}

/** A VPC with two tagged subnets (sizes /24 and /26: different free IPs) and a security group `nodes`. */
async function network(): Promise<Network> {
  const vpc = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc?.VpcId as string;
  const tags = [
    { ResourceType: 'subnet' as const, Tags: [{ Key: 'karpenter.sh/discovery', Value: 'test-cluster' }] },
  ];
  const small = (
    await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpc,
        CidrBlock: '10.0.1.0/26',
        AvailabilityZone: `${moto.region}b`,
        TagSpecifications: tags,
      }),
    )
  ).Subnet;
  const big = (
    await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpc,
        CidrBlock: '10.0.2.0/24',
        AvailabilityZone: `${moto.region}a`,
        TagSpecifications: tags,
      }),
    )
  ).Subnet;
  const sg = (
    await ec2.send(new CreateSecurityGroupCommand({ GroupName: 'nodes', Description: 'nodes', VpcId: vpc }))
  ).GroupId as string;
  return {
    subnets: [
      { id: big?.SubnetId as string, zone: big?.AvailabilityZone as string },
      { id: small?.SubnetId as string, zone: small?.AvailabilityZone as string },
    ],
    sg,
  };
}

/** Tags one moto built-in image of each architecture `role=node` and returns their IDs. */
async function tagImages(): Promise<{ amd64: string; arm64: string }> {
  const images = (await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images ?? [];
  const amd64 = images.find((i) => i.Architecture === 'x86_64')?.ImageId as string;
  const arm64 = images.find((i) => i.Architecture === 'arm64')?.ImageId as string;
  await ec2.send(
    new CreateTagsCommand({ Resources: [amd64, arm64], Tags: [{ Key: 'role', Value: 'node' }] }),
  );
  return { amd64, arm64 };
}

function nodeClass(name: string, spec: Partial<EC2NodeClass['spec']>): EC2NodeClass {
  const c: EC2NodeClass = {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name },
    spec: {
      role: 'KarpenterNodeRole-test',
      amiFamily: 'AL2023',
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'test-cluster' } }],
      securityGroupSelectorTerms: [{ name: 'nodes' }],
      amiSelectorTerms: [{ tags: { role: 'node' } }],
      ...spec,
    },
  };
  // a class with its own instance profile has no role (the CRD allows one of them)
  if (spec.instanceProfile) delete c.spec.role;
  return c;
}

async function statusOf(name: string): Promise<{ obj: EC2NodeClass; st: EC2NodeClassStatus }> {
  const obj = (await env.client.get('EC2NodeClass', name)) as EC2NodeClass;
  return { obj, st: (obj.status ?? {}) as EC2NodeClassStatus };
}
const cond = (st: EC2NodeClassStatus, t: string) => st.conditions?.find((c) => c.type === t);

describe('EC2NodeClass controller', () => {
  it('resolves subnets, security groups, AMIs and the instance profile into status; Ready', async () => {
    const net = await network();
    const amis = await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    await env.client.create(nodeClass('default', { tags: { team: 'a' } }));
    expect(await controller.reconcile('default')).toEqual({ requeueAfter: 60 });
    const { obj, st } = await statusOf('default');
    expect(obj.metadata.finalizers).toContain('karpenter.k8s.aws/termination');
    // /24 has more free addresses than /26: first.
    expect(st.subnets?.map((s) => s.id)).toEqual(net.subnets.map((s) => s.id));
    expect(st.subnets?.[0]).toMatchObject({
      zone: `${moto.region}a`,
      zoneID: expect.stringMatching(/^usw2-az\d$/),
    });
    expect(st.securityGroups).toEqual([{ id: net.sg, name: 'nodes' }]);
    expect(st.amis?.map((a) => a.id).sort()).toEqual([amis.amd64, amis.arm64].sort());
    expect(st.amis?.find((a) => a.id === amis.arm64)?.requirements).toEqual([
      { key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] },
    ]);
    expect(st.instanceProfile).toMatch(/^test-cluster_\d+$/);
    const profile = (
      await iam.send(new GetInstanceProfileCommand({ InstanceProfileName: st.instanceProfile as string }))
    ).InstanceProfile;
    expect(profile?.Path).toBe(`/karpenter/${moto.region}/test-cluster/${obj.metadata.uid}/`);
    expect(profile?.Roles?.map((r) => r.RoleName)).toEqual(['KarpenterNodeRole-test']);
    expect(Object.fromEntries((profile?.Tags ?? []).map((t) => [t.Key, t.Value]))).toEqual({
      team: 'a',
      'kubernetes.io/cluster/test-cluster': 'owned',
      'eks:eks-cluster-name': 'test-cluster',
      'karpenter.k8s.aws/ec2nodeclass': 'default',
      'topology.kubernetes.io/region': moto.region,
    });
    for (const t of [
      'SubnetsReady',
      'SecurityGroupsReady',
      'AMIsReady',
      'InstanceProfileReady',
      'CapacityReservationsReady',
      'ValidationSucceeded',
      'Ready',
    ])
      expect(cond(st, t)?.status, `${t}: ${cond(st, t)?.message}`).toBe('True');
    // A second pass keeps the same profile (no new one per reconcile).
    await controller.reconcile('default');
    expect((await statusOf('default')).st.instanceProfile).toBe(st.instanceProfile);
    const listed = await iam.send(new ListInstanceProfilesCommand({ PathPrefix: '/karpenter/' }));
    expect(listed.InstanceProfiles).toHaveLength(1);
  });

  it('says what matched nothing: no subnets, no security groups, no AMIs → Ready=False', async () => {
    await network();
    await env.client.create(
      nodeClass('empty', {
        instanceProfile: 'existing-profile',
        subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'other-cluster' } }],
        securityGroupSelectorTerms: [{ id: 'sg-0000000000000000' }],
        amiSelectorTerms: [{ name: 'no-such-image-*' }],
      }),
    );
    await controller.reconcile('empty');
    const { st } = await statusOf('empty');
    expect(cond(st, 'SubnetsReady')).toMatchObject({
      status: 'False',
      reason: 'SubnetsNotFound',
      message:
        'SubnetSelector did not match any Subnets (subnetSelectorTerms: [{"tags":{"karpenter.sh/discovery":"other-cluster"}}])',
    });
    expect(cond(st, 'SecurityGroupsReady')).toMatchObject({
      status: 'False',
      reason: 'SecurityGroupsNotFound',
    });
    expect(cond(st, 'SecurityGroupsReady')?.message).toContain('sg-0000000000000000');
    expect(cond(st, 'AMIsReady')).toMatchObject({ status: 'False', reason: 'AMINotFound' });
    expect(cond(st, 'AMIsReady')?.message).toContain('no-such-image-*');
    expect(cond(st, 'InstanceProfileReady')?.status).toBe('True');
    expect(st.instanceProfile).toBe('existing-profile');
    expect(st.subnets).toBeUndefined();
    expect(cond(st, 'Ready')?.status).toBe('False');
    const events = await env.events('empty');
    expect(events.some((e) => e.type === 'Warning' && e.message?.includes('did not match'))).toBe(true);
  });

  it('an ssmParameter term resolves to its image; a missing role gives InstanceProfileReady=False', async () => {
    await network();
    const amis = await tagImages();
    await ssm.send(new PutParameterCommand({ Name: '/my/ami', Value: amis.arm64, Type: 'String' }));
    await env.client.create(
      nodeClass('ssm', { role: 'NoSuchRole', amiSelectorTerms: [{ ssmParameter: '/my/ami' }] }),
    );
    await expect(controller.reconcile('ssm')).rejects.toThrow(/NoSuchRole/);
    const { st } = await statusOf('ssm');
    expect(st.amis?.map((a) => a.id)).toEqual([amis.arm64]);
    expect(cond(st, 'AMIsReady')?.status).toBe('True');
    expect(cond(st, 'InstanceProfileReady')).toMatchObject({
      status: 'False',
      reason: 'InstanceProfileCreationFailed',
    });
    expect(cond(st, 'InstanceProfileReady')?.message).toContain('NoSuchRole');
    expect(cond(st, 'Ready')?.status).toBe('False');
    // the half-created profile was cleaned up
    const listed = await iam.send(new ListInstanceProfilesCommand({ PathPrefix: '/karpenter/' }));
    expect(listed.InstanceProfiles ?? []).toHaveLength(0);
  });

  it('the finalizer waits for the NodeClaims of the class, then deletes its instance profiles', async () => {
    await network();
    await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    await env.client.create(nodeClass('gone', {}));
    await controller.reconcile('gone');
    const profile = (await statusOf('gone')).st.instanceProfile as string;
    await env.client.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'gone-abc', finalizers: ['karpenter.sh/termination'] },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'gone' },
        requirements: [],
      },
    });
    await env.client.delete('EC2NodeClass', 'gone');
    expect(await controller.reconcile('gone')).toEqual({ requeueAfter: 600 });
    expect((await statusOf('gone')).obj.metadata.deletionTimestamp).toBeDefined();
    const waiting = await env.events('gone');
    expect(waiting.map((e) => [e.reason, e.message])).toContainEqual([
      'WaitingOnNodeClaimTermination',
      'Waiting on NodeClaim termination for gone-abc',
    ]);
    await env.client.patch(
      'NodeClaim',
      'gone-abc',
      undefined,
      { metadata: { finalizers: null } },
      { type: 'merge' },
    );
    await env.client.tryDelete('NodeClaim', 'gone-abc');
    await controller.reconcile('gone');
    expect(await env.client.tryGet('EC2NodeClass', 'gone')).toBeUndefined();
    await expect(iam.send(new GetInstanceProfileCommand({ InstanceProfileName: profile }))).rejects.toThrow();
  });

  it('an emulator prepared for start --cloud-provider aws makes the bundled example class Ready (al2023@latest alias)', async () => {
    const seed = await prepareEmulator(ec2, iam, 'cluster-1');
    expect(seed.subnets.length).toBeGreaterThanOrEqual(3);
    await env.client.create({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'example' },
      spec: {
        role: 'KarpenterNodeRole-cluster-1',
        subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'cluster-1' } }],
        securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'cluster-1' } }],
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
      },
    });
    await controller.reconcile('example');
    const { st } = await statusOf('example');
    expect(cond(st, 'Ready')?.status, JSON.stringify(st.conditions)).toBe('True');
    expect(st.subnets?.map((s) => s.id).sort()).toEqual(seed.subnets);
    expect(st.securityGroups?.map((g) => g.id)).toEqual(seed.securityGroups);
    // one image per architecture × variant parameter the proxy serves; arm64 and amd64 both present
    const archs = new Set(
      st.amis?.map((a) => a.requirements.find((r) => r.key === 'kubernetes.io/arch')?.values?.[0]),
    );
    expect([...archs].sort()).toEqual(['amd64', 'arm64']);
    expect(
      st.amis?.find((a) =>
        a.requirements.some(
          (r) => r.key === 'karpenter.k8s.aws/instance-gpu-count' && r.operator === 'Exists',
        ),
      ),
    ).toBeDefined();
  });
});

/**
 * A NodeClaim exactly as upstream Karpenter writes one for an EC2NodeClass (labels, annotations, finalizer,
 * owner, status: aws/karpenter-provider-aws `cloudprovider.go` Create + kubernetes-sigs/karpenter's lifecycle).
 */
function upstreamNodeClaim(name: string, cls: string, ec2Hash: string, ec2Version: string, drifted = false) {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      labels: {
        'karpenter.sh/nodepool': 'default',
        'karpenter.k8s.aws/ec2nodeclass': cls,
        'karpenter.sh/capacity-type': 'on-demand',
        'node.kubernetes.io/instance-type': 'm5.large',
        'topology.kubernetes.io/zone': `${moto.region}a`,
        'karpenter.sh/initialized': 'true',
        'karpenter.sh/registered': 'true',
      },
      annotations: {
        'karpenter.k8s.aws/ec2nodeclass-hash': ec2Hash,
        'karpenter.k8s.aws/ec2nodeclass-hash-version': ec2Version,
        'karpenter.k8s.aws/instance-profile-name': 'test-cluster_123',
        'karpenter.k8s.aws/tagged': 'true',
        'karpenter.sh/nodepool-hash': '12745407319442031341',
        'karpenter.sh/nodepool-hash-version': 'v3',
      },
      finalizers: ['karpenter.sh/termination'],
    },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: cls },
      requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['default'] }],
      expireAfter: '720h',
    },
    status: {
      providerID: `aws:///${moto.region}a/i-0123456789abcdef0`,
      imageID: 'ami-0123456789abcdef0',
      conditions: [
        {
          type: 'Launched',
          status: 'True',
          reason: 'Launched',
          message: '',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
        ...(drifted
          ? [
              {
                type: 'Drifted',
                status: 'True',
                reason: 'NodeClassDrift',
                message: 'NodeClassDrift',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ]
          : []),
      ],
    },
  };
}

describe('EC2NodeClass controller: the cluster CIDR of AL2023 classes (issue 28, upstream validation.go)', () => {
  /** A fake EKS whose DescribeCluster answers `network` (no CIDR when empty) or throws `fail`. */
  function eksAnswering(network: Record<string, string>, fail?: Error): Pick<EKSClient, 'send'> {
    const send = async () => {
      if (fail) throw fail;
      return { cluster: { kubernetesNetworkConfig: network } };
    };
    return { send } as unknown as Pick<EKSClient, 'send'>;
  }

  function controllerResolving(eks: Pick<EKSClient, 'send'>): EC2NodeClassController {
    const settings = awsSettings({ clusterName: 'test-cluster' });
    return new EC2NodeClassController({
      client: env.client,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      ec2,
      ssm,
      iam,
      region: moto.region,
      clusterName: 'test-cluster',
      kubernetesVersion: async () => '1.32',
      resolveClusterCIDR: () => resolveClusterCIDR({ settings, eks }),
    });
  }

  it('no CIDR in DescribeCluster: ValidationSucceeded=False ClusterCIDRResolutionFailed, not Ready, launches refused; Bottlerocket unaffected', async () => {
    await network();
    await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    await env.client.create(nodeClass('al2023', {}));
    await env.client.create(nodeClass('br', { amiFamily: 'Bottlerocket' }));
    const c = controllerResolving(eksAnswering({}));
    await expect(c.reconcile('al2023')).rejects.toThrow(
      'EC2NodeClass al2023: failed to detect the cluster CIDR, no CIDR found in DescribeCluster response',
    );
    const { obj, st } = await statusOf('al2023');
    expect(cond(st, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'ClusterCIDRResolutionFailed',
      message: 'Failed to detect the cluster CIDR',
    });
    expect(cond(st, 'SubnetsReady')?.status).toBe('True');
    expect(cond(st, 'Ready')?.status).toBe('False');
    expect(ec2NodeClassNotReadyReason(obj)).toBe(
      'ValidationSucceeded=False (ClusterCIDRResolutionFailed): Failed to detect the cluster CIDR',
    );
    // nodeclass.status (spec validation only) does not flip the provider's reason back to True
    const status = new NodeClassStatusController({
      client: env.client,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      cloudProvider: {
        supportedNodeClasses: () => [{ group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' }],
      } as unknown as CloudProvider,
    });
    await status.reconcile('EC2NodeClass.karpenter.k8s.aws/al2023');
    expect(cond((await statusOf('al2023')).st, 'ValidationSucceeded')?.reason).toBe(
      'ClusterCIDRResolutionFailed',
    );
    // the same cluster: a Bottlerocket class needs no CIDR and is Ready
    expect(await c.reconcile('br')).toEqual({ requeueAfter: 60 });
    expect(cond((await statusOf('br')).st, 'Ready')?.status).toBe('True');
  });

  it('a server fault is retried leaving ValidationSucceeded as it was; a CIDR found makes the class Ready', async () => {
    await network();
    await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    await env.client.create(nodeClass('al2023', {}));
    const fault = Object.assign(new Error('InternalServerError'), { $fault: 'server' });
    await expect(controllerResolving(eksAnswering({}, fault)).reconcile('al2023')).rejects.toThrow(
      'failed to detect the cluster CIDR, InternalServerError',
    );
    expect(cond((await statusOf('al2023')).st, 'ValidationSucceeded')?.status).toBe('Unknown');
    const ok = controllerResolving(eksAnswering({ serviceIpv4Cidr: '172.20.0.0/16' }));
    expect(await ok.reconcile('al2023')).toEqual({ requeueAfter: 60 });
    const { st } = await statusOf('al2023');
    expect(cond(st, 'ValidationSucceeded')?.status).toBe('True');
    expect(cond(st, 'Ready')?.status).toBe('True');
  });
});

describe('EC2NodeClass validation: EC2 authorization dry runs (issue 28, upstream validation.go)', () => {
  /** A controller validating with a provider's launch (and `ec2` for everything, default the test client). */
  function validatingController(opts: { disableDryRun?: boolean; ec2?: EC2Client } = {}) {
    const t = awsTestProvider(moto.clientConfig, new Map());
    return new EC2NodeClassController({
      client: env.client,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      ec2: opts.ec2 ?? ec2,
      ssm,
      iam,
      region: moto.region,
      clusterName: 'test-cluster',
      kubernetesVersion: async () => '1.32',
      validationLaunch: (nc) => t.provider.validationLaunch(nc),
      ...(opts.disableDryRun !== undefined ? { disableDryRun: opts.disableDryRun } : {}),
    });
  }
  /** Calls of EC2 `action`: the dry runs for CreateFleet and RunInstances (counted apart by the proxy). */
  const calls = (action: string) =>
    moto.proxy.calls.get(action === 'CreateLaunchTemplate' ? `ec2:${action}` : `ec2:${action} (DryRun)`) ?? 0;
  async function ready(name: string): Promise<void> {
    await network();
    await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    await env.client.create(nodeClass(name, {}));
  }
  async function instanceCount(): Promise<number> {
    const out = await ec2.send(new DescribeInstancesCommand({}));
    return (out.Reservations ?? []).reduce((n, r) => n + (r.Instances ?? []).length, 0);
  }

  it('allowed: one CreateLaunchTemplate, DryRun CreateFleet and RunInstances, no instance; True, cached 30 min', async () => {
    await ready('ok');
    const c = validatingController();
    expect(await c.reconcile('ok')).toEqual({ requeueAfter: 60 });
    const { st } = await statusOf('ok');
    expect(cond(st, 'ValidationSucceeded')?.status).toBe('True');
    expect(cond(st, 'Ready')?.status).toBe('True');
    expect([calls('CreateLaunchTemplate'), calls('CreateFleet'), calls('RunInstances')]).toEqual([1, 1, 1]);
    expect(await instanceCount()).toBe(0);
    // unchanged class: the verdict is cached; 30 min later (upstream ValidationTTL) EC2 is asked again
    await c.reconcile('ok');
    expect([calls('CreateFleet'), calls('RunInstances')]).toEqual([1, 1]);
    env.clock.advance(30 * 60_000);
    await c.reconcile('ok');
    expect([calls('CreateFleet'), calls('RunInstances')]).toEqual([2, 2]);
    expect(calls('CreateLaunchTemplate')).toBe(1); // the template is the provider's, cached
  });

  it('CreateFleet denied: False CreateFleetAuthCheckFailed naming ec2:CreateFleet and the fix; not Ready; RunInstances not tried', async () => {
    await ready('denied');
    moto.proxy.deny('CreateFleet');
    const c = validatingController();
    expect(await c.reconcile('denied')).toEqual({ requeueAfter: 60 });
    const { obj, st } = await statusOf('denied');
    expect(cond(st, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'CreateFleetAuthCheckFailed',
      message:
        "Controller isn't authorized to call ec2:CreateFleet: User is not authorized to perform this operation " +
        "because no identity-based policy allows it; grant ec2:CreateFleet to the controller's IAM role (see the " +
        'Karpenter controller policy), or set DISABLE_DRY_RUN=true to skip the check (EC2NodeClass denied)',
    });
    expect(cond(st, 'Ready')?.status).toBe('False');
    expect(ec2NodeClassNotReadyReason(obj)).toMatch(
      /^ValidationSucceeded=False \(CreateFleetAuthCheckFailed\)/,
    );
    expect([calls('CreateFleet'), calls('RunInstances')]).toEqual([1, 0]);
    // the refusal is cached too: the same class is not asked again within 30 min
    await c.reconcile('denied');
    expect(calls('CreateFleet')).toBe(1);
  });

  it('RunInstances or CreateLaunchTemplate denied: their upstream reasons', async () => {
    await ready('ri');
    moto.proxy.deny('RunInstances');
    await validatingController().reconcile('ri');
    expect(cond((await statusOf('ri')).st, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'RunInstancesAuthCheckFailed',
      message: expect.stringMatching(
        /^Controller isn't authorized to call ec2:RunInstances: .*grant ec2:RunInstances/,
      ),
    });
    expect(calls('RunInstances')).toBe(2); // every subnet tried (two)
    moto.proxy.clearFaults();
    moto.proxy.deny('CreateLaunchTemplate');
    await env.client.create(nodeClass('lt', { tags: { other: 'template' } }));
    await validatingController().reconcile('lt');
    expect(cond((await statusOf('lt')).st, 'ValidationSucceeded')).toMatchObject({
      status: 'False',
      reason: 'CreateLaunchTemplateAuthCheckFailed',
      message: expect.stringMatching(/^Controller isn't authorized to call ec2:CreateLaunchTemplate: /),
    });
  });

  it('DISABLE_DRY_RUN=true: no dry-run call, True', async () => {
    await ready('off');
    moto.proxy.deny('CreateFleet');
    expect(await validatingController({ disableDryRun: true }).reconcile('off')).toEqual({
      requeueAfter: 60,
    });
    expect(cond((await statusOf('off')).st, 'ValidationSucceeded')?.status).toBe('True');
    expect([calls('CreateLaunchTemplate'), calls('CreateFleet'), calls('RunInstances')]).toEqual([0, 0, 0]);
  });

  it('a transport failure or throttling of the dry run is retried, leaving the condition as it was', async () => {
    await ready('flaky');
    // CreateFleet sent to a closed port: the SDK's transport error, no HTTP answer
    const dead = new EC2Client({ ...moto.clientConfig, endpoint: 'http://127.0.0.1:1', maxAttempts: 1 });
    const broken = {
      send: (cmd: unknown) =>
        cmd instanceof CreateFleetCommand ? dead.send(cmd) : ec2.send(cmd as CreateFleetCommand),
    } as unknown as EC2Client;
    await expect(validatingController({ ec2: broken }).reconcile('flaky')).rejects.toThrow(
      /^EC2NodeClass flaky: validating ec2:CreateFleet authorization, .*ECONNREFUSED/,
    );
    let st = (await statusOf('flaky')).st;
    expect(cond(st, 'ValidationSucceeded')?.status).toBe('Unknown');
    expect(cond(st, 'SubnetsReady')?.status).toBe('True'); // the rest was still written
    moto.proxy.throttle('CreateFleet', 5);
    await expect(validatingController().reconcile('flaky')).rejects.toThrow(
      'validating ec2:CreateFleet authorization (throttled), Request limit exceeded.',
    );
    moto.proxy.clearFaults();
    expect(await validatingController().reconcile('flaky')).toEqual({ requeueAfter: 60 });
    st = (await statusOf('flaky')).st;
    expect(cond(st, 'ValidationSucceeded')?.status).toBe('True');
    dead.destroy();
  });
});

describe('switch from upstream Karpenter', () => {
  it('adopts v4 (v1.3-v1.11) and v5 (v1.12+) stamps without drift; a later spec change drifts only that class', async () => {
    await network();
    await tagImages();
    for (const r of ['KarpenterNodeRole-test', 'KarpenterNodeRole-demo'])
      await iam.send(new CreateRoleCommand({ RoleName: r, AssumeRolePolicyDocument: '{}' }));
    const stampedBy = (hash: string, version: string) => ({
      'karpenter.k8s.aws/ec2nodeclass-hash': hash,
      'karpenter.k8s.aws/ec2nodeclass-hash-version': version,
    });
    // v4: a class and its claims as upstream v1.11 left them (its own v4 number, which capenter cannot compute)
    const v4 = nodeClass('v4', {});
    v4.metadata.annotations = stampedBy('4432198765432109876', 'v4');
    v4.metadata.finalizers = ['karpenter.k8s.aws/termination'];
    // v5: the "minimal" spec of test/fixtures/upstream-hash/cases.json with selectors of this account (selectors
    // and amiFamily are hash:"ignore"; AMIFamily() stays AL2023): upstream v1.14 computed 13268795794593449862
    const v5 = nodeClass('v5', {
      role: 'KarpenterNodeRole-demo',
      metadataOptions: {
        httpEndpoint: 'enabled',
        httpProtocolIPv6: 'disabled',
        httpPutResponseHopLimit: 1,
        httpTokens: 'required',
      },
    });
    v5.metadata.annotations = stampedBy('13268795794593449862', 'v5');
    v5.metadata.finalizers = ['karpenter.k8s.aws/termination'];
    await env.client.create(v4);
    await env.client.create(v5);
    const claims = [
      upstreamNodeClaim('v4-a', 'v4', '4432198765432109876', 'v4'),
      upstreamNodeClaim('v4-b', 'v4', '4432198765432109876', 'v4'),
      upstreamNodeClaim('v4-drifted', 'v4', '1111', 'v4', true),
      upstreamNodeClaim('v5-a', 'v5', '13268795794593449862', 'v5'),
    ];
    for (const c of claims) {
      await env.client.create(c as never);
      await env.client.patchStatus('NodeClaim', c.metadata.name, undefined, c as never, { type: 'merge' });
    }
    const before = (await env.client.get('NodeClaim', 'v5-a')).metadata.resourceVersion;
    await controller.reconcile('v4');
    await controller.reconcile('v5');
    const getClass = async (n: string) => (await env.client.get('EC2NodeClass', n)) as EC2NodeClass;
    const getClaim = async (n: string) => (await env.client.get('NodeClaim', n)) as NodeClaim;
    // v5: capenter's hash is upstream's number, so nothing is written
    const c5 = await getClass('v5');
    expect(c5.metadata.annotations).toEqual(stampedBy('13268795794593449862', 'v5'));
    const n5 = await getClaim('v5-a');
    expect(n5.metadata.resourceVersion).toBe(before);
    expect(staticFieldsDrifted(n5, c5)).toBe(false);
    // v4: re-stamped as upstream v1.14 does on a version change: claims get the class's v5 hash (drifted: version only)
    const c4 = await getClass('v4');
    const h4 = ec2NodeClassHash(c4, '');
    expect(c4.metadata.annotations).toEqual(stampedBy(h4, 'v5'));
    for (const n of ['v4-a', 'v4-b']) {
      const nc = await getClaim(n);
      expect(nc.metadata.annotations).toMatchObject(stampedBy(h4, 'v5'));
      expect(nc.metadata.annotations?.['karpenter.sh/nodepool-hash']).toBe('12745407319442031341');
      expect(staticFieldsDrifted(nc, c4)).toBe(false);
    }
    const dr = await getClaim('v4-drifted');
    expect(dr.metadata.annotations).toMatchObject(stampedBy('1111', 'v5'));
    // a real change after the switch: userData of class v4 only → its claims drift, v5's do not
    await env.client.patch(
      'EC2NodeClass',
      'v4',
      undefined,
      { spec: { userData: '#!/bin/bash\necho changed\n' } },
      {
        type: 'merge',
      },
    );
    await controller.reconcile('v4');
    await controller.reconcile('v5');
    const [c4b, c5b] = [await getClass('v4'), await getClass('v5')];
    expect(c4b.metadata.annotations?.['karpenter.k8s.aws/ec2nodeclass-hash']).not.toBe(h4);
    expect(staticFieldsDrifted(await getClaim('v4-a'), c4b)).toBe(true);
    expect(staticFieldsDrifted(await getClaim('v4-b'), c4b)).toBe(true);
    expect(staticFieldsDrifted(await getClaim('v5-a'), c5b)).toBe(false);
    expect(c5b.metadata.annotations).toEqual(stampedBy('13268795794593449862', 'v5'));
  });
});

/** A reservation in the emulator (the proxy's; moto has none); returns its ID. */
async function reserve(
  instanceType: string,
  zone: string,
  count: number,
  tags: Record<string, string> = {},
  match: 'open' | 'targeted' = 'targeted',
): Promise<string> {
  const out = await ec2.send(
    new CreateCapacityReservationCommand({
      InstanceType: instanceType,
      InstancePlatform: 'Linux/UNIX',
      AvailabilityZone: zone,
      InstanceCount: count,
      InstanceMatchCriteria: match,
      TagSpecifications: [
        {
          ResourceType: 'capacity-reservation',
          Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
        },
      ],
    }),
  );
  return out.CapacityReservation?.CapacityReservationId as string;
}

describe('EC2NodeClass controller: capacity reservations (issue 28)', () => {
  async function ready(): Promise<{ amd64: string; arm64: string }> {
    await network();
    const amis = await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
    return amis;
  }
  const terms = (t: unknown[]) => ({ capacityReservationSelectorTerms: t }) as Partial<EC2NodeClass['spec']>;

  it('resolves id and tag terms into status.capacityReservations (sorted by ID); CapacityReservationsReady', async () => {
    await ready();
    const ml = await reserve('m5.large', `${moto.region}a`, 2, { team: 'ml' });
    const open = await reserve('c5.large', `${moto.region}b`, 1, {}, 'open');
    await reserve('m5.xlarge', `${moto.region}a`, 1, { team: 'web' });
    await env.client.create(nodeClass('default', terms([{ tags: { team: 'ml' } }, { id: open }])));
    await controller.reconcile('default');
    const { st } = await statusOf('default');
    expect(st.capacityReservations).toEqual(
      [
        {
          id: ml,
          instanceType: 'm5.large',
          availabilityZone: `${moto.region}a`,
          ownerID: '123456789012',
          instanceMatchCriteria: 'targeted',
          reservationType: 'default',
          state: 'active',
        },
        {
          id: open,
          instanceType: 'c5.large',
          availabilityZone: `${moto.region}b`,
          ownerID: '123456789012',
          instanceMatchCriteria: 'open',
          reservationType: 'default',
          state: 'active',
        },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    expect(cond(st, 'CapacityReservationsReady')?.status).toBe('True');
    expect(cond(st, 'Ready')?.status).toBe('True');
  });

  it('a term that matches nothing: CapacityReservationsReady=False naming the term and the fix; not Ready', async () => {
    await ready();
    await reserve('m5.large', `${moto.region}a`, 2, { team: 'ml' });
    await env.client.create(
      nodeClass('default', terms([{ tags: { team: 'ml' } }, { id: 'cr-0123456789abcdef0' }])),
    );
    await controller.reconcile('default');
    const { st } = await statusOf('default');
    expect(cond(st, 'CapacityReservationsReady')).toMatchObject({
      status: 'False',
      reason: 'CapacityReservationsNotFound',
      message:
        'EC2NodeClass default: spec.capacityReservationSelectorTerms[1] {"id":"cr-0123456789abcdef0"} matched no ' +
        'active capacity reservation; fix the id, tags or ownerID (the reservation must be active and in this ' +
        'region), or remove the term',
    });
    expect(cond(st, 'Ready')?.status).toBe('False');
    // the term that matched is still resolved
    expect(st.capacityReservations?.map((r) => r.instanceType)).toEqual(['m5.large']);
  });

  it('a reservation the class cannot launch into (its zone, its architecture) is CapacityReservationIncompatible', async () => {
    const amis = await ready();
    const zoneC = await reserve('m5.large', `${moto.region}c`, 1, { team: 'c' });
    await env.client.create(nodeClass('default', terms([{ tags: { team: 'c' } }])));
    await controller.reconcile('default');
    let { st } = await statusOf('default');
    expect(cond(st, 'CapacityReservationsReady')).toMatchObject({
      status: 'False',
      reason: 'CapacityReservationIncompatible',
      message:
        `EC2NodeClass default: capacity reservation ${zoneC} (m5.large in ${moto.region}c, selected by ` +
        `spec.capacityReservationSelectorTerms) is in a zone none of the class's subnets is in ` +
        `(${moto.region}a, ${moto.region}b); add a subnet in ${moto.region}c to spec.subnetSelectorTerms or ` +
        'narrow the reservation terms',
    });
    expect(cond(st, 'Ready')?.status).toBe('False');
    // an arm64 reservation for a class whose only AMI is amd64
    const graviton = await reserve('m6g.large', `${moto.region}a`, 1, { team: 'arm' });
    await env.client.create(
      nodeClass('amd', { ...terms([{ tags: { team: 'arm' } }]), amiSelectorTerms: [{ id: amis.amd64 }] }),
    );
    await controller.reconcile('amd');
    ({ st } = await statusOf('amd'));
    expect(cond(st, 'CapacityReservationsReady')).toMatchObject({
      status: 'False',
      reason: 'CapacityReservationIncompatible',
      message:
        `EC2NodeClass amd: capacity reservation ${graviton} (m6g.large in ${moto.region}a, selected by ` +
        'spec.capacityReservationSelectorTerms) is arm64, but no AMI in status.amis serves arm64; add an arm64 AMI ' +
        'to spec.amiSelectorTerms or select a reservation of an instance type the AMIs serve',
    });
  });
});

describe('capacityreservation.expiration (issue 28)', () => {
  it('deletes the NodeClaims of a capacity block 40 minutes before it ends, not those of an ODCR', async () => {
    const end = env.clock.now() + 2 * 3600_000;
    const block = moto.proxy.reservations.add({
      region: moto.region,
      instanceType: 'p5.48xlarge',
      availabilityZone: `${moto.region}a`,
      totalInstanceCount: 1,
      reservationType: 'capacity-block',
      endDate: end,
    });
    const odcr = await reserve('m5.large', `${moto.region}a`, 1);
    for (const [name, id] of [
      ['nc-block', block.id],
      ['nc-odcr', odcr],
    ] as const) {
      await env.client.create({
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: {
          name,
          finalizers: ['karpenter.sh/termination'],
          labels: { 'karpenter.k8s.aws/capacity-reservation-id': id },
        },
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [],
        },
      });
    }
    const deps = { client: env.client, ec2, clock: env.clock, logger: silentLogger() };
    expect(await expireCapacityBlockNodeClaims(deps)).toEqual([]);
    env.clock.advance(2 * 3600_000 - 40 * 60_000 - 1000);
    expect(await expireCapacityBlockNodeClaims(deps)).toEqual([]);
    env.clock.advance(1000);
    expect(await expireCapacityBlockNodeClaims(deps)).toEqual(['nc-block']);
    const gone = await env.client.get('NodeClaim', 'nc-block');
    expect(gone.metadata.deletionTimestamp).toBeDefined();
    expect((await env.client.get('NodeClaim', 'nc-odcr')).metadata.deletionTimestamp).toBeUndefined();
    // a deleting NodeClaim is not deleted again
    expect(await expireCapacityBlockNodeClaims(deps)).toEqual([]);
  });
});

describe('capacityreservation.capacitytype (issue 28)', () => {
  it('a reserved NodeClaim and Node whose reservation was cancelled become on-demand, without reservation labels', async () => {
    const nodeClasses = new Map<string, EC2NodeClass>();
    const t = awsTestProvider(moto.clientConfig, nodeClasses);
    const net = await createTestNetwork(t.clients.ec2, t.clients.iam, [`${moto.region}a`, `${moto.region}b`]);
    const id = await reserve('m5.large', `${moto.region}a`, 1, { team: 'ml' });
    const cls = testNodeClass('default', net, {
      capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }],
    } as Partial<EC2NodeClass['spec']>);
    nodeClasses.set('default', cls);
    const r = await resolveCapacityReservations(t.clients.ec2, cls, t.clock);
    (cls.status as EC2NodeClassStatus).capacityReservations = r.reservations;
    t.provider.capacityReservations.sync(r.available);
    const launched = await t.provider.create(
      awsNodeClaim('nc-r', [
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
        { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['reserved', 'on-demand'] },
      ]),
    );
    const labels = launched.metadata.labels ?? {};
    expect([
      labels['karpenter.sh/capacity-type'],
      labels['karpenter.k8s.aws/capacity-reservation-id'],
    ]).toEqual(['reserved', id]);
    const providerID = launched.status!.providerID!;
    await env.client.create({ ...launched, metadata: { name: 'nc-r', labels }, status: {} });
    await env.client.patchStatus(
      'NodeClaim',
      'nc-r',
      undefined,
      { status: { providerID } },
      { type: 'merge' },
    );
    await env.client.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'ip-r', labels: { ...labels, 'karpenter.sh/registered': 'true' } },
      spec: { providerID },
    });
    expect(await syncReservedCapacityTypes(env.client, await t.provider.list())).toEqual([]);
    await ec2.send(new CancelCapacityReservationCommand({ CapacityReservationId: id }));
    expect(await syncReservedCapacityTypes(env.client, await t.provider.list())).toEqual([
      'Node/ip-r',
      'NodeClaim/nc-r',
    ]);
    for (const [kind, name] of [
      ['NodeClaim', 'nc-r'],
      ['Node', 'ip-r'],
    ] as const) {
      const l = (await env.client.get(kind, name)).metadata.labels ?? {};
      expect([
        l['karpenter.sh/capacity-type'],
        l['karpenter.k8s.aws/capacity-reservation-id'],
        l['karpenter.k8s.aws/capacity-reservation-type'],
        l['karpenter.k8s.aws/capacity-reservation-interruptible'],
        l['node.kubernetes.io/instance-type'],
      ]).toEqual(['on-demand', undefined, undefined, undefined, 'm5.large']);
    }
    expect(await syncReservedCapacityTypes(env.client, await t.provider.list())).toEqual([]);
    t.clients.destroy();
  });
});

describe('EC2NodeClass controller: placement groups (issue 28 item 2)', () => {
  async function ready(): Promise<void> {
    await network();
    await tagImages();
    await iam.send(
      new CreateRoleCommand({ RoleName: 'KarpenterNodeRole-test', AssumeRolePolicyDocument: '{}' }),
    );
  }
  const group = async (name: string, strategy: 'cluster' | 'partition' | 'spread') =>
    (await ec2.send(new CreatePlacementGroupCommand({ GroupName: name, Strategy: strategy }))).PlacementGroup
      ?.GroupId as string;

  it('a selector naming an available group (by name or id): PlacementGroupReady=True and Ready; no selector: True', async () => {
    await ready();
    const id = await group('db', 'cluster');
    expect(id).toMatch(/^pg-[0-9a-f]{17}$/);
    await env.client.create(nodeClass('by-name', { placementGroupSelector: { name: 'db' } }));
    await env.client.create(nodeClass('by-id', { placementGroupSelector: { id } }));
    await env.client.create(nodeClass('none', {}));
    for (const name of ['by-name', 'by-id', 'none']) {
      await controller.reconcile(name);
      const { st } = await statusOf(name);
      expect(cond(st, 'PlacementGroupReady'), name).toMatchObject({
        status: 'True',
        reason: 'PlacementGroupReady',
      });
      expect(cond(st, 'Ready')?.status, name).toBe('True');
    }
  });

  it('a group not available yet: PlacementGroupReady=False PlacementGroupNotFound naming the field and the fix, not Ready; available a minute later: Ready', async () => {
    await ready();
    await group('db', 'partition');
    moto.proxy.placementGroups.setState(moto.region, 'db', 'pending');
    await env.client.create(nodeClass('default', { placementGroupSelector: { name: 'db' } }));
    await controller.reconcile('default');
    const { obj, st } = await statusOf('default');
    expect(cond(st, 'PlacementGroupReady')).toMatchObject({
      status: 'False',
      reason: 'PlacementGroupNotFound',
      message:
        'Placement group "db" not found: EC2NodeClass default spec.placementGroupSelector.name "db" matches no ' +
        `placement group in state available in ${moto.region}; create it (or wait until it is available) or fix ` +
        'spec.placementGroupSelector',
    });
    expect(cond(st, 'Ready')?.status).toBe('False');
    expect(ec2NodeClassNotReadyReason(obj)).toMatch(/^PlacementGroupReady=False \(PlacementGroupNotFound\)/);
    moto.proxy.placementGroups.setState(moto.region, 'db', 'available');
    await controller.reconcile('default');
    // the answer is cached for a minute (upstream pgCache)
    expect(cond((await statusOf('default')).st, 'PlacementGroupReady')?.status).toBe('False');
    env.clock.advance(61_000);
    await controller.reconcile('default');
    expect(cond((await statusOf('default')).st, 'Ready')?.status).toBe('True');
  });

  it("an unknown name: PlacementGroupReady=False PlacementGroupResolutionFailed with EC2's error, and the reconcile is retried", async () => {
    await ready();
    await env.client.create(nodeClass('default', { placementGroupSelector: { name: 'nope' } }));
    await expect(controller.reconcile('default')).rejects.toThrow(
      /resolving placement group, describing placement groups \(spec\.placementGroupSelector\.name "nope"\): The Placement Group 'nope' is unknown\./,
    );
    const { st } = await statusOf('default');
    expect(cond(st, 'PlacementGroupReady')).toMatchObject({
      status: 'False',
      reason: 'PlacementGroupResolutionFailed',
    });
    expect(cond(st, 'PlacementGroupReady')?.message).toMatch(
      /^Failed to resolve placement group: EC2NodeClass default spec\.placementGroupSelector\.name "nope": .*The Placement Group 'nope' is unknown\.; check the name or id and the ec2:DescribePlacementGroups permission$/,
    );
    expect(cond(st, 'Ready')?.status).toBe('False');
  });
});
