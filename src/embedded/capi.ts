/**
 * capenter in CAPI mode on the embedded two-cluster environment (sim/capi/environment.ts): the provisioning operator
 * and the CAPI taint controller against the workload cluster, the KarpenterMachinePool controller against the
 * management cluster (bootstrap data in an in-process object store, the pool's instances from the operator's kwok
 * provider). Shared by `capenter start --capi`, the CAPI end-to-end tests and the CAPI benchmark.
 */

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
  aws?: { emulatorEndpoint: string; region: string; clusterName: string };
  /** The AWSCluster identity check of the KMP controller, built on the started environment (default none). */
  clusterIdentity?: (env: CAPIEnvironment) => ClusterIdentityCheck;
  /**
   * The KMP controller's own management client (with informers of its own on it, stopped with the stack), e.g. one
   * that records its requests for the chart's RBAC; default the environment's client and informers.
   */
  managementClient?: (env: CAPIEnvironment) => KubeClient;
}

/** A running CAPI stack. */
export interface CAPIStack {
  env: CAPIEnvironment;
  op?: Operator;
  kmp: KarpenterMachinePoolController;
  taints?: CAPITaintController;
  store: BootstrapDataStore;
  /** The AWS side (with `aws`). */
  aws?: EmbeddedAws;
  stop(): Promise<void>;
}

/** Starts the environment, the operator and the CAPI controllers. @throws when a server cannot start. */
export async function startCAPIStack(o: CAPIStackOptions = {}): Promise<CAPIStack> {
  const env = await startCAPIEnvironment(o.env ?? {});
  const logger = o.logger ?? silentLogger();
  const ac = new AbortController();
  const runs: Array<Promise<void>> = [];
  let op: Operator | undefined;
  let aws: EmbeddedAws | undefined;
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
    if (o.withOperator ?? true) {
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
    const store = o.bootstrapStore ?? new InMemoryBootstrapStore();
    const kmpClient = o.managementClient?.(env);
    const kmpInformers = kmpClient ? new SharedInformers(kmpClient, { clock: env.clock }) : undefined;
    if (kmpInformers)
      runs.push(ac.signal.aborted ? Promise.resolve() : onAbort(ac.signal, () => kmpInformers.stop()));
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
      bootstrapStore: store,
      instances: cloudProviderInstances(() => provider),
      ...(o.clusterIdentity ? { clusterIdentity: o.clusterIdentity(env) } : {}),
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
      env,
      ...(op ? { op } : {}),
      kmp,
      ...(taints ? { taints } : {}),
      store,
      ...(aws ? { aws } : {}),
      async stop() {
        ac.abort();
        await Promise.all(runs);
        await op?.stop();
        await aws?.stop();
        await env.stop();
      },
    };
  } catch (err) {
    ac.abort();
    await Promise.all(runs);
    await op?.stop();
    await aws?.stop();
    await env.stop();
    throw err;
  }
}

/** Resolves after `signal` aborts and `fn` has run. */
function onAbort(signal: AbortSignal, fn: () => Promise<void>): Promise<void> {
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => void fn().then(resolve, resolve), { once: true }),
  );
}
