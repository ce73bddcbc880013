/**
 * A fourth provider from one folder (test/fixtures/provider-demo: a module and its provider) passes the
 * CloudProvider conformance suite and runs `capenter start --cloud-provider demo` through the CLI's own `runStart`,
 * registered beside the built-in modules, to a settled cluster.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../scripts/build.ts';
import { crdFor, type JSONSchemaNode } from '../src/apis/crds.ts';
import type { NodeClaim } from '../src/apis/karpenter.ts';
import { LabelNodePool } from '../src/apis/labels.ts';
import { registerProviderKind } from '../src/apis/provider-kinds.ts';
import { runStart } from '../src/cli/start.ts';
import { describeCloudProviderConformance } from '../src/cloudprovider/conformance/suite.ts';
import { ownKindsOf, withModuleKinds } from '../src/cloudprovider/module.ts';
import { PROVIDER_MODULES } from '../src/cloudprovider/modules.ts';
import { checkSettingList } from '../src/config/settings.ts';
import type { StartSummary } from '../src/embedded/summary.ts';
import { KubeClient } from '../src/kube/client.ts';
import { FakeClock } from '../src/kube/clock.ts';
import { silentLogger } from '../src/kube/logger.ts';
import { checkCRDs, installCRDs, requiredCRDs, resourceOf } from '../src/operator/crds.ts';
import { createOperator } from '../src/operator/operator.ts';
import { embeddedOptions } from '../src/operator/options.ts';
import { startEmbeddedCluster } from '../src/sim/apiserver/index.ts';
import { whenObjects } from '../src/testing/watch.ts';
import { DemoNodeClassAPI, DemoNodeClassKind } from './fixtures/provider-demo/api.ts';
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
    expect(ownKindsOf(demoModule.nodeClassKinds).map((k) => `${k.group}/${k.version}/${k.kind}`)).toEqual([
      'karpenter.demo.sh/v1alpha1/DemoNodeClass',
    ]);
    expect(() => ownKindsOf([{ ...DemoNodeClassKind, version: 'v1' }])).toThrow(
      "NodeClass kind karpenter.demo.sh/v1 DemoNodeClass: api declares karpenter.demo.sh/v1alpha1 DemoNodeClass; make api's group, version and kind the same",
    );
    expect(() => registerProviderKind({ ...DemoNodeClassAPI, group: 'karpenter.kwok.sh' })).toThrow(
      'NodeClass kind DemoNodeClass: group "karpenter.kwok.sh" is capenter\'s own; declare the kind in a group of the provider (e.g. karpenter.<provider>.sh)',
    );
  });

  it('capenter start --cloud-provider demo settles with a DemoNodeClass: 6 pods of 1.5 vCPU, at most 3 a node, on three demo.4x in DEMO_ZONES', async () => {
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
    expect(s.totals.nodeClaims).toBe(3);
    expect(s.totals.nodes).toBe(3);
    expect(s.totals.pods).toBe(6);
    // the DemoNodeClass's maxPods 3 rules out a demo.8x with 5 pods ($0.20/h without it): three demo.4x ($0.24/h)
    expect(s.nodeClaims.map((r) => [r.instanceType, r.zone, r.capacityType, r.pods]).sort()).toEqual([
      ['demo.4x', 'demo-z1', 'on-demand', 2],
      ['demo.4x', 'demo-z1', 'on-demand', 2],
      ['demo.4x', 'demo-z1', 'on-demand', 2],
    ]);
  }, 90_000);

  it('capenter start --cloud-provider demo refuses a DemoNodeClass with a bad field, naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-demo-'));
    try {
      const file = join(dir, 'bad.yaml');
      writeFileSync(
        file,
        'apiVersion: karpenter.demo.sh/v1alpha1\nkind: DemoNodeClass\nmetadata:\n  name: bad\nspec:\n  maxPods: 0\n  color: red\n',
      );
      let err = '';
      const code = await runStart(
        { cloudProvider: 'demo', filename: [file], exitWhenSettled: true },
        { stdout: () => {}, stderr: (t) => (err += t) },
        modules,
      );
      expect(code).toBe(2);
      expect(err.replaceAll(dir, '<dir>')).toBe(
        'error: <dir>/bad.yaml:6 (document 0): DemoNodeClass "bad": spec.maxPods: Invalid value 0: must be greater than or equal to 1 (rule: minimum: 1)\n' +
          'error: <dir>/bad.yaml:7 (document 0): DemoNodeClass "bad": spec.color: Forbidden: unknown field "color" (rule: unknown field)\n' +
          'capenter: 2 invalid input(s); nothing started\n',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('its CRD: generated from its schema, applied by installCRDs (--install-crds), required, enforced by the API server', async () => {
    const crd = crdFor(DemoNodeClassAPI);
    expect(crd.metadata.name).toBe('demonodeclasses.karpenter.demo.sh');
    const spec = crd.spec.versions[0]?.schema.openAPIV3Schema.properties as Record<string, JSONSchemaNode>;
    expect(((spec.spec?.properties ?? {}) as Record<string, JSONSchemaNode>).maxPods).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 110,
    });
    const srv = await startEmbeddedCluster();
    const client = KubeClient.fromKubeconfig(srv.kubeconfig);
    try {
      const required = requiredCRDs([DemoNodeClass], [DemoNodeClassAPI]);
      expect(required.map((r) => r.name)).toEqual([
        'nodepools.karpenter.sh',
        'nodeclaims.karpenter.sh',
        'demonodeclasses.karpenter.demo.sh',
      ]);
      expect((await checkCRDs(client, required)).missing).toContain('demonodeclasses.karpenter.demo.sh');
      const names = await installCRDs(client, undefined, [DemoNodeClassAPI]);
      expect(names.at(-1)).toBe('demonodeclasses.karpenter.demo.sh');
      expect(await checkCRDs(client, required)).toEqual({ missing: [] });
      const rt = resourceOf(DemoNodeClassAPI);
      await expect(
        client.create({
          apiVersion: 'karpenter.demo.sh/v1alpha1',
          kind: 'DemoNodeClass',
          metadata: { name: 'x' },
          spec: { maxPods: 0 },
        }),
      ).rejects.toThrow(/spec\.maxPods/);
      client.registry.register(rt);
      await client.create({
        apiVersion: 'karpenter.demo.sh/v1alpha1',
        kind: 'DemoNodeClass',
        metadata: { name: 'ok' },
        spec: { maxPods: 3 },
      });
      expect((await client.get(rt, 'ok')).spec).toEqual({ maxPods: 3 });
    } finally {
      client.close();
      await srv.stop();
    }
  });

  it('capenter controller --install-crds: applies the DemoNodeClass CRD, the NodeClass controllers make one Ready', async () => {
    const srv = await startEmbeddedCluster();
    const client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const setup = withModuleKinds(
      demoModule,
      await demoModule.load({ zones: ['demo-1a'] }, { client, logger: silentLogger(), region: 'us-east-1' }),
    );
    const op = createOperator({
      client,
      logger: silentLogger(),
      options: { ...embeddedOptions(), leaderElect: false },
      provider: setup,
      installCRDs: true,
      defaultMetrics: false,
      tuning: { crdRecheckSeconds: 0.05 },
    });
    try {
      await op.start();
      await op.informers.waitForSync(); // once the CRDs, the DemoNodeClass one included, are applied and served
      expect(op.readiness()).toBeUndefined();
      await client.create({
        apiVersion: 'karpenter.demo.sh/v1alpha1',
        kind: 'DemoNodeClass',
        metadata: { name: 'default' },
        spec: { maxPods: 7 },
      });
      const ready = await whenObjects(client, 'DemoNodeClass.karpenter.demo.sh', (ncs) =>
        ncs.find((nc) =>
          (
            nc.status as { conditions?: Array<{ type: string; status: string }> } | undefined
          )?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ),
      );
      const conds = (ready.status as { conditions: Array<{ type: string; status: string }> }).conditions;
      expect(conds.map((c) => `${c.type}=${c.status}`).sort()).toEqual([
        'Ready=True',
        'ValidationSucceeded=True',
      ]);
      expect(op.cluster.getNodeClass({ ...DemoNodeClass, name: 'default' })?.spec).toEqual({ maxPods: 7 });
    } finally {
      await op.stop();
      client.close();
      await srv.stop();
    }
  });

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
