import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { type AwsEmulator, startAwsEmulator } from '../../../test/aws/moto.ts';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { describeCloudProviderConformance } from '../conformance/suite.ts';
import type { InstanceTypeInventory } from './instancetypes.ts';
import type { AwsPricing } from './pricing.ts';
import { awsNodeClaim, awsTestProvider, createTestNetwork, testNodeClass } from './testing.ts';

// moto answers slowly on a loaded machine (its serialiser; DescribeInstanceTypes is 5.5 MB): under `stress --cpu 4`
// beside other tests a first test took over 60 s. A test may be slow, never flaky (issue 24).
vi.setConfig({ testTimeout: 240_000, hookTimeout: 240_000 });

let emu: AwsEmulator;
let shared: { pricing: AwsPricing; inventory: InstanceTypeInventory } | undefined;
beforeAll(async () => {
  emu = await startAwsEmulator();
});
afterEach(() => emu.reset());
afterAll(() => emu?.stop());

describeCloudProviderConformance('aws (moto + proxy)', async () => {
  const nodeClasses = new Map<string, EC2NodeClass>();
  const { provider, clients } = awsTestProvider(emu.clientConfig, nodeClasses, shared);
  // Prices and instance types do not depend on moto's state: fetch them once per file.
  shared ??= {
    pricing: provider.pricing,
    inventory: await provider.instanceTypeProvider.getInventory(),
  };
  const net = await createTestNetwork(clients.ec2, clients.iam, ['us-west-2a', 'us-west-2b', 'us-west-2c']);
  nodeClasses.set('default', testNodeClass('default', net));
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
