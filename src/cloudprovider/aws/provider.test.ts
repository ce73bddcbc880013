import {
  CreateFleetCommand,
  type CreateFleetCommandInput,
  CreateSubnetCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
} from '@aws-sdk/client-ec2';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelOS, LabelTopologyZone } from '../../apis/labels.ts';
import { makeNodePool } from '../../scheduling/testing.ts';
import { isInsufficientCapacityError, isNodeClassNotReadyError } from '../types.ts';
import { getInstanceTypeSpec } from './catalog/index.ts';
import type { InstanceTypeInventory } from './instancetypes.ts';
import { METRIC_LAUNCH_FAILURES, METRIC_TERMINATION_FAILURES } from './metrics.ts';
import type { AwsPricing } from './pricing.ts';
import {
  AnnotationEC2NodeClassHash,
  AnnotationEC2NodeClassHashVersion,
  AnnotationInstanceProfile,
  DriftAMI,
  DriftNodeClass,
  DriftSecurityGroup,
  DriftSubnet,
  EC2NodeClassHashVersion,
  ec2NodeClassHash,
} from './provider.ts';
import {
  awsNodeClaim,
  awsTestProvider,
  createTestNetwork,
  type TestNetwork,
  testNodeClass,
} from './testing.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
let shared: { pricing: AwsPricing; inventory: InstanceTypeInventory } | undefined;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

async function bed(spec: Partial<EC2NodeClass['spec']> = {}, registry?: Registry) {
  const nodeClasses = new Map<string, EC2NodeClass>();
  const t = awsTestProvider(emu.clientConfig, nodeClasses, shared, {}, registry);
  shared ??= { pricing: t.provider.pricing, inventory: await t.provider.instanceTypeProvider.getInventory() };
  const net: TestNetwork = await createTestNetwork(t.clients.ec2, t.clients.iam, [
    'us-west-2a',
    'us-west-2b',
  ]);
  nodeClasses.set('default', testNodeClass('default', net, spec));
  return { ...t, net, nodeClasses };
}

const inReq = (key: string, values: string[]) => ({ key, operator: 'In' as const, values });

describe('aws provider against moto + proxy', () => {
  it('launches the cheapest type with upstream tags, the class security groups and instance profile, and AL2023 user data', async () => {
    const registry = new Registry();
    const { provider, clients, net } = await bed({ tags: { team: 'a' } }, registry);
    const nc = await provider.create(
      awsNodeClaim('nc-1', [
        inReq(LabelInstanceType, ['m5.xlarge', 'm5.large']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    // us-east-1 price table: m5.large $0.096 < m5.xlarge $0.192.
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('m5.large');
    expect(nc.status?.providerID).toMatch(/^aws:\/\/\/us-west-2[ab]\/i-/);
    expect(nc.status?.imageID).toBe(net.amis[0]!.id);
    expect(nc.status?.allocatable?.pods).toBe('29');
    const id = nc.status!.providerID!.split('/').pop()!;
    const inst = (await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] })))
      .Reservations![0]!.Instances![0]!;
    const tags = Object.fromEntries(inst.Tags!.map((t) => [t.Key, t.Value]));
    expect(tags).toMatchObject({
      'kubernetes.io/cluster/test-cluster': 'owned',
      'karpenter.sh/nodepool': 'default',
      'karpenter.sh/nodeclaim': 'nc-1',
      'karpenter.k8s.aws/ec2nodeclass': 'default',
      'eks:eks-cluster-name': 'test-cluster',
      team: 'a',
    });
    expect(inst.SecurityGroups?.map((g) => g.GroupId)).toEqual([net.securityGroups[0]!.id]);
    const lts = (await clients.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? [];
    // One template per AMI x max pods: m5.large (29 pods) and m5.xlarge (58 pods).
    expect(lts.map((l) => l.LaunchTemplateName)).toEqual([
      expect.stringMatching(/^karpenter\.k8s\.aws\/\d+$/),
      expect.stringMatching(/^karpenter\.k8s\.aws\/\d+$/),
    ]);
    const datas = await Promise.all(
      lts.map(
        async (lt) =>
          (
            await clients.ec2.send(
              new DescribeLaunchTemplateVersionsCommand({
                LaunchTemplateId: lt.LaunchTemplateId!,
                Versions: ['$Latest'],
              }),
            )
          ).LaunchTemplateVersions![0]!.LaunchTemplateData!,
      ),
    );
    const data = datas.find((d) => Buffer.from(d.UserData!, 'base64').toString().includes('maxPods: 29'))!;
    expect(data.IamInstanceProfile?.Name).toBe(net.instanceProfile);
    const userData = Buffer.from(data.UserData!, 'base64').toString();
    expect(userData).toContain('kind: NodeConfig');
    expect(userData).toContain('maxPods: 29');
    expect(userData).toContain('karpenter.sh/capacity-type=on-demand');
    // karpenter_ec2nodeclasses_userdata_bytes: the raw (pre-base64) size of the last rendered user data of the class
    const sizes = datas.map((d) => Buffer.from(d.UserData!, 'base64').length);
    const gauge = async () =>
      (await registry.getSingleMetric('karpenter_ec2nodeclasses_userdata_bytes')!.get()).values.map((v) => [
        v.labels.nodeclass,
        v.value,
      ]);
    const [[label, bytes]] = (await gauge()) as [[string, number]];
    expect(label).toBe('default');
    expect(sizes).toContain(bytes);
    expect(bytes).toBeGreaterThan(500);
    // The same options reuse the template: a second launch creates none.
    await provider.create(
      awsNodeClaim('nc-2', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    expect(emu.proxy.calls.get('ec2:CreateLaunchTemplate')).toBe(2);
    // the class's templates deleted: its series goes with them
    await provider.deleteLaunchTemplates('default');
    expect(await gauge()).toEqual([]);
  });

  it('a Windows 2022 NodeClaim launches with the EKS bootstrap PowerShell carrying its labels, taints and max pods', async () => {
    const { provider, clients } = await bed({
      amiSelectorTerms: [{ alias: 'windows2022@latest' }],
      userData: 'Write-Host "hello from the class"',
    });
    const claim = awsNodeClaim('nc-win', [
      inReq(LabelInstanceType, ['m5.large']),
      inReq(LabelCapacityType, ['on-demand']),
      inReq(LabelOS, ['windows']),
    ]);
    claim.spec.taints = [{ key: 'os', value: 'windows', effect: 'NoSchedule' }];
    claim.metadata.labels = { ...claim.metadata.labels, 'team.example.com/owner': 'payments' };
    const nc = await provider.create(claim);
    expect(nc.metadata.labels?.[LabelOS]).toBe('windows');
    const lts = (await clients.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? [];
    expect(lts).toHaveLength(1);
    const data = (
      await clients.ec2.send(
        new DescribeLaunchTemplateVersionsCommand({
          LaunchTemplateId: lts[0]!.LaunchTemplateId!,
          Versions: ['$Latest'],
        }),
      )
    ).LaunchTemplateVersions![0]!.LaunchTemplateData!;
    const userData = Buffer.from(data.UserData!, 'base64').toString();
    // Windows pod density is not ENI-limited (upstream FeatureFlags.SupportsENILimitedPodDensity false): 110.
    expect(nc.status?.allocatable?.pods).toBe('110');
    expect(userData).toBe(
      '<powershell>\nWrite-Host "hello from the class"\n' +
        '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n' +
        "& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://test-cluster.example.com'" +
        " -Base64ClusterCA 'Y2EtYnVuZGxlCg==' -KubeletExtraArgs '--node-labels=\"karpenter.k8s.aws/ec2nodeclass=default," +
        'karpenter.sh/capacity-type=on-demand,karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,' +
        'team.example.com/owner=payments" --register-with-taints="os=windows:NoSchedule,karpenter.sh/unregistered:NoExecute"' +
        " --max-pods=110' -DNSClusterIP '10.100.0.10'\n</powershell>",
    );
  });

  it('an ICE on the cheapest type launches the next type, marks the offering unavailable, and leaves one instance', async () => {
    const registry = new Registry();
    const { provider, net } = await bed({}, registry);
    emu.proxy.injectCapacityError({ instanceType: 'm5.large', capacityType: 'on-demand' });
    const reqs = [
      inReq(LabelInstanceType, ['m5.large', 'm5.xlarge']),
      inReq(LabelCapacityType, ['on-demand']),
    ];
    const nc = await provider.create(awsNodeClaim('nc-ice', reqs));
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('m5.xlarge');
    expect(
      provider.unavailableOfferings
        .list()
        .map((e) => `${e.instanceType}/${e.zone}/${e.capacityType}/${e.reason}`)
        .sort(),
    ).toEqual([
      'm5.large/us-west-2a/on-demand/InsufficientInstanceCapacity',
      'm5.large/us-west-2b/on-demand/InsufficientInstanceCapacity',
    ]);
    expect((await provider.list()).map((n) => n.status?.providerID)).toEqual([nc.status?.providerID]);
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(1);
    // one launch failure per CreateFleet error entry, under upstream's labels (an ICE is upstream's LaunchFailed)
    expect(METRIC_LAUNCH_FAILURES).toBe('karpenter_cloudprovider_instance_launch_failures_total');
    const failures = (await registry.getSingleMetric(METRIC_LAUNCH_FAILURES)!.get()).values;
    expect(failures.map((v) => [v.labels, v.value])).toEqual(
      net.subnets.map((s) => [
        { zone: s.zone, zone_id: s.zoneID ?? '', capacity_type: 'on-demand', reason: 'LaunchFailed' },
        1,
      ]),
    );
    expect(net.subnets.every((s) => /^usw2-az\d$/.test(s.zoneID ?? ''))).toBe(true);
    // the one CreateFleet went out as one batch of one request (upstream pkg/batcher metrics, batcher create_fleet)
    const sizes = (await registry.getSingleMetric('karpenter_cloudprovider_batcher_batch_size')!.get())
      .values;
    const fleet = (suffix: string) =>
      sizes.find(
        (v) =>
          (v as { metricName?: string }).metricName ===
            `karpenter_cloudprovider_batcher_batch_size${suffix}` && v.labels.batcher === 'create_fleet',
      )?.value;
    expect([fleet('_count'), fleet('_sum')]).toEqual([1, 1]);
    const times = (
      await registry.getSingleMetric('karpenter_cloudprovider_batcher_batch_time_seconds')!.get()
    ).values;
    const window = times.find(
      (v) =>
        (v as { metricName?: string }).metricName ===
          'karpenter_cloudprovider_batcher_batch_time_seconds_sum' && v.labels.batcher === 'create_fleet',
    )?.value;
    // flushed by the 35 ms idle window, before the 1 s maximum
    expect(window).toBeGreaterThanOrEqual(0.03);
    expect(window).toBeLessThan(1.1);
  });

  it('InsufficientFreeAddressesInSubnet marks the subnet (taken last in its zone) and the offering; MaxFleetCountExceeded is a capacity error', async () => {
    const { provider, net, nodeClasses, clients, clock } = await bed();
    // a second subnet in us-west-2a, after the first in status order
    const extra = (
      await clients.ec2.send(
        new CreateSubnetCommand({
          VpcId: net.vpcId,
          CidrBlock: '10.0.64.0/20',
          AvailabilityZone: 'us-west-2a',
        }),
      )
    ).Subnet!.SubnetId!;
    const first = net.subnets.find((s) => s.zone === 'us-west-2a')!;
    nodeClasses.set(
      'default',
      testNodeClass('default', {
        ...net,
        subnets: [first, { ...first, id: extra }, ...net.subnets.filter((s) => s.zone !== 'us-west-2a')],
      }),
    );
    emu.proxy.injectCapacityError({
      instanceType: 'm5.large',
      zone: 'us-west-2a',
      code: 'InsufficientFreeAddressesInSubnet',
      times: 1,
    });
    const inA = inReq(LabelTopologyZone, ['us-west-2a']);
    const od = inReq(LabelCapacityType, ['on-demand']);
    const nc = await provider.create(
      awsNodeClaim('nc-ip', [inReq(LabelInstanceType, ['m5.large', 'm5.xlarge']), inA, od]),
    );
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('m5.xlarge');
    expect(provider.unavailableSubnets()).toEqual([first.id]);
    expect(
      provider.unavailableOfferings.list().map((e) => `${e.instanceType}/${e.zone}/${e.reason}`),
    ).toEqual(['m5.large/us-west-2a/InsufficientFreeAddressesInSubnet']);
    // the next launch in us-west-2a goes to the other subnet, the exhausted one being taken last
    const id = (n: { status?: { providerID?: string } }) => n.status!.providerID!.split('/').pop()!;
    const subnetOf = async (instanceId: string) =>
      (await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }))).Reservations![0]!
        .Instances![0]!.SubnetId;
    const next = await provider.create(
      awsNodeClaim('nc-ip2', [inReq(LabelInstanceType, ['c5.large']), inA, od]),
    );
    expect(await subnetOf(id(next))).toBe(extra);
    // the other subnet runs out too: us-west-2a has no subnet left, its offerings are not tried (no CreateFleet)
    emu.proxy.injectCapacityError({
      instanceType: 'c5.xlarge',
      zone: 'us-west-2a',
      code: 'InsufficientFreeAddressesInSubnet',
      times: 1,
    });
    const both = await provider.create(
      awsNodeClaim('nc-ip-both', [inReq(LabelInstanceType, ['c5.xlarge', 'c5.2xlarge']), inA, od]),
    );
    expect(both.metadata.labels?.[LabelInstanceType]).toBe('c5.2xlarge');
    expect(provider.unavailableSubnets()).toEqual([first.id, extra].sort());
    const fleets = emu.proxy.calls.get('ec2:CreateFleet');
    const none = await provider
      .create(awsNodeClaim('nc-ip-none', [inReq(LabelInstanceType, ['c5.large']), inA, od]))
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(none), String(none)).toBe(true);
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(fleets);
    // after upstream's 3-minute TTL the subnet is first again
    clock.advance(180_000);
    expect(provider.unavailableSubnets()).toEqual([]);
    const again = await provider.create(
      awsNodeClaim('nc-ip3', [inReq(LabelInstanceType, ['c5.large']), inA, od]),
    );
    expect(await subnetOf(id(again))).toBe(first.id);
    // MaxFleetCountExceeded marks the offering like any capacity error (upstream unfulfillableCapacityErrorCodes)
    emu.proxy.injectCapacityError({
      instanceType: 'm5.2xlarge',
      zone: 'us-west-2a',
      code: 'MaxFleetCountExceeded',
    });
    const fleet = await provider.create(
      awsNodeClaim('nc-fleet', [inReq(LabelInstanceType, ['m5.2xlarge', 'm5.4xlarge']), inA, od]),
    );
    expect(fleet.metadata.labels?.[LabelInstanceType]).toBe('m5.4xlarge');
    expect(
      provider.unavailableOfferings
        .list()
        .filter((e) => e.reason === 'MaxFleetCountExceeded')
        .map((e) => `${e.instanceType}/${e.zone}/${e.capacityType}`),
    ).toEqual(['m5.2xlarge/us-west-2a/on-demand']);
  });

  it('a failed TerminateInstances counts karpenter_cloudprovider_instance_termination_failures_total by zone', async () => {
    const registry = new Registry();
    const { provider, net } = await bed({}, registry);
    const nc = await provider.create(
      awsNodeClaim('nc-term', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    const zone = nc.metadata.labels?.[LabelTopologyZone];
    provider.instances.terminate = async () => {
      throw Object.assign(new Error('You are not authorized to perform this operation.'), {
        name: 'UnauthorizedOperation',
      });
    };
    await expect(provider.delete(nc)).rejects.toThrow('not authorized');
    const failures = (await registry.getSingleMetric(METRIC_TERMINATION_FAILURES)!.get()).values;
    expect(failures.map((v) => [v.labels, v.value])).toEqual([
      [{ zone, zone_id: net.subnets.find((s) => s.zone === zone)?.zoneID }, 1],
    ]);
  });

  it('when every spot offering is out of capacity the launch falls back to on-demand; with nothing left it is an InsufficientCapacityError', async () => {
    const { provider } = await bed();
    emu.proxy.injectCapacityError({ capacityType: 'spot', code: 'InsufficientInstanceCapacity' });
    const reqs = [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['spot', 'on-demand'])];
    const nc = await provider.create(awsNodeClaim('nc-spot', reqs));
    expect(nc.metadata.labels?.[LabelCapacityType]).toBe('on-demand');
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(2);
    emu.proxy.injectCapacityError({ capacityType: 'on-demand', code: 'VcpuLimitExceeded' });
    const err = await provider.create(awsNodeClaim('nc-none', reqs)).catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err), String(err)).toBe(true);
    expect((err as Error).message).toContain('m5.large/us-west-2');
    expect(await provider.list()).toHaveLength(1);
  });

  it("a launch sends the 60 cheapest of a NodeClaim's (up to 600) types to CreateFleet; under Strict, minValues those 60 cannot meet is insufficient capacity", async () => {
    const { provider } = await bed();
    const pool = makeNodePool('default', { requirements: [] });
    const odPrice = (t: {
      offerings: Array<{ capacityType: string; available: boolean; priceUSDPerHour: number }>;
    }) =>
      Math.min(
        ...t.offerings
          .filter((o) => o.capacityType === 'on-demand' && o.available)
          .map((o) => o.priceUSDPerHour),
      );
    // 100 non-exotic (no GPU/accelerator) x86 on-demand types, in a shuffled order: the NodeClaim lists them all
    const all = (await provider.instanceTypes(pool as never))
      .filter(
        (t) =>
          t.labels['kubernetes.io/arch'] === 'amd64' && !t.labels['karpenter.k8s.aws/instance-gpu-count'],
      )
      .filter((t) => Number.isFinite(odPrice(t)))
      .slice(0, 100);
    expect(all).toHaveLength(100);
    const names = all.map((t) => t.name).reverse();
    const cheapest60 = [...all]
      .sort((a, b) => odPrice(a) - odPrice(b) || (a.name < b.name ? -1 : 1))
      .slice(0, 60)
      .map((t) => t.name)
      .sort();
    const fleets: string[][] = [];
    const createFleet = provider.instances.createFleet.bind(provider.instances);
    provider.instances.createFleet = (req) => {
      fleets.push([
        ...new Set(
          (req.LaunchTemplateConfigs ?? []).flatMap((c) =>
            (c.Overrides ?? []).map((o) => String(o.InstanceType)),
          ),
        ),
      ]);
      return createFleet(req);
    };
    await provider.create(
      awsNodeClaim('nc-60', [inReq(LabelInstanceType, names), inReq(LabelCapacityType, ['on-demand'])]),
    );
    expect(fleets).toHaveLength(1);
    expect(fleets[0]!.sort()).toEqual(cheapest60);
    // minValues 61 on the instance type: the 60 kept cannot meet it (upstream InstanceTypes.Truncate, Strict)
    const err = await provider
      .create(
        awsNodeClaim('nc-61', [
          { ...inReq(LabelInstanceType, names), minValues: 61 },
          inReq(LabelCapacityType, ['on-demand']),
        ]),
      )
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err), String(err)).toBe(true);
    expect((err as Error).message).toBe(
      'insufficient capacity, NodeClaim "nc-61": truncating instance types based on the passed-in requirements, validating minValues, minValues requirement not met: key "node.kubernetes.io/instance-type" needs at least 61 distinct values, the remaining instance types offer 60 [c1.xlarge, c3.2xlarge, c3.4xlarge, c3.8xlarge, c3.xlarge, c4.2xlarge, c4.4xlarge, c4.8xlarge and 52 more]',
    );
    expect(fleets).toHaveLength(1);
  });

  it('RequestLimitExceeded on CreateFleet is retried with backoff', async () => {
    const { provider } = await bed();
    emu.proxy.throttle('CreateFleet', 3);
    const nc = await provider.create(awsNodeClaim('nc-throttle', [inReq(LabelInstanceType, ['m5.large'])]));
    expect(nc.status?.providerID).toBeDefined();
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(4);
  });

  it('a class that is not Ready is not launched', async () => {
    const { provider, nodeClasses, net } = await bed();
    const nc = testNodeClass('default', net);
    nc.status!.conditions = [
      {
        type: 'SubnetsReady',
        status: 'False',
        reason: 'SubnetsNotFound',
        message: 'SubnetSelector did not match any Subnets',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'NotReady',
        message: '',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ];
    nodeClasses.set('default', nc);
    const err = await provider.create(awsNodeClaim('nc-x', [])).catch((e: unknown) => e);
    expect(isNodeClassNotReadyError(err)).toBe(true);
    expect((err as Error).message).toContain(
      'SubnetsReady=False (SubnetsNotFound): SubnetSelector did not match any Subnets',
    );
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBeUndefined();
  });

  it('drift: static hash, AMI, subnet and security group, with upstream reasons', async () => {
    const { provider, nodeClasses, net } = await bed();
    const nc = await provider.create(awsNodeClaim('nc-drift', [inReq(LabelInstanceType, ['m5.large'])]));
    expect(nc.metadata.annotations?.[AnnotationEC2NodeClassHash]).toMatch(/^\d+$/);
    // upstream's instance-profile-name annotation (instanceprofile.garbagecollection keeps that profile)
    expect(nc.metadata.annotations?.[AnnotationInstanceProfile]).toBe(net.instanceProfile);
    expect(await provider.isDrifted(nc)).toBeUndefined();
    const base = nodeClasses.get('default')!;
    const withStatus = (patch: Partial<TestNetwork>) => {
      const c = testNodeClass('default', { ...net, ...patch });
      nodeClasses.set('default', c);
    };
    withStatus({ amis: [{ id: 'ami-0000000000newer', requirements: base.status!.amis as never }] });
    nodeClasses.get('default')!.status!.amis = [{ id: 'ami-0000000000newer', requirements: [] }];
    expect(await provider.isDrifted(nc)).toBe(DriftAMI);
    withStatus({ subnets: [{ id: 'subnet-other', zone: 'us-west-2a' }] });
    expect(await provider.isDrifted(nc)).toBe(DriftSubnet);
    withStatus({ securityGroups: [{ id: 'sg-other' }] });
    expect(await provider.isDrifted(nc)).toBe(DriftSecurityGroup);
    // static drift compares the class's stamped hash (the EC2NodeClass controller's hash step) with the claim's
    const changed = testNodeClass('default', net, { userData: '#!/bin/bash\necho changed' });
    nodeClasses.set('default', changed);
    expect(await provider.isDrifted(nc)).toBeUndefined(); // not stamped yet: upstream does not drift either
    const stamp = (version: string) => {
      changed.metadata.annotations = {
        [AnnotationEC2NodeClassHash]: ec2NodeClassHash(changed, provider.caBundle),
        [AnnotationEC2NodeClassHashVersion]: version,
      };
    };
    stamp('v4');
    expect(await provider.isDrifted(nc)).toBeUndefined(); // other version: re-stamped, never compared
    stamp(EC2NodeClassHashVersion);
    expect(EC2NodeClassHashVersion).toBe('v5');
    expect(nc.metadata.annotations?.[AnnotationEC2NodeClassHashVersion]).toBe('v5');
    expect(await provider.isDrifted(nc)).toBe(DriftNodeClass);
    nodeClasses.set('default', base);
    expect(await provider.isDrifted(nc)).toBeUndefined();
  });

  it('launch templates are garbage-collected when unused and deleted with their class', async () => {
    const { provider, clients, nodeClasses, net } = await bed();
    nodeClasses.set('other', testNodeClass('other', net));
    await provider.create(
      awsNodeClaim('a', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    await provider.create(
      awsNodeClaim(
        'b',
        [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])],
        'other',
      ),
    );
    const names = async () =>
      ((await clients.ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? []).length;
    expect(await names()).toBe(2);
    expect(await provider.garbageCollectLaunchTemplates()).toEqual([]);
    expect(await provider.deleteLaunchTemplates('other')).toHaveLength(1);
    expect(await names()).toBe(1);
    // A fresh provider (restart) takes the earlier process's template into its cache, as upstream's hydrateCache:
    // kept and reused (no CreateLaunchTemplate), deleted only after a TTL (1 h) without a launch.
    const fresh = awsTestProvider(emu.clientConfig, nodeClasses, shared);
    expect(await fresh.provider.garbageCollectLaunchTemplates()).toEqual([]);
    expect(await names()).toBe(1);
    const creates = emu.proxy.calls.get('ec2:CreateLaunchTemplate') ?? 0;
    expect(creates).toBeGreaterThan(0);
    await fresh.provider.create(
      awsNodeClaim('c', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    expect(emu.proxy.calls.get('ec2:CreateLaunchTemplate')).toBe(creates);
    // Another restart, launching before any garbage collection: its first launch lists the templates once and
    // reuses the existing one (no CreateLaunchTemplate answered AlreadyExists).
    const third = awsTestProvider(emu.clientConfig, nodeClasses, shared);
    const describes = emu.proxy.calls.get('ec2:DescribeLaunchTemplates') ?? 0;
    await third.provider.create(
      awsNodeClaim('d', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    await third.provider.create(
      awsNodeClaim('e', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    expect(emu.proxy.calls.get('ec2:CreateLaunchTemplate')).toBe(creates);
    expect(emu.proxy.calls.get('ec2:DescribeLaunchTemplates')).toBe(describes + 1);
    fresh.clock.advance(3599_000);
    expect(await fresh.provider.garbageCollectLaunchTemplates()).toEqual([]);
    fresh.clock.advance(1_000);
    expect(await fresh.provider.garbageCollectLaunchTemplates()).toHaveLength(1);
    expect(await names()).toBe(0);
  });

  it('instanceTypes: offerings in the class subnet zones only, API prices, the class kubelet maxPods', async () => {
    const { provider } = await bed({ kubelet: { maxPods: 20 } });
    const pool = {
      apiVersion: 'karpenter.sh/v1' as const,
      kind: 'NodePool' as const,
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            requirements: [],
          },
        },
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized' as const,
          consolidateAfter: '0s',
          budgets: [{ nodes: '10%' }],
        },
      },
    };
    const types = await provider.instanceTypes(pool);
    const m5 = types.find((t) => t.name === 'm5.large')!;
    expect(m5.capacity.pods).toBe(20);
    expect(new Set(types.flatMap((t) => t.offerings.map((o) => o.zone)))).toEqual(
      new Set(['us-west-2a', 'us-west-2b']),
    );
    expect(m5.offerings.find((o) => o.capacityType === 'on-demand')).toMatchObject({
      priceUSDPerHour: 0.096,
      priceSource: 'on-demand',
    });
    expect(m5.offerings.find((o) => o.capacityType === 'spot')?.priceSource).toBe('provider');
  });

  it('--isolated-vpc: no Pricing API calls, embedded on-demand prices; --vm-memory-overhead-percent changes memory', async () => {
    const nodeClasses = new Map<string, EC2NodeClass>();
    const t = awsTestProvider(
      emu.clientConfig,
      nodeClasses,
      shared ? { inventory: shared.inventory } : undefined,
      {
        isolatedVPC: true,
        vmMemoryOverheadPercent: 0.1,
      },
    );
    const net = await createTestNetwork(t.clients.ec2, t.clients.iam, ['us-west-2a']);
    nodeClasses.set('default', testNodeClass('default', net));
    const types = await t.provider.instanceTypeProvider.list(nodeClasses.get('default'));
    const m5 = types.find((x) => x.name === 'm5.large')!;
    expect(emu.proxy.callCount('pricing')).toBe(0);
    // us-west-2 has no embedded on-demand table: us-east-1's, as upstream's static fallback.
    expect(m5.offerings.find((o) => o.capacityType === 'on-demand')).toMatchObject({
      priceUSDPerHour: 0.096,
      priceSource: 'on-demand-fallback',
    });
    // 8192 MiB − ceil(10%) = 7372 MiB (default 7.5% gives 7577 MiB).
    expect(m5.capacity.memory).toBe(7372 * 2 ** 20);
  });

  it('concurrent gets are batched into one DescribeInstances call', async () => {
    const { provider } = await bed();
    const reqs = [inReq(LabelInstanceType, ['m5.large'])];
    const launched = await Promise.all(['b1', 'b2', 'b3'].map((n) => provider.create(awsNodeClaim(n, reqs))));
    const before = emu.proxy.calls.get('ec2:DescribeInstances') ?? 0;
    const got = await Promise.all(launched.map((nc) => provider.get(nc.status!.providerID!)));
    expect(got.map((g) => g.metadata.name).sort()).toEqual(['b1', 'b2', 'b3']);
    expect((emu.proxy.calls.get('ec2:DescribeInstances') ?? 0) - before).toBe(1);
  });

  it('zone requirement restricts the fleet to that zone; delete terminates it and get then says not found', async () => {
    const { provider } = await bed();
    const nc = await provider.create(
      awsNodeClaim('z', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelTopologyZone, ['us-west-2b'])]),
    );
    expect(nc.metadata.labels?.[LabelTopologyZone]).toBe('us-west-2b');
    const got = await provider.get(nc.status!.providerID!);
    expect(got.metadata.name).toBe('z');
    expect(got.metadata.labels?.[LabelInstanceType]).toBe('m5.large');
    await provider.delete(nc);
    await expect(provider.get(nc.status!.providerID!)).rejects.toMatchObject({ code: 'NodeClaimNotFound' });
  });

  it('a NodeClaim annotated karpenter.sh/price-overlay-applied launches with prioritized / capacity-optimized-prioritized and Priority = price', async () => {
    const { provider, clients } = await bed();
    const sent: CreateFleetCommandInput[] = [];
    const send = clients.ec2.send.bind(clients.ec2);
    vi.spyOn(clients.ec2, 'send').mockImplementation(((cmd: { input: unknown }) => {
      if (cmd instanceof CreateFleetCommand) sent.push(cmd.input as CreateFleetCommandInput);
      return send(cmd as never);
    }) as never);
    const annotated = (name: string, ct: string) => {
      const nc = awsNodeClaim(name, [
        inReq(LabelInstanceType, ['m5.xlarge', 'm5.large']),
        inReq(LabelCapacityType, [ct]),
      ]);
      nc.metadata.annotations = {
        ...(nc.metadata.annotations ?? {}),
        'karpenter.sh/price-overlay-applied': 'true',
      };
      return nc;
    };
    const od = await provider.create(annotated('ov-od', 'on-demand'));
    expect(od.metadata.labels?.[LabelInstanceType]).toBe('m5.large');
    await provider.create(annotated('ov-spot', 'spot'));
    await provider.create(
      awsNodeClaim('plain', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    expect(
      sent.map((r) => r.OnDemandOptions?.AllocationStrategy ?? r.SpotOptions?.AllocationStrategy),
    ).toEqual(['prioritized', 'capacity-optimized-prioritized', 'lowest-price']);
    const overrides = sent[0]!.LaunchTemplateConfigs!.flatMap((c) => c.Overrides ?? []);
    // us-east-1 on-demand price table: m5.large $0.096, m5.xlarge $0.192 (lower Priority is tried first)
    expect([...new Set(overrides.map((o) => `${o.InstanceType}=${o.Priority}`))].sort()).toEqual([
      'm5.large=0.096',
      'm5.xlarge=0.192',
    ]);
    expect(
      sent[2]!
        .LaunchTemplateConfigs!.flatMap((c) => c.Overrides ?? [])
        .every((o) => o.Priority === undefined),
    ).toBe(true);
  });

  it('preview instance type (upstream aws v1.14 PR #9249): with a NodeOverlay price of $0.05 an unpriced type listed by EC2 is chosen over m5.large ($0.096) and launched, Priority 0.05 in a prioritized fleet', async () => {
    const { net } = await bed();
    // a made-up preview type: m5.large's spec under a name that no price table (Pricing API, embedded) has
    const preview = 'm9p.large';
    const m5 = getInstanceTypeSpec('m5.large')!;
    const inv = shared!.inventory;
    const inventory: InstanceTypeInventory = {
      ...inv,
      specs: new Map([...inv.specs, [preview, { ...m5, name: preview, family: 'm9p', generation: '9' }]]),
      zones: new Map([...inv.zones, [preview, ['us-west-2a', 'us-west-2b']]]),
    };
    const nodeClasses = new Map([['default', testNodeClass('default', net)]]);
    const priced = (prices: ReadonlyMap<string, number>) =>
      awsTestProvider(emu.clientConfig, nodeClasses, { pricing: shared!.pricing, inventory }, {}, undefined, {
        unpricedTypeOverlayPrices: () => prices,
      });
    const pool = makeNodePool('default', { requirements: [] });
    const odOfferings = async (p: ReturnType<typeof priced>['provider']) =>
      (await p.instanceTypes(pool as never))
        .find((t) => t.name === preview)!
        .offerings.filter((o) => o.capacityType === 'on-demand')
        .map((o) => [o.zone, o.priceUSDPerHour, o.priceSource]);

    // without an overlay price the preview type has no offering
    expect(await odOfferings(priced(new Map()).provider)).toEqual([]);

    const { provider, clients } = priced(new Map([[preview, 0.05]]));
    expect(await odOfferings(provider)).toEqual([
      ['us-west-2a', 0.05, 'node-overlay'],
      ['us-west-2b', 0.05, 'node-overlay'],
    ]);
    const sent: CreateFleetCommandInput[] = [];
    const send = clients.ec2.send.bind(clients.ec2);
    vi.spyOn(clients.ec2, 'send').mockImplementation(((cmd: { input: unknown }) => {
      if (cmd instanceof CreateFleetCommand) sent.push(cmd.input as CreateFleetCommandInput);
      return send(cmd as never);
    }) as never);
    const nc = awsNodeClaim('preview', [
      inReq(LabelInstanceType, [preview, 'm5.large']),
      inReq(LabelCapacityType, ['on-demand']),
    ]);
    // the provisioner annotates a NodeClaim whose options carry a NodeOverlay price (priceSource node-overlay)
    nc.metadata.annotations = { 'karpenter.sh/price-overlay-applied': 'true' };
    const created = await provider.create(nc);
    expect(created.metadata.labels?.[LabelInstanceType]).toBe(preview);
    expect(sent.map((r) => r.OnDemandOptions?.AllocationStrategy)).toEqual(['prioritized']);
    const overrides = sent[0]!.LaunchTemplateConfigs!.flatMap((c) => c.Overrides ?? []);
    expect([...new Set(overrides.map((o) => `${o.InstanceType}=${o.Priority}`))].sort()).toEqual([
      'm5.large=0.096',
      `${preview}=0.05`,
    ]);
  });
});
