/**
 * A simulated Kubernetes cluster in one process: the embedded API server (`sim/apiserver`) with capenter's
 * CRDs installed, plus stand-ins for the rest of a control plane and the nodes — kube-scheduler, kubelet,
 * pod garbage collector and the workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet,
 * Job). The stand-ins talk to the server only through `kube/` (client + shared informers), like
 * capenter's controllers, and every delay runs on the injected clock. Used by `capenter start` and the
 * end-to-end tests.
 */
import { parseAllDocuments } from 'yaml';
import type { KubeObject, Node } from '../apis/core.ts';
import { generateCRDs } from '../apis/crds.ts';
import { KubeClient } from '../kube/client.ts';
import { type Clock, RealClock } from '../kube/clock.ts';
import { SharedInformers, stripManagedFields } from '../kube/informer.ts';
import type { KubeTransport } from '../kube/transport.ts';
import { type ApiServerLogger, type EmbeddedCluster, startEmbeddedCluster } from './apiserver/index.ts';
import { KubeletStandIn, PodGCStandIn } from './kubelet/index.ts';
import { KubeSchedulerStandIn, type SchedulingRules, type ScoringStrategy } from './kubescheduler/index.ts';
import { WorkloadControllers } from './workloads/index.ts';

/** Options of {@link startSimulatedCluster}. */
export interface SimulatedClusterOptions {
  /**
   * The scheduling rules of the kube-scheduler and DaemonSet stand-ins (the declared face,
   * `kubescheduler/rules.ts`). sim has no default: capenter's callers use `src/embedded/cluster.ts`, which
   * injects the scheduling core's (`src/embedded/rules.ts`).
   */
  rules: SchedulingRules;
  /** Time source of every stand-in (default: the wall clock). Pass a FakeClock to drive time in tests. */
  clock?: Clock;
  /** API server port (default 0: any free port) and address (default 127.0.0.1). */
  port?: number;
  host?: string;
  /** Serve HTTPS (default true). */
  tls?: boolean;
  /**
   * The stand-ins (and whoever uses {@link SimulatedCluster.transport}) reach the API server through its
   * in-process transport instead of TLS (see `EmbeddedClusterOptions.loopback`); default false.
   */
  loopback?: boolean;
  /** Write the kubeconfig to this path (directories created, mode 0600). */
  kubeconfigPath?: string;
  /** Install capenter's CRDs from `generateCRDs()` (default true). */
  installCRDs?: boolean;
  /** Extra CRD objects to install (e.g. Cluster API's, for CAPI scenarios). */
  extraCRDs?: KubeObject[];
  /** Seconds until a node reports Ready (number or function of the node; default 0–2 s by node name). */
  kubeletReadyDelaySeconds?: number | ((node: Node) => number);
  /** Startup taint key → seconds until its agent removes it (e.g. `{'node.cluster.x-k8s.io/uninitialized': 5}`). */
  startupTaintRemoval?: Record<string, number>;
  /** Seconds from binding to Running (default 1). */
  podStartDelaySeconds?: number;
  /** Cap on pods' termination grace periods in seconds (default: none). */
  maxTerminationSeconds?: number;
  /** Only nodes whose providerID starts with this are run by the kubelet stand-in (default: all). */
  kubeletProviderIDPrefix?: string;
  /** kube-scheduler scoring (default `MostAllocated`). */
  scoring?: ScoringStrategy;
  /** Seconds between retries of unschedulable pods without a cluster event (default 30). */
  schedulerRetrySeconds?: number;
  /** Stand-ins to run (all default true). */
  components?: { scheduler?: boolean; kubelet?: boolean; podGC?: boolean; workloads?: boolean };
  /** API server logger. */
  logger?: ApiServerLogger;
  /** Errors of the stand-ins (reconcile failures are retried with backoff; default: ignored). */
  onError?: (err: unknown, where: string) => void;
}

/** A running simulated cluster. */
export interface SimulatedCluster {
  apiServer: EmbeddedCluster;
  /** A client for the cluster (the one the stand-ins use). */
  client: KubeClient;
  /** Kubeconfig YAML (context `capenter`). */
  kubeconfig: string;
  /**
   * With `loopback`: the API server's in-process transport, which {@link client} uses; give it to other
   * clients of this process with {@link kubeconfig} (`KubeClient.fromKubeconfig(kubeconfig, { transport })`).
   */
  transport?: KubeTransport;
  /** Where the kubeconfig was written, when asked. */
  kubeconfigPath?: string;
  clock: Clock;
  /** The informers shared by the stand-ins (Pods, Nodes, Namespaces, workloads). */
  informers: SharedInformers;
  scheduler?: KubeSchedulerStandIn;
  kubelet?: KubeletStandIn;
  podGC?: PodGCStandIn;
  workloads?: WorkloadControllers;
  /** Stops the stand-ins, the informers and the server (idempotent). */
  stop(): Promise<void>;
}

/** The CRD objects of `generateCRDs()` (YAML parsed; the header comment and empty documents skipped). */
export function capenterCRDs(): KubeObject[] {
  const out: KubeObject[] = [];
  for (const [file, text] of Object.entries(generateCRDs())) {
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length > 0) throw new Error(`CRD ${file}: ${doc.errors[0]?.message}`);
      const obj = doc.toJS() as KubeObject | null;
      if (obj && typeof obj === 'object' && obj.kind === 'CustomResourceDefinition') out.push(obj);
    }
  }
  return out;
}

/**
 * Starts the API server, installs the CRDs, and starts the stand-ins; resolves when their informers have
 * synced. Throws when the port cannot be bound or a CRD is invalid (the server is stopped first).
 */
export async function startSimulatedCluster(opts: SimulatedClusterOptions): Promise<SimulatedCluster> {
  const clock = opts.clock ?? new RealClock();
  const apiServer = await startEmbeddedCluster({
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.host !== undefined ? { host: opts.host } : {}),
    ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
    ...(opts.loopback ? { loopback: true } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const transport = apiServer.transport;
  const client = KubeClient.fromKubeconfig(apiServer.kubeconfig, {
    userAgent: 'capenter-sim',
    ...(transport ? { transport } : {}),
  });
  const informers = new SharedInformers(client, {
    clock,
    // kube-scheduler and kube-controller-manager trim managedFields from their informers
    transform: stripManagedFields,
    ...(opts.onError ? { onError: (e, phase) => opts.onError?.(e, `informer ${phase}`) } : {}),
  });
  const onError = opts.onError ?? (() => {});
  const base = { client, informers, clock, onError };
  const comp = opts.components ?? {};
  let stopped = false;
  const cluster: SimulatedCluster = {
    apiServer,
    client,
    kubeconfig: apiServer.kubeconfig,
    ...(transport ? { transport } : {}),
    clock,
    informers,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await Promise.all([
        cluster.scheduler?.stop(),
        cluster.kubelet?.stop(),
        cluster.podGC?.stop(),
        cluster.workloads?.stop(),
      ]);
      await informers.stop();
      client.close();
      await apiServer.stop();
    },
  };
  try {
    if (opts.installCRDs ?? true) for (const crd of capenterCRDs()) apiServer.installCRD(crd);
    for (const crd of opts.extraCRDs ?? []) apiServer.installCRD(crd);
    if (opts.kubeconfigPath) {
      await apiServer.writeKubeconfig(opts.kubeconfigPath);
      cluster.kubeconfigPath = opts.kubeconfigPath;
    }
    if (comp.scheduler ?? true)
      cluster.scheduler = new KubeSchedulerStandIn({
        ...base,
        rules: opts.rules,
        ...(opts.scoring ? { scoring: opts.scoring } : {}),
        ...(opts.schedulerRetrySeconds !== undefined
          ? { retryIntervalSeconds: opts.schedulerRetrySeconds }
          : {}),
      });
    if (comp.kubelet ?? true)
      cluster.kubelet = new KubeletStandIn({
        ...base,
        ...(opts.kubeletReadyDelaySeconds !== undefined
          ? { readyDelaySeconds: opts.kubeletReadyDelaySeconds }
          : {}),
        ...(opts.startupTaintRemoval ? { startupTaintRemoval: opts.startupTaintRemoval } : {}),
        ...(opts.podStartDelaySeconds !== undefined
          ? { podStartDelaySeconds: opts.podStartDelaySeconds }
          : {}),
        ...(opts.maxTerminationSeconds !== undefined
          ? { maxTerminationSeconds: opts.maxTerminationSeconds }
          : {}),
        ...(opts.kubeletProviderIDPrefix !== undefined
          ? { providerIDPrefix: opts.kubeletProviderIDPrefix }
          : {}),
      });
    if (comp.podGC ?? true) cluster.podGC = new PodGCStandIn(base);
    if (comp.workloads ?? true) cluster.workloads = new WorkloadControllers({ ...base, rules: opts.rules });
    cluster.scheduler?.start();
    cluster.kubelet?.start();
    cluster.podGC?.start();
    cluster.workloads?.start();
    informers.start();
    await informers.waitForSync(30_000);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
