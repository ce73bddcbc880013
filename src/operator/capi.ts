/**
 * `capenter controller --capi-management-kubeconfig`: the KarpenterMachinePool controller against the management
 * cluster and the CAPI taint controller against the operator's (workload) cluster, run on the leader only
 * ({@link runCAPIControllers}). The embedded CAPI stack of `capenter start --capi` is `src/embedded/capi.ts`.
 */
import type { ClusterIdentityCheck } from '../cloudprovider/module.ts';
import type { BootstrapDataStore } from '../controllers/capi/bootstrap.ts';
import { KarpenterMachinePoolController } from '../controllers/capi/controller.ts';
import { cloudProviderInstances } from '../controllers/capi/instances.ts';
import { CAPITaintController } from '../controllers/capi/taints.ts';
import type { KubeClient } from '../kube/client.ts';
import { RealClock } from '../kube/clock.ts';
import { EventRecorder } from '../kube/events.ts';
import { SharedInformers } from '../kube/informer.ts';
import type { Logger } from '../kube/logger.ts';
import type { Operator } from './operator.ts';

/** Options of {@link runCAPIControllers}. */
export interface CAPIControllersOptions {
  /** Client of the management cluster (Cluster, MachinePool, AWSCluster, KMP, bootstrap Secrets). */
  management: KubeClient;
  /** Only pools of this workload cluster (`MachinePool.spec.clusterName`); the operator's cluster. */
  clusterName?: string;
  logger: Logger;
  /** Bootstrap data store (the provider module's, e.g. aws: S3; else in memory); closed when it has `close`. */
  bootstrapStore: BootstrapDataStore & { close?(): void };
  uninitializedTimeoutSeconds?: number;
  /** The provider's identity check of the AWSCluster (`ProviderSetup.capi.clusterIdentity`, bound); default none. */
  clusterIdentity?: ClusterIdentityCheck;
  /**
   * `CAPI_WATCH_NAMESPACE`: the one management-cluster namespace reconciled; every management informer (KMP,
   * MachinePool, Cluster, AWSCluster, Secret) lists and watches it only. Default: all namespaces.
   */
  watchNamespace?: string;
  signal: AbortSignal;
}

/**
 * `capenter controller --capi-management-kubeconfig`: runs the KarpenterMachinePool controller against the
 * management cluster and the CAPI taint controller against the operator's (workload) cluster, until `signal`
 * aborts. The pool's instances are those of the operator's cloud provider. Resolves when both have stopped.
 */
export async function runCAPIControllers(op: Operator, o: CAPIControllersOptions): Promise<void> {
  const clock = new RealClock();
  const informers = new SharedInformers(o.management, {
    clock,
    ...(o.watchNamespace ? { namespace: o.watchNamespace } : {}),
  });
  const provider = op.cloudProvider;
  const store = o.bootstrapStore;
  const kmp = new KarpenterMachinePoolController({
    client: o.management,
    informers,
    clock,
    logger: o.logger,
    recorder: new EventRecorder(o.management, { clock, component: 'capenter-capi', host: op.identity }),
    bootstrapStore: store,
    instances: cloudProviderInstances(() => provider),
    ...(o.clusterName ? { clusterName: o.clusterName } : {}),
    ...(o.clusterIdentity ? { clusterIdentity: o.clusterIdentity } : {}),
    ...(o.watchNamespace ? { watchNamespace: o.watchNamespace } : {}),
  });
  const taints = new CAPITaintController({
    client: op.client,
    informers: op.informers,
    clock,
    logger: o.logger,
    registry: op.registry,
    ...(o.uninitializedTimeoutSeconds !== undefined
      ? { uninitializedTimeoutSeconds: o.uninitializedTimeoutSeconds }
      : {}),
  });
  await Promise.all([kmp.start(o.signal), taints.start(o.signal)]);
  await informers.stop();
  store.close?.();
}
