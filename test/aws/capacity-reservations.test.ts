/**
 * Capacity reservations on the aws provider against moto behind the emulator proxy (the proxy emulates
 * reservations: moto has none), issue 28 item 1: a targeted ODCR resolved as the EC2NodeClass controller does,
 * `reserved` offerings at upstream's price (on-demand / 10,000,000), launches into the reservation first (its own
 * launch template targeting it), used up, then the fall-back to on-demand; the reservation labels, the slot given
 * back on termination, `CapacityReservationDrift`, and a launch template of another instance type refused.
 */
import {
  CreateCapacityReservationCommand,
  CreateFleetCommand,
  CreateLaunchTemplateCommand,
  DescribeCapacityReservationsCommand,
  DescribeLaunchTemplatesCommand,
  DescribeLaunchTemplateVersionsCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EC2NodeClass, NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import {
  LabelCapacityReservationID,
  LabelCapacityReservationInterruptible,
  LabelCapacityReservationType,
  LabelCapacityType,
  LabelInstanceType,
  LabelTopologyZone,
} from '../../src/apis/labels.ts';
import { resolveCapacityReservations } from '../../src/cloudprovider/aws/nodeclass/capacityreservations.ts';
import type { EC2NodeClassStatus } from '../../src/cloudprovider/aws/nodeclass/types.ts';
import { DriftCapacityReservation } from '../../src/cloudprovider/aws/provider.ts';
import {
  awsNodeClaim,
  awsTestProvider,
  createTestNetwork,
  testNodeClass,
} from '../../src/cloudprovider/aws/testing.ts';
import { type AwsEmulator, startAwsEmulator } from './moto.ts';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

const inReq = (key: string, values: string[]) => ({ key, operator: 'In' as const, values });

/** A provider, a network in us-west-2a/b and a class selecting reservations tagged `team=ml`. */
async function bed() {
  const nodeClasses = new Map<string, EC2NodeClass>();
  const t = awsTestProvider(emu.clientConfig, nodeClasses);
  const net = await createTestNetwork(t.clients.ec2, t.clients.iam, ['us-west-2a', 'us-west-2b']);
  const nodeClass = testNodeClass('default', net, {
    capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }],
  } as Partial<EC2NodeClass['spec']>);
  nodeClasses.set('default', nodeClass);
  /** What the EC2NodeClass controller does each period: status and the free counts. */
  const refresh = async () => {
    const r = await resolveCapacityReservations(t.clients.ec2, nodeClass, t.clock);
    (nodeClass.status as EC2NodeClassStatus).capacityReservations = r.reservations;
    t.provider.capacityReservations.sync(r.available);
  };
  return { ...t, net, nodeClass, refresh };
}

const claim = (name: string) =>
  awsNodeClaim(name, [
    inReq(LabelInstanceType, ['m5.large', 'm5.xlarge']),
    inReq(LabelCapacityType, ['reserved', 'on-demand']),
  ]);

const nodePool: NodePool = {
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
} as unknown as NodePool;

const summary = (nc: NodeClaim) => ({
  type: nc.metadata.labels?.[LabelInstanceType],
  capacityType: nc.metadata.labels?.[LabelCapacityType],
  zone: nc.metadata.labels?.[LabelTopologyZone],
  reservation: nc.metadata.labels?.[LabelCapacityReservationID],
  reservationType: nc.metadata.labels?.[LabelCapacityReservationType],
  interruptible: nc.metadata.labels?.[LabelCapacityReservationInterruptible],
});

describe('aws provider: capacity reservations (issue 28)', () => {
  it('launches into a targeted reservation, uses it up, falls back to on-demand, frees the slot on delete', async () => {
    const { provider, clients, refresh } = await bed();
    const cr = await clients.ec2.send(
      new CreateCapacityReservationCommand({
        InstanceType: 'm5.large',
        InstancePlatform: 'Linux/UNIX',
        AvailabilityZone: 'us-west-2a',
        InstanceCount: 2,
        InstanceMatchCriteria: 'targeted',
        TagSpecifications: [{ ResourceType: 'capacity-reservation', Tags: [{ Key: 'team', Value: 'ml' }] }],
      }),
    );
    const id = cr.CapacityReservation!.CapacityReservationId!;
    await refresh();

    // the reserved offering: upstream's price model (m5.large on-demand $0.096 / 10,000,000), the reservation labels
    const m5 = (await provider.instanceTypes(nodePool)).find((t) => t.name === 'm5.large')!;
    const od = m5.offerings.find((o) => o.capacityType === 'on-demand' && o.zone === 'us-west-2a')!;
    expect(od.priceUSDPerHour).toBe(0.096);
    expect(m5.offerings.filter((o) => o.capacityType === 'reserved')).toEqual([
      {
        zone: 'us-west-2a',
        capacityType: 'reserved',
        priceUSDPerHour: 0.096 / 10_000_000,
        available: true,
        priceSource: od.priceSource,
        reservationID: id,
        reservationCapacity: 2,
        labels: {
          [LabelCapacityReservationID]: id,
          [LabelCapacityReservationType]: 'default',
          [LabelCapacityReservationInterruptible]: 'false',
          // moto's us-west-2a (the class subnet's AvailabilityZoneId)
          'topology.k8s.aws/zone-id': 'usw2-az2',
        },
      },
    ]);

    const launched: NodeClaim[] = [];
    const ec2Before = new Map(emu.proxy.calls);
    for (const n of ['nc-1', 'nc-2', 'nc-3']) launched.push(await provider.create(claim(n)));
    // EC2 calls of the three launches (cold: both launch templates are created here), by action
    const spent = Object.fromEntries(
      [...emu.proxy.calls]
        .filter(([k, v]) => k.startsWith('ec2:') && v !== (ec2Before.get(k) ?? 0))
        .map(([k, v]) => [k, v - (ec2Before.get(k) ?? 0)]),
    );
    // 7 calls for 3 NodeClaims (2.3 each, ≤ 3); warm, a launch is its one CreateFleet. Templates: the reservation's,
    // and one per max-pods group of the on-demand launch (m5.large 29, m5.xlarge 58).
    expect(spent).toEqual({
      'ec2:DescribeLaunchTemplates': 1,
      'ec2:CreateLaunchTemplate': 3,
      'ec2:CreateFleet': 3,
    });
    const reserved = {
      type: 'm5.large',
      capacityType: 'reserved',
      zone: 'us-west-2a',
      reservation: id,
      reservationType: 'default',
      interruptible: 'false',
    };
    expect(launched.map(summary)).toEqual([
      reserved,
      reserved,
      // used up: the cheapest on-demand offering of the claim's types
      {
        type: 'm5.large',
        capacityType: 'on-demand',
        zone: expect.stringMatching(/^us-west-2[ab]$/),
        reservation: undefined,
        reservationType: undefined,
        interruptible: undefined,
      },
    ]);
    expect(provider.capacityReservations.available(id)).toBe(0);
    const described = await clients.ec2.send(
      new DescribeCapacityReservationsCommand({ CapacityReservationIds: [id] }),
    );
    expect(described.CapacityReservations?.[0]).toMatchObject({
      TotalInstanceCount: 2,
      AvailableInstanceCount: 0,
    });

    // the reserved launches' template targets the reservation only
    const calls = emu.proxy.calls;
    expect(calls.get('ec2:CreateFleet')).toBe(3);
    const lts = await clients.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({
        LaunchTemplateName: await templateOf(emu, launched[0]!),
        Versions: ['$Latest'],
      }),
    );
    expect(lts.LaunchTemplateVersions?.[0]?.LaunchTemplateData?.CapacityReservationSpecification).toEqual({
      CapacityReservationPreference: 'capacity-reservations-only',
      CapacityReservationTarget: { CapacityReservationId: id },
    });

    // EC2 reports the instance in its reservation: get() says reserved with the labels
    const got = await provider.get(launched[0]!.status!.providerID!);
    expect(summary(got)).toEqual(reserved);

    // a stale count (the describe said 1 left): EC2 refuses, the reservation is emptied, the same create falls back
    provider.capacityReservations.sync(new Map([[id, 1]]));
    const fallback = await provider.create(claim('nc-4'));
    expect(summary(fallback).capacityType).toBe('on-demand');
    expect(provider.capacityReservations.available(id)).toBe(0);

    // terminating a reserved instance gives its slot back; the next describe sees it and the next launch takes it
    await provider.delete(launched[0]!);
    await refresh();
    expect(provider.capacityReservations.available(id)).toBe(1);
    expect(summary(await provider.create(claim('nc-5')))).toEqual(reserved);
  });

  it('a NodeClaim requiring capacity-reservation-id In [id] launches only into it; used up or absent: no launch', async () => {
    const { provider, refresh } = await bed();
    const r = emu.proxy.reservations.add({
      region: 'us-west-2',
      instanceType: 'm5.large',
      availabilityZone: 'us-west-2a',
      totalInstanceCount: 1,
      tags: { team: 'ml' },
    });
    await refresh();
    const pinned = (name: string, id: string) =>
      awsNodeClaim(name, [
        inReq(LabelInstanceType, ['m5.large', 'm5.xlarge']),
        inReq(LabelCapacityType, ['reserved', 'on-demand']),
        inReq(LabelCapacityReservationID, [id]),
      ]);
    expect(summary(await provider.create(pinned('nc-1', r.id)))).toEqual({
      type: 'm5.large',
      capacityType: 'reserved',
      zone: 'us-west-2a',
      reservation: r.id,
      reservationType: 'default',
      interruptible: 'false',
    });
    expect(provider.capacityReservations.available(r.id)).toBe(0);
    const fleets = emu.proxy.calls.get('ec2:CreateFleet');
    // used up: no on-demand fall-back for a NodeClaim that requires the reservation, and no CreateFleet
    await expect(provider.create(pinned('nc-2', r.id))).rejects.toThrow(
      'NodeClaim "nc-2": no available offering in us-west-2 satisfies its requirements',
    );
    await expect(provider.create(pinned('nc-3', 'cr-0123456789abcdef0'))).rejects.toThrow(
      'NodeClaim "nc-3": no available offering in us-west-2 satisfies its requirements',
    );
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(fleets);
  });

  it('CapacityReservationDrift: an instance whose reservation the class no longer selects', async () => {
    const { provider, clients, refresh, nodeClass } = await bed();
    const cr = await clients.ec2.send(
      new CreateCapacityReservationCommand({
        InstanceType: 'm5.large',
        InstancePlatform: 'Linux/UNIX',
        AvailabilityZone: 'us-west-2b',
        InstanceCount: 1,
        InstanceMatchCriteria: 'targeted',
        TagSpecifications: [{ ResourceType: 'capacity-reservation', Tags: [{ Key: 'team', Value: 'ml' }] }],
      }),
    );
    await refresh();
    const r = await provider.create(claim('nc-1'));
    const o = await provider.create(claim('nc-2'));
    expect([summary(r).capacityType, summary(r).zone, summary(o).capacityType]).toEqual([
      'reserved',
      'us-west-2b',
      'on-demand',
    ]);
    expect(await provider.isDrifted(r)).toBeUndefined();
    // the reservation's tag changes: the class no longer selects it
    (nodeClass.spec as Record<string, unknown>).capacityReservationSelectorTerms = [
      { tags: { team: 'other' } },
    ];
    await refresh();
    expect((nodeClass.status as EC2NodeClassStatus).capacityReservations).toEqual([]);
    expect(await provider.isDrifted(r)).toBe(DriftCapacityReservation);
    expect(await provider.isDrifted(o)).toBeUndefined();
    expect(cr.CapacityReservation?.CapacityReservationId).toBe(summary(r).reservation);
  });

  it('a capacity block: launched into only while active, capacity-block market; expiring 40 min before its end', async () => {
    const { provider, clients, clock, refresh } = await bed();
    const end = clock.now() + 3 * 3600_000;
    const block = emu.proxy.reservations.add({
      region: 'us-west-2',
      instanceType: 'm5.large',
      availabilityZone: 'us-west-2b',
      totalInstanceCount: 2,
      reservationType: 'capacity-block',
      endDate: end,
      tags: { team: 'ml' },
    });
    await refresh();
    const first = await provider.create(claim('nc-1'));
    expect(summary(first)).toEqual({
      type: 'm5.large',
      capacityType: 'reserved',
      zone: 'us-west-2b',
      reservation: block.id,
      reservationType: 'capacity-block',
      interruptible: 'false',
    });
    const lt = await clients.ec2.send(
      new DescribeLaunchTemplateVersionsCommand({
        LaunchTemplateName: await templateOf(emu, first),
        Versions: ['$Latest'],
      }),
    );
    expect(lt.LaunchTemplateVersions?.[0]?.LaunchTemplateData?.InstanceMarketOptions?.MarketType).toBe(
      'capacity-block',
    );
    expect(summary(await provider.get(first.status!.providerID!)).reservationType).toBe('capacity-block');
    // 40 minutes before the end the block is expiring: no new launch goes there though it has room
    clock.advance(3 * 3600_000 - 40 * 60_000);
    await refresh();
    expect(provider.capacityReservations.available(block.id)).toBe(1);
    expect(
      (await provider.instanceTypes(nodePool))
        .find((t) => t.name === 'm5.large')!
        .offerings.find((o) => o.reservationID === block.id),
    ).toMatchObject({ available: false, reservationCapacity: 1 });
    expect(summary(await provider.create(claim('nc-2'))).capacityType).toBe('on-demand');
  });

  it('an interruptible reservation is used after an ODCR of the same price, with its market type and label', async () => {
    const { provider, clients, refresh } = await bed();
    const add = (interruptible: boolean) =>
      emu.proxy.reservations.add({
        region: 'us-west-2',
        instanceType: 'm5.large',
        availabilityZone: 'us-west-2a',
        totalInstanceCount: 1,
        interruptible,
        tags: { team: 'ml' },
      });
    const spare = add(true);
    const odcr = add(false);
    await refresh();
    const first = await provider.create(claim('nc-1'));
    const second = await provider.create(claim('nc-2'));
    expect([summary(first), summary(second)].map((x) => [x.reservation, x.interruptible])).toEqual([
      [odcr.id, 'false'],
      [spare.id, 'true'],
    ]);
    const lts = await clients.ec2.send(new DescribeLaunchTemplatesCommand({}));
    const markets: string[] = [];
    for (const lt of lts.LaunchTemplates ?? []) {
      const v = await clients.ec2.send(
        new DescribeLaunchTemplateVersionsCommand({
          LaunchTemplateId: lt.LaunchTemplateId!,
          Versions: ['$Latest'],
        }),
      );
      const d = v.LaunchTemplateVersions?.[0]?.LaunchTemplateData;
      const target = d?.CapacityReservationSpecification?.CapacityReservationTarget?.CapacityReservationId;
      if (target)
        markets.push(
          `${target === spare.id ? 'interruptible' : 'odcr'}:${d?.InstanceMarketOptions?.MarketType ?? '-'}`,
        );
    }
    expect(markets.sort()).toEqual(['interruptible:interruptible-capacity-reservation', 'odcr:-']);
  });

  it('the proxy refuses a launch template targeting a reservation of another instance type: nothing launches', async () => {
    const { clients, net } = await bed();
    const cr = await clients.ec2.send(
      new CreateCapacityReservationCommand({
        InstanceType: 'm5.large',
        InstancePlatform: 'Linux/UNIX',
        AvailabilityZone: 'us-west-2a',
        InstanceCount: 1,
        InstanceMatchCriteria: 'targeted',
      }),
    );
    await clients.ec2.send(
      new CreateLaunchTemplateCommand({
        LaunchTemplateName: 'wrong-shape',
        LaunchTemplateData: {
          ImageId: net.amis[0]!.id,
          CapacityReservationSpecification: {
            CapacityReservationTarget: {
              CapacityReservationId: cr.CapacityReservation!.CapacityReservationId!,
            },
          },
        },
      }),
    );
    const out = await clients.ec2.send(
      new CreateFleetCommand({
        Type: 'instant',
        TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: 'on-demand' },
        LaunchTemplateConfigs: [
          {
            LaunchTemplateSpecification: { LaunchTemplateName: 'wrong-shape', Version: '$Latest' },
            Overrides: [{ InstanceType: 'c5.large', SubnetId: net.subnets[0]!.id }],
          },
        ],
      }),
    );
    expect(out.Instances ?? []).toEqual([]);
    expect(out.Errors?.map((e) => e.ErrorCode)).toEqual(['InvalidParameterCombination']);
  });
});

/** The launch template name the instance of `nc` was launched from (its `aws:ec2launchtemplate:id` is not kept by moto). */
async function templateOf(e: AwsEmulator, nc: NodeClaim): Promise<string> {
  // the reserved launches used one template whose data targets a reservation; find it among the cluster's
  const { DescribeLaunchTemplatesCommand, EC2Client } = await import('@aws-sdk/client-ec2');
  const ec2 = new EC2Client(e.clientConfig);
  const all = await ec2.send(new DescribeLaunchTemplatesCommand({}));
  for (const lt of all.LaunchTemplates ?? []) {
    const v = await ec2.send(
      new DescribeLaunchTemplateVersionsCommand({
        LaunchTemplateId: lt.LaunchTemplateId!,
        Versions: ['$Latest'],
      }),
    );
    if (v.LaunchTemplateVersions?.[0]?.LaunchTemplateData?.CapacityReservationSpecification) {
      ec2.destroy();
      return lt.LaunchTemplateName!;
    }
  }
  ec2.destroy();
  throw new Error(`no launch template targets a reservation (NodeClaim ${nc.metadata.name})`);
}
