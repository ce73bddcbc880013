/**
 * A fourth provider from one folder (test/fixtures/provider-demo: a module and its provider) passes the
 * CloudProvider conformance suite and runs `capenter start --cloud-provider demo` through the CLI's own `runStart`,
 * registered beside the built-in modules, to a settled cluster.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../scripts/build.ts';
import type { NodeClaim } from '../src/apis/karpenter.ts';
import { LabelNodePool } from '../src/apis/labels.ts';
import { runStart } from '../src/cli/start.ts';
import { describeCloudProviderConformance } from '../src/cloudprovider/conformance/suite.ts';
import { PROVIDER_MODULES } from '../src/cloudprovider/modules.ts';
import { checkSettingList } from '../src/config/settings.ts';
import type { StartSummary } from '../src/embedded/summary.ts';
import { FakeClock } from '../src/kube/clock.ts';
import { demoModule } from './fixtures/provider-demo/module.ts';
import { DemoCloudProvider, DemoNodeClass } from './fixtures/provider-demo/provider.ts';

describeCloudProviderConformance('demo', async () => {
  const provider = new DemoCloudProvider({
    zones: ['demo-1a', 'demo-1b'],
    clock: new FakeClock(),
    nodes: { create: async (n) => n, delete: async () => {} },
  });
  let n = 0;
  return {
    provider,
    nodeClaim: (o = {}): NodeClaim => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: {
        name: o.name ?? `demo-${++n}`,
        labels: { [LabelNodePool]: 'default', ...(o.labels ?? {}) },
      },
      spec: { nodeClassRef: { ...DemoNodeClass, name: 'default' }, requirements: o.requirements ?? [] },
    }),
    markUnavailable: (it, zone, ct) => provider.markUnavailable(it, zone, ct),
  };
});

describe('a fourth provider module', () => {
  const modules = [...PROVIDER_MODULES, demoModule];

  it('adds its settings and kinds without clashing with the built-in modules', () => {
    expect(() => checkSettingList(modules.flatMap((m) => m.settings))).not.toThrow();
    expect(
      demoModule.configure({ env: { DEMO_ZONES: 'a, b' } }, { region: 'us-east-1', clusterName: 'c' }),
    ).toEqual({
      zones: ['a', 'b'],
    });
  });

  it('capenter start --cloud-provider demo settles: 6 pods of 1.5 vCPU on a demo.8x and a demo.2x in DEMO_ZONES', async () => {
    let out = '';
    let err = '';
    const code = await runStart(
      {
        cloudProvider: 'demo',
        filename: [join(ROOT, 'test', 'fixtures', 'provider-demo', 'cluster.yaml')],
        exitWhenSettled: true,
        output: 'json',
        timeout: '60',
      },
      {
        stdout: (t) => (out += t),
        stderr: (t) => (err += t),
        progressIntervalMs: 250,
        env: { DEMO_ZONES: 'demo-z1' },
      },
      modules,
    );
    expect(code, err).toBe(0);
    const s = JSON.parse(out) as StartSummary;
    expect(s.settled).toBe(true);
    expect(s.pods).toEqual({ total: 6, running: 6, pending: 0 });
    expect(s.totals.nodeClaims).toBe(2);
    expect(s.totals.nodes).toBe(2);
    expect(s.totals.pods).toBe(6);
    expect(s.nodeClaims.map((r) => [r.instanceType, r.zone, r.capacityType, r.pods]).sort()).toEqual([
      ['demo.2x', 'demo-z1', 'on-demand', 1],
      ['demo.8x', 'demo-z1', 'on-demand', 5],
    ]);
  }, 90_000);

  it('an unknown provider is refused with the registered names', async () => {
    let err = '';
    const code = await runStart(
      { cloudProvider: 'gce' },
      { stdout: () => {}, stderr: (t) => (err += t) },
      modules,
    );
    expect(code).toBe(2);
    expect(err).toBe('error: --cloud-provider must be "kwok", "aws", "clusterapi" or "demo", got "gce"\n');
  });
});
