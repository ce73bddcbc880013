import { CreateVpcCommand, DescribeVpcsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type MotoServer, startMoto } from './moto.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

describe('moto harness', () => {
  let moto: MotoServer;
  beforeAll(async () => {
    moto = await startMoto();
  });
  afterAll(() => moto?.stop());

  it('serves EC2 on a loopback port and reset drops what was created', async () => {
    expect(moto.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ec2 = new EC2Client(moto.clientConfig);
    const created = await ec2.send(new CreateVpcCommand({ CidrBlock: '10.9.0.0/16' }));
    const ids = async () => ((await ec2.send(new DescribeVpcsCommand({}))).Vpcs ?? []).map((v) => v.VpcId);
    expect(await ids()).toContain(created.Vpc!.VpcId);
    await moto.reset();
    expect(await ids()).not.toContain(created.Vpc!.VpcId);
    expect(moto.env.AWS_ENDPOINT_URL).toBe(moto.endpoint);
  });
});
