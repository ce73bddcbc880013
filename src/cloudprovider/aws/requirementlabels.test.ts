/**
 * The aws requirement labels of issue 28 item 3 against moto + the project's proxy: `karpenter.k8s.aws/instance-tenancy`
 * (a dedicated launch template and node label), `topology.k8s.aws/zone-id` (offerings and node labels from the
 * class's subnet zone IDs). Upstream: aws/karpenter-provider-aws v1.14.1 `pkg/providers/instance/instance.go`
 * (`getTenancyType`), `pkg/providers/launchtemplate/types.go` (`buildPlacement`),
 * `pkg/providers/instancetype/offering/base_resolver.go` (zone-id offering requirement),
 * `pkg/cloudprovider/cloudprovider.go` (`instanceToNodeClaim` labels).
 */
import {
  CreateFleetCommand,
  type CreateFleetCommandInput,
  DescribeInstancesCommand,
  DescribeLaunchTemplateVersionsCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import {
  LabelCapacityType,
  LabelInstanceTenancy,
  LabelInstanceType,
  LabelTopologyZone,
  LabelTopologyZoneID,
} from '../../apis/labels.ts';
import { isInsufficientCapacityError } from '../types.ts';
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
const bed = () => beds(['us-west-2a', 'us-west-2b']);

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

describe('aws requirement labels against moto + proxy', () => {
  it('instance-tenancy In [dedicated] launches from a Placement.Tenancy=dedicated template and labels the node dedicated; no requirement is default', async () => {
    const { provider, clients } = await bed();
    const fleets = captureFleets(clients.ec2 as never);
    const nc = await provider.create(
      awsNodeClaim('nc-dedicated', [
        inReq(LabelInstanceType, ['t4g.nano', 'm5.large']),
        inReq(LabelCapacityType, ['on-demand']),
        inReq(LabelInstanceTenancy, ['dedicated']),
      ]),
    );
    // us-east-1 price table: t4g.nano $0.0042 < m5.large $0.096
    expect(nc.metadata.labels?.[LabelInstanceType]).toBe('t4g.nano');
    expect(nc.metadata.labels?.[LabelInstanceTenancy]).toBe('dedicated');
    const lt = fleets[0]!.LaunchTemplateConfigs![0]!.LaunchTemplateSpecification!.LaunchTemplateName!;
    const data = (
      await clients.ec2.send(
        new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateName: lt, Versions: ['$Latest'] }),
      )
    ).LaunchTemplateVersions![0]!.LaunchTemplateData!;
    expect(data.Placement?.Tenancy).toBe('dedicated');
    const id = nc.status!.providerID!.split('/').pop()!;
    const inst = (await clients.ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] })))
      .Reservations![0]!.Instances![0]!;
    expect(inst.Placement?.Tenancy).toBe('dedicated');
    // the instance read back (garbage collection, restart) carries the same label
    expect((await provider.get(nc.status!.providerID!)).metadata.labels?.[LabelInstanceTenancy]).toBe(
      'dedicated',
    );

    const shared = await provider.create(
      awsNodeClaim('nc-shared', [
        inReq(LabelInstanceType, ['t4g.nano']),
        inReq(LabelCapacityType, ['on-demand']),
      ]),
    );
    expect(shared.metadata.labels?.[LabelInstanceTenancy]).toBe('default');
    const lt2 = fleets[1]!.LaunchTemplateConfigs![0]!.LaunchTemplateSpecification!.LaunchTemplateName!;
    expect(lt2).not.toBe(lt);
    const data2 = (
      await clients.ec2.send(
        new DescribeLaunchTemplateVersionsCommand({ LaunchTemplateName: lt2, Versions: ['$Latest'] }),
      )
    ).LaunchTemplateVersions![0]!.LaunchTemplateData!;
    expect(data2.Placement?.Tenancy ?? 'default').toBe('default');
    const id2 = shared.status!.providerID!.split('/').pop()!;
    expect((await provider.get(shared.status!.providerID!)).metadata.labels?.[LabelInstanceTenancy]).toBe(
      'default',
    );
    expect(id2).not.toBe(id);
    // In [default, dedicated] takes default (upstream getTenancyType); one CreateFleet per NodeClaim
    const either = await provider.create(
      awsNodeClaim('nc-either', [
        inReq(LabelInstanceType, ['t4g.nano']),
        inReq(LabelCapacityType, ['on-demand']),
        inReq(LabelInstanceTenancy, ['dedicated', 'default']),
      ]),
    );
    expect(either.metadata.labels?.[LabelInstanceTenancy]).toBe('default');
    // EC2 calls of the three launches: the dedicated one builds its own templates (one per AMI: t4g.nano arm64,
    // m5.large amd64), the shared one one more, the third reuses it; one CreateFleet per NodeClaim
    expect(
      ['DescribeLaunchTemplates', 'CreateLaunchTemplate', 'CreateFleet'].map((a) =>
        emu.proxy.calls.get(`ec2:${a}`),
      ),
    ).toEqual([1, 3, 3]);
  });

  it('instance-tenancy DoesNotExist leaves no offering: InsufficientCapacityError, nothing launched', async () => {
    const { provider } = await bed();
    const err = await provider
      .create(
        awsNodeClaim('nc-none', [
          inReq(LabelInstanceType, ['t4g.nano']),
          { key: LabelInstanceTenancy, operator: 'DoesNotExist' },
        ]),
      )
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err)).toBe(true);
    expect((err as Error).message).toBe(
      'insufficient capacity, NodeClaim "nc-none": no available offering in us-west-2 satisfies its requirements',
    );
    expect(emu.proxy.calls.get('ec2:CreateFleet') ?? 0).toBe(0);
  });

  it('offerings carry topology.k8s.aws/zone-id from the subnets; zone-id In [usw2-az1] launches in us-west-2b and labels the node', async () => {
    const { provider, net, nodeClasses } = await bed();
    // moto's us-west-2 zone IDs: us-west-2a = usw2-az2, us-west-2b = usw2-az1
    expect(net.subnets.map((s) => `${s.zone}=${s.zoneID}`)).toEqual([
      'us-west-2a=usw2-az2',
      'us-west-2b=usw2-az1',
    ]);
    const types = await provider.instanceTypes({
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
    } as never);
    const m5 = types.find((t) => t.name === 'm5.large')!;
    expect(
      m5.offerings
        .filter((o) => o.capacityType === 'on-demand')
        .map((o) => `${o.zone}=${o.labels?.[LabelTopologyZoneID]}`),
    ).toEqual(['us-west-2a=usw2-az2', 'us-west-2b=usw2-az1']);

    const nc = await provider.create(
      awsNodeClaim('nc-zoneid', [
        inReq(LabelInstanceType, ['m5.large']),
        inReq(LabelCapacityType, ['on-demand']),
        inReq(LabelTopologyZoneID, ['usw2-az1']),
      ]),
    );
    expect(nc.metadata.labels?.[LabelTopologyZone]).toBe('us-west-2b');
    expect(nc.metadata.labels?.[LabelTopologyZoneID]).toBe('usw2-az1');
    expect(nc.status?.providerID).toMatch(/^aws:\/\/\/us-west-2b\/i-/);
    expect((await provider.get(nc.status!.providerID!)).metadata.labels?.[LabelTopologyZoneID]).toBe(
      'usw2-az1',
    );

    // a zone ID none of the class's subnets has: no offering, not a launch somewhere else with a made-up label
    const err = await provider
      .create(awsNodeClaim('nc-elsewhere', [inReq(LabelTopologyZoneID, ['usw2-az4'])]))
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err)).toBe(true);

    // a class whose status has no zone IDs (written by an older controller): a zone-id requirement finds nothing
    const old = nodeClasses.get('default')!;
    nodeClasses.set('default', {
      ...old,
      status: { ...old.status, subnets: net.subnets.map(({ id, zone }) => ({ id, zone })) },
    } as EC2NodeClass);
    const err2 = await provider
      .create(
        awsNodeClaim('nc-nozoneid', [
          inReq(LabelInstanceType, ['m5.large']),
          inReq(LabelTopologyZoneID, ['usw2-az1']),
        ]),
      )
      .catch((e: unknown) => e);
    expect(isInsufficientCapacityError(err2)).toBe(true);
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(1);
  });
});
