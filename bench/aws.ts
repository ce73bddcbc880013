/**
 * aws provider benchmark (`npm run bench -- --sizes 0 --only aws`): 100 NodeClaims launched through the aws
 * CloudProvider against moto behind the emulator proxy (scripts/install-moto.sh installs moto on first use).
 * Reports launches per second (all 100 `create` calls started together, wall clock from the first to the last
 * resolving, after a warm-up that fetched instance types and prices) and EC2 API calls per launched NodeClaim,
 * counted by the proxy: amortized over the whole run including the start-up fetches, and for the launches alone.
 * Target: ≤ 3 EC2 calls per launched NodeClaim amortized.
 */
import type { EC2NodeClass, NodeClaim } from '../src/apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType } from '../src/apis/labels.ts';
import {
  awsNodeClaim,
  awsTestProvider,
  createTestNetwork,
  testNodeClass,
} from '../src/cloudprovider/aws/testing.ts';
import { startAwsEmulator } from '../test/aws/moto.ts';

/** Result of {@link runAwsBench}. */
export interface AwsBenchResult {
  nodeClaims: number;
  launched: number;
  /** Launches per second (wall clock of the 100 concurrent creates). */
  launchesPerSecond: number;
  launchSeconds: number;
  /** EC2 calls during the launches / launched NodeClaims. */
  ec2CallsPerLaunchWarm: number;
  /** All EC2 calls of the run (start-up instance types, spot prices, launch templates, fleets) / launched. */
  ec2CallsPerLaunchAmortized: number;
  /** EC2 calls for one get + one delete of every launched NodeClaim (batched), per NodeClaim. */
  ec2CallsPerGetAndDelete: number;
  /** Pricing API calls (on-demand prices) in the run. */
  pricingCalls: number;
  /** EC2 calls by action over the whole run. */
  ec2Calls: Record<string, number>;
  distinctInstanceTypes: number;
  launchTemplates: number;
}

/** Runs the benchmark with `count` NodeClaims (default 100). */
export async function runAwsBench(count = 100): Promise<AwsBenchResult> {
  const emu = await startAwsEmulator();
  try {
    const nodeClasses = new Map<string, EC2NodeClass>();
    const { provider, clients } = awsTestProvider(emu.clientConfig, nodeClasses);
    const net = await createTestNetwork(clients.ec2, clients.iam, ['us-west-2a', 'us-west-2b', 'us-west-2c']);
    nodeClasses.set('default', testNodeClass('default', net));
    emu.proxy.calls.clear();
    // Start-up: instance types and prices (what the first provisioning loop triggers).
    await provider.instanceTypeProvider.getInventory();
    await provider.pricing.ensureFresh();
    const before = emu.proxy.callCount('ec2');
    // A realistic request: the general-purpose families a default NodePool would allow, both capacity types.
    const types = [
      'm5.large',
      'm5.xlarge',
      'm6i.large',
      'm6i.xlarge',
      'c5.large',
      'c5.xlarge',
      'c6i.large',
      'r5.large',
    ];
    const claims = Array.from({ length: count }, (_, i) =>
      awsNodeClaim(`bench-${i}`, [
        { key: LabelInstanceType, operator: 'In', values: types },
        {
          key: LabelCapacityType,
          operator: 'In',
          values: i % 2 === 0 ? ['spot', 'on-demand'] : ['on-demand'],
        },
      ]),
    );
    const t0 = performance.now();
    const results = await Promise.allSettled(claims.map((c) => provider.create(c)));
    const launchSeconds = (performance.now() - t0) / 1000;
    const launched = results.filter((r) => r.status === 'fulfilled');
    const warmCalls = emu.proxy.callCount('ec2') - before;
    const all = emu.proxy.callCount('ec2');
    const ec2Calls: Record<string, number> = {};
    for (const [k, v] of emu.proxy.calls) if (k.startsWith('ec2:')) ec2Calls[k.slice(4)] = v;
    // The rest of a NodeClaim's life: one get (registration) and one delete (termination) each, all concurrent.
    const okClaims = launched.map((r) => (r as PromiseFulfilledResult<NodeClaim>).value);
    const l0 = emu.proxy.callCount('ec2');
    await Promise.all(okClaims.map((c) => provider.get(c.status!.providerID!)));
    await Promise.all(okClaims.map((c) => provider.delete(c)));
    const lifecycleCalls = emu.proxy.callCount('ec2') - l0;
    const typesLaunched = new Set(
      launched.map(
        (r) =>
          (r as PromiseFulfilledResult<{ metadata: { labels?: Record<string, string> } }>).value.metadata
            .labels?.[LabelInstanceType],
      ),
    );
    clients.destroy();
    return {
      nodeClaims: count,
      launched: launched.length,
      launchesPerSecond: Math.round((launched.length / launchSeconds) * 10) / 10,
      launchSeconds: Math.round(launchSeconds * 1000) / 1000,
      ec2CallsPerLaunchWarm: Math.round((warmCalls / Math.max(1, launched.length)) * 100) / 100,
      ec2CallsPerLaunchAmortized: Math.round((all / Math.max(1, launched.length)) * 100) / 100,
      ec2CallsPerGetAndDelete: Math.round((lifecycleCalls / Math.max(1, okClaims.length)) * 100) / 100,
      pricingCalls: emu.proxy.callCount('pricing'),
      ec2Calls,
      distinctInstanceTypes: typesLaunched.size,
      launchTemplates: provider.launchTemplates.cachedNames().length,
    };
  } finally {
    await emu.stop();
  }
}

/** Human-readable lines for `npm run bench`. */
export function formatAwsBench(r: AwsBenchResult): string {
  return [
    `  ${r.launched}/${r.nodeClaims} NodeClaims launched in ${r.launchSeconds} s: ${r.launchesPerSecond} launches/s (moto + proxy on loopback)`,
    `  EC2 calls per launched NodeClaim: ${r.ec2CallsPerLaunchAmortized} amortized incl. start-up (target <= 3: ${
      r.ec2CallsPerLaunchAmortized <= 3 ? 'met' : 'MISSED'
    }), ${r.ec2CallsPerLaunchWarm} for the launches alone; get + delete of each: ${r.ec2CallsPerGetAndDelete} more`,
    `  EC2 calls by action (launches): ${Object.entries(r.ec2Calls)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}; Pricing API calls ${r.pricingCalls}`,
    `  ${r.distinctInstanceTypes} distinct instance types, ${r.launchTemplates} launch templates`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runAwsBench(Number(process.argv[2] ?? 100));
  process.stdout.write(`${formatAwsBench(r)}\n`);
}
