/**
 * Prepares an AWS API emulator (moto) for a CAPA cluster whose KarpenterMachinePools run on the aws provider, as CAPA
 * and its image pipeline would have left a real account: the cluster's S3 bucket, the worker instance profile, and a
 * CAPA-named image for each Kubernetes version (`capa-ami-<baseOS>-v<version>-<timestamp>`, registered from one of
 * the emulator's images). Returns the AWSCluster fields that point at them (region, bucket, subnets, node security
 * group, image lookup owner). Emulator only: never run against a real account.
 */
import {
  CreateImageCommand,
  DescribeImagesCommand,
  type EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { CreateInstanceProfileCommand, type IAMClient } from '@aws-sdk/client-iam';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { CAPADefaultBaseOS } from '../../apis/capi.ts';

/** Inputs of {@link prepareCAPAEmulator}. */
export interface CAPAEmulatorInputs {
  ec2: EC2Client;
  iam: IAMClient;
  s3: S3Client;
  clusterName: string;
  region: string;
  /** Kubernetes versions to publish images for (`v1.33.1`). */
  versions: string[];
  /** Subnets and security group of the emulator's network (e.g. `EmbeddedAws.seed`). */
  subnets: string[];
  securityGroup: string;
}

/** AWSCluster `spec` fields for the prepared emulator. */
export interface CAPAEmulatorResult {
  awsClusterSpec: Record<string, unknown>;
  /** Image ID per version. */
  images: Record<string, string>;
}

/** See the module comment. @throws on emulator API errors. */
export async function prepareCAPAEmulator(i: CAPAEmulatorInputs): Promise<CAPAEmulatorResult> {
  const bucket = `${i.clusterName}-capa-bootstrap`;
  await i.s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((err: Error) => {
    if (!/BucketAlreadyOwnedByYou|BucketAlreadyExists/.test(err.name)) throw err;
  });
  const profile = `nodes-${i.clusterName}`;
  await i.iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: profile })).catch((err: Error) => {
    if (!/EntityAlreadyExists/.test(err.name)) throw err;
  });
  const base = (await i.ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images?.find(
    (x) => x.Architecture === 'x86_64' && !x.Platform,
  );
  if (!base?.ImageId) throw new Error('the emulator has no x86_64 image to register CAPA images from');
  const run = await i.ec2.send(
    new RunInstancesCommand({ ImageId: base.ImageId, InstanceType: 't3.micro', MinCount: 1, MaxCount: 1 }),
  );
  const builder = run.Instances?.[0]?.InstanceId as string;
  const images: Record<string, string> = {};
  let owner: string | undefined;
  for (const v of i.versions) {
    const name = `capa-ami-${CAPADefaultBaseOS}-v${v.replace(/^v/, '')}-1760000000`;
    const have = (
      await i.ec2.send(new DescribeImagesCommand({ Filters: [{ Name: 'name', Values: [name] }] }))
    ).Images?.[0];
    const id =
      have?.ImageId ??
      ((await i.ec2.send(new CreateImageCommand({ InstanceId: builder, Name: name }))).ImageId as string);
    images[v] = id;
    owner ??= (await i.ec2.send(new DescribeImagesCommand({ ImageIds: [id] }))).Images?.[0]?.OwnerId;
  }
  await i.ec2.send(new TerminateInstancesCommand({ InstanceIds: [builder] }));
  return {
    images,
    awsClusterSpec: {
      region: i.region,
      s3Bucket: { name: bucket, nodesIAMInstanceProfiles: [profile] },
      ...(owner ? { imageLookupOrg: owner } : {}),
      network: {
        subnets: i.subnets.map((id) => ({ id, resourceID: id, isPublic: false })),
        securityGroupOverrides: { node: i.securityGroup },
      },
    },
  };
}
