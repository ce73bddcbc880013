/**
 * Builders shared by the aws provider's tests, its conformance run and the benchmark (not used by production
 * code): a network in the emulator (VPC, one subnet per zone, a security group, an instance profile), an
 * EC2NodeClass whose `status` points at it as the EC2NodeClass controller would write it, NodeClaims, and a provider.
 */
import {
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeImagesCommand,
  type EC2Client,
  type Image,
} from '@aws-sdk/client-ec2';
import { CreateInstanceProfileCommand, type IAMClient } from '@aws-sdk/client-iam';
import type { Registry } from 'prom-client';
import type { EC2NodeClass, NodeClaim, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import { LabelArch, LabelNodePool } from '../../apis/labels.ts';
import { FakeClock } from '../../kube/clock.ts';
import { type AwsClientOptions, createAwsClients } from './clients.ts';
import type { AMIStatus, SecurityGroupStatus, SubnetStatus } from './nodeclass/types.ts';
import { AwsCloudProvider, type AwsCloudProviderDeps, AwsGroup, EC2NodeClassKind } from './provider.ts';
import { type AwsSettings, awsSettings } from './settings.ts';

const imagesByEndpoint = new Map<string, Image[]>();

/** What {@link createTestNetwork} made. */
export interface TestNetwork {
  vpcId: string;
  subnets: SubnetStatus[];
  securityGroups: SecurityGroupStatus[];
  amis: AMIStatus[];
  instanceProfile: string;
}

/**
 * Creates a VPC with one /20 subnet per zone in `zones`, a security group and an instance profile, and picks moto's
 * newest Amazon Linux image per architecture as the class's AMIs (standard variant requirements).
 */
export async function createTestNetwork(
  ec2: EC2Client,
  iam: IAMClient,
  zones: readonly string[],
  clusterName = 'test-cluster',
): Promise<TestNetwork> {
  const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
  const subnets: SubnetStatus[] = [];
  for (const [i, zone] of zones.entries()) {
    const s = await ec2.send(
      new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: `10.0.${i * 16}.0/20`, AvailabilityZone: zone }),
    );
    subnets.push({
      id: s.Subnet!.SubnetId!,
      zone,
      ...(s.Subnet!.AvailabilityZoneId ? { zoneID: s.Subnet!.AvailabilityZoneId } : {}),
    });
  }
  const sg = await ec2.send(
    new CreateSecurityGroupCommand({ GroupName: `${clusterName}-nodes`, Description: 'nodes', VpcId: vpcId }),
  );
  const profile = `${clusterName}_nodes`;
  await iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: profile }));
  // moto's public images survive a reset: describe them once per client.
  const ep = ec2.config.endpoint ? await ec2.config.endpoint() : undefined;
  const endpoint = ep ? `${ep.hostname}:${ep.port ?? ''}` : 'default';
  let images = imagesByEndpoint.get(endpoint);
  if (!images) {
    images = (await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images ?? [];
    imagesByEndpoint.set(endpoint, images);
  }
  const pick = (arch: string) =>
    images
      .filter((i) => i.Architecture === arch && (i.Name ?? '').startsWith('al2023-ami-'))
      .sort((a, b) => ((a.Name ?? '') < (b.Name ?? '') ? 1 : -1))[0];
  const amis: AMIStatus[] = [];
  for (const [arch, kube] of [
    ['x86_64', 'amd64'],
    ['arm64', 'arm64'],
  ] as const) {
    const img = pick(arch);
    if (!img?.ImageId) continue;
    amis.push({
      id: img.ImageId,
      ...(img.Name ? { name: img.Name } : {}),
      requirements: [{ key: LabelArch, operator: 'In', values: [kube] }],
    });
  }
  return {
    vpcId,
    subnets,
    securityGroups: [{ id: sg.GroupId!, name: `${clusterName}-nodes` }],
    amis,
    instanceProfile: profile,
  };
}

/** A Ready EC2NodeClass named `name` whose status is `net` (AL2023 alias). */
export function testNodeClass(
  name: string,
  net: TestNetwork,
  spec: Partial<EC2NodeClass['spec']> = {},
): EC2NodeClass {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name, uid: `uid-${name}` },
    spec: {
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'test-cluster' } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'test-cluster' } }],
      role: 'KarpenterNodeRole',
      ...spec,
    },
    status: {
      subnets: net.subnets,
      securityGroups: net.securityGroups,
      amis: net.amis,
      instanceProfile: net.instanceProfile,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Ready',
          message: '',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  };
}

/** A NodeClaim of NodePool `default` referencing EC2NodeClass `nodeClass`. */
export function awsNodeClaim(
  name: string,
  requirements: NodeSelectorRequirementWithMinValues[],
  nodeClass = 'default',
): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { [LabelNodePool]: 'default' } },
    spec: { nodeClassRef: { group: AwsGroup, kind: EC2NodeClassKind, name: nodeClass }, requirements },
  };
}

/**
 * A provider against an emulator endpoint, on a FakeClock, with a NodeClass registry; `registry`: the Prometheus
 * registry of its instance metrics (default a private one); `extra`: the NodeOverlay prices of unpriced types.
 */
export function awsTestProvider(
  client: AwsClientOptions & { region: string },
  nodeClasses: Map<string, EC2NodeClass>,
  shared?: AwsCloudProviderDeps['shared'],
  settings: Partial<AwsSettings> = {},
  registry?: Registry,
  extra: Pick<AwsCloudProviderDeps, 'unpricedTypeOverlayPrices'> = {},
) {
  const clients = createAwsClients(client);
  const clock = new FakeClock();
  const provider = new AwsCloudProvider({
    clients,
    settings: awsSettings({
      clusterName: 'test-cluster',
      clusterEndpoint: 'https://test-cluster.example.com',
      clusterCABundle: 'Y2EtYnVuZGxlCg==',
      region: client.region,
      ...settings,
    }),
    clock,
    clusterCIDR: '10.100.0.0/16',
    kubeDNSIP: '10.100.0.10',
    nodeClass: (n) => nodeClasses.get(n),
    ...(shared ? { shared } : {}),
    ...(registry ? { registry } : {}),
    ...extra,
  });
  return { provider, clients, clock };
}

/** What {@link awsProviderBeds} gives per call: a provider, its clients and clock, the network and the class registry. */
export type AwsProviderBed = ReturnType<typeof awsTestProvider> & {
  net: TestNetwork;
  nodeClasses: Map<string, EC2NodeClass>;
};

/**
 * One test file's provider beds against an emulator (`client()` is read per call, e.g. the file's emulator config).
 * Prices and instance types do not depend on the emulator's state, so they are fetched by the first bed and shared
 * by the later ones. Each call builds a provider over a fresh network in `zones` with the class `default` of `spec`.
 */
export function awsProviderBeds(
  client: () => AwsClientOptions & { region: string },
): (zones: string[], spec?: Partial<EC2NodeClass['spec']>) => Promise<AwsProviderBed> {
  let shared: AwsCloudProviderDeps['shared'] | undefined;
  return async (zones, spec = {}) => {
    const nodeClasses = new Map<string, EC2NodeClass>();
    const t = awsTestProvider(client(), nodeClasses, shared);
    shared ??= {
      pricing: t.provider.pricing,
      inventory: await t.provider.instanceTypeProvider.getInventory(),
    };
    const net = await createTestNetwork(t.clients.ec2, t.clients.iam, zones);
    nodeClasses.set('default', testNodeClass('default', net, spec));
    return { ...t, net, nodeClasses };
  };
}
