/**
 * `capenter plan`'s AMI, subnet and security-group drift against the AWS API emulator (moto) and the embedded API
 * server: a NodeClaim whose instance runs in moto with image A, subnet 1 and group 1; a proposed EC2NodeClass whose
 * selector terms name image B, subnet 2 or group 2 is resolved through moto by the EC2NodeClass controller's
 * resolvers and the instance judged by the provider's rule. Without AWS (`--offline`) the report says so.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  DescribeImagesCommand,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { formatResources } from '../../src/apis/quantity.ts';
import { runPlan } from '../../src/cli/plan.ts';
import { getInstanceTypes } from '../../src/cloudprovider/aws/catalog/index.ts';
import { type AwsClients, createAwsClients } from '../../src/cloudprovider/aws/clients.ts';
import { createTestNetwork, type TestNetwork } from '../../src/cloudprovider/aws/testing.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { type MotoServer, startMoto } from '../aws/moto.ts';
import { RecordingClient } from '../cli/api-requests.ts';

// moto answers slowly on a loaded machine: a test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

const NOW = '2026-12-03T10:00:00Z';
const REGION = 'us-west-2';
const ZONE = 'us-west-2a';

let moto: MotoServer;
let aws: AwsClients;
let sim: SimulatedCluster;
let net: TestNetwork;
/** Two x86_64 images of moto: the one the instance runs (old) and the one the proposal selects (new). */
let oldAMI: string;
let newAMI: string;
let instanceId: string;

function ec2NodeClass(terms: { ami: string; subnet: string; sg: string }): KubeObject {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default' },
    spec: {
      amiFamily: 'AL2023',
      amiSelectorTerms: [{ id: terms.ami }],
      subnetSelectorTerms: [{ id: terms.subnet }],
      securityGroupSelectorTerms: [{ id: terms.sg }],
      role: 'KarpenterNodeRole',
    },
  };
}

function seedObjects(): KubeObject[] {
  const it = getInstanceTypes({ region: REGION }).instanceTypes.find((t) => t.name === 'm5.large');
  if (!it) throw new Error('m5.large not in the us-west-2 catalog');
  const labels = {
    ...it.labels,
    'topology.kubernetes.io/region': REGION,
    'topology.kubernetes.io/zone': ZONE,
    'karpenter.sh/capacity-type': 'on-demand',
    'karpenter.sh/nodepool': 'general',
    'karpenter.sh/initialized': 'true',
    'karpenter.sh/registered': 'true',
    'kubernetes.io/hostname': 'gen-1',
  };
  const ref = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };
  return [
    ec2NodeClass({ ami: oldAMI, subnet: net.subnets[0]!.id, sg: net.securityGroups[0]!.id }),
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'general' },
      spec: {
        disruption: { consolidateAfter: '0s', budgets: [{ nodes: '1' }] },
        template: {
          spec: {
            nodeClassRef: ref,
            requirements: [
              { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'gen-1', labels },
      spec: { providerID: `aws:///${ZONE}/${instanceId}` },
    },
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'general-abcde', labels },
      spec: { nodeClassRef: ref, requirements: [] },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-1', namespace: 'default' },
      spec: {
        nodeName: 'gen-1',
        containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '500m', memory: '1Gi' } } }],
      },
    },
  ];
}

beforeAll(async () => {
  moto = await startMoto({ region: REGION });
  aws = createAwsClients(moto.clientConfig);
  net = await createTestNetwork(aws.ec2, aws.iam, [ZONE]);
  const images = ((await aws.ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images ?? [])
    .filter((i) => i.Architecture === 'x86_64' && i.ImageId)
    .map((i) => i.ImageId as string)
    .sort();
  [oldAMI, newAMI] = images as [string, string];
  const run = await aws.ec2.send(
    new RunInstancesCommand({
      ImageId: oldAMI,
      InstanceType: 'm5.large',
      MinCount: 1,
      MaxCount: 1,
      SubnetId: net.subnets[0]!.id,
      SecurityGroupIds: [net.securityGroups[0]!.id],
    }),
  );
  instanceId = run.Instances![0]!.InstanceId!;
  sim = await startSimulatedCluster({
    components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
  });
  const res = await applyObjects(sim.client, seedObjects());
  expect(res.filter((r) => r.result === 'failed').map((r) => r.error)).toEqual([]);
  const alloc = formatResources(
    getInstanceTypes({ region: REGION }).instanceTypes.find((t) => t.name === 'm5.large')!.allocatable,
  );
  await sim.client.patchStatus(
    'Node',
    'gen-1',
    undefined,
    { status: { capacity: alloc, allocatable: alloc, conditions: [{ type: 'Ready', status: 'True' }] } },
    { type: 'merge' },
  );
  await sim.client.patchStatus(
    'NodeClaim',
    'general-abcde',
    undefined,
    { status: { nodeName: 'gen-1', providerID: `aws:///${ZONE}/${instanceId}`, imageID: oldAMI } },
    { type: 'merge' },
  );
});

afterAll(async () => {
  await sim?.stop();
  aws?.destroy();
  await moto?.stop();
});

/** Runs `capenter plan -f <the class>` with moto as AWS (or `--offline`); returns exit code, output, JSON. */
async function plan(cls: KubeObject, opts: { offline?: boolean; table?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-plan-aws-'));
  const file = join(dir, 'class.yaml');
  writeFileSync(file, stringify(cls));
  const client = RecordingClient.fromKubeconfigText(sim.kubeconfig, 'capenter-plan');
  let stdout = '';
  let stderr = '';
  const code = await runPlan(
    {
      filename: [file],
      output: opts.table ? 'table' : 'json',
      now: NOW,
      region: REGION,
      ...(opts.offline ? { offline: true } : {}),
    },
    {
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      env: {},
      client,
      aws: moto.clientConfig,
    },
  );
  client.close();
  return { code, stdout, stderr, json: opts.table || code !== 0 ? undefined : JSON.parse(stdout) };
}

describe('capenter plan: AMI, subnet and security-group drift (moto)', () => {
  it('a new AMI in amiSelectorTerms drifts the NodeClaim (AMIDrift, old and new AMI IDs) and gets a replacement', async () => {
    expect(oldAMI).toMatch(/^ami-/);
    expect(newAMI).toMatch(/^ami-/);
    expect(newAMI).not.toBe(oldAMI);
    const r = await plan(
      ec2NodeClass({ ami: newAMI, subnet: net.subnets[0]!.id, sg: net.securityGroups[0]!.id }),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json.selectorDrift).toEqual({ evaluated: true, nodeClasses: ['default'], changed: ['default'] });
    expect(r.json.nodes).toEqual([
      {
        node: 'gen-1',
        nodeClaim: 'general-abcde',
        nodePool: 'general',
        instanceType: 'm5.large',
        reason: 'AMIDrift',
        detail: `EC2NodeClass "default"'s amiSelectorTerms resolve to ${newAMI} for its instance type; the instance's image ${oldAMI} is not among them`,
        selectors: { current: [oldAMI], resolved: [newAMI] },
        pods: 1,
        priceUSDPerHour: 0.096,
        wave: 1,
      },
    ]);
    expect(
      r.json.replacements.map(
        (c: { instanceType: string; replaces: string[]; wave: number; pods: string[] }) => [
          c.instanceType,
          c.replaces,
          c.wave,
          c.pods,
        ],
      ),
    ).toEqual([['m5.large', ['gen-1'], 1, ['default/web-1']]]);
    const t = await plan(
      ec2NodeClass({ ami: newAMI, subnet: net.subnets[0]!.id, sg: net.securityGroups[0]!.id }),
      {
        table: true,
      },
    );
    expect(t.stdout).toMatch(/^gen-1 +general-abcde +general +m5\.large +\$0\.0960 +1 +1 +AMIDrift /m);
    expect(t.stdout).toContain(`the instance's image ${oldAMI} is not among them`);
    expect(t.stdout).toContain(
      'AMI, subnet, security-group and capacity-reservation drift: evaluated against AWS for EC2NodeClass "default" (proposed selector terms).',
    );
  });

  it('another subnet is SubnetDrift, another security group SecurityGroupDrift, each with the IDs', async () => {
    const subnet2 = (
      await aws.ec2.send(
        new CreateSubnetCommand({ VpcId: net.vpcId, CidrBlock: '10.0.128.0/20', AvailabilityZone: ZONE }),
      )
    ).Subnet!.SubnetId!;
    const sg2 = (
      await aws.ec2.send(
        new CreateSecurityGroupCommand({ GroupName: 'nodes-2', Description: 'nodes 2', VpcId: net.vpcId }),
      )
    ).GroupId!;
    const s = await plan(ec2NodeClass({ ami: oldAMI, subnet: subnet2, sg: net.securityGroups[0]!.id }));
    expect(s.json.nodes.map((n: { nodeClaim: string; reason: string }) => [n.nodeClaim, n.reason])).toEqual([
      ['general-abcde', 'SubnetDrift'],
    ]);
    expect(s.json.nodes[0].selectors).toEqual({ current: [net.subnets[0]!.id], resolved: [subnet2] });
    const g = await plan(ec2NodeClass({ ami: oldAMI, subnet: net.subnets[0]!.id, sg: sg2 }));
    expect(g.json.nodes.map((n: { nodeClaim: string; reason: string }) => [n.nodeClaim, n.reason])).toEqual([
      ['general-abcde', 'SecurityGroupDrift'],
    ]);
    expect(g.json.nodes[0].selectors).toEqual({ current: [net.securityGroups[0]!.id], resolved: [sg2] });
    // the selector terms that match what the instance runs: no drift
    const same = await plan(
      ec2NodeClass({ ami: oldAMI, subnet: net.subnets[0]!.id, sg: net.securityGroups[0]!.id }),
    );
    expect(same.json.nodes).toEqual([]);
  });

  it('--offline: AMI/subnet/security-group drift is reported as not evaluated, with the reason, in JSON and text', async () => {
    const cls = ec2NodeClass({ ami: newAMI, subnet: net.subnets[0]!.id, sg: net.securityGroups[0]!.id });
    const r = await plan(cls, { offline: true });
    expect(r.code).toBe(0);
    expect(r.json.selectorDrift).toEqual({
      evaluated: false,
      nodeClasses: ['default'],
      changed: ['default'],
      reason: '--offline was given',
    });
    expect(r.json.nodes).toEqual([]);
    expect(r.json.notices).toContain(
      'AMI, subnet, security-group and capacity-reservation drift was NOT evaluated for EC2NodeClass "default": --offline was given. Nodes listed above drift for the other reasons only; AMIDrift, SubnetDrift, SecurityGroupDrift and CapacityReservationDrift may add more (an alias can name a newer AMI without any change to the manifests).',
    );
    const t = await plan(cls, { offline: true, table: true });
    expect(t.stdout).toContain(
      'AMI, subnet, security-group and capacity-reservation drift: NOT evaluated for EC2NodeClass "default" (proposed selector terms): --offline was given.',
    );
  });
});
