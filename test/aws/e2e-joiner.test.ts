/**
 * The joining-kubelet stand-in against moto and the embedded API server: a running instance tagged for the
 * cluster becomes a Node with the AWS provider ID, labels, the unregistered taint and the allocatable of its
 * EC2NodeClass's kubelet settings; a terminated instance's Node is removed; other clusters' instances never join.
 */
import {
  DescribeImagesCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import { startTestEnv, type TestEnv } from '../../src/controllers/nodeclaim/testing.ts';
import { catalogNodeShape } from '../../src/embedded/aws.ts';
import { Ec2NodeJoiner } from '../../src/sim/aws/joiner.ts';
import { type MotoServer, startMoto } from './moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let moto: MotoServer;
let env: TestEnv;
let ec2: EC2Client;

beforeAll(async () => {
  [moto, env] = await Promise.all([startMoto(), startTestEnv()]);
  ec2 = new EC2Client(moto.clientConfig);
});
afterAll(async () => {
  ec2?.destroy();
  await env?.stop();
  await moto?.stop();
});

async function run(cluster: string, nodeClass: string): Promise<string> {
  const image = (await ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images?.find(
    (i) => i.Architecture === 'x86_64',
  )?.ImageId;
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: image,
      InstanceType: 'm5.large',
      MinCount: 1,
      MaxCount: 1,
      Placement: { AvailabilityZone: `${moto.region}a` },
      TagSpecifications: [
        {
          ResourceType: 'instance',
          Tags: [
            { Key: `kubernetes.io/cluster/${cluster}`, Value: 'owned' },
            { Key: 'karpenter.sh/nodepool', Value: 'default' },
            { Key: 'karpenter.k8s.aws/ec2nodeclass', Value: nodeClass },
          ],
        },
      ],
    }),
  );
  return out.Instances?.[0]?.InstanceId as string;
}

describe('Ec2NodeJoiner (joining kubelet stand-in)', () => {
  it('registers a Node per running instance of the cluster with the class kubelet settings; removes it on termination', async () => {
    await env.client.create({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      metadata: { name: 'small-pods' },
      spec: {
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        role: 'r',
        subnetSelectorTerms: [{ tags: { a: 'b' } }],
        securityGroupSelectorTerms: [{ tags: { a: 'b' } }],
        kubelet: { maxPods: 20 },
      },
    });
    const id = await run('test-cluster', 'small-pods');
    const other = await run('another-cluster', 'small-pods');
    const joiner = new Ec2NodeJoiner({
      client: env.client,
      ec2,
      clock: env.clock,
      clusterName: 'test-cluster',
      region: moto.region,
      shape: catalogNodeShape(moto.region),
    });
    const first = await joiner.sync();
    expect(first.joined).toHaveLength(1);
    const nodes = (await env.client.list('Node')).items as Node[];
    expect(nodes).toHaveLength(1);
    const node = nodes[0] as Node;
    expect(node.spec?.providerID).toBe(`aws:///${moto.region}a/${id}`);
    expect(node.spec?.providerID).not.toContain(other);
    expect(node.spec?.taints).toEqual([{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }]);
    expect(node.metadata.labels).toMatchObject({
      'node.kubernetes.io/instance-type': 'm5.large',
      'topology.kubernetes.io/zone': `${moto.region}a`,
      'topology.kubernetes.io/region': moto.region,
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'karpenter.sh/nodepool': 'default',
      'karpenter.sh/capacity-type': 'on-demand',
      'karpenter.k8s.aws/instance-family': 'm5',
      'kubernetes.io/hostname': node.metadata.name,
    });
    // maxPods 20 from the class (m5.large would get 29 from its ENIs), and the matching kube-reserved memory
    expect(node.status?.capacity?.pods).toBe('20');
    expect(node.status?.allocatable?.cpu).toBe('1930m');
    expect((await joiner.sync()).joined).toEqual([]);
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
    expect((await joiner.sync()).removed).toEqual([node.metadata.name]);
    expect((await env.client.list('Node')).items).toHaveLength(0);
  });

  it('a join delay per instance: asked once when the instance is first seen; an instance that never joins is forgotten once terminated', async () => {
    const late = await run('delay-cluster', 'small-pods');
    const never = await run('delay-cluster', 'small-pods');
    const asked: string[] = [];
    const joiner = new Ec2NodeJoiner({
      client: env.client,
      ec2,
      clock: env.clock,
      clusterName: 'delay-cluster',
      region: moto.region,
      shape: catalogNodeShape(moto.region),
      joinDelaySeconds: (inst) => {
        asked.push(inst.InstanceId as string);
        return inst.InstanceId === never ? 1e7 : 30;
      },
    });
    expect((await joiner.sync()).joined).toEqual([]);
    await env.clock.tick(29_000);
    expect((await joiner.sync()).joined).toEqual([]);
    await env.clock.tick(1_000);
    const joined = (await joiner.sync()).joined;
    expect(joined).toHaveLength(1);
    const node = (await env.client.get('Node', joined[0] as string)) as Node;
    expect(node.spec?.providerID).toBe(`aws:///${moto.region}a/${late}`);
    expect(asked.sort()).toEqual([late, never].sort());
    // terminated before it ever joined: dropped, never asked about again
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [never, late] }));
    expect((await joiner.sync()).removed).toEqual([node.metadata.name]);
    expect(asked).toHaveLength(2);
  });
});
