import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { Batcher } from './batcher.ts';
import {
  blockDeviceMappings,
  type LaunchTemplateOptions,
  launchTemplateName,
  metadataOptions,
  templateNetworkInterfaces,
} from './launchtemplates.ts';

function nodeClass(spec: Partial<EC2NodeClass['spec']> = {}): EC2NodeClass {
  return { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass', metadata: { name: 'c' }, spec };
}

const opts: LaunchTemplateOptions = {
  clusterName: 'test-cluster',
  nodeClassName: 'default',
  amiID: 'ami-1',
  userData: 'x',
  securityGroupIDs: ['sg-1'],
  instanceProfile: 'p',
  blockDeviceMappings: [],
  metadataOptions: metadataOptions(nodeClass()),
  tags: {},
};

describe('launch template options', () => {
  it('names are karpenter.k8s.aws/<64-bit hash>, stable for equal options and different otherwise', () => {
    const a = launchTemplateName(opts);
    expect(a).toMatch(/^karpenter\.k8s\.aws\/\d+$/);
    expect(launchTemplateName({ ...opts, tags: {} })).toBe(a);
    expect(launchTemplateName({ ...opts, amiID: 'ami-2' })).not.toBe(a);
    expect(launchTemplateName({ ...opts, userData: 'y' })).not.toBe(a);
  });

  it('block devices: family defaults, or the class mappings in GiB with gp3/encrypted defaults', () => {
    expect(blockDeviceMappings(nodeClass(), 'AL2023')).toEqual([
      {
        DeviceName: '/dev/xvda',
        Ebs: { VolumeSize: 20, VolumeType: 'gp3', Encrypted: true, DeleteOnTermination: true },
      },
    ]);
    expect(
      blockDeviceMappings(nodeClass(), 'Bottlerocket').map((b) => [b.DeviceName, b.Ebs?.VolumeSize]),
    ).toEqual([
      ['/dev/xvda', 4],
      ['/dev/xvdb', 20],
    ]);
    expect(blockDeviceMappings(nodeClass(), 'Custom')).toEqual([]);
    const custom = nodeClass({
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvda',
          rootVolume: true,
          ebs: { volumeSize: '100Gi', volumeType: 'io2', iops: 3000 } as never,
        },
      ],
    });
    expect(blockDeviceMappings(custom, 'AL2023')).toEqual([
      {
        DeviceName: '/dev/xvda',
        Ebs: { VolumeSize: 100, VolumeType: 'io2', Encrypted: true, DeleteOnTermination: true, Iops: 3000 },
      },
    ]);
    expect(() =>
      blockDeviceMappings(nodeClass({ blockDeviceMappings: [{ ebs: { volumeSize: 'lots' } }] }), 'AL2023'),
    ).toThrow(
      'EC2NodeClass c spec.blockDeviceMappings[0].ebs.volumeSize "lots" is not a quantity (e.g. "20Gi")',
    );
  });

  it('block devices: every ebs field of a class mapping reaches the template (kms key, snapshot, throughput, no encryption, kept on termination)', () => {
    const c = nodeClass({
      blockDeviceMappings: [
        {
          deviceName: '/dev/xvdb',
          ebs: {
            volumeSize: '1Ti',
            volumeType: 'gp3',
            iops: 6000,
            throughput: 250,
            kmsKeyID: 'arn:aws:kms:us-west-2:111122223333:key/k-1',
            snapshotID: 'snap-0123',
            encrypted: false,
            deleteOnTermination: false,
          } as never,
        },
      ],
    });
    expect(blockDeviceMappings(c, 'AL2023')).toEqual([
      {
        DeviceName: '/dev/xvdb',
        Ebs: {
          VolumeSize: 1024,
          VolumeType: 'gp3',
          Encrypted: false,
          DeleteOnTermination: false,
          Iops: 6000,
          Throughput: 250,
          KmsKeyId: 'arn:aws:kms:us-west-2:111122223333:key/k-1',
          SnapshotId: 'snap-0123',
        },
      },
    ]);
  });

  it('IMDS options default to upstream (tokens required, hop limit 1)', () => {
    expect(metadataOptions(nodeClass())).toEqual({
      HttpEndpoint: 'enabled',
      HttpProtocolIpv6: 'disabled',
      HttpPutResponseHopLimit: 1,
      HttpTokens: 'required',
      InstanceMetadataTags: 'disabled',
    });
    expect(
      metadataOptions(nodeClass({ metadataOptions: { httpPutResponseHopLimit: 2, httpTokens: 'optional' } })),
    ).toMatchObject({
      HttpPutResponseHopLimit: 2,
      HttpTokens: 'optional',
    });
  });
});

describe('Batcher', () => {
  it('merges concurrent requests with the same key into one call and keeps results in order', async () => {
    const calls: string[][] = [];
    const b = new Batcher<string, string>({
      key: (i) => i[0]!,
      exec: async (inputs) => {
        calls.push(inputs);
        return inputs.map((i) => (i === 'a-bad' ? new Error('bad') : i.toUpperCase()));
      },
      idleMs: 5,
      maxMs: 1000,
      maxItems: 100,
    });
    const results = await Promise.allSettled(['a1', 'a2', 'b1', 'a-bad'].map((i) => b.add(i)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'A1',
      'A2',
      'B1',
      'bad',
    ]);
    expect(calls.sort()).toEqual([['a1', 'a2', 'a-bad'], ['b1']]);
    expect(b.batches).toBe(2);
  });

  it('sends a full batch at once', async () => {
    let n = 0;
    const b = new Batcher<number, number>({
      key: () => 'k',
      exec: async (xs) => {
        n++;
        return xs;
      },
      idleMs: 60_000,
      maxMs: 60_000,
      maxItems: 2,
    });
    expect(await Promise.all([b.add(1), b.add(2)])).toEqual([1, 2]);
    expect(n).toBe(1);
  });
});

describe('templateNetworkInterfaces (upstream v1.14.1 generateNetworkInterfaces)', () => {
  it('efaCount n: one efa interface per network card 0..n-1, device index 0 then 1, the security groups on each', () => {
    expect(
      templateNetworkInterfaces({ ...opts, efaCount: 3, ipPrefixCount: { count: 2, ipv6: false } }),
    ).toEqual(
      [0, 1, 2].map((i) => ({
        NetworkCardIndex: i,
        DeviceIndex: i === 0 ? 0 : 1,
        InterfaceType: 'efa',
        Groups: ['sg-1'],
        Ipv4PrefixCount: 2,
      })),
    );
    expect(launchTemplateName({ ...opts, efaCount: 1 })).not.toBe(launchTemplateName(opts));
  });

  it('spec.networkInterfaces: each entry as given; efa-only ones without IPs, public IP or connection tracking', () => {
    const nis = templateNetworkInterfaces({
      ...opts,
      efaCount: 4, // the configured list wins
      associatePublicIPAddress: false,
      connectionTracking: { UdpTimeout: 30 },
      ipPrefixCount: { count: 1, ipv6: true },
      ipv6: true,
      networkInterfaces: [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: 'efa-only' },
      ],
    });
    expect(nis).toEqual([
      {
        NetworkCardIndex: 0,
        DeviceIndex: 0,
        InterfaceType: 'interface',
        Groups: ['sg-1'],
        Ipv6PrefixCount: 1,
        Ipv6AddressCount: 1,
        AssociatePublicIpAddress: false,
        PrimaryIpv6: true,
        ConnectionTrackingSpecification: { UdpTimeout: 30 },
      },
      { NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: 'efa-only', Groups: ['sg-1'] },
    ]);
  });

  it('neither: the primary interface only when it carries something, else none (SecurityGroupIds instead)', () => {
    expect(templateNetworkInterfaces(opts)).toBeUndefined();
    expect(templateNetworkInterfaces({ ...opts, associatePublicIPAddress: true })).toEqual([
      { DeviceIndex: 0, Groups: ['sg-1'], AssociatePublicIpAddress: true },
    ]);
  });

  it('IPv6 cluster, single NIC: the primary interface always carries PrimaryIpv6 and one IPv6 address (upstream last case)', () => {
    expect(templateNetworkInterfaces({ ...opts, ipv6: true })).toEqual([
      { DeviceIndex: 0, Groups: ['sg-1'], PrimaryIpv6: true, Ipv6AddressCount: 1 },
    ]);
    expect(
      templateNetworkInterfaces({
        ...opts,
        securityGroupIDs: ['sg-0a1b2c3d4e5f60718', 'sg-0f9e8d7c6b5a40312'],
        associatePublicIPAddress: false,
        ipPrefixCount: { count: 1, ipv6: true },
        connectionTracking: { TcpEstablishedTimeout: 3600 },
        ipv6: true,
      }),
    ).toEqual([
      {
        DeviceIndex: 0,
        Groups: ['sg-0a1b2c3d4e5f60718', 'sg-0f9e8d7c6b5a40312'],
        AssociatePublicIpAddress: false,
        Ipv6PrefixCount: 1,
        PrimaryIpv6: true,
        Ipv6AddressCount: 1,
        ConnectionTrackingSpecification: { TcpEstablishedTimeout: 3600 },
      },
    ]);
    // IPv4 templates are unchanged: no interface, and the same name as before.
    expect(templateNetworkInterfaces({ ...opts, ipPrefixCount: { count: 2, ipv6: false } })).toEqual([
      { DeviceIndex: 0, Groups: ['sg-1'], Ipv4PrefixCount: 2 },
    ]);
    expect(launchTemplateName({ ...opts, ipv6: true })).not.toBe(launchTemplateName(opts));
  });
});
