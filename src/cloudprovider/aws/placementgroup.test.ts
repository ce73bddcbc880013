/**
 * EC2NodeClass `spec.placementGroupSelector` in the aws provider against moto + the project's proxy (moto has no
 * placement groups; the proxy's `src/sim/aws/placementgroups.ts` serves them and places fleet instances). Upstream:
 * aws/karpenter-provider-aws v1.14.1 `pkg/providers/placementgroup`, `pkg/providers/launchtemplate/types.go`
 * (`buildPlacement`), `pkg/providers/instancetype/offering/{offering,placement_group_resolver}.go`,
 * `pkg/cloudprovider/cloudprovider.go` (`instanceToNodeClaim`), `pkg/cloudprovider/drift.go`
 * (`isPlacementGroupDrifted`).
 */
import {
  CreateFleetCommand,
  type CreateFleetCommandInput,
  CreatePlacementGroupCommand,
  DeletePlacementGroupCommand,
  DescribeInstancesCommand,
  DescribeLaunchTemplateVersionsCommand,
  type EC2Client,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelTopologyZone } from '../../apis/labels.ts';
import { isInsufficientCapacityError, isNodeClassNotReadyError } from '../types.ts';
import { placementGroupDrift, selectorDrift } from './drift.ts';
import { LabelPlacementGroupID, LabelPlacementGroupPartition } from './nodeclass/placementgroups.ts';
import { DriftPlacementGroup } from './provider.ts';
import { awsNodeClaim, awsProviderBeds } from './testing.ts';

// moto answers slowly on a loaded machine; a test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

const beds = awsProviderBeds(() => emu.clientConfig);
const inReq = (key: string, values: string[]) => ({ key, operator: 'In' as const, values });

/** Captures the CreateFleet requests the provider sends. */
function captureFleets(ec2: { send: (...a: never[]) => unknown }): CreateFleetCommandInput[] {
  const inputs: CreateFleetCommandInput[] = [];
  const send = ec2.send.bind(ec2) as (c: unknown) => Promise<unknown>;
  (ec2 as { send: (c: unknown) => Promise<unknown> }).send = (c: unknown) => {
    if (c instanceof CreateFleetCommand) inputs.push(c.input);
    return send(c);
  };
  return inputs;
}

async function createGroup(
  ec2: EC2Client,
  name: string,
  strategy: 'cluster' | 'partition' | 'spread',
  partitionCount?: number,
): Promise<string> {
  const out = await ec2.send(
    new CreatePlacementGroupCommand({
      GroupName: name,
      Strategy: strategy,
      ...(partitionCount ? { PartitionCount: partitionCount } : {}),
    }),
  );
  return out.PlacementGroup!.GroupId!;
}

async function instanceOf(ec2: EC2Client, providerID: string) {
  const id = providerID.split('/').pop()!;
  return (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations![0]!
    .Instances![0]!;
}

async function templatePlacement(ec2: EC2Client, fleet: CreateFleetCommandInput) {
  const lt = fleet.LaunchTemplateConfigs![0]!.LaunchTemplateSpecification!.LaunchTemplateName!;
  return (
    await ec2.send(
      new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateName: lt, Versions: ['$Latest'] }),
    )
  ).LaunchTemplateVersions![0]!.LaunchTemplateData!.Placement;
}

const nodePool = (): NodePool =>
  ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'default' },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [],
        },
      },
    },
  }) as unknown as NodePool;

describe('aws placement groups against moto + proxy', () => {
  it('a cluster group by name: the launch template carries Placement.GroupId, the instance runs in the group, the NodeClaim carries placement-group-id', async () => {
    const { provider, clients } = await beds(['us-west-2a'], { placementGroupSelector: { name: 'db' } });
    const id = await createGroup(clients.ec2, 'db', 'cluster');
    const fleets = captureFleets(clients.ec2 as never);
    const nc = await provider.create(
      awsNodeClaim('nc-pg', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    expect(await templatePlacement(clients.ec2, fleets[0]!)).toEqual({ GroupId: id });
    const inst = await instanceOf(clients.ec2, nc.status!.providerID!);
    expect(inst.Placement).toMatchObject({ GroupName: 'db', GroupId: id, AvailabilityZone: 'us-west-2a' });
    expect(inst.Placement?.PartitionNumber).toBeUndefined();
    expect(nc.metadata.labels?.[LabelPlacementGroupID]).toBe(id);
    expect(nc.metadata.labels?.[LabelPlacementGroupPartition]).toBeUndefined();
    // read back (garbage collection, restart): the instance's group
    expect((await provider.get(nc.status!.providerID!)).metadata.labels?.[LabelPlacementGroupID]).toBe(id);
    // every instance type of the class carries the group's ID, so requirements on it are schedulable
    const types = await provider.instanceTypes(nodePool());
    expect(types.find((t) => t.name === 'm5.large')?.labels[LabelPlacementGroupID]).toBe(id);
    expect(await provider.isDrifted(nc)).toBeUndefined();
  });

  it('a partition group by id: one offering per partition; a partition requirement goes to Placement.PartitionNumber and the label; without one EC2 picks it and the label is read back', async () => {
    const bed = await beds(['us-west-2a']);
    const id = await createGroup(bed.clients.ec2, 'spread-db', 'partition', 3);
    bed.nodeClasses.get('default')!.spec.placementGroupSelector = { id };
    const fleets = captureFleets(bed.clients.ec2 as never);
    const types = await bed.provider.instanceTypes(nodePool());
    const m5 = types.find((t) => t.name === 'm5.large')!;
    expect(m5.labels[LabelPlacementGroupID]).toBe(id);
    expect(
      m5.offerings
        .filter((o) => o.capacityType === 'on-demand' && o.zone === 'us-west-2a')
        .map((o) => o.labels?.[LabelPlacementGroupPartition]),
    ).toEqual(['1', '2', '3']);

    const pinned = await bed.provider.create(
      awsNodeClaim('nc-p', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
        inReq(LabelPlacementGroupPartition, ['3', '2']),
      ]),
    );
    expect(await templatePlacement(bed.clients.ec2, fleets[0]!)).toEqual({ GroupId: id, PartitionNumber: 2 });
    // one override per type and subnet although the type has an offering per partition
    expect(fleets[0]!.LaunchTemplateConfigs![0]!.Overrides).toHaveLength(1);
    expect((await instanceOf(bed.clients.ec2, pinned.status!.providerID!)).Placement).toMatchObject({
      GroupName: 'spread-db',
      GroupId: id,
      PartitionNumber: 2,
    });
    expect(pinned.metadata.labels).toMatchObject({
      [LabelPlacementGroupID]: id,
      [LabelPlacementGroupPartition]: '2',
      [LabelTopologyZone]: 'us-west-2a',
    });

    const free = await bed.provider.create(
      awsNodeClaim('nc-free', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    expect(await templatePlacement(bed.clients.ec2, fleets[1]!)).toEqual({ GroupId: id });
    // the proxy (as EC2) puts it in the emptiest partition: 1 (partition 2 holds nc-p)
    expect((await instanceOf(bed.clients.ec2, free.status!.providerID!)).Placement?.PartitionNumber).toBe(1);
    expect(free.metadata.labels?.[LabelPlacementGroupPartition]).toBe('1');
    expect((await bed.provider.get(free.status!.providerID!)).metadata.labels).toMatchObject({
      [LabelPlacementGroupID]: id,
      [LabelPlacementGroupPartition]: '1',
    });
  });

  it('PlacementGroupDrift once the name resolves to another group (deleted and re-created), after the 1-minute cache', async () => {
    const { provider, clients, clock } = await beds(['us-west-2a'], {
      placementGroupSelector: { name: 'db' },
    });
    const first = await createGroup(clients.ec2, 'db', 'cluster');
    const nc = await provider.create(
      awsNodeClaim('nc-d', [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])]),
    );
    expect(nc.metadata.labels?.[LabelPlacementGroupID]).toBe(first);
    await clients.ec2.send(new DeletePlacementGroupCommand({ GroupName: 'db' }));
    const second = await createGroup(clients.ec2, 'db', 'cluster');
    expect(second).not.toBe(first);
    expect(await provider.isDrifted(nc)).toBeUndefined();
    clock.advance(61_000);
    expect(await provider.isDrifted(nc)).toBe(DriftPlacementGroup);
    expect(DriftPlacementGroup).toBe('PlacementGroupDrift');
    // a NodeClaim launched before the class had a selector drifts too (upstream: label '' vs the group's ID)
    const before = structuredClone(nc);
    delete before.metadata.labels![LabelPlacementGroupID];
    expect(await provider.isDrifted(before)).toBe('PlacementGroupDrift');
  });

  it('a selector matching no available group launches nothing: NodeClassNotReadyError naming the field and the fix', async () => {
    const { provider, clients } = await beds(['us-west-2a'], { placementGroupSelector: { name: 'db' } });
    await createGroup(clients.ec2, 'db', 'cluster');
    emu.proxy.placementGroups.setState(emu.region, 'db', 'pending');
    const err = await provider
      .create(awsNodeClaim('nc-x', [inReq(LabelInstanceType, ['m5.large'])]))
      .catch((e: unknown) => e);
    expect(isNodeClassNotReadyError(err)).toBe(true);
    expect((err as Error).message).toBe(
      'NodeClassRef not ready, EC2NodeClass/default: PlacementGroupReady=False (PlacementGroupNotFound): spec.placementGroupSelector.name ' +
        '"db" matches no available placement group; create it or fix spec.placementGroupSelector',
    );
    expect(emu.proxy.calls.get('ec2:CreateFleet') ?? 0).toBe(0);
  });
});

describe('placement groups: capacity errors scoped to the group (upstream updateUnavailableOfferingsCache)', () => {
  it("a spread group's seventh instance in a zone is the last: the eighth fails with EC2's limit error, marked for the group only", async () => {
    const bed = await beds(['us-west-2a']);
    const id = await createGroup(bed.clients.ec2, 'web', 'spread');
    const cls = bed.nodeClasses.get('default')!;
    const plain = structuredClone(cls);
    cls.spec.placementGroupSelector = { name: 'web' };
    bed.nodeClasses.set('plain', { ...plain, metadata: { ...plain.metadata, name: 'plain' } });
    const reqs = [inReq(LabelInstanceType, ['m5.large']), inReq(LabelCapacityType, ['on-demand'])];
    for (let i = 1; i <= 7; i++) {
      const nc = await bed.provider.create(awsNodeClaim(`nc-${i}`, reqs));
      expect(nc.metadata.labels?.[LabelPlacementGroupID]).toBe(id);
    }
    const messages: string[] = [];
    const send = bed.clients.ec2.send.bind(bed.clients.ec2) as (c: unknown) => Promise<unknown>;
    (bed.clients.ec2 as unknown as { send: (c: unknown) => Promise<unknown> }).send = async (c: unknown) => {
      const out = await send(c);
      if (c instanceof CreateFleetCommand)
        for (const e of (out as { Errors?: { ErrorMessage?: string }[] }).Errors ?? [])
          messages.push(e.ErrorMessage ?? '');
      return out;
    };
    const err = await bed.provider.create(awsNodeClaim('nc-8', reqs)).catch((e: unknown) => e);
    expect(messages).toEqual([
      "You've reached the limit of instances in this spread placement group. A spread placement group can have up to seven instances per Availability Zone.",
    ]);
    expect(isInsufficientCapacityError(err)).toBe(true);
    expect((err as Error).message).toBe(
      'insufficient capacity, NodeClaim "nc-8": every compatible offering failed or is unavailable: m5.large/us-west-2a/on-demand',
    );
    // out of capacity for the group, not for launches outside it
    expect(bed.provider.unavailableOfferings.isUnavailable('m5.large', 'us-west-2a', 'on-demand')).toBe(
      false,
    );
    const m5 = (await bed.provider.instanceTypes(nodePool())).find((t) => t.name === 'm5.large')!;
    expect(
      m5.offerings.filter((o) => o.zone === 'us-west-2a').map((o) => [o.capacityType, o.available]),
    ).toEqual([
      ['on-demand', false],
      ['spot', true],
    ]);
    const outside = await bed.provider.create({
      ...awsNodeClaim('nc-plain', reqs),
      spec: {
        ...awsNodeClaim('nc-plain', reqs).spec,
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'plain' },
      },
    });
    expect(outside.metadata.labels?.[LabelTopologyZone]).toBe('us-west-2a');
    expect(outside.metadata.labels?.[LabelPlacementGroupID]).toBeUndefined();
  });

  it('a capacity error of a launch pinned to partition 2 marks that partition only', async () => {
    const bed = await beds(['us-west-2a']);
    const id = await createGroup(bed.clients.ec2, 'db', 'partition', 3);
    bed.nodeClasses.get('default')!.spec.placementGroupSelector = { id };
    emu.proxy.injectCapacityError({ instanceType: 'm5.large', zone: 'us-west-2a', times: 1 });
    const err = await bed.provider
      .create(
        awsNodeClaim('nc-p2', [
          inReq(LabelInstanceType, ['m5.large']),
          inReq(LabelCapacityType, ['on-demand']),
          inReq(LabelPlacementGroupPartition, ['2']),
        ]),
      )
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err)).toBe(true);
    expect(bed.provider.unavailableOfferings.isUnavailable('m5.large', 'us-west-2a', 'on-demand')).toBe(
      false,
    );
    const m5 = (await bed.provider.instanceTypes(nodePool())).find((t) => t.name === 'm5.large')!;
    expect(
      m5.offerings
        .filter((o) => o.zone === 'us-west-2a' && o.capacityType === 'on-demand')
        .map((o) => [o.labels?.[LabelPlacementGroupPartition], o.available]),
    ).toEqual([
      ['1', true],
      ['2', false],
      ['3', true],
    ]);
  });
});

describe('placement groups: the shared drift rule', () => {
  it('selectorDrift (capenter plan) judges the placement group last, only when given', () => {
    const inst = { imageId: 'ami-1', subnetId: 'subnet-1', securityGroupIds: ['sg-1'] };
    const resolved = {
      amis: [{ id: 'ami-1', requirements: [] }],
      subnets: [{ id: 'subnet-1' }],
      securityGroups: [{ id: 'sg-1' }],
    };
    const labels = { [LabelPlacementGroupID]: 'pg-0aaa' };
    expect(selectorDrift(inst, resolved, labels)).toBeUndefined();
    expect(selectorDrift(inst, { ...resolved, placementGroupID: 'pg-0bbb' }, labels)).toEqual({
      reason: 'PlacementGroupDrift',
      current: ['pg-0aaa'],
      resolved: ['pg-0bbb'],
    });
    expect(selectorDrift(inst, { ...resolved, placementGroupID: '' }, labels)).toEqual({
      reason: 'PlacementGroupDrift',
      current: ['pg-0aaa'],
      resolved: [],
    });
    expect(placementGroupDrift({}, '')).toBeUndefined();
  });
});
