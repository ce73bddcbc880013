/**
 * The AWS parts of the CAPI integration against moto (the AWS API emulator): the bootstrap data in the cluster's
 * S3 bucket (written by the KarpenterMachinePool controller; a Secret rotation rewrites only the object), and the
 * vintage import of an EC2NodeClass + NodePool from an Auto Scaling group and from a launch template.
 */
import { AutoScalingClient, CreateAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import { CreateLaunchTemplateCommand, EC2Client } from '@aws-sdk/client-ec2';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EC2NodeClass } from '../../src/apis/karpenter.ts';
import { validateObject } from '../../src/apis/validation.ts';
import { runConvert } from '../../src/cli/convert.ts';
import { S3BootstrapStore } from '../../src/cloudprovider/aws/s3store.ts';
import { importVintage } from '../../src/cloudprovider/aws/vintage.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIStack, startCAPIStack } from '../../src/embedded/capi.ts';
import { prepareCAPAEmulator } from '../../src/sim/capi/aws.ts';
import { fakeBootstrapData, sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { type MotoServer, startMoto } from '../aws/moto.ts';
import { eventually } from '../e2e/harness.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let moto: MotoServer;
beforeAll(async () => {
  moto = await startMoto({ region: 'us-east-1' });
}, 120_000);
afterAll(async () => {
  await moto?.stop();
});

const loc = {
  region: 'us-east-1',
  bucket: 'demo-capa-bootstrap',
  key: 'karpenter-machine-pool/default/workers',
};

describe('bootstrap data in S3 (moto)', () => {
  let stack: CAPIStack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('the controller uploads the bootstrap Secret, a rotation rewrites only the object, deletion removes it', async () => {
    const s3 = new S3Client({ ...moto.clientConfig, forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: loc.bucket }));
    const store = new S3BootstrapStore(() => ({ ...moto.clientConfig, forcePathStyle: true }));
    expect(await store.get(loc)).toBeUndefined();
    stack = await startCAPIStack({
      withOperator: false,
      bootstrapStore: store,
      env: { machinePoolStandIn: false },
    });
    const { env } = stack;
    await env.writeKubeconfigSecret('default', 'demo');
    await applyObjects(env.mgmt, sampleCAPIObjects());
    await eventually(async () => (await store.get(loc))?.toString() === fakeBootstrapData(), 'object in S3');
    const head = await s3.send(new GetObjectCommand({ Bucket: loc.bucket, Key: loc.key }));
    expect(head.ServerSideEncryption).toBe('AES256');
    const nc = await eventually(
      async () => (await env.workload.client.tryGet('EC2NodeClass', 'workers')) as EC2NodeClass | undefined,
      'EC2NodeClass written',
    );

    const rotated = fakeBootstrapData('zyxwvu.9876543210fedcba');
    await env.mgmt.patch(
      'Secret',
      'workers-bootstrap',
      'default',
      { data: { value: Buffer.from(rotated).toString('base64') } },
      { type: 'merge' },
    );
    await eventually(async () => (await store.get(loc))?.toString() === rotated, 'rotated object in S3');
    const after = (await env.workload.client.get('EC2NodeClass', 'workers')) as EC2NodeClass;
    expect(after.metadata.resourceVersion).toBe(nc.metadata.resourceVersion);
    expect(after.spec.userData).toContain(`aws s3 cp --region us-east-1 s3://${loc.bucket}/${loc.key}`);

    await env.mgmt.delete('KarpenterMachinePool', 'workers', 'default');
    await eventually(
      async () => !(await env.mgmt.tryGet('KarpenterMachinePool', 'workers', 'default')),
      'KMP gone',
    );
    expect(await store.get(loc)).toBeUndefined();
    store.close();
    s3.destroy();
  }, 90_000);
});

describe('vintage: EC2NodeClass from an Auto Scaling group or launch template (moto)', () => {
  it('reads AMI, security groups, instance profile, user data, block devices, IMDS, tags, subnets and instance types', async () => {
    const ec2 = new EC2Client(moto.clientConfig);
    const asg = new AutoScalingClient(moto.clientConfig);
    const userData = '#!/bin/bash\n/etc/eks/bootstrap.sh legacy-cluster\n';
    await ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: 'legacy-workers',
        LaunchTemplateData: {
          ImageId: 'ami-0123456789abcdef0',
          InstanceType: 'm5.large',
          SecurityGroupIds: ['sg-0aaa', 'sg-0bbb'],
          IamInstanceProfile: { Arn: 'arn:aws:iam::123456789012:instance-profile/legacy-node-profile' },
          UserData: Buffer.from(userData).toString('base64'),
          BlockDeviceMappings: [
            { DeviceName: '/dev/xvda', Ebs: { VolumeSize: 100, VolumeType: 'gp3', Encrypted: true } },
          ],
          MetadataOptions: { HttpTokens: 'required', HttpPutResponseHopLimit: 2 },
          TagSpecifications: [
            {
              ResourceType: 'instance',
              Tags: [
                { Key: 'team', Value: 'legacy' },
                { Key: 'kubernetes.io/cluster/legacy', Value: 'owned' },
              ],
            },
          ],
        },
      }),
    );
    const vpc = await ec2.send(
      new (await import('@aws-sdk/client-ec2')).CreateVpcCommand({ CidrBlock: '10.1.0.0/16' }),
    );
    const subnet = await ec2.send(
      new (await import('@aws-sdk/client-ec2')).CreateSubnetCommand({
        VpcId: vpc.Vpc?.VpcId as string,
        CidrBlock: '10.1.1.0/24',
        AvailabilityZone: 'us-east-1a',
      }),
    );
    const subnetId = subnet.Subnet?.SubnetId as string;
    await asg.send(
      new CreateAutoScalingGroupCommand({
        AutoScalingGroupName: 'legacy-workers-asg',
        MinSize: 0,
        MaxSize: 3,
        VPCZoneIdentifier: subnetId,
        MixedInstancesPolicy: {
          LaunchTemplate: {
            LaunchTemplateSpecification: { LaunchTemplateName: 'legacy-workers', Version: '$Latest' },
            Overrides: [{ InstanceType: 'm5.large' }, { InstanceType: 'm5a.large' }],
          },
          InstancesDistribution: { OnDemandPercentageAboveBaseCapacity: 50 },
        },
      }),
    );
    const r = await importVintage(
      { autoScalingGroup: 'legacy-workers-asg' },
      { ec2: moto.clientConfig, autoscaling: moto.clientConfig },
    );
    expect(r.ec2NodeClass.metadata.name).toBe('legacy-workers-asg');
    expect(r.ec2NodeClass.spec).toMatchObject({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ id: 'ami-0123456789abcdef0' }],
      securityGroupSelectorTerms: [{ id: 'sg-0aaa' }, { id: 'sg-0bbb' }],
      subnetSelectorTerms: [{ id: subnetId }],
      instanceProfile: 'legacy-node-profile',
      userData,
      blockDeviceMappings: [
        { deviceName: '/dev/xvda', ebs: { volumeSize: '100Gi', volumeType: 'gp3', encrypted: true } },
      ],
      metadataOptions: { httpTokens: 'required', httpPutResponseHopLimit: 2 },
      tags: { team: 'legacy' },
    });
    expect(r.nodePool.spec.template.spec.requirements).toEqual([
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
      { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large', 'm5a.large'] },
    ]);
    expect(r.notes).toEqual([]);
    expect(validateObject(r.ec2NodeClass).ok).toBe(true);
    expect(validateObject(r.nodePool).ok).toBe(true);

    // The same from the launch template alone, through the CLI: no subnets → a note.
    const saved = { ...process.env };
    Object.assign(process.env, moto.env);
    let out = '';
    let err = '';
    try {
      const code = await runConvert(
        { fromLaunchTemplate: 'legacy-workers', region: 'us-east-1' },
        { stdout: (t) => (out += t), stderr: (t) => (err += t) },
      );
      expect(code, err).toBe(0);
    } finally {
      for (const k of Object.keys(moto.env)) if (saved[k] === undefined) delete process.env[k];
      Object.assign(process.env, saved);
    }
    expect(out).toContain('kind: EC2NodeClass');
    expect(out).toContain('ami-0123456789abcdef0');
    expect(err).toContain(
      'note: no subnets (no Auto Scaling group, no subnet in the template): set spec.subnetSelectorTerms',
    );
    await expect(
      importVintage({ autoScalingGroup: 'nope' }, { ec2: moto.clientConfig, autoscaling: moto.clientConfig }),
    ).rejects.toThrow('Auto Scaling group "nope" not found');
    ec2.destroy();
    asg.destroy();
  }, 90_000);
});

describe('KarpenterMachinePool on the aws provider (moto)', () => {
  let stack: CAPIStack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('launches EC2 instances for pending pods, reports their provider IDs, and deletion terminates them', async () => {
    await moto.reset();
    const { DescribeInstancesCommand } = await import('@aws-sdk/client-ec2');
    const s3 = new S3Client({ ...moto.clientConfig, forcePathStyle: true });
    const store = new S3BootstrapStore(() => ({ ...moto.clientConfig, forcePathStyle: true }));
    // startEmbeddedAws builds its SDK clients from the default credential chain (as `capenter start` does).
    process.env.AWS_ACCESS_KEY_ID ??= moto.clientConfig.credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY ??= moto.clientConfig.credentials.secretAccessKey;
    stack = await startCAPIStack({
      bootstrapStore: store,
      aws: { emulatorEndpoint: moto.endpoint, region: 'us-east-1', clusterName: 'demo' },
      operator: { clusterName: 'demo', batchIdleSeconds: 0.3, batchMaxSeconds: 3 },
      env: {
        workload: { kubeletReadyDelaySeconds: 0, podStartDelaySeconds: 0.2, maxTerminationSeconds: 1 },
        machinePoolStandIn: { periodSeconds: 0.3 },
      },
    });
    const aws = stack.aws!;
    const ec2 = aws.clients.ec2;
    const { IAMClient } = await import('@aws-sdk/client-iam');
    const iam = new IAMClient(moto.clientConfig);
    const prepared = await prepareCAPAEmulator({
      ec2,
      iam,
      s3,
      clusterName: 'demo',
      region: 'us-east-1',
      versions: ['v1.33.1'],
      subnets: aws.seed.subnets,
      securityGroup: aws.seed.securityGroups[0] as string,
    });
    iam.destroy();
    const img = { ImageId: prepared.images['v1.33.1'] };
    const objs = sampleCAPIObjects();
    const awsCluster = objs.find((o) => o.kind === 'AWSCluster') as unknown as {
      spec: Record<string, unknown>;
    };
    Object.assign(awsCluster.spec, prepared.awsClusterSpec);
    const { env } = stack;
    await env.writeKubeconfigSecret('default', 'demo');
    await applyObjects(env.mgmt, objs);
    const wl = env.workload.client;
    await eventually(async () => !!(await wl.tryGet('NodePool', 'workers')), 'NodePool written');
    await applyObjects(wl, [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'app', namespace: 'default' },
        spec: {
          replicas: 4,
          selector: { matchLabels: { app: 'app' } },
          template: {
            metadata: { labels: { app: 'app' } },
            spec: {
              containers: [
                { name: 'a', image: 'pause', resources: { requests: { cpu: '1', memory: '1Gi' } } },
              ],
            },
          },
        },
      } as never,
    ]);
    const { allRunning } = await import('../e2e/harness.ts');
    await eventually(() => allRunning(wl, 4), '4 pods running on EC2 instances', 90_000);
    const claims = (await wl.list('NodeClaim')).items as Array<{
      status?: { providerID?: string; imageID?: string };
    }>;
    expect(claims.length).toBeGreaterThan(0);
    const ids = claims.map((c) => c.status?.providerID as string).sort();
    expect(ids.every((id) => id.startsWith('aws:///us-east-1'))).toBe(true);
    expect(claims.every((c) => c.status?.imageID === img.ImageId)).toBe(true);
    await eventually(
      async () =>
        JSON.stringify(
          (
            (await env.mgmt.get('KarpenterMachinePool', 'workers', 'default')) as {
              spec?: { providerIDList?: string[] };
            }
          ).spec?.providerIDList,
        ) === JSON.stringify(ids),
      'providerIDList of EC2 instances',
    );
    const running = async () =>
      (
        (
          await ec2.send(
            new DescribeInstancesCommand({
              Filters: [
                { Name: 'tag:karpenter.sh/nodepool', Values: ['workers'] },
                { Name: 'instance-state-name', Values: ['pending', 'running'] },
              ],
            }),
          )
        ).Reservations ?? []
      ).flatMap((r) => r.Instances ?? []);
    const live = await running();
    expect(live).toHaveLength(claims.length);
    expect(live[0]?.Tags?.find((t) => t.Key === 'cluster.x-k8s.io/cluster-name')?.Value).toBe('demo');

    await env.mgmt.delete('KarpenterMachinePool', 'workers', 'default');
    await eventually(
      async () => !(await env.mgmt.tryGet('KarpenterMachinePool', 'workers', 'default')),
      'KMP finalized',
      90_000,
    );
    expect(await running()).toEqual([]);
    store.close();
    s3.destroy();
  }, 150_000);
});
