/**
 * EFA and EC2NodeClass `spec.networkInterfaces` against moto behind the project's proxy (upstream
 * aws/karpenter-provider-aws v1.14.1 `generateNetworkInterfaces`, `getEFACountForInstance`, `efas`,
 * `networkInterfaceCheck`): the launch template's `NetworkInterfaces` as EC2 stores them, the type chosen for a
 * NodeClaim requesting `vpc.amazonaws.com/efa`, and what the NodeClaim advertises.
 */
import {
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
  type EC2Client,
  type ResponseLaunchTemplateData,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { EC2NodeClass, NodeClaim } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType } from '../../apis/labels.ts';
import { isInsufficientCapacityError } from '../types.ts';
import type { InstanceTypeInventory } from './instancetypes.ts';
import type { AwsPricing } from './pricing.ts';
import { awsNodeClaim, awsTestProvider, createTestNetwork, testNodeClass } from './testing.ts';

// moto answers slowly on a loaded machine (see provider.test.ts): slow, never flaky.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
let shared: { pricing: AwsPricing; inventory: InstanceTypeInventory } | undefined;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

async function bed(spec: Partial<EC2NodeClass['spec']> = {}) {
  const nodeClasses = new Map<string, EC2NodeClass>();
  const t = awsTestProvider(emu.clientConfig, nodeClasses, shared, {});
  shared ??= { pricing: t.provider.pricing, inventory: await t.provider.instanceTypeProvider.getInventory() };
  const net = await createTestNetwork(t.clients.ec2, t.clients.iam, ['us-west-2a', 'us-west-2b']);
  nodeClasses.set('default', testNodeClass('default', net, spec));
  return { ...t, net, nodeClasses };
}

const inReq = (key: string, values: string[]) => ({ key, operator: 'In' as const, values });
const EFA = 'vpc.amazonaws.com/efa';

function claim(name: string, types: string[], efa?: string): NodeClaim {
  const nc = awsNodeClaim(name, [inReq(LabelInstanceType, types), inReq(LabelCapacityType, ['on-demand'])]);
  if (efa) nc.spec.resources = { requests: { cpu: '1', [EFA]: efa } };
  return nc;
}

/** The launch data of every template in moto. */
async function templates(ec2: EC2Client): Promise<ResponseLaunchTemplateData[]> {
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

/** `[card, device, type, groups]` of a template's interfaces. */
function layout(d: ResponseLaunchTemplateData) {
  return (d.NetworkInterfaces ?? []).map((n) => [
    n.NetworkCardIndex,
    n.DeviceIndex,
    n.InterfaceType,
    n.Groups,
  ]);
}

describe('EFA against moto + proxy', () => {
  it('a NodeClaim requesting vpc.amazonaws.com/efa launches the cheapest EFA type with efa interfaces', async () => {
    const { provider, clients, net, nodeClasses } = await bed();
    const offered = (await provider.instanceTypeProvider.list(nodeClasses.get('default'))).find(
      (t) => t.name === 'c5n.9xlarge',
    );
    // m5.large ($0.096) is cheaper but has no EFA; c5n.9xlarge: MaximumEfaInterfaces 1, $1.944 (us-east-1 table)
    expect(offered?.capacity[EFA]).toBe(1);
    expect(offered?.offerings.find((o) => o.capacityType === 'on-demand')?.priceUSDPerHour).toBe(1.944);
    const nc = await provider.create(claim('nc-efa', ['m5.large', 'c5n.9xlarge'], '1'));
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('c5n.9xlarge');
    expect(nc.status?.allocatable?.[EFA]).toBe('1');
    expect(nc.status?.capacity?.[EFA]).toBe('1');
    const datas = await templates(clients.ec2);
    expect(datas).toHaveLength(1);
    const sg = net.securityGroups[0]!.id;
    expect(layout(datas[0]!)).toEqual([[0, 0, 'efa', [sg]]]);
    expect(datas[0]!.SecurityGroupIds ?? []).toEqual([]);
    // Listed back, EFA comes from the instance's efa/efa-only interfaces (upstream `NewInstance` `EFACount`). moto
    // attaches one primary interface of type "interface" whatever the template says, so the listed NodeClaim
    // advertises no EFA here (an emulator limit; EC2 reports the efa interface).
    const listed = (await provider.list()).find((n) => n.status?.providerID === nc.status?.providerID);
    expect(listed?.status?.allocatable?.cpu).toBeDefined();
    expect(listed?.status?.allocatable?.[EFA]).toBeUndefined();
  });

  it('c6in.32xlarge (2 EFA devices): one efa interface per network card, device index 0 then 1', async () => {
    const { provider, clients, net } = await bed();
    const nc = await provider.create(claim('nc-efa2', ['c6in.32xlarge'], '1'));
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('c6in.32xlarge');
    expect(nc.status?.allocatable?.[EFA]).toBe('2');
    const sg = net.securityGroups[0]!.id;
    expect((await templates(clients.ec2)).map(layout)).toEqual([
      [
        [0, 0, 'efa', [sg]],
        [1, 1, 'efa', [sg]],
      ],
    ]);
  });

  it('without an EFA request an EFA type launches with a plain template and advertises no EFA', async () => {
    const { provider, clients, net } = await bed();
    const nc = await provider.create(claim('nc-plain', ['c5n.9xlarge']));
    expect(nc.status?.allocatable?.[EFA]).toBeUndefined();
    const datas = await templates(clients.ec2);
    expect(datas.map(layout)).toEqual([[]]);
    expect(datas[0]!.SecurityGroupIds).toEqual([net.securityGroups[0]!.id]);
  });

  it('an EFA request no allowed type can serve is an InsufficientCapacityError and launches nothing', async () => {
    const { provider } = await bed();
    const err = await provider
      .create(claim('nc-none', ['m5.large', 'm5.xlarge'], '1'))
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err), String(err)).toBe(true);
    expect((err as Error).message).toBe(
      'insufficient capacity, NodeClaim "nc-none": no available offering in us-west-2 satisfies its requirements ' +
        'and its vpc.amazonaws.com/efa request 1 (only types with that many EFA interfaces)',
    );
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBeUndefined();
  });

  it('spec.networkInterfaces: the template carries the layout; only types that fit it are offered', async () => {
    const { provider, clients, net, nodeClasses } = await bed({
      networkInterfaces: [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' },
        { networkCardIndex: 0, deviceIndex: 1, interfaceType: 'efa-only' },
      ],
    });
    const types = await provider.instanceTypeProvider.list(nodeClasses.get('default'));
    expect(types.some((t) => t.name === 'm5.large')).toBe(false); // no EFA
    const c5n = types.find((t) => t.name === 'c5n.9xlarge')!;
    // 8 ENIs × 29 IPs + 2 = 234 pods; the efa-only interface on card 0 takes one ENI: 7 × 29 + 2
    expect(c5n.capacity.pods).toBe(7 * 29 + 2);
    expect(c5n.capacity[EFA]).toBe(1);
    const nc = await provider.create(claim('nc-layout', ['m5.large', 'c5n.9xlarge']));
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('c5n.9xlarge');
    expect(nc.status?.allocatable?.[EFA]).toBe('1');
    const sg = net.securityGroups[0]!.id;
    expect((await templates(clients.ec2)).map(layout)).toEqual([
      [
        [0, 0, 'interface', [sg]],
        [0, 1, 'efa-only', [sg]],
      ],
    ]);
  });
});
