/**
 * EC2NodeClass launch fields against moto behind the proxy: each field's effect read back from moto's launch
 * template (DescribeLaunchTemplateVersions) and from the CreateFleet request the provider sent (upstream
 * aws/karpenter-provider-aws v1.14.1 `pkg/providers/launchtemplate/launchtemplate.go`,
 * `pkg/providers/instance/instance.go`).
 */
import {
  type CreateFleetCommandInput,
  CreateSnapshotCommand,
  CreateVolumeCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  type EC2Client,
  type Instance,
  type ResponseLaunchTemplateData,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import {
  AnnotationNodeClaimMinValuesRelaxed,
  LabelCapacityType,
  LabelInstanceType,
} from '../../apis/labels.ts';
import { awsNodeClaim, awsProviderBeds, testNodeClass } from './testing.ts';

// moto answers slowly on a loaded machine (DescribeInstanceTypes is 5.5 MB): slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

const reqs = [
  { key: LabelInstanceType, operator: 'In' as const, values: ['m5.large'] },
  { key: LabelCapacityType, operator: 'In' as const, values: ['on-demand'] },
];

const beds = awsProviderBeds(() => emu.clientConfig);

/** A provider over a fresh network with one class `default` of `spec`; records every CreateFleet input. */
async function bed(spec: (net: { snapshot: string }) => Partial<EC2NodeClass['spec']>) {
  const t = await beds(['us-west-2a']);
  const { net, nodeClasses } = t;
  const vol = await t.clients.ec2.send(new CreateVolumeCommand({ AvailabilityZone: 'us-west-2a', Size: 8 }));
  const snap = await t.clients.ec2.send(new CreateSnapshotCommand({ VolumeId: vol.VolumeId! }));
  nodeClasses.set('default', testNodeClass('default', net, spec({ snapshot: snap.SnapshotId! })));
  const fleets: CreateFleetCommandInput[] = [];
  t.clients.ec2.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'CreateFleetCommand') fleets.push(structuredClone(args.input) as never);
      return next(args);
    },
    { step: 'initialize', name: 'recordCreateFleet' },
  );
  return { ...t, fleets };
}

/** The latest version's data of every launch template in moto. */
async function templateData(ec2: EC2Client): Promise<ResponseLaunchTemplateData[]> {
  const lts = (await ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates ?? [];
  return Promise.all(
    lts.map(
      async (lt) =>
        (
          await ec2.send(
            new DescribeLaunchTemplateVersionsCommand({
              LaunchTemplateId: lt.LaunchTemplateId!,
              Versions: ['$Latest'],
            }),
          )
        ).LaunchTemplateVersions![0]!.LaunchTemplateData!,
    ),
  );
}

/** The instance of `providerID` as moto (through the proxy) describes it. */
async function instance(ec2: EC2Client, providerID: string): Promise<Instance> {
  const id = providerID.split('/').pop()!;
  return (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations![0]!
    .Instances![0]!;
}

describe('EC2NodeClass launch fields (moto + proxy)', () => {
  it('defaults: IMDSv2 required, hop limit 1, no detailed monitoring, security groups on the template, no fleet Context', async () => {
    const { provider, clients, net, fleets, nodeClasses } = await bed(() => ({}));
    const nc = await provider.create(awsNodeClaim('nc-defaults', reqs));
    const [data, ...more] = await templateData(clients.ec2);
    expect(more).toEqual([]);
    expect(data!.MetadataOptions).toEqual({
      HttpEndpoint: 'enabled',
      HttpProtocolIpv6: 'disabled',
      HttpPutResponseHopLimit: 1,
      HttpTokens: 'required',
      InstanceMetadataTags: 'disabled',
    });
    expect(data!.Monitoring).toEqual({ Enabled: false });
    expect(data!.SecurityGroupIds).toEqual([net.securityGroups[0]!.id]);
    expect(data!.NetworkInterfaces).toBeUndefined();
    expect(data!.CpuOptions).toBeUndefined();
    expect(data!.BlockDeviceMappings).toEqual([
      {
        DeviceName: '/dev/xvda',
        Ebs: { VolumeSize: 20, VolumeType: 'gp3', Encrypted: true, DeleteOnTermination: true },
      },
    ]);
    expect(fleets).toHaveLength(1);
    expect(fleets[0]!.Context).toBeUndefined();
    const types = (await provider.instanceTypeProvider.list(nodeClasses.get('default'))).map((t) => t.name);
    expect(types).toEqual(expect.arrayContaining(['m4.large', 'm5.large']));
    const inst = await instance(clients.ec2, nc.status!.providerID!);
    expect(inst.Monitoring).toEqual({ State: 'disabled' });
    expect(inst.MetadataOptions).toMatchObject({
      HttpTokens: 'required',
      HttpPutResponseHopLimit: 1,
      HttpEndpoint: 'enabled',
      HttpProtocolIpv6: 'disabled',
      InstanceMetadataTags: 'disabled',
    });
  });

  it('every launch field reaches the template and the fleet; a minValues-relaxed NodeClaim launches without Context', async () => {
    const { provider, clients, net, fleets, nodeClasses } = await bed(({ snapshot }) => ({
      metadataOptions: {
        httpEndpoint: 'enabled',
        httpProtocolIPv6: 'enabled',
        httpPutResponseHopLimit: 3,
        httpTokens: 'optional',
      },
      detailedMonitoring: true,
      associatePublicIPAddress: false,
      ipPrefixCount: 2,
      connectionTracking: { tcpEstablishedTimeout: 3600, udpStreamTimeout: 120, udpTimeout: 45 },
      cpuOptions: { nestedVirtualization: 'disabled' },
      context: 'ctx-0123',
      blockDeviceMappings: [
        { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '40Gi', volumeType: 'gp3' } },
        {
          deviceName: '/dev/xvdb',
          ebs: { snapshotID: snapshot, volumeInitializationRate: 200, volumeType: 'gp3' } as never,
        },
      ],
    }));
    // connectionTracking: Nitro types only (a Xen m4.large is not offered)
    const types = (await provider.instanceTypeProvider.list(nodeClasses.get('default'))).map((t) => t.name);
    expect(types).toContain('m5.large');
    expect(types).not.toContain('m4.large');
    const nc = await provider.create(awsNodeClaim('nc-fields', reqs));
    expect(nc.status?.providerID).toMatch(/^aws:\/\/\/us-west-2a\/i-/);
    const [data, ...more] = await templateData(clients.ec2);
    expect(more).toEqual([]);
    expect(data!.MetadataOptions).toEqual({
      HttpEndpoint: 'enabled',
      HttpProtocolIpv6: 'enabled',
      HttpPutResponseHopLimit: 3,
      HttpTokens: 'optional',
      InstanceMetadataTags: 'disabled',
    });
    expect(data!.Monitoring).toEqual({ Enabled: true });
    expect(data!.CpuOptions).toEqual({ NestedVirtualization: 'disabled' });
    expect(data!.SecurityGroupIds).toBeUndefined();
    expect(data!.NetworkInterfaces).toEqual([
      {
        DeviceIndex: 0,
        Groups: [net.securityGroups[0]!.id],
        AssociatePublicIpAddress: false,
        Ipv4PrefixCount: 2,
        ConnectionTrackingSpecification: {
          TcpEstablishedTimeout: 3600,
          UdpStreamTimeout: 120,
          UdpTimeout: 45,
        },
      },
    ]);
    expect(data!.BlockDeviceMappings).toEqual([
      {
        DeviceName: '/dev/xvda',
        Ebs: { VolumeSize: 40, VolumeType: 'gp3', Encrypted: true, DeleteOnTermination: true },
      },
      {
        DeviceName: '/dev/xvdb',
        Ebs: {
          VolumeType: 'gp3',
          Encrypted: true,
          DeleteOnTermination: true,
          SnapshotId: expect.stringMatching(/^snap-/),
          VolumeInitializationRate: 200,
        },
      },
    ]);
    expect(fleets.map((f) => f.Context)).toEqual(['ctx-0123']);
    const relaxed = awsNodeClaim('nc-relaxed', reqs);
    relaxed.metadata.annotations = { [AnnotationNodeClaimMinValuesRelaxed]: 'true' };
    await provider.create(relaxed);
    expect(fleets.map((f) => f.Context)).toEqual(['ctx-0123', undefined]);
    // Per launched NodeClaim: one CreateFleet; the template is created once and reused.
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(2);
    expect(emu.proxy.calls.get('ec2:CreateLaunchTemplate')).toBe(1);
    // The instance (moto + the proxy's template metadata options and monitoring) runs with them.
    const inst = await instance(clients.ec2, nc.status!.providerID!);
    expect(inst.Monitoring).toEqual({ State: 'enabled' });
    expect(inst.MetadataOptions).toMatchObject({
      HttpTokens: 'optional',
      HttpPutResponseHopLimit: 3,
      HttpEndpoint: 'enabled',
      HttpProtocolIpv6: 'enabled',
      InstanceMetadataTags: 'disabled',
    });
  });
});
