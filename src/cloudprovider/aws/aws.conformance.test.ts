import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import { describeCloudProviderConformance } from '../conformance/suite.ts';
import { awsNodeClaim, awsProviderBeds } from './testing.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

const beds = awsProviderBeds(() => emu.clientConfig);

describeCloudProviderConformance('aws (moto + proxy)', async () => {
  const { provider } = await beds(['us-west-2a', 'us-west-2b', 'us-west-2c']);
  let n = 0;
  return {
    provider,
    nodeClaim: (o = {}) => {
      const nc = awsNodeClaim(o.name ?? `default-${++n}`, o.requirements ?? []);
      if (o.labels) nc.metadata.labels = { ...nc.metadata.labels, ...o.labels };
      return nc;
    },
    markUnavailable: (it, zone, ct) => provider.markUnavailable(it, zone, ct),
  };
});
