/**
 * The loaded `clusterapi` provider ({@link clusterAPISetup}): the provider against the management cluster's
 * MachineDeployments and the ClusterAPINodeClass status controller against the workload cluster.
 */
import type { ClusterAPINodeClass } from '../../apis/karpenter.ts';
import type { KubeClient } from '../../kube/client.ts';
import { type Clock, RealClock } from '../../kube/clock.ts';
import type { Logger } from '../../kube/logger.ts';
import { type ProviderSetup, readyDependentsOf } from '../module.ts';
import { ClusterAPINodeClassController } from './controllers/nodeclass.ts';
import { clusterAPINodeClassKinds, clusterAPIProviderName } from './kinds.ts';
import { ClusterAPICloudProvider } from './provider.ts';

/** Inputs of {@link clusterAPISetup}. */
export interface ClusterAPIOperatorInputs {
  /** Client of the management cluster. */
  management: KubeClient;
  /** Client of the workload cluster (the operator's): ClusterAPINodeClasses and, as a capacity source, Nodes. */
  workload: KubeClient;
  namespace: string;
  clusterName?: string;
  machineTimeoutSeconds?: number;
  region?: string;
  pollSeconds?: number;
  cacheSeconds?: number;
  clock?: Clock;
  logger: Logger;
  /** Seconds between ClusterAPINodeClass status passes (default 10). */
  nodeClassPeriodSeconds?: number;
}

/**
 * The loaded clusterapi provider for an operator: the provider (built at once: it is returned as `cloudProvider` too,
 * for its stop and replica log), the ClusterAPINodeClass status controller, and `MachineDeploymentsReady` as a
 * dependent of the NodeClass's `Ready` (the module's kinds). Used by `capenter controller --cloud-provider
 * clusterapi` (through `clusterAPIModule.load`) and the embedded clusterapi stack.
 */
export function clusterAPISetup(
  i: ClusterAPIOperatorInputs,
): ProviderSetup & { cloudProvider: ClusterAPICloudProvider } {
  const provider = new ClusterAPICloudProvider({
    management: i.management,
    namespace: i.namespace,
    ...(i.clusterName ? { clusterName: i.clusterName } : {}),
    workload: i.workload,
    clock: i.clock ?? new RealClock(),
    nodeClass: async (name) =>
      (await i.workload.tryGet('ClusterAPINodeClass', name)) as ClusterAPINodeClass | undefined,
    ...(i.region ? { region: i.region } : {}),
    ...(i.machineTimeoutSeconds !== undefined ? { machineTimeoutSeconds: i.machineTimeoutSeconds } : {}),
    ...(i.pollSeconds !== undefined ? { pollSeconds: i.pollSeconds } : {}),
    ...(i.cacheSeconds !== undefined ? { cacheSeconds: i.cacheSeconds } : {}),
    onNotice: (message) => i.logger.warn({ provider: 'clusterapi' }, message),
    onError: (err, where) => i.logger.debug({ where, err: (err as Error).message }, 'clusterapi provider'),
  });
  return {
    name: clusterAPIProviderName,
    cloudProvider: provider,
    readyDependents: readyDependentsOf(clusterAPINodeClassKinds),
    createProvider: () => provider,
    controllers: (deps) => [
      new ClusterAPINodeClassController({
        client: deps.client,
        provider,
        clock: deps.clock,
        logger: deps.logger,
        recorder: deps.recorder,
        ...(deps.informers ? { informers: deps.informers } : {}),
        periodSeconds: i.nodeClassPeriodSeconds ?? 10,
      }),
    ],
  };
}
