/**
 * `capenter plan` predicts the drift the controller would find NOW, not only the drift of a manifest change (issue
 * 30 item 2), against moto behind the project's emulator proxy (`src/sim/aws/proxy.ts`) and the embedded API server:
 * - an EC2NodeClass with `amiSelectorTerms: [{alias: al2023@latest}]`, unchanged, whose SSM parameter AWS has moved
 *   to a newer AMI (the proxy's `setSSMParameter`): every node running the old AMI is `AMIDrift`, with the old and
 *   new AMI IDs; with the parameter unchanged, no node drifts;
 * - `capacityReservationSelectorTerms` changed so that one reservation is no longer selected: exactly the node in
 *   it is `CapacityReservationDrift` (the provider's rule, `cloudprovider/aws/drift.ts` `selectorDrift`).
 * Instances are launched as the provider launches them: CreateFleet from a launch template (the reserved ones
 * targeting their reservation, which the proxy records and `DescribeInstances` reports).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateCapacityReservationCommand,
  CreateFleetCommand,
  CreateLaunchTemplateCommand,
  DescribeImagesCommand,
  DescribeInstancesCommand,
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
import { type AwsEmulator, startAwsEmulator } from '../aws/moto.ts';
import { RecordingClient } from '../cli/api-requests.ts';

// moto answers slowly on a loaded machine: a test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

const NOW = '2026-12-03T10:00:00Z';
const REGION = 'us-west-2';
/** The alias's SSM parameter for the nodes' Kubernetes 1.32 and their x86_64 standard variant. */
const AL2023_X86 =
  '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id';

let emu: AwsEmulator;
let aws: AwsClients;
let sim: SimulatedCluster;
let net: TestNetwork;
/** Two x86_64 images of moto: the one the alias named when the nodes launched (old), the one it names now (new). */
let oldAMI: string;
let newAMI: string;
/** Reservations tagged team=ml: A (m5.large, us-west-2a) and B (m5.xlarge, us-west-2b). */
let crA: string;
let crB: string;

/** One managed node: its name, instance type, zone, capacity type and reservation, and its instance once launched. */
interface TestNode {
  name: string;
  type: string;
  zone: string;
  reservation?: () => string;
  instanceId?: string;
}
const NODES: TestNode[] = [
  { name: 'gen-1', type: 'm5.large', zone: 'us-west-2a' },
  { name: 'gen-2', type: 'm5.large', zone: 'us-west-2a', reservation: () => crA },
  { name: 'gen-3', type: 'm5.xlarge', zone: 'us-west-2b', reservation: () => crB },
];

function ec2NodeClass(capacityReservationSelectorTerms: Record<string, unknown>[]): KubeObject {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default' },
    spec: {
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: net.subnets.map((s) => ({ id: s.id })),
      securityGroupSelectorTerms: [{ id: net.securityGroups[0]!.id }],
      ...(capacityReservationSelectorTerms.length > 0 ? { capacityReservationSelectorTerms } : {}),
      role: 'KarpenterNodeRole',
    },
  };
}

/** Launches `n`'s instance with `oldAMI` as the provider does: CreateFleet from a template (targeting its reservation). */
async function launch(n: TestNode): Promise<string> {
  const subnet = net.subnets.find((s) => s.zone === n.zone)!.id;
  const cr = n.reservation?.();
  await aws.ec2.send(
    new CreateLaunchTemplateCommand({
      LaunchTemplateName: `lt-${n.name}`,
      LaunchTemplateData: {
        ImageId: oldAMI,
        SecurityGroupIds: [net.securityGroups[0]!.id],
        ...(cr
          ? { CapacityReservationSpecification: { CapacityReservationTarget: { CapacityReservationId: cr } } }
          : {}),
      },
    }),
  );
  const out = await aws.ec2.send(
    new CreateFleetCommand({
      Type: 'instant',
      TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
      LaunchTemplateConfigs: [
        {
          LaunchTemplateSpecification: { LaunchTemplateName: `lt-${n.name}`, Version: '$Latest' },
          Overrides: [{ InstanceType: n.type as 'm5.large', SubnetId: subnet }],
        },
      ],
    }),
  );
  expect(out.Errors ?? []).toEqual([]);
  return out.Instances![0]!.InstanceIds![0]!;
}

function nodeLabels(n: TestNode): Record<string, string> {
  const it = getInstanceTypes({ region: REGION }).instanceTypes.find((t) => t.name === n.type)!;
  const cr = n.reservation?.();
  return {
    ...it.labels,
    'topology.kubernetes.io/region': REGION,
    'topology.kubernetes.io/zone': n.zone,
    'karpenter.sh/capacity-type': cr ? 'reserved' : 'on-demand',
    ...(cr ? { 'karpenter.k8s.aws/capacity-reservation-id': cr } : {}),
    'karpenter.sh/nodepool': 'general',
    'karpenter.sh/initialized': 'true',
    'karpenter.sh/registered': 'true',
    'kubernetes.io/hostname': n.name,
  };
}

function seedObjects(): KubeObject[] {
  const ref = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };
  const out: KubeObject[] = [
    ec2NodeClass([{ tags: { team: 'ml' } }]),
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'general' },
      spec: {
        disruption: { consolidateAfter: '0s', budgets: [{ nodes: '100%' }] },
        template: {
          spec: {
            nodeClassRef: ref,
            requirements: [
              { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
              { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand', 'reserved'] },
            ],
          },
        },
      },
    },
  ];
  for (const n of NODES) {
    const labels = nodeLabels(n);
    const providerID = `aws:///${n.zone}/${n.instanceId}`;
    out.push(
      { apiVersion: 'v1', kind: 'Node', metadata: { name: n.name, labels }, spec: { providerID } },
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name: `general-${n.name}`, labels },
        spec: { nodeClassRef: ref, requirements: [] },
      },
    );
  }
  return out;
}

beforeAll(async () => {
  emu = await startAwsEmulator({ region: REGION });
  aws = createAwsClients(emu.clientConfig);
  net = await createTestNetwork(aws.ec2, aws.iam, ['us-west-2a', 'us-west-2b']);
  const images = ((await aws.ec2.send(new DescribeImagesCommand({ Owners: ['amazon'] }))).Images ?? [])
    .filter((i) => i.Architecture === 'x86_64' && i.ImageId)
    .map((i) => i.ImageId as string)
    .sort();
  [oldAMI, newAMI] = images as [string, string];
  emu.proxy.setSSMParameter(AL2023_X86, oldAMI);
  const reserve = async (type: string, zone: string) =>
    (
      await aws.ec2.send(
        new CreateCapacityReservationCommand({
          InstanceType: type,
          InstancePlatform: 'Linux/UNIX',
          AvailabilityZone: zone,
          InstanceCount: 1,
          InstanceMatchCriteria: 'targeted',
          TagSpecifications: [{ ResourceType: 'capacity-reservation', Tags: [{ Key: 'team', Value: 'ml' }] }],
        }),
      )
    ).CapacityReservation!.CapacityReservationId!;
  crA = await reserve('m5.large', 'us-west-2a');
  crB = await reserve('m5.xlarge', 'us-west-2b');
  for (const n of NODES) n.instanceId = await launch(n);
  sim = await startSimulatedCluster({
    components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
  });
  const res = await applyObjects(sim.client, seedObjects());
  expect(res.filter((r) => r.result === 'failed').map((r) => r.error)).toEqual([]);
  for (const n of NODES) {
    const it = getInstanceTypes({ region: REGION }).instanceTypes.find((t) => t.name === n.type)!;
    const alloc = formatResources(it.allocatable);
    await sim.client.patchStatus(
      'Node',
      n.name,
      undefined,
      {
        status: {
          capacity: alloc,
          allocatable: alloc,
          conditions: [{ type: 'Ready', status: 'True' }],
          nodeInfo: { kubeletVersion: 'v1.32.3-eks-1' },
        },
      },
      { type: 'merge' },
    );
    await sim.client.patchStatus(
      'NodeClaim',
      `general-${n.name}`,
      undefined,
      { status: { nodeName: n.name, providerID: `aws:///${n.zone}/${n.instanceId}`, imageID: oldAMI } },
      { type: 'merge' },
    );
  }
});

afterAll(async () => {
  await sim?.stop();
  aws?.destroy();
  await emu?.stop();
});

/** Runs `capenter plan -f <the class>` with the emulator as AWS; returns exit code, output, JSON. */
async function plan(cls: KubeObject, opts: { table?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-plan-aws-now-'));
  const file = join(dir, 'class.yaml');
  writeFileSync(file, stringify(cls));
  const client = RecordingClient.fromKubeconfigText(sim.kubeconfig, 'capenter-plan');
  let stdout = '';
  let stderr = '';
  const code = await runPlan(
    { filename: [file], output: opts.table ? 'table' : 'json', now: NOW, region: REGION },
    {
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      env: {},
      client,
      aws: emu.clientConfig,
    },
  );
  client.close();
  return { code, stdout, stderr, json: opts.table || code !== 0 ? undefined : JSON.parse(stdout) };
}

type JsonNode = { node: string; instanceType: string; reason: string; selectors?: unknown; detail: string };
const summary = (nodes: JsonNode[]) => nodes.map((n) => [n.node, n.instanceType, n.reason, n.selectors]);

describe('capenter plan: the drift the controller would find now (emulator proxy + moto)', () => {
  it('the instances run what the class selects today: the reserved ones in their reservations', async () => {
    const out = await aws.ec2.send(
      new DescribeInstancesCommand({ InstanceIds: NODES.map((n) => n.instanceId!) }),
    );
    const got = (out.Reservations ?? [])
      .flatMap((r) => r.Instances ?? [])
      .map((i) => [
        i.InstanceId,
        i.ImageId,
        i.CapacityReservationId ?? null,
        i.SecurityGroups?.map((g) => g.GroupId),
      ])
      .sort();
    expect(got).toEqual(
      NODES.map((n) => [n.instanceId, oldAMI, n.reservation?.() ?? null, [net.securityGroups[0]!.id]]).sort(),
    );
  });

  it('alias al2023@latest, SSM parameter unchanged: no node drifts, and the class was resolved against AWS', async () => {
    const r = await plan(ec2NodeClass([{ tags: { team: 'ml' } }]));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json.changes.map((c: { kind: string; result: string }) => [c.kind, c.result])).toEqual([
      ['EC2NodeClass', 'unchanged'],
    ]);
    expect(r.json.selectorDrift).toEqual({ evaluated: true, nodeClasses: ['default'], changed: [] });
    expect(r.json.nodes).toEqual([]);
    // no notice about the class (the only one: the region's price table fallback)
    expect(r.json.notices.filter((n: string) => /drift|EC2NodeClass/.test(n))).toEqual([]);
  });

  it('the alias SSM parameter now names a newer AMI: every node on the old one is AMIDrift, with both AMI IDs', async () => {
    emu.proxy.setSSMParameter(AL2023_X86, newAMI);
    try {
      const r = await plan(ec2NodeClass([{ tags: { team: 'ml' } }]));
      expect(r.stderr).toBe('');
      expect(r.json.selectorDrift).toEqual({ evaluated: true, nodeClasses: ['default'], changed: [] });
      const selectors = { current: [oldAMI], resolved: [newAMI] };
      expect(summary(r.json.nodes)).toEqual([
        ['gen-1', 'm5.large', 'AMIDrift', selectors],
        ['gen-2', 'm5.large', 'AMIDrift', selectors],
        ['gen-3', 'm5.xlarge', 'AMIDrift', selectors],
      ]);
      expect(r.json.nodes[0].detail).toBe(
        `EC2NodeClass "default"'s amiSelectorTerms resolve to ${newAMI} for its instance type; the instance's image ${oldAMI} is not among them`,
      );
      const t = await plan(ec2NodeClass([{ tags: { team: 'ml' } }]), { table: true });
      expect(t.stdout).toMatch(/^gen-3 +general-gen-3 +general +m5\.xlarge +\$\d+\.\d{4} +0 +1 +AMIDrift /m);
      expect(t.stdout).toContain(
        'AMI, subnet, security-group and capacity-reservation drift: evaluated against AWS for EC2NodeClass "default" (selector terms unchanged, resolved now).',
      );
    } finally {
      emu.proxy.setSSMParameter(AL2023_X86, oldAMI);
    }
  });

  it('capacityReservationSelectorTerms no longer select reservation A: exactly its node is CapacityReservationDrift', async () => {
    const r = await plan(ec2NodeClass([{ id: crB }]));
    expect(r.stderr).toBe('');
    expect(r.json.selectorDrift).toEqual({ evaluated: true, nodeClasses: ['default'], changed: ['default'] });
    expect(summary(r.json.nodes)).toEqual([
      ['gen-2', 'm5.large', 'CapacityReservationDrift', { current: [crA], resolved: [crB] }],
    ]);
    expect(r.json.nodes[0].detail).toBe(
      `EC2NodeClass "default"'s capacityReservationSelectorTerms resolve to ${crB}; the instance's capacity reservation ${crA} is not among them`,
    );
    // no reservation selected at all: both reserved nodes drift, the on-demand one does not
    const none = await plan(ec2NodeClass([]));
    expect(summary(none.json.nodes)).toEqual([
      ['gen-2', 'm5.large', 'CapacityReservationDrift', { current: [crA], resolved: [] }],
      ['gen-3', 'm5.xlarge', 'CapacityReservationDrift', { current: [crB], resolved: [] }],
    ]);
    const t = await plan(ec2NodeClass([{ id: crB }]), { table: true });
    expect(t.stdout).toMatch(
      /^gen-2 +general-gen-2 +general +m5\.large +\$0\.0000 +0 +1 +CapacityReservationDrift /m,
    );
    expect(t.stdout).toContain(
      'AMI, subnet, security-group and capacity-reservation drift: evaluated against AWS for EC2NodeClass "default" (proposed selector terms).',
    );
  });
});
