/**
 * The chart's management-cluster RBAC of the KarpenterMachinePool mode (`charts/capenter/files/clusterrole-rules-capi.yaml`,
 * rendered with `capi.enabled`) grants every request the KarpenterMachinePool controller makes: the controller runs
 * on a recording management client (its own informers) through a pool's life — created, reconciled to its NodePool
 * and EC2NodeClass, bad input (a missing bootstrap Secret: a Warning Event), deleted through its finalizer — and
 * each recorded (verb, group, resource) must be allowed by the file's rules. The identity reads are recorded by
 * test/capi/identity.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIStack, startCAPIStack } from '../../src/embedded/capi.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { allows, type PolicyRule, RecordingClient, requestKeys } from '../cli/api-requests.ts';
import { eventually } from '../e2e/harness.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let stack: CAPIStack | undefined;
let recorder: RecordingClient | undefined;
afterAll(async () => {
  await stack?.stop();
  recorder?.close();
});

describe('chart RBAC of the KarpenterMachinePool mode', () => {
  it('files/clusterrole-rules-capi.yaml grants every management-cluster request of the KMP controller', async () => {
    stack = await startCAPIStack({
      withOperator: false,
      env: { machinePoolStandIn: false },
      managementClient: (env) => {
        recorder = RecordingClient.fromKubeconfigText(env.management.kubeconfig);
        return recorder;
      },
    });
    const { env } = stack;
    await env.writeKubeconfigSecret('default', 'demo');
    const objs = sampleCAPIObjects();
    await applyObjects(
      env.mgmt,
      objs.filter((o) => o.kind !== 'Secret'),
    );
    const kmpOf = async () =>
      (await env.mgmt.tryGet('KarpenterMachinePool', 'workers', 'default')) as
        | KarpenterMachinePool
        | undefined;
    await eventually(
      async () => (await kmpOf())?.status?.conditions?.find((c) => c.reason === 'WaitingForBootstrapData'),
      'KMP waiting for its bootstrap Secret',
    );
    await applyObjects(
      env.mgmt,
      objs.filter((o) => o.kind === 'Secret'),
    );
    await eventually(async () => env.workload.client.tryGet('NodePool', 'workers'), 'NodePool generated');
    await eventually(async () => (await kmpOf())?.status?.ready === true, 'KMP ready');
    await env.mgmt.delete('KarpenterMachinePool', 'workers', 'default');
    await eventually(async () => !(await kmpOf()), 'KMP finalized');

    const rules = parse(
      readFileSync(join(ROOT, 'charts/capenter/files/clusterrole-rules-capi.yaml'), 'utf8'),
    ) as PolicyRule[];
    const requests = (recorder as RecordingClient).requests;
    const granted = (r: (typeof requests)[number]) =>
      allows(rules, r) ||
      rules.some(
        (x) => x.apiGroups.includes(r.group) && x.resources.includes('*') && x.verbs.includes(r.verb),
      );
    expect(requestKeys(requests.filter((r) => !granted(r)))).toEqual([]);
    // what this life of a pool makes (a Secret informer among them: list and watch of Secrets, cluster-wide)
    expect(requestKeys(requests)).toEqual([
      'create core events',
      'get bootstrap.cluster.x-k8s.io kubeadmconfigs',
      'get cluster.x-k8s.io clusters',
      'get core secrets',
      'get infrastructure.cluster.x-k8s.io awsclusters',
      'get infrastructure.cluster.x-k8s.io karpentermachinepools',
      'list cluster.x-k8s.io clusters',
      'list cluster.x-k8s.io machinepools',
      'list cluster.x-k8s.io machines',
      'list core secrets',
      'list infrastructure.cluster.x-k8s.io awsclusters',
      'list infrastructure.cluster.x-k8s.io karpentermachinepools',
      'patch cluster.x-k8s.io machinepools',
      'patch core events',
      'patch infrastructure.cluster.x-k8s.io karpentermachinepools',
      'patch infrastructure.cluster.x-k8s.io karpentermachinepools/status',
      'watch cluster.x-k8s.io clusters',
      'watch cluster.x-k8s.io machinepools',
      'watch core secrets',
      'watch infrastructure.cluster.x-k8s.io awsclusters',
      'watch infrastructure.cluster.x-k8s.io karpentermachinepools',
    ]);
  });
});
