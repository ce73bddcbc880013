import {
  CreateFleetCommand,
  CreateLaunchTemplateCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeInstancesCommand,
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
  DescribeLaunchTemplatesCommand,
  DescribeSpotPriceHistoryCommand,
  EC2Client,
  type FleetLaunchTemplateOverridesRequest,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { GetProductsCommand, PricingClient } from '@aws-sdk/client-pricing';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from './moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

describe('AWS emulator proxy in front of moto', () => {
  let emu: AwsEmulator;
  let ec2: EC2Client;
  beforeAll(async () => {
    emu = await startAwsEmulator();
    ec2 = new EC2Client(emu.clientConfig);
  });
  afterEach(() => emu.reset());
  afterAll(() => emu?.stop());

  async function network() {
    const vpc = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
    const a = (
      await ec2.send(
        new CreateSubnetCommand({ VpcId: vpc, CidrBlock: '10.0.1.0/24', AvailabilityZone: 'us-west-2a' }),
      )
    ).Subnet!.SubnetId!;
    const b = (
      await ec2.send(
        new CreateSubnetCommand({ VpcId: vpc, CidrBlock: '10.0.2.0/24', AvailabilityZone: 'us-west-2b' }),
      )
    ).Subnet!.SubnetId!;
    const sg = (
      await ec2.send(new CreateSecurityGroupCommand({ GroupName: 'nodes', Description: 'nodes', VpcId: vpc }))
    ).GroupId!;
    const lt = (
      await ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: 'karpenter.k8s.aws/test',
          LaunchTemplateData: { ImageId: 'ami-ekslinux', SecurityGroupIds: [sg] },
        }),
      )
    ).LaunchTemplate!.LaunchTemplateName!;
    return { vpc, a, b, sg, lt };
  }

  function fleet(
    lt: string,
    capacityType: 'spot' | 'on-demand',
    overrides: Array<{ InstanceType: string; SubnetId: string }>,
  ) {
    return new CreateFleetCommand({
      Type: 'instant',
      TargetCapacitySpecification: { TotalTargetCapacity: 1, DefaultTargetCapacityType: capacityType },
      ...(capacityType === 'spot'
        ? { SpotOptions: { AllocationStrategy: 'price-capacity-optimized' } }
        : { OnDemandOptions: { AllocationStrategy: 'lowest-price' } }),
      LaunchTemplateConfigs: [
        {
          LaunchTemplateSpecification: { LaunchTemplateName: lt, Version: '$Latest' },
          Overrides: overrides as FleetLaunchTemplateOverridesRequest[],
        },
      ],
      TagSpecifications: [
        { ResourceType: 'instance', Tags: [{ Key: 'karpenter.sh/nodeclaim', Value: 'nc-1' }] },
      ],
    });
  }

  it('DryRun CreateFleet/RunInstances: 412 DryRunOperation, nothing launched, counted apart; a denied action: 403 UnauthorizedOperation', async () => {
    const n = await network();
    const dry = fleet(n.lt, 'on-demand', [{ InstanceType: 'm5.large', SubnetId: n.a }]);
    dry.input.DryRun = true;
    const err = (await ec2.send(dry).catch((e: unknown) => e)) as Error & {
      $metadata: { httpStatusCode?: number };
    };
    expect([err.name, err.message, err.$metadata.httpStatusCode]).toEqual([
      'DryRunOperation',
      'Request would have succeeded, but DryRun flag is set.',
      412,
    ]);
    const run = { MinCount: 1, MaxCount: 1, ImageId: 'ami-ekslinux', InstanceType: 'm5.large' as const };
    expect(
      ((await ec2.send(new RunInstancesCommand({ ...run, DryRun: true })).catch((e: unknown) => e)) as Error)
        .name,
    ).toBe('DryRunOperation');
    expect((await ec2.send(new DescribeInstancesCommand({}))).Reservations ?? []).toEqual([]);
    expect([
      emu.proxy.calls.get('ec2:CreateFleet'),
      emu.proxy.calls.get('ec2:CreateFleet (DryRun)'),
      emu.proxy.calls.get('ec2:RunInstances (DryRun)'),
    ]).toEqual([undefined, 1, 1]);
    // out-of-process knob: deny RunInstances, dry run or not
    const res = await fetch(`${emu.endpoint}/capenter-proxy/faults`, {
      method: 'POST',
      body: JSON.stringify({ deny: { action: 'RunInstances' } }),
    });
    expect(res.status).toBe(200);
    for (const input of [{ ...run, DryRun: true }, run]) {
      const denied = (await ec2.send(new RunInstancesCommand(input)).catch((e: unknown) => e)) as Error & {
        $metadata: { httpStatusCode?: number };
      };
      expect([denied.name, denied.$metadata.httpStatusCode]).toEqual(['UnauthorizedOperation', 403]);
      expect(denied.message).toContain('is not authorized to perform: ec2:RunInstances');
    }
    expect(() => emu.proxy.deny('ec2:RunInstances')).toThrow(
      'deny: "ec2:RunInstances" is not an EC2 action name',
    );
    emu.proxy.clearFaults();
    expect(
      ((await ec2.send(new RunInstancesCommand({ ...run, DryRun: true })).catch((e: unknown) => e)) as Error)
        .name,
    ).toBe('DryRunOperation');
  });

  it('launches the cheapest override, applies the template security groups, and reports injected capacity errors', async () => {
    const n = await network();
    // us-east-1 catalog prices: m5.large 0.096 < m5.xlarge 0.192 < m5.2xlarge 0.384 on-demand.
    const overrides = [
      { InstanceType: 'm5.2xlarge', SubnetId: n.a },
      { InstanceType: 'm5.large', SubnetId: n.b },
      { InstanceType: 'm5.xlarge', SubnetId: n.a },
    ];
    const first = await ec2.send(fleet(n.lt, 'on-demand', overrides));
    expect(first.Errors ?? []).toEqual([]);
    expect(first.Instances?.[0]?.InstanceType).toBe('m5.large');
    const id = first.Instances![0]!.InstanceIds![0]!;
    const inst = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations![0]!
      .Instances![0]!;
    expect(inst.Placement?.AvailabilityZone).toBe('us-west-2b');
    expect(inst.SecurityGroups?.map((g) => g.GroupId)).toEqual([n.sg]);
    expect(inst.Tags).toContainEqual({ Key: 'karpenter.sh/nodeclaim', Value: 'nc-1' });

    emu.proxy.injectCapacityError({ instanceType: 'm5.large', capacityType: 'on-demand' });
    const second = await ec2.send(fleet(n.lt, 'on-demand', overrides));
    expect(second.Instances?.[0]?.InstanceType).toBe('m5.xlarge');
    expect(
      second.Errors?.map((e) => [e.ErrorCode, e.LaunchTemplateAndOverrides?.Overrides?.InstanceType]),
    ).toEqual([['InsufficientInstanceCapacity', 'm5.large']]);

    emu.proxy.injectCapacityError({ code: 'VcpuLimitExceeded' });
    const none = await ec2.send(fleet(n.lt, 'on-demand', overrides));
    expect(none.Instances ?? []).toEqual([]);
    expect(none.Errors?.map((e) => e.ErrorCode)).toEqual([
      'InsufficientInstanceCapacity',
      'VcpuLimitExceeded',
      'VcpuLimitExceeded',
    ]);
    expect(emu.proxy.calls.get('ec2:CreateFleet')).toBe(3);
    // overrides failed by injected faults: m5.large in the second fleet, all three in the third
    expect(emu.proxy.capacityErrorsInjected).toBe(4);
  });

  it('spot fleets are marked spot and ordered by the spot price table', async () => {
    const n = await network();
    const table = emu.proxy.prices('us-west-2');
    table.spot.set('m5.large/us-west-2a', 0.5);
    table.spot.set('m5.large/us-west-2b', 0.01);
    const out = await ec2.send(
      fleet(n.lt, 'spot', [
        { InstanceType: 'm5.large', SubnetId: n.a },
        { InstanceType: 'm5.large', SubnetId: n.b },
      ]),
    );
    expect(out.Instances?.[0]?.Lifecycle).toBe('spot');
    const id = out.Instances![0]!.InstanceIds![0]!;
    const inst = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [id] }))).Reservations![0]!
      .Instances![0]!;
    expect(inst.Placement?.AvailabilityZone).toBe('us-west-2b');
    expect(inst.InstanceLifecycle).toBe('spot');
    const hist = await ec2.send(
      new DescribeSpotPriceHistoryCommand({
        InstanceTypes: ['m5.large'],
        ProductDescriptions: ['Linux/UNIX'],
      }),
    );
    const b = hist.SpotPriceHistory?.find((h) => h.AvailabilityZone === 'us-west-2b');
    expect(b?.SpotPrice).toBe('0.010000');
    table.spot.delete('m5.large/us-west-2a');
    table.spot.delete('m5.large/us-west-2b');
  });

  it('serves on-demand prices from the Pricing API, EKS image parameters, and throttles on request', async () => {
    const pricing = new PricingClient({ ...emu.clientConfig, region: 'us-east-1' });
    const out = await pricing.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        Filters: [{ Type: 'TERM_MATCH', Field: 'regionCode', Value: 'us-west-2' }],
        MaxResults: 100,
      }),
    );
    expect(out.PriceList?.length).toBe(100);
    expect(out.NextToken).toBeDefined();
    const m5 = await pricing.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        Filters: [{ Type: 'TERM_MATCH', Field: 'instanceType', Value: 'm5.large' }],
      }),
    );
    const doc = JSON.parse(m5.PriceList![0] as string);
    const dims = Object.values(Object.values(doc.terms.OnDemand)[0] as { priceDimensions: object }).at(0);
    expect(JSON.stringify(dims)).toContain('0.0960000000');

    const ssm = new SSMClient(emu.clientConfig);
    const arm = await ssm.send(
      new GetParameterCommand({
        Name: '/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id',
      }),
    );
    expect(arm.Parameter?.Value).toMatch(/^ami-/);
    const x86 = await ssm.send(
      new GetParameterCommand({ Name: '/aws/service/bottlerocket/aws-k8s-1.34/x86_64/latest/image_id' }),
    );
    expect(x86.Parameter?.Value).toMatch(/^ami-/);
    expect(x86.Parameter?.Value).not.toBe(arm.Parameter?.Value);

    // The client retries once (maxAttempts 2): both attempts are throttled.
    emu.proxy.throttle('DescribeLaunchTemplates', 2);
    const throttled = await ec2.send(new DescribeLaunchTemplatesCommand({})).catch((e: Error) => e);
    expect((throttled as Error).name).toBe('RequestLimitExceeded');
  });

  it('a fleet instance from a Placement.Tenancy=dedicated template is described as dedicated (moto says default)', async () => {
    const n = await network();
    const dedicated = (
      await ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: 'karpenter.k8s.aws/dedicated',
          LaunchTemplateData: {
            ImageId: 'ami-ekslinux',
            SecurityGroupIds: [n.sg],
            Placement: { Tenancy: 'dedicated' },
          },
        }),
      )
    ).LaunchTemplate!.LaunchTemplateName!;
    const d = await ec2.send(fleet(dedicated, 'on-demand', [{ InstanceType: 'm5.large', SubnetId: n.a }]));
    const s = await ec2.send(fleet(n.lt, 'on-demand', [{ InstanceType: 'm5.large', SubnetId: n.b }]));
    const ids = [d.Instances![0]!.InstanceIds![0]!, s.Instances![0]!.InstanceIds![0]!];
    const described = (
      await ec2.send(new DescribeInstancesCommand({ InstanceIds: ids }))
    ).Reservations!.flatMap((r) => r.Instances!);
    expect(
      ids.map((id) => {
        const i = described.find((x) => x.InstanceId === id)!;
        return `${i.Placement?.AvailabilityZone}/${i.Placement?.Tenancy}`;
      }),
    ).toEqual(['us-west-2a/dedicated', 'us-west-2b/default']);
  });

  it('DescribeLaunchTemplates pages with a NextToken instead of cutting at MaxResults', async () => {
    for (let i = 0; i < 20; i++) {
      await ec2.send(
        new CreateLaunchTemplateCommand({
          LaunchTemplateName: `lt-${i}`,
          LaunchTemplateData: { ImageId: 'ami-ekslinux' },
        }),
      );
    }
    expect((await ec2.send(new DescribeLaunchTemplatesCommand({}))).LaunchTemplates?.length).toBe(20);
    const p1 = await ec2.send(new DescribeLaunchTemplatesCommand({ MaxResults: 15 }));
    expect(p1.LaunchTemplates?.length).toBe(15);
    const p2 = await ec2.send(
      new DescribeLaunchTemplatesCommand({ MaxResults: 15, NextToken: p1.NextToken! }),
    );
    expect(p2.LaunchTemplates?.length).toBe(5);
    expect(p2.NextToken).toBeUndefined();
  });
});

describe('AWS emulator proxy: the fixed instance-type catalogue', () => {
  it('answers DescribeInstanceTypes / DescribeInstanceTypeOfferings from memory after the first identical request', async () => {
    const emu = await startAwsEmulator();
    const ec2 = new EC2Client(emu.clientConfig);
    try {
      const req = () =>
        new DescribeInstanceTypesCommand({ InstanceTypes: ['m5.large', 'c6a.large'], MaxResults: 5 });
      const offerings = () =>
        new DescribeInstanceTypeOfferingsCommand({
          LocationType: 'availability-zone',
          Filters: [{ Name: 'instance-type', Values: ['m5.large'] }],
        });
      const first = await ec2.send(req());
      const firstOfferings = await ec2.send(offerings());
      expect(first.InstanceTypes?.map((t) => t.InstanceType).sort()).toEqual(['c6a.large', 'm5.large']);
      expect(first.InstanceTypes?.find((t) => t.InstanceType === 'm5.large')?.VCpuInfo?.DefaultVCpus).toBe(2);
      expect(firstOfferings.InstanceTypeOfferings?.length).toBeGreaterThan(0);
      // moto gone: only answers kept in memory can come back, identical
      await emu.moto.stop();
      const again = await ec2.send(req());
      expect(again.InstanceTypes).toEqual(first.InstanceTypes);
      expect((await ec2.send(offerings())).InstanceTypeOfferings).toEqual(
        firstOfferings.InstanceTypeOfferings,
      );
      // a different request is not in memory: it goes to (the stopped) moto and fails
      const other = await ec2
        .send(new DescribeInstanceTypesCommand({ InstanceTypes: ['r5.large'] }))
        .catch((e: Error) => e);
      expect(other).toBeInstanceOf(Error);
      expect(emu.proxy.inFlight, 'every answered request, failed ones too, left the in-flight count').toBe(0);
    } finally {
      ec2.destroy();
      await emu.stop();
    }
  }, 60_000);
});
