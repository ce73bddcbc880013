/**
 * capenter with `--cloud-provider clusterapi` on the embedded two-cluster environment (sim/capi/environment.ts):
 * the management cluster with the real Cluster API / CAPA CRDs and the MachineDeployment/MachineSet/Machine
 * stand-in (which writes the Nodes into the workload cluster), the `clusterapi` provider against the management
 * cluster, and the operator (plus the ClusterAPINodeClass status controller) against the workload cluster.
 * Shared by `capenter start --cloud-provider clusterapi` and the clusterapi end-to-end tests.
 */
import type {
  ClusterAPICloudProvider,
  ClusterAPICloudProviderDeps,
} from '../cloudprovider/clusterapi/provider.ts';
import { clusterAPISetup } from '../cloudprovider/clusterapi/setup.ts';
import { type Logger, silentLogger } from '../kube/logger.ts';
import { createOperator, type Operator, type OperatorConfig } from '../operator/operator.ts';
import { embeddedOptions, type OperatorOptions } from '../operator/options.ts';
import {
  type CAPIMachineDeploymentOptions,
  CAPIMachineDeploymentStandIn,
} from '../sim/capi/machinedeployment.ts';
import { type CAPIEnvironment, type CAPIEnvironmentOptions, startCAPIEnvironment } from './cluster.ts';
import { machineDeploymentNodeShape } from './rules.ts';

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
    nodeShape: machineDeploymentNodeShape,
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
    const cfg = clusterAPISetup({
      management: env.mgmt,
      workload,
      namespace,
      clusterName,
      clock: env.clock,
      logger,
      ...(o.provider ?? {}),
      nodeClassPeriodSeconds: o.nodeClassPeriodSeconds ?? 10,
    });
    const provider = cfg.cloudProvider;
    const op = createOperator({
      kubeconfig: env.workload.kubeconfig,
      provider: cfg,
      logger,
      clock: env.clock,
      options: { ...embeddedOptions(), leaderElect: false, ...(o.operator ?? {}) },
      defaultMetrics: false,
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
