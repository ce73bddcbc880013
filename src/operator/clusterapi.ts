/**
 * capenter with `--cloud-provider clusterapi` on the embedded two-cluster environment (sim/capi/environment.ts):
 * the management cluster with the real Cluster API / CAPA CRDs and the MachineDeployment/MachineSet/Machine
 * stand-in (which writes the Nodes into the workload cluster), the `clusterapi` provider against the management
 * cluster, and the operator (plus the ClusterAPINodeClass status controller) against the workload cluster.
 * Shared by `capenter start --cloud-provider clusterapi` and the clusterapi end-to-end tests.
 */
import type { ClusterAPINodeClass } from '../apis/karpenter.ts';
import {
  ClusterAPICloudProvider,
  type ClusterAPICloudProviderDeps,
} from '../cloudprovider/clusterapi/provider.ts';
import {
  ClusterAPINodeClassController,
  ConditionMachineDeploymentsReady,
} from '../controllers/nodeclass/clusterapi.ts';
import {
  type CAPIEnvironment,
  type CAPIEnvironmentOptions,
  startCAPIEnvironment,
} from '../sim/capi/environment.ts';
import {
  type CAPIMachineDeploymentOptions,
  CAPIMachineDeploymentStandIn,
} from '../sim/capi/machinedeployment.ts';
import { type Logger, silentLogger } from './logger.ts';
import { createOperator, type Operator, type OperatorConfig } from './operator.ts';
import { embeddedOptions, type OperatorOptions } from './options.ts';

/** Options of {@link startClusterAPIStack}. */
export interface ClusterAPIStackOptions {
  env?: Omit<CAPIEnvironmentOptions, 'machinePoolStandIn'>;
  /** Namespace and name of the Cluster served (default `default`/`demo`). */
  namespace?: string;
  clusterName?: string;
  /** The MachineDeployment stand-in's options (default period 0.2 s). */
  standIn?: Partial<Omit<CAPIMachineDeploymentOptions, 'client' | 'clock' | 'workload'>>;
  /** Provider options (poll period, timeouts, region). */
  provider?: Partial<
    Pick<ClusterAPICloudProviderDeps, 'pollSeconds' | 'machineTimeoutSeconds' | 'cacheSeconds' | 'region'>
  >;
  operator?: Partial<OperatorOptions>;
  tuning?: OperatorConfig['tuning'];
  logger?: Logger;
  /** Seconds between ClusterAPINodeClass status passes (default 10). */
  nodeClassPeriodSeconds?: number;
}

/** A running clusterapi stack. */
export interface ClusterAPIStack {
  env: CAPIEnvironment;
  standIn: CAPIMachineDeploymentStandIn;
  /** The current operator and provider (replaced by {@link restart}). */
  op: Operator;
  provider: ClusterAPICloudProvider;
  /** Stops the operator and provider (as a crashed/restarted controller) and starts fresh ones. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the environment, the stand-in, the provider and the operator. @throws when a server cannot start. */
export async function startClusterAPIStack(o: ClusterAPIStackOptions = {}): Promise<ClusterAPIStack> {
  const env = await startCAPIEnvironment({ ...(o.env ?? {}), machinePoolStandIn: false });
  const logger = o.logger ?? silentLogger();
  const namespace = o.namespace ?? 'default';
  const clusterName = o.clusterName ?? 'demo';
  const workload = env.workload.client;
  const standIn = new CAPIMachineDeploymentStandIn({
    client: env.mgmt,
    clock: env.clock,
    workload: async () => workload,
    periodSeconds: 0.2,
    ...(o.standIn ?? {}),
    onError: (err, where) => logger.warn({ where, err: (err as Error).message }, 'capi stand-in'),
  });
  standIn.start();

  const launch = async (): Promise<{
    op: Operator;
    provider: ClusterAPICloudProvider;
    ac: AbortController;
  }> => {
    const provider = new ClusterAPICloudProvider({
      management: env.mgmt,
      namespace,
      clusterName,
      workload,
      clock: env.clock,
      nodeClass: async (name) =>
        (await workload.tryGet('ClusterAPINodeClass', name)) as ClusterAPINodeClass | undefined,
      ...(o.provider ?? {}),
      onNotice: (message) => logger.warn({ provider: 'clusterapi' }, message),
      onError: (err, where) => logger.debug({ where, err: (err as Error).message }, 'clusterapi provider'),
    });
    const op = createOperator({
      kubeconfig: env.workload.kubeconfig,
      cloudProvider: provider,
      logger,
      clock: env.clock,
      options: { ...embeddedOptions(), leaderElect: false, ...(o.operator ?? {}) },
      defaultMetrics: false,
      nodeClassDependents: { ClusterAPINodeClass: [ConditionMachineDeploymentsReady] },
      extraControllers: (deps) => [
        new ClusterAPINodeClassController({
          client: deps.client,
          provider,
          clock: deps.clock,
          logger: deps.logger,
          ...(deps.informers ? { informers: deps.informers } : {}),
          periodSeconds: o.nodeClassPeriodSeconds ?? 10,
        }),
      ],
      ...(o.tuning ? { tuning: o.tuning } : {}),
    });
    const ac = new AbortController();
    await op.start(ac.signal);
    return { op, provider, ac };
  };

  let cur: Awaited<ReturnType<typeof launch>>;
  try {
    cur = await launch();
  } catch (err) {
    await standIn.stop();
    await env.stop();
    throw err;
  }
  const halt = async (): Promise<void> => {
    cur.provider.stop();
    cur.ac.abort();
    await cur.op.stop();
  };
  const stack: ClusterAPIStack = {
    env,
    standIn,
    op: cur.op,
    provider: cur.provider,
    async restart() {
      await halt();
      cur = await launch();
      stack.op = cur.op;
      stack.provider = cur.provider;
    },
    async stop() {
      await halt();
      await standIn.stop();
      await env.stop();
    },
  };
  return stack;
}
