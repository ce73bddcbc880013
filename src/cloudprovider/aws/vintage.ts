/**
 * Vintage (non-CAPI) clusters: an EC2NodeClass (and a NodePool) derived from an existing Auto Scaling group or
 * launch template — what platform teams do by hand today ("scale a node pool to one node and copy its settings
 * into Karpenter"), without launching the node. Read from the launch template version the group uses:
 * AMI (`ImageId` → `amiSelectorTerms[{id}]`, `amiFamily: Custom` so the template's user data is used unchanged),
 * security groups (`SecurityGroupIds`, else the first network interface's `Groups`), the instance profile (name, or
 * the last segment of its ARN), user data (base64-decoded), block devices, IMDS options, detailed monitoring and
 * instance tags; subnets from the group's `VPCZoneIdentifier` (else the template's network interface subnet);
 * instance types (template `InstanceType`, mixed-instances overrides) and capacity types (spot when the group's
 * on-demand share above base is below 100%) become NodePool requirements. Every gap is reported.
 * Used by `capenter convert --from-asg NAME | --from-launch-template NAME`.
 */
import {
  AutoScalingClient,
  type AutoScalingClientConfig,
  DescribeAutoScalingGroupsCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  DescribeLaunchTemplateVersionsCommand,
  EC2Client,
  type EC2ClientConfig,
  type ResponseLaunchTemplateData,
} from '@aws-sdk/client-ec2';
import type { KubeObject } from '../../apis/core.ts';
import type { EC2NodeClass, NodePool } from '../../apis/karpenter.ts';

/** What to import from. */
export type VintageSource = { autoScalingGroup: string } | { launchTemplate: string; version?: string };

/** Result of {@link importVintage}. */
export interface VintageImport {
  ec2NodeClass: EC2NodeClass;
  nodePool: NodePool;
  /** What could not be derived and must be set by hand. */
  notes: string[];
}

/** Thrown when the group or template does not exist. */
export class VintageSourceError extends Error {
  readonly code = 'VintageSourceNotFound' as const;
}

const RestrictedTag = (k: string): boolean =>
  k.startsWith('kubernetes.io/cluster/') ||
  k.startsWith('aws:') ||
  [
    'karpenter.sh/nodepool',
    'karpenter.sh/nodeclaim',
    'karpenter.k8s.aws/ec2nodeclass',
    'eks:eks-cluster-name',
  ].includes(k);

/** Maps launch template data (+ the group's subnets, instance types, spot share) to the v1 objects. Pure. */
export function vintageObjects(
  name: string,
  lt: ResponseLaunchTemplateData,
  group: { subnets?: string[]; instanceTypes?: string[]; spot?: boolean } = {},
): VintageImport {
  const notes: string[] = [];
  const spec: EC2NodeClass['spec'] = {};
  if (lt.ImageId) {
    spec.amiSelectorTerms = [{ id: lt.ImageId }];
    spec.amiFamily = 'Custom';
  } else notes.push('the launch template has no ImageId: set spec.amiSelectorTerms');
  const nic = lt.NetworkInterfaces?.[0];
  const sgs = lt.SecurityGroupIds?.length ? lt.SecurityGroupIds : (nic?.Groups ?? []);
  if (sgs.length > 0) spec.securityGroupSelectorTerms = sgs.map((id) => ({ id }));
  else notes.push('no security groups in the launch template: set spec.securityGroupSelectorTerms');
  const subnets = group.subnets?.length ? group.subnets : nic?.SubnetId ? [nic.SubnetId] : [];
  if (subnets.length > 0) spec.subnetSelectorTerms = subnets.map((id) => ({ id }));
  else
    notes.push('no subnets (no Auto Scaling group, no subnet in the template): set spec.subnetSelectorTerms');
  const profile = lt.IamInstanceProfile?.Name ?? lt.IamInstanceProfile?.Arn?.split('/').pop();
  if (profile) spec.instanceProfile = profile;
  else notes.push('no instance profile in the launch template: set spec.role or spec.instanceProfile');
  if (lt.UserData) spec.userData = Buffer.from(lt.UserData, 'base64').toString('utf8');
  else
    notes.push(
      'no user data in the launch template: with amiFamily Custom nodes will not join; set spec.userData',
    );
  const bdms = (lt.BlockDeviceMappings ?? []).filter((b) => b.Ebs && b.DeviceName);
  if (bdms.length > 0)
    spec.blockDeviceMappings = bdms.map((b) => ({
      deviceName: b.DeviceName as string,
      ebs: {
        ...(b.Ebs?.VolumeSize ? { volumeSize: `${b.Ebs.VolumeSize}Gi` } : {}),
        ...(b.Ebs?.VolumeType ? { volumeType: b.Ebs.VolumeType } : {}),
        ...(b.Ebs?.Iops ? { iops: b.Ebs.Iops } : {}),
        ...(b.Ebs?.Throughput ? { throughput: b.Ebs.Throughput } : {}),
        ...(b.Ebs?.Encrypted !== undefined ? { encrypted: b.Ebs.Encrypted } : {}),
        ...(b.Ebs?.KmsKeyId ? { kmsKeyID: b.Ebs.KmsKeyId } : {}),
        ...(b.Ebs?.DeleteOnTermination !== undefined
          ? { deleteOnTermination: b.Ebs.DeleteOnTermination }
          : {}),
        ...(b.Ebs?.SnapshotId ? { snapshotID: b.Ebs.SnapshotId } : {}),
      },
    })) as never;
  const m = lt.MetadataOptions;
  if (m)
    spec.metadataOptions = {
      ...(m.HttpEndpoint ? { httpEndpoint: m.HttpEndpoint as 'enabled' | 'disabled' } : {}),
      ...(m.HttpProtocolIpv6 ? { httpProtocolIPv6: m.HttpProtocolIpv6 as 'enabled' | 'disabled' } : {}),
      ...(m.HttpPutResponseHopLimit ? { httpPutResponseHopLimit: m.HttpPutResponseHopLimit } : {}),
      ...(m.HttpTokens ? { httpTokens: m.HttpTokens as 'required' | 'optional' } : {}),
    };
  if (lt.Monitoring?.Enabled !== undefined) spec.detailedMonitoring = lt.Monitoring.Enabled;
  const tags: Record<string, string> = {};
  for (const ts of lt.TagSpecifications ?? [])
    if (ts.ResourceType === 'instance')
      for (const t of ts.Tags ?? []) if (t.Key && !RestrictedTag(t.Key)) tags[t.Key] = t.Value ?? '';
  if (Object.keys(tags).length > 0) spec.tags = tags;
  const types = [
    ...new Set([...(group.instanceTypes ?? []), ...(lt.InstanceType ? [lt.InstanceType] : [])]),
  ].sort();
  const nodePool: NodePool = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name },
          requirements: [
            {
              key: 'karpenter.sh/capacity-type',
              operator: 'In',
              values: group.spot ? ['spot', 'on-demand'] : ['on-demand'],
            },
            ...(types.length > 0
              ? [{ key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: types }]
              : []),
          ],
        },
      },
    } as NodePool['spec'],
  };
  return {
    ec2NodeClass: { apiVersion: 'karpenter.k8s.aws/v1', kind: 'EC2NodeClass', metadata: { name }, spec },
    nodePool,
    notes,
  };
}

/**
 * Reads the Auto Scaling group (and its launch template version) or the launch template and derives the objects.
 * @throws VintageSourceError when the group/template is not found; SDK errors otherwise.
 */
export async function importVintage(
  source: VintageSource,
  cfg: { ec2?: EC2ClientConfig; autoscaling?: AutoScalingClientConfig; name?: string } = {},
): Promise<VintageImport> {
  const ec2 = new EC2Client(cfg.ec2 ?? {});
  const asg = new AutoScalingClient(cfg.autoscaling ?? cfg.ec2 ?? {});
  try {
    let ltRef: { id?: string; name?: string; version?: string };
    const group: { subnets?: string[]; instanceTypes?: string[]; spot?: boolean } = {};
    let name: string;
    if ('autoScalingGroup' in source) {
      const r = await asg.send(
        new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [source.autoScalingGroup] }),
      );
      const g = r.AutoScalingGroups?.[0];
      if (!g) throw new VintageSourceError(`Auto Scaling group "${source.autoScalingGroup}" not found`);
      name = cfg.name ?? source.autoScalingGroup.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
      group.subnets = (g.VPCZoneIdentifier ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s);
      const mip = g.MixedInstancesPolicy;
      const spec = g.LaunchTemplate ?? mip?.LaunchTemplate?.LaunchTemplateSpecification;
      if (!spec)
        throw new VintageSourceError(
          `Auto Scaling group "${source.autoScalingGroup}" uses no launch template (launch configurations are not supported)`,
        );
      ltRef = {
        ...(spec.LaunchTemplateId ? { id: spec.LaunchTemplateId } : {}),
        ...(spec.LaunchTemplateName ? { name: spec.LaunchTemplateName } : {}),
        version: spec.Version ?? '$Default',
      };
      group.instanceTypes = (mip?.LaunchTemplate?.Overrides ?? [])
        .map((o) => o.InstanceType ?? '')
        .filter((x) => x);
      const pct = mip?.InstancesDistribution?.OnDemandPercentageAboveBaseCapacity;
      group.spot = pct !== undefined && pct < 100;
    } else {
      name = cfg.name ?? source.launchTemplate.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
      ltRef = { name: source.launchTemplate, version: source.version ?? '$Default' };
    }
    let data: ResponseLaunchTemplateData | undefined;
    try {
      const v = await ec2.send(
        new DescribeLaunchTemplateVersionsCommand({
          ...(ltRef.id ? { LaunchTemplateId: ltRef.id } : { LaunchTemplateName: ltRef.name }),
          Versions: [ltRef.version ?? '$Default'],
        }),
      );
      data = v.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
    } catch (err) {
      if (/NotFound|does not exist/i.test(`${(err as Error).name} ${(err as Error).message}`))
        throw new VintageSourceError(`launch template ${ltRef.id ?? ltRef.name} not found`);
      throw err;
    }
    if (!data)
      throw new VintageSourceError(
        `launch template ${ltRef.id ?? ltRef.name} version ${ltRef.version} not found`,
      );
    return vintageObjects(name, data, group);
  } finally {
    ec2.destroy();
    asg.destroy();
  }
}

/** The objects of an import as a list (EC2NodeClass first). */
export function vintageList(r: VintageImport): KubeObject[] {
  return [r.ec2NodeClass, r.nodePool];
}
