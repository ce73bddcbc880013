/**
 * Prepares an empty AWS API emulator (moto) for `capenter start --cloud-provider aws`: what an EKS cluster's
 * infrastructure (eksctl / the Karpenter getting-started CloudFormation) would provide, discoverable the usual way
 * with the tag `karpenter.sh/discovery: <cluster>`:
 * - the default VPC's default subnets (one per zone) and its `default` security group are tagged;
 * - the node role `KarpenterNodeRole-<cluster>` is created;
 * - the newest x86_64 and arm64 images owned by `amazon` are tagged (the emulator has no EKS SSM parameters, so
 *   `amiSelectorTerms: [{tags: {karpenter.sh/discovery: <cluster>}}]` stands in for an alias).
 * Idempotent. Only for emulators: it writes tags on the account's default resources.
 */
import {
  CreateTagsCommand,
  DescribeImagesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type Image,
} from '@aws-sdk/client-ec2';
import { CreateRoleCommand, GetRoleCommand, type IAMClient } from '@aws-sdk/client-iam';

/** What {@link prepareEmulator} tagged or created. */
export interface EmulatorSeed {
  subnets: string[];
  securityGroups: string[];
  images: string[];
  role: string;
}

/** The discovery tag key (upstream getting-started guide). */
export const DiscoveryTag = 'karpenter.sh/discovery';

/** Tags the emulator's default network and two images for `clusterName`, creates its node role. @throws on EC2/IAM errors. */
export async function prepareEmulator(
  ec2: EC2Client,
  iam: IAMClient,
  clusterName: string,
): Promise<EmulatorSeed> {
  const subnets = (
    (await ec2.send(new DescribeSubnetsCommand({ Filters: [{ Name: 'default-for-az', Values: ['true'] }] })))
      .Subnets ?? []
  )
    .map((s) => s.SubnetId as string)
    .sort();
  const securityGroups = (
    (
      await ec2.send(
        new DescribeSecurityGroupsCommand({ Filters: [{ Name: 'group-name', Values: ['default'] }] }),
      )
    ).SecurityGroups ?? []
  ).map((g) => g.GroupId as string);
  const all = (await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images ?? [];
  const newest = (arch: string): Image | undefined =>
    all
      .filter(
        (i) =>
          i.Architecture === arch && i.State === 'available' && !/windows/i.test(i.Name ?? '') && !i.Platform,
      )
      .sort(
        (a, b) =>
          (b.CreationDate ?? '').localeCompare(a.CreationDate ?? '') ||
          (a.ImageId ?? '').localeCompare(b.ImageId ?? ''),
      )[0];
  const images = [newest('x86_64'), newest('arm64')]
    .filter((i): i is Image => !!i)
    .map((i) => i.ImageId as string);
  const resources = [...subnets, ...securityGroups, ...images];
  if (resources.length > 0)
    await ec2.send(
      new CreateTagsCommand({ Resources: resources, Tags: [{ Key: DiscoveryTag, Value: clusterName }] }),
    );
  const role = `KarpenterNodeRole-${clusterName}`;
  try {
    await iam.send(new GetRoleCommand({ RoleName: role }));
  } catch {
    await iam.send(
      new CreateRoleCommand({
        RoleName: role,
        AssumeRolePolicyDocument: JSON.stringify({
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' }, Action: 'sts:AssumeRole' },
          ],
        }),
      }),
    );
  }
  return { subnets, securityGroups, images, role };
}
