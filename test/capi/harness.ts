/**
 * CAPI end-to-end harness: the two-cluster environment (sim/capi/environment.ts: management API server with the
 * real CAPI/CAPA CRDs + the MachinePool stand-in, and a simulated workload cluster), the real capenter operator
 * against the workload cluster (kwok provider, EC2NodeClass support), the KarpenterMachinePool controller against
 * the management cluster and the CAPI taint controller against the workload cluster. Everything through the
 * real client.
 */

import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import { InMemoryBootstrapStore } from '../../src/controllers/capi/bootstrap.ts';
import { KarpenterMachinePoolController } from '../../src/controllers/capi/controller.ts';
import { cloudProviderInstances } from '../../src/controllers/capi/instances.ts';
import { CAPITaintController } from '../../src/controllers/capi/taints.ts';
import { EventRecorder } from '../../src/kube/events.ts';
import { applyObjects } from '../../src/operator/apply.ts';
import { silentLogger } from '../../src/operator/logger.ts';
import { createOperator, type Operator } from '../../src/operator/operator.ts';
import {
  type CAPIEnvironment,
  type CAPIEnvironmentOptions,
  sampleCAPIObjects,
  startCAPIEnvironment,
} from '../../src/sim/capi/environment.ts';
import { testOptions } from '../e2e/harness.ts';

/** A running CAPI e2e environment. */
export interface CAPIE2E {
  env: CAPIEnvironment;
  op: Operator;
  kmp: KarpenterMachinePoolController;
  taints: CAPITaintController;
  store: InMemoryBootstrapStore;
  apply(objs: KubeObject[]): Promise<void>;
  getKMP(name?: string, namespace?: string): Promise<KarpenterMachinePool | undefined>;
  stop(): Promise<void>;
}

/** Starts everything; the `<cluster>-kubeconfig` Secret for cluster `demo` in `default` is written. */
export async function startCAPIE2E(
  o: { env?: CAPIEnvironmentOptions; uninitializedTimeoutSeconds?: number; clusterName?: string } = {},
): Promise<CAPIE2E> {
  const env = await startCAPIEnvironment({
    ...(o.env ?? {}),
    workload: {
      kubeletReadyDelaySeconds: 0,
      podStartDelaySeconds: 0.2,
      schedulerRetrySeconds: 2,
      maxTerminationSeconds: 1,
      ...(o.env?.workload ?? {}),
    },
    machinePoolStandIn: o.env?.machinePoolStandIn ?? { periodSeconds: 0.3 },
  });
  const logger = silentLogger();
  const op = createOperator({
    kubeconfig: env.workload.kubeconfig,
    logger,
    options: testOptions({ leaderElect: false }),
    defaultMetrics: false,
    tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 } },
  });
  await op.start();
  const store = new InMemoryBootstrapStore();
  const kmp = new KarpenterMachinePoolController({
    client: env.mgmt,
    informers: env.mgmtInformers,
    clock: env.clock,
    logger,
    recorder: new EventRecorder(env.mgmt, { clock: env.clock, component: 'capenter-capi', host: 'test' }),
    bootstrapStore: store,
    instances: cloudProviderInstances(() => op.cloudProvider),
  });
  const taints = new CAPITaintController({
    client: op.client,
    informers: op.informers,
    clock: env.clock,
    logger,
    registry: op.registry,
    ...(o.uninitializedTimeoutSeconds !== undefined
      ? { uninitializedTimeoutSeconds: o.uninitializedTimeoutSeconds }
      : {}),
  });
  const ac = new AbortController();
  const runs = [kmp.start(ac.signal), taints.start(ac.signal)];
  await env.writeKubeconfigSecret('default', o.clusterName ?? 'demo');
  return {
    env,
    op,
    kmp,
    taints,
    store,
    async apply(objs) {
      const res = await applyObjects(env.mgmt, objs);
      const failed = res.filter((r) => r.result === 'failed');
      if (failed.length > 0) throw new Error(failed.map((f) => f.error).join('; '));
    },
    async getKMP(name = 'workers', namespace = 'default') {
      return (await env.mgmt.tryGet('KarpenterMachinePool', name, namespace)) as
        | KarpenterMachinePool
        | undefined;
    },
    async stop() {
      ac.abort();
      await Promise.all(runs);
      await op.stop();
      await env.stop();
    },
  };
}

export { sampleCAPIObjects };
