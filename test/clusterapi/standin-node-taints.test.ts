/**
 * The MachineDeployment stand-in removes CAPI's `node.cluster.x-k8s.io/uninitialized` taint the way cluster-api
 * v1.14 `patchNode` does: a patch with the Node's resourceVersion (MergeFromWithOptimisticLock). A registration that
 * removes `karpenter.sh/unregistered` between the stand-in's read and its write must not be undone: the stale write
 * re-added the taint to a registered Node, whose pods then never bound (CI, `test/clusterapi/e2e.test.ts` max-size:
 * 16 of 20 pods Running, one Node left with only `karpenter.sh/unregistered`).
 */
import { afterEach, expect, it } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import { type CAPIEnvironment, startCAPIEnvironment } from '../../src/embedded/cluster.ts';
import { machineDeploymentNodeShape } from '../../src/embedded/rules.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { createClusterAPIObjects, sampleClusterAPIObjects } from '../../src/sim/capi/clusterapi.ts';
import { CAPIMachineDeploymentStandIn } from '../../src/sim/capi/machinedeployment.ts';

let env: CAPIEnvironment | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

it('a registration between the stand-in reading a Node and removing the uninitialized taint is not undone', async () => {
  env = await startCAPIEnvironment({ workload: { kubeletReadyDelaySeconds: 0 }, machinePoolStandIn: false });
  const wl = env.workload.client;
  let raced = 0;
  // the workload client the stand-in uses: right after it reads a Node that still carries the registration taint,
  // "registration" (another writer) removes that taint, as capenter's registration step does
  const racing = new Proxy(wl, {
    get(target, prop, receiver) {
      if (prop !== 'tryGet') return Reflect.get(target, prop, receiver);
      return async (...args: Parameters<KubeClient['tryGet']>) => {
        const got = (await target.tryGet(...args)) as Node | undefined;
        if (args[0] === 'Node' && got?.spec?.taints?.some((t) => t.key === 'karpenter.sh/unregistered')) {
          raced++;
          await target.patch(
            'Node',
            got.metadata.name!,
            undefined,
            {
              metadata: { labels: { 'karpenter.sh/registered': 'true' } },
              spec: { taints: got.spec.taints.filter((t) => t.key !== 'karpenter.sh/unregistered') },
            },
            { type: 'merge' },
          );
        }
        return got;
      };
    },
  }) as KubeClient;
  const standIn = new CAPIMachineDeploymentStandIn({
    nodeShape: machineDeploymentNodeShape,
    client: env.mgmt,
    clock: env.clock,
    workload: async () => racing,
  });
  await createClusterAPIObjects(
    env.mgmt,
    sampleClusterAPIObjects({
      deployments: [{ name: 'md-a', instanceType: 'm5.large', failureDomain: 'us-east-1a', replicas: 1 }],
    }),
  );
  // passes until the Node has lost the uninitialized taint (each pass is one reconcile of every deployment)
  let node: Node | undefined;
  for (let i = 0; i < 20; i++) {
    await standIn.pass();
    node = ((await wl.list('Node')).items as Node[])[0];
    if (node && !node.spec?.taints?.some((t) => t.key === 'node.cluster.x-k8s.io/uninitialized')) break;
  }
  expect(raced).toBe(1);
  expect(node?.metadata.labels?.['karpenter.sh/registered']).toBe('true');
  expect((node?.spec?.taints ?? []).map((t) => t.key)).toEqual([]);
});
