/**
 * CAPI end-to-end harness: the CAPI stack (operator/capi.ts) on the two-cluster environment — management API
 * server with the real CAPI/CAPA CRDs + the MachinePool stand-in, a simulated workload cluster, the real capenter
 * operator against the workload cluster (kwok provider, EC2NodeClass support), the KarpenterMachinePool controller
 * against the management cluster and the CAPI taint controller. Everything through the real client. Short batch
 * windows and disruption periods keep it fast.
 */
import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import type { InMemoryBootstrapStore } from '../../src/controllers/capi/bootstrap.ts';
import type { KarpenterMachinePoolController } from '../../src/controllers/capi/controller.ts';
import type { CAPITaintController } from '../../src/controllers/capi/taints.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { startCAPIStack } from '../../src/embedded/capi.ts';
import type { CAPIEnvironment, CAPIEnvironmentOptions } from '../../src/embedded/cluster.ts';
import type { Operator } from '../../src/operator/operator.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
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
  o: {
    env?: CAPIEnvironmentOptions;
    uninitializedTimeoutSeconds?: number;
    clusterName?: string;
    /** Seconds a pod nomination keeps its node from disruption (default upstream's 20). */
    nominationTTLSeconds?: number;
  } = {},
): Promise<CAPIE2E> {
  const stack = await startCAPIStack({
    env: {
      ...(o.env ?? {}),
      workload: {
        kubeletReadyDelaySeconds: 0,
        podStartDelaySeconds: 0.2,
        schedulerRetrySeconds: 2,
        maxTerminationSeconds: 1,
        ...(o.env?.workload ?? {}),
      },
      machinePoolStandIn: o.env?.machinePoolStandIn ?? { periodSeconds: 0.3 },
    },
    operator: testOptions({ leaderElect: false }),
    tuning: {
      disruption: { pollSeconds: 1, validationSeconds: 1 },
      ...(o.nominationTTLSeconds !== undefined ? { nominationTTLSeconds: o.nominationTTLSeconds } : {}),
    },
    ...(o.uninitializedTimeoutSeconds !== undefined
      ? { uninitializedTimeoutSeconds: o.uninitializedTimeoutSeconds }
      : {}),
  });
  const env = stack.env;
  await env.writeKubeconfigSecret('default', o.clusterName ?? 'demo');
  return {
    env,
    op: stack.op as Operator,
    kmp: stack.kmp,
    taints: stack.taints as CAPITaintController,
    store: stack.store as InMemoryBootstrapStore,
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
    stop: () => stack.stop(),
  };
}

export { sampleCAPIObjects };
