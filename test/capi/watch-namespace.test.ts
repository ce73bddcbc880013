/**
 * Issue 29: `CAPI_WATCH_NAMESPACE` (Cluster API's `--namespace`; src/operator/capi-settings.ts). The KMP
 * controller runs on a recording management client with its informers restricted to `team-a`, beside the same pool
 * in `team-b`: the `team-a` pool reconciles to its NodePool and is ready, the `team-b` one is never touched (no
 * finalizer, no status, the same resourceVersion, no request in `team-b` at all), every list and watch — the Secret
 * informer's among them — is namespaced to `team-a`, and the chart's rules with `capi.watchNamespace` (the ClusterRole
 * without Secrets, a Role of `team-a` with them) grant every request.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import type { NodePool } from '../../src/apis/karpenter.ts';
import { runController } from '../../src/cli/controller.ts';
import { KarpenterMachinePoolController } from '../../src/controllers/capi/controller.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIStack, startCAPIStack } from '../../src/embedded/capi.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import { SharedInformers } from '../../src/kube/informer.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { resolveCAPISettings } from '../../src/operator/capi-settings.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { allows, type PolicyRule, RecordingClient, requestKeys } from '../cli/api-requests.ts';
import { eventually } from '../e2e/harness.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let stack: CAPIStack;
let recorder: RecordingClient;
beforeAll(async () => {
  stack = await startCAPIStack({
    withOperator: false,
    env: { machinePoolStandIn: false },
    watchNamespace: 'team-a',
    managementClient: (env) => {
      recorder = RecordingClient.fromKubeconfigText(env.management.kubeconfig);
      return recorder;
    },
  });
  for (const name of ['team-a', 'team-b'])
    await stack.env.mgmt.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
});
afterAll(async () => {
  await stack?.stop();
  recorder?.close();
});

const kmpIn = async (namespace: string) =>
  (await stack.env.mgmt.tryGet('KarpenterMachinePool', 'workers', namespace)) as
    | KarpenterMachinePool
    | undefined;

describe('CAPI_WATCH_NAMESPACE: the KMP controller of one management namespace', () => {
  it('reconciles the pool of team-a; the same pool in team-b is never touched, nor is anything in team-b read', async () => {
    const { env } = stack;
    // team-b first: its pool exists before and after team-a's reconciles
    await env.writeKubeconfigSecret('team-b', 'demo');
    await applyObjects(env.mgmt, sampleCAPIObjects({ namespace: 'team-b' }));
    const b0 = await kmpIn('team-b');
    await env.writeKubeconfigSecret('team-a', 'demo');
    await applyObjects(env.mgmt, sampleCAPIObjects({ namespace: 'team-a' }));
    await eventually(async () => (await kmpIn('team-a'))?.status?.ready === true, 'team-a KMP ready');
    const np = (await env.workload.client.get('NodePool', 'workers')) as NodePool;
    expect(np.metadata.labels?.['capenter.sh/karpentermachinepool-namespace']).toBe('team-a');
    const a = await kmpIn('team-a');
    expect(a?.metadata.finalizers).toEqual(['capenter.sh/karpentermachinepool']);

    // a change to team-b's bootstrap Secret and MachinePool reaches no informer; a direct reconcile of its key is a no-op
    await env.mgmt.patch(
      'Secret',
      'workers-bootstrap',
      'team-b',
      { metadata: { annotations: { touched: 'yes' } } },
      { type: 'merge' },
    );
    expect(await stack.kmp.reconcile('team-b/workers')).toEqual({});
    // a team-a reconcile after the team-b change: had team-b been queued, it would have run by then
    await stack.kmp.reconcile('team-a/workers');
    const b = await kmpIn('team-b');
    expect(b?.metadata.resourceVersion).toBe(b0?.metadata.resourceVersion);
    expect(b?.metadata.finalizers).toBeUndefined();
    expect(b?.status).toBeUndefined();

    const reqs = recorder.requests;
    expect(reqs.filter((r) => r.namespace === 'team-b')).toEqual([]);
    // every list and watch is of team-a: the Secret informer's too
    const listWatch = reqs.filter((r) => r.verb === 'list' || r.verb === 'watch');
    expect(requestKeys(listWatch)).toEqual([
      'list cluster.x-k8s.io clusters',
      'list cluster.x-k8s.io machinepools',
      'list cluster.x-k8s.io machines',
      'list core secrets',
      'list infrastructure.cluster.x-k8s.io awsclusters',
      'list infrastructure.cluster.x-k8s.io karpentermachinepools',
      'watch cluster.x-k8s.io clusters',
      'watch cluster.x-k8s.io machinepools',
      'watch core secrets',
      'watch infrastructure.cluster.x-k8s.io awsclusters',
      'watch infrastructure.cluster.x-k8s.io karpentermachinepools',
    ]);
    expect([...new Set(listWatch.map((r) => r.namespace))]).toEqual(['team-a']);
    const secrets = reqs.filter((r) => r.resource === 'secrets');
    expect(requestKeys(secrets)).toEqual(['get core secrets', 'list core secrets', 'watch core secrets']);
    expect([...new Set(secrets.map((r) => r.namespace))]).toEqual(['team-a']);
  });

  it("the chart's rules with capi.watchNamespace grant every request: Secrets by the Role of team-a, the rest by the ClusterRole", () => {
    const rules = parse(
      readFileSync(join(ROOT, 'charts/capenter/files/clusterrole-rules-capi.yaml'), 'utf8'),
    ) as PolicyRule[];
    // as templates/clusterrole.yaml and role.yaml split them
    const role = rules.filter((r) => r.resources.includes('secrets'));
    const cluster = rules.filter((r) => !r.resources.includes('secrets'));
    expect(role).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]);
    const granted = (r: (typeof recorder.requests)[number]) =>
      r.resource === 'secrets'
        ? r.namespace === 'team-a' && allows(role, r)
        : allows(cluster, r) ||
          cluster.some(
            (x) => x.apiGroups.includes(r.group) && x.resources.includes('*') && x.verbs.includes(r.verb),
          );
    expect(requestKeys(recorder.requests.filter((r) => !granted(r)))).toEqual([]);
  });
});

describe('CAPI_WATCH_NAMESPACE setting', () => {
  it('takes one namespace name; a list or a bad name is refused naming the variable', () => {
    expect(resolveCAPISettings({ env: {} })).toEqual({ capiWatchNamespace: '' });
    expect(resolveCAPISettings({ env: { CAPI_WATCH_NAMESPACE: 'team-a' } })).toEqual({
      capiWatchNamespace: 'team-a',
    });
    expect(resolveCAPISettings({ flags: { capiWatchNamespace: 'team-b' }, env: {} })).toEqual({
      capiWatchNamespace: 'team-b',
    });
    expect(() => resolveCAPISettings({ env: { CAPI_WATCH_NAMESPACE: 'team-a,team-b' } })).toThrow(
      /CAPI_WATCH_NAMESPACE.*one namespace only \(as Cluster API --namespace\), not a list/,
    );
    expect(() => resolveCAPISettings({ env: { CAPI_WATCH_NAMESPACE: 'Team_A' } })).toThrow(
      /CAPI_WATCH_NAMESPACE.*not a namespace name/,
    );
  });

  it('without --capi-management-kubeconfig it warns that it has no effect; a bad value exits 2 before connecting', async () => {
    const run = async (env: Record<string, string>, flags: Record<string, unknown> = {}) => {
      let stderr = '';
      const code = await runController(
        { kubeconfig: '/nonexistent/capenter-kubeconfig', ...flags },
        { env, stderr: (t) => (stderr += t) },
      );
      return { code, lines: stderr.split('\n') };
    };
    const alone = await run({ CAPI_WATCH_NAMESPACE: 'team-a' });
    expect(alone.lines[0]).toBe(
      'warning: CAPI_WATCH_NAMESPACE=team-a: has no effect without --capi-management-kubeconfig (no KarpenterMachinePool controller runs)',
    );
    expect(alone.lines[1]).toMatch(/^error: .*capenter-kubeconfig/);
    const withCapi = await run({}, { capiWatchNamespace: 'team-a', capiManagementKubeconfig: '/m' });
    expect(withCapi.lines[0]).toMatch(/^error: .*capenter-kubeconfig/);
    const bad = await run({ CAPI_WATCH_NAMESPACE: 'a,b' });
    expect(bad.code).toBe(2);
    expect(bad.lines[0]).toMatch(/^error: CAPI_WATCH_NAMESPACE: "a,b" is not valid \(one namespace only/);
  });

  it('the controller refuses informers that watch another scope than its watch namespace', () => {
    const { env } = stack;
    const deps = {
      client: env.mgmt,
      clock: env.clock,
      logger: silentLogger(),
      recorder: new EventRecorder(env.mgmt, { clock: env.clock, component: 'capenter-capi', host: 't' }),
      bootstrapStore: stack.store,
      instances: { list: async () => [], terminate: async () => {} } as never,
    };
    expect(
      () =>
        new KarpenterMachinePoolController({
          ...deps,
          informers: new SharedInformers(env.mgmt, { clock: env.clock }),
          watchNamespace: 'team-a',
        }),
    ).toThrow(
      'KarpenterMachinePool controller: watchNamespace is "team-a" but its management informers watch all namespaces; build them with new SharedInformers(client, { clock, namespace: watchNamespace })',
    );
    expect(
      () =>
        new KarpenterMachinePoolController({
          ...deps,
          informers: new SharedInformers(env.mgmt, { clock: env.clock, namespace: 'team-b' }),
        }),
    ).toThrow(
      'watchNamespace is unset (all namespaces) but its management informers watch namespace "team-b"',
    );
  });
});
