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
} from '../embedded/cluster.ts';
import { machineDeploymentNodeShape } from '../embedded/rules.ts';
import type { KubeClient } from '../kube/client.ts';
import { type Clock, RealClock } from '../kube/clock.ts';
import { type Logger, silentLogger } from '../kube/logger.ts';
import {
  type CAPIMachineDeploymentOptions,
  CAPIMachineDeploymentStandIn,
} from '../sim/capi/machinedeployment.ts';
import { createOperator, type Operator, type OperatorConfig } from './operator.ts';
import { embeddedOptions, type OperatorOptions } from './options.ts';

/** Inputs of {@link clusterAPIOperatorConfig}. */
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
 * The parts of an {@link OperatorConfig} that make an operator run the clusterapi provider: the provider, the
 * ClusterAPINodeClass status controller, and `MachineDeploymentsReady` as a dependent of the NodeClass's `Ready`.
 * Used by `capenter controller --cloud-provider clusterapi` and {@link startClusterAPIStack}.
 */
export function clusterAPIOperatorConfig(i: ClusterAPIOperatorInputs): Pick<
  OperatorConfig,
  'cloudProvider' | 'extraControllers' | 'nodeClassDependents'
> & {
  cloudProvider: ClusterAPICloudProvider;
} {
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
    cloudProvider: provider,
    nodeClassDependents: { ClusterAPINodeClass: [ConditionMachineDeploymentsReady] },
    extraControllers: (deps) => [
      new ClusterAPINodeClassController({
        client: deps.client,
        provider,
        clock: deps.clock,
        logger: deps.logger,
        ...(deps.informers ? { informers: deps.informers } : {}),
        periodSeconds: i.nodeClassPeriodSeconds ?? 10,
      }),
    ],
  };
}

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
    const cfg = clusterAPIOperatorConfig({
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
      ...cfg,
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
