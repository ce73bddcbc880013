/**
 * capenter in CAPI mode on the embedded two-cluster environment (sim/capi/environment.ts): the provisioning operator
 * and the CAPI taint controller against the workload cluster, the KarpenterMachinePool controller against the
 * management cluster (bootstrap data in an in-process object store, the pool's instances from the operator's kwok
 * provider). Shared by `capenter start --capi`, the CAPI end-to-end tests and the CAPI benchmark.
 */

import { createAwsClients } from '../cloudprovider/aws/clients.ts';
import type { ClusterCredentials } from '../cloudprovider/aws/identity.ts';
import { resolveAwsSettings } from '../cloudprovider/aws/settings.ts';
import { type AwsControllersConfig, awsSetup } from '../cloudprovider/aws/setup.ts';
import type { ClusterIdentityCheck } from '../cloudprovider/module.ts';
import { type BootstrapDataStore, InMemoryBootstrapStore } from '../controllers/capi/bootstrap.ts';
import { KarpenterMachinePoolController } from '../controllers/capi/controller.ts';
import { cloudProviderInstances } from '../controllers/capi/instances.ts';
import { CAPITaintController } from '../controllers/capi/taints.ts';
import type { KubeClient } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { SharedInformers } from '../kube/informer.ts';
import { type Logger, silentLogger } from '../kube/logger.ts';
import { createOperator, type Operator, type OperatorConfig } from '../operator/operator.ts';
import { embeddedOptions, type OperatorOptions } from '../operator/options.ts';
import { type EmbeddedAws, startEmbeddedAws } from './aws.ts';
import { type CAPIEnvironment, type CAPIEnvironmentOptions, startCAPIEnvironment } from './cluster.ts';

/** Options of {@link startCAPIStack}. */
export interface CAPIStackOptions {
  env?: CAPIEnvironmentOptions;
  /** Operator options (default: embedded options, leader election off). */
  operator?: Partial<OperatorOptions>;
  /** Operator tuning (tests shorten the disruption periods). */
  tuning?: OperatorConfig['tuning'];
  logger?: Logger;
  /** Seconds before capenter removes a lingering uninitialized taint (default 120). */
  uninitializedTimeoutSeconds?: number;
  /** Bootstrap data store (default: in memory). */
  bootstrapStore?: BootstrapDataStore;
  /** Run the provisioning operator (default true; the KMP reconcile benchmark runs without it). */
  withOperator?: boolean;
  /** Register prom-client default metrics on the operator registry (default false). */
  defaultMetrics?: boolean;
  /**
   * Run the workload cluster's nodes on the aws provider against an AWS API emulator (moto) instead of kwok: the
   * emulator proxy, the joining-kubelet stand-in (`./aws.ts`) and the aws provider/controllers
   * (`cloudprovider/aws/setup.ts`).
   */
  aws?: {
    emulatorEndpoint: string;
    region: string;
    clusterName: string;
    /**
     * The provider's credentials, made afresh at each (re)start as by a new process (e.g. a {@link ClusterCredentials}
     * over the emulator's keys that an AWSCluster identity switches): the provider's SDK clients sign with them; the
     * stand-ins' clients keep the default chain. Default: the stand-ins' clients serve the provider too.
     */
    credentials?: () => ClusterCredentials;
  };
  /**
   * The AWSCluster identity check of the KMP controller, built on the started environment at each (re)start, with that
   * start's provider credentials and the emulator proxy's endpoint (for STS) when `aws.credentials` is set (default
   * none).
   */
  clusterIdentity?: (
    env: CAPIEnvironment,
    aws?: { credentials: ClusterCredentials; endpoint: string },
  ) => ClusterIdentityCheck;
  /**
   * The KMP controller's own management client (with informers of its own on it, stopped with the stack), e.g. one
   * that records its requests for the chart's RBAC; default the environment's client and informers.
   */
  managementClient?: (env: CAPIEnvironment) => KubeClient;
  /**
   * `CAPI_WATCH_NAMESPACE`: the KMP controller reconciles this management namespace only, on informers of its own
   * restricted to it (stopped with the stack); default all namespaces.
   */
  watchNamespace?: string;
}

/** A running CAPI stack. */
export interface CAPIStack {
  env: CAPIEnvironment;
  /** The current operator, KMP and taint controllers (replaced by {@link restart}). */
  op?: Operator;
  kmp: KarpenterMachinePoolController;
  taints?: CAPITaintController;
  /** The current start's provider credentials (with `aws.credentials`). */
  credentials?: ClusterCredentials;
  store: BootstrapDataStore;
  /** The AWS side (with `aws`). */
  aws?: EmbeddedAws;
  /**
   * Stops the operator and the CAPI controllers (as a crashed/restarted controller process) and starts fresh ones on
   * the same environment, emulator and bootstrap store: new provider credentials and clients, new KMP informers.
   * Resolves once the operator has started (its first AWS calls may still be waiting for the cluster identity).
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** One start of the controllers of {@link startCAPIStack}: what {@link CAPIStack.restart} stops and replaces. */
interface ControllerRun {
  op?: Operator;
  kmp: KarpenterMachinePoolController;
  taints?: CAPITaintController;
  credentials?: ClusterCredentials;
  /** Aborts the controllers, waits for them, stops the operator and the provider's own clients. */
  halt(): Promise<void>;
}

/** Starts the environment, the operator and the CAPI controllers. @throws when a server cannot start. */
export async function startCAPIStack(o: CAPIStackOptions = {}): Promise<CAPIStack> {
  const env = await startCAPIEnvironment(o.env ?? {});
  const logger = o.logger ?? silentLogger();
  let aws: EmbeddedAws | undefined;
  let run: ControllerRun | undefined;
  try {
    let awsConfig: AwsControllersConfig | undefined;
    if (o.aws) {
      const settings = resolveAwsSettings({ flags: { clusterName: o.aws.clusterName }, env: {} });
      settings.region = o.aws.region;
      settings.clusterEndpoint ||= env.workload.apiServer.url;
      settings.clusterCABundle ||=
        /certificate-authority-data:\s*(\S+)/.exec(env.workload.kubeconfig)?.[1] ?? '';
      aws = await startEmbeddedAws({
        client: env.workload.client,
        clock: env.clock,
        region: o.aws.region,
        clusterName: o.aws.clusterName,
        emulatorEndpoint: o.aws.emulatorEndpoint,
        joinPollSeconds: 0.5,
      });
      // the workload cluster's service CIDR (as the aws stack's): AL2023 classes need one, and the emulator has no EKS cluster
      awsConfig = {
        clients: aws.clients,
        settings,
        region: o.aws.region,
        nodeClassPeriodSeconds: 5,
        clusterCIDR: '10.96.0.0/12',
      };
    }
    const store = o.bootstrapStore ?? new InMemoryBootstrapStore();
    const launch = (first: boolean): Promise<ControllerRun> =>
      startControllers({ o, env, logger, store, first, ...(awsConfig && aws ? { awsConfig, aws } : {}) });
    run = await launch(true);
    const stack: CAPIStack = {
      env,
      kmp: run.kmp,
      store,
      ...(aws ? { aws } : {}),
      async restart() {
        await run?.halt();
        run = await launch(false);
        setRun(stack, run);
      },
      async stop() {
        await run?.halt();
        await aws?.stop();
        await env.stop();
      },
    };
    setRun(stack, run);
    return stack;
  } catch (err) {
    await run?.halt();
    await aws?.stop();
    await env.stop();
    throw err;
  }
}

/** Points `stack`'s current-controller fields at `run`. */
function setRun(stack: CAPIStack, run: ControllerRun): void {
  stack.kmp = run.kmp;
  for (const k of ['op', 'taints', 'credentials'] as const) {
    if (run[k]) (stack as unknown as Record<string, unknown>)[k] = run[k];
    else delete stack[k];
  }
}

/**
 * Starts the operator (aws: on the provider's own clients when `o.aws.credentials` is set), the KMP controller (on
 * fresh informers after the first start, as a new process, or with its own client or watch namespace) and the taint
 * controller. @throws when the operator
 * cannot start (what started is stopped).
 */
async function startControllers(a: {
  o: CAPIStackOptions;
  env: CAPIEnvironment;
  logger: Logger;
  store: BootstrapDataStore;
  first: boolean;
  awsConfig?: AwsControllersConfig;
  aws?: EmbeddedAws;
}): Promise<ControllerRun> {
  const { o, env, logger } = a;
  const ac = new AbortController();
  const runs: Array<Promise<void>> = [];
  const credentials = a.aws && o.aws?.credentials ? o.aws.credentials() : undefined;
  const providerClients =
    credentials && a.aws
      ? createAwsClients({
          region: a.awsConfig?.region ?? 'us-east-1',
          endpoint: a.aws.proxy.endpoint,
          credentials: credentials.provider,
        })
      : undefined;
  let op: Operator | undefined;
  const halt = async (): Promise<void> => {
    ac.abort();
    await Promise.all(runs);
    await op?.stop();
    providerClients?.destroy();
  };
  try {
    // the identity check is built first: it makes the provider's credentials wait for the first resolution
    const identity = o.clusterIdentity?.(
      env,
      credentials && a.aws ? { credentials, endpoint: a.aws.proxy.endpoint } : undefined,
    );
    if (o.withOperator ?? true) {
      const awsConfig = a.awsConfig && {
        ...a.awsConfig,
        ...(providerClients ? { clients: providerClients } : {}),
      };
      op = createOperator({
        ...(awsConfig ? { provider: awsSetup(awsConfig) } : {}),
        kubeconfig: env.workload.kubeconfig,
        logger,
        clock: env.clock,
        options: { ...embeddedOptions(), leaderElect: false, ...(o.operator ?? {}) },
        defaultMetrics: o.defaultMetrics ?? false,
        ...(o.tuning ? { tuning: o.tuning } : {}),
      });
      await op.start(ac.signal);
    }
    const provider = op?.cloudProvider;
    const kmpClient = o.managementClient?.(env);
    const ns = o.watchNamespace;
    const kmpInformers =
      kmpClient || ns || !a.first
        ? new SharedInformers(kmpClient ?? env.mgmt, { clock: env.clock, ...(ns ? { namespace: ns } : {}) })
        : undefined;
    if (kmpInformers) runs.push(onAbort(ac.signal, () => kmpInformers.stop()));
    const kmp = new KarpenterMachinePoolController({
      client: kmpClient ?? env.mgmt,
      informers: kmpInformers ?? env.mgmtInformers,
      clock: env.clock,
      logger,
      recorder: new EventRecorder(kmpClient ?? env.mgmt, {
        clock: env.clock,
        component: 'capenter-capi',
        host: 'capenter',
      }),
      bootstrapStore: a.store,
      instances: cloudProviderInstances(() => provider),
      ...(identity ? { clusterIdentity: identity } : {}),
      ...(ns ? { watchNamespace: ns } : {}),
    });
    runs.push(kmp.start(ac.signal));
    let taints: CAPITaintController | undefined;
    if (op) {
      taints = new CAPITaintController({
        client: op.client,
        informers: op.informers,
        clock: env.clock,
        logger,
        registry: op.registry,
        ...(o.uninitializedTimeoutSeconds !== undefined
          ? { uninitializedTimeoutSeconds: o.uninitializedTimeoutSeconds }
          : {}),
      });
      runs.push(taints.start(ac.signal));
    }
    return {
      ...(op ? { op } : {}),
      kmp,
      ...(taints ? { taints } : {}),
      ...(credentials ? { credentials } : {}),
      halt,
    };
  } catch (err) {
    await halt();
    throw err;
  }
}

/** Resolves after `signal` aborts and `fn` has run. */
function onAbort(signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => void fn().then(resolve, resolve), { once: true }),
  );
}
