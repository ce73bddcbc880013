/**
 * The operator: wires one capenter controller process (upstream kubernetes-sigs/karpenter `pkg/operator` +
 * `cmd/controller`). It builds the Kubernetes client, the shared informers and cluster state, the cloud provider
 * (the embedded kwok provider with EC2NodeClass support unless one is injected) decorated with cloud-provider
 * metrics, an EventRecorder (component `karpenter`) and every controller (the list: `./controllers.ts`), then hands
 * them to its run-time (`./runtime.ts`). The cloud provider comes from a provider module's setup
 * (`src/cloudprovider/module.ts`; {@link OperatorConfig.provider}), default the kwok module's.
 * Controllers run only while this process holds the leader Lease (`karpenter-leader-election` in
 * `kube-system`, 15 s / 10 s / 2 s); like upstream, losing leadership stops the operator (the process should
 * exit and be restarted). `/metrics`, `/healthz` and `/readyz` are served from the start; ready means the
 * CRDs are served, the informers have synced and leader election has decided (we lead, or another candidate is
 * known to). Controllers start only once the cluster serves capenter's CRDs (see crds.ts): until then one error
 * names the missing CRDs and the fix, and `/readyz` says which are missing; `installCRDs` applies them first.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { EmbeddedCloudProviderDeps } from '../cloudprovider/kwok/embedded.ts';
import { kwokSetup } from '../cloudprovider/kwok/setup.ts';
import { withMetrics } from '../cloudprovider/metrics.ts';
import type { ProviderSetup } from '../cloudprovider/module.ts';
import { NodeOverlayStore } from '../cloudprovider/overlay.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import type { DisruptionController } from '../controllers/disruption/controller.ts';
import type { Provisioner } from '../controllers/provisioning/provisioner.ts';
import { type Controller, errorMessage } from '../controllers/runtime/index.ts';
import { KubeClient, requestLatencyLabels } from '../kube/client.ts';
import { type Clock, RealClock } from '../kube/clock.ts';
import { EventRecorder } from '../kube/events.ts';
import { SharedInformers, stripManagedFields } from '../kube/informer.ts';
import { type Logger, silentLogger } from '../kube/logger.ts';
import { registeredCounter, registeredHistogram } from '../kube/metrics.ts';
import type { KubeTransport } from '../kube/transport.ts';
import { Cluster } from '../state/cluster.ts';
import { registerBuildInfo } from './buildinfo.ts';
import { buildControllers, type ControllerTuning } from './controllers.ts';
import { registerOwnKinds, requiredCRDs } from './crds.ts';
import type { OperatorOptions } from './options.ts';
import { createRuntime } from './runtime.ts';

/** Inputs of {@link createOperator}. Give `client` or `kubeconfig` (a path or YAML text). */
export interface OperatorConfig {
  /** Kubeconfig path or YAML; ignored when `client` is given. */
  kubeconfig?: string;
  /**
   * With `kubeconfig`: reach the API server through this transport instead of the network (the embedded
   * cluster's in-process one in `capenter start`; see `kube/transport.ts`).
   */
  transport?: KubeTransport;
  /** A ready client (the operator does not close it on stop). */
  client?: KubeClient;
  /**
   * The provider module's loaded setup (`ProviderModule.load`, `src/cloudprovider/module.ts`): it builds the cloud
   * provider from the operator's client, clock, logger and cluster state, names the `Ready` dependents of its
   * NodeClass kinds and adds its own controllers. Default: the kwok module's ({@link kwokSetup}: kwok Nodes, AWS
   * catalog of `options.region`, KWOKNodeClass and EC2NodeClass) with the {@link kwok} options.
   */
  provider?: ProviderSetup;
  /**
   * A ready cloud provider instead of `provider`'s (tests: a recording fake, a provider shared across operator
   * restarts); no provider controllers run then.
   */
  cloudProvider?: CloudProvider;
  /** Extra kwok options for the default provider (instance IDs, registration delay, ...). */
  kwok?: EmbeddedCloudProviderDeps['kwok'];
  /** Time source (default wall clock). */
  clock?: Clock;
  logger?: Logger;
  options: OperatorOptions;
  /** Leader-election identity (default `<hostname>_<random>`), also the Event `source.host`. */
  identity?: string;
  /**
   * Apply capenter's CRDs (`crds/`) at start, before checking them (`capenter controller --install-crds`;
   * default false: a controller does not change cluster-wide definitions unless asked).
   */
  installCRDs?: boolean;
  /** Register prom-client's default process metrics (default true; only once per registry). */
  defaultMetrics?: boolean;
  /** Overrides for controller internals, mostly for tests (GC instance grace, registration TTL, ...). */
  tuning?: ControllerTuning;
}

/** A running (or ready to run) operator. */
export interface Operator {
  /**
   * Serves the endpoints, starts informers and leader election; controllers start when this process leads.
   * Resolves once the endpoints listen. `signal` aborting stops the operator like {@link stop}.
   * @throws when a port cannot be bound.
   */
  start(signal?: AbortSignal): Promise<void>;
  /** Stops controllers, releases the Lease, stops informers and endpoints (idempotent). */
  stop(): Promise<void>;
  /** Resolves when the operator has stopped (after `stop()`, an aborted signal, or lost leadership). */
  readonly done: Promise<void>;
  /** prom-client registry behind `/metrics`. */
  readonly registry: Registry;
  /** Cluster state. */
  readonly cluster: Cluster;
  readonly client: KubeClient;
  /** The undecorated provider (for the embedded one: `markUnavailable`, `idle`, ...). */
  readonly cloudProvider: CloudProvider;
  readonly informers: SharedInformers;
  readonly recorder: EventRecorder;
  readonly provisioner: Provisioner;
  /** The disruption controller (its `passListeners` and `orchestrator` are useful to tests and tools). */
  readonly disruption: DisruptionController;
  /** Every controller run while leading. */
  readonly controllers: readonly Controller[];
  /** Leader-election identity. */
  readonly identity: string;
  /** Bound metrics port (after `start`). */
  readonly metricsPort: number | undefined;
  /** Bound health-probe port (after `start`). */
  readonly healthProbePort: number | undefined;
  /** True while controllers run (this process holds the Lease, or leader election is off). */
  isLeader(): boolean;
  /**
   * Resolves when this process starts leading (at once when leader election is off) with the signal that aborts
   * when it stops leading; resolves `undefined` when the operator stops without ever leading. Lets controllers
   * built outside the operator (the KarpenterMachinePool controller) run only on the leader, as upstream's
   * controller-runtime manager runs every leader-election-gated runnable.
   */
  leading(): Promise<AbortSignal | undefined>;
  /** `undefined` when ready, else why not (the `/readyz` answer). */
  readiness(): string | undefined;
}

/**
 * client-go's request metrics (awslabs/operatorpkg `metrics.RegisterClientMetrics`) for every request of `client`
 * (watches aside): `client_go_request_total{code,method}` and `client_go_request_duration_seconds{verb,group,version,
 * kind,subresource}` (buckets `ExponentialBuckets(0.001, 1.5, 20)`, labels from the URL: `requestLatencyLabels`).
 * Returns the function that stops observing.
 */
export function registerClientMetrics(registry: Registry, client: KubeClient): () => void {
  const requests = registeredCounter(
    registry,
    'client_go_request_total',
    'Number of HTTP requests, partitioned by status code and method.',
    ['code', 'method'],
  );
  const latency = registeredHistogram(
    registry,
    'client_go_request_duration_seconds',
    'Request latency in seconds. Broken down by verb, group, version, kind, and subresource.',
    ['verb', 'group', 'version', 'kind', 'subresource'],
    Array.from({ length: 20 }, (_, i) => 0.001 * 1.5 ** i),
  );
  return client.observeRequests((method, code, path, seconds) => {
    requests.inc({ code, method });
    const labels = requestLatencyLabels(method, path);
    if (labels) latency.observe({ ...labels }, seconds);
  });
}

/**
 * Builds an operator; nothing runs until `start`.
 * @throws Error when neither `client` nor `kubeconfig` is given, the kubeconfig is unusable, or the region has
 * no catalog (default provider).
 */
export function createOperator(cfg: OperatorConfig): Operator {
  const options = cfg.options;
  const clock = cfg.clock ?? new RealClock();
  const logger = cfg.logger ?? silentLogger();
  const log = logger.child({ component: 'operator' });
  const client = operatorClient(cfg, clock);
  const identity = cfg.identity ?? `${hostname()}_${randomBytes(4).toString('hex')}`;

  const registry = new Registry();
  if (cfg.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry);
  const unobserve = registerClientMetrics(registry, client);

  const informers = new SharedInformers(client, {
    clock,
    // as upstream's cache DefaultTransform: managedFields are never read from the cache
    transform: stripManagedFields,
    onError: (err, phase) => log.debug({ phase, err: errorMessage(err) }, 'informer error (retrying)'),
  });
  let cluster: Cluster | undefined;
  const setup = cfg.cloudProvider ? undefined : (cfg.provider ?? kwokSetup(cfg.kwok));
  const ownKinds = setup?.ownKinds ?? [];
  registerOwnKinds(client, ownKinds);
  // NodeOverlay gate: the store the nodeoverlay controller fills; the provider reads its prices of unpriced types
  const overlayStore = options.featureGates.NodeOverlay === true ? new NodeOverlayStore() : undefined;
  const rawProvider: CloudProvider =
    cfg.cloudProvider ??
    (setup as ProviderSetup).createProvider({
      client,
      clock,
      logger: log,
      region: options.region,
      nodeClass: (ref) => cluster?.getNodeClass(ref),
      featureGates: options.featureGates,
      registry,
      minValuesPolicy: options.minValuesPolicy,
      ...(overlayStore ? { unpricedTypeOverlayPrices: () => overlayStore.unpricedTypePrices() } : {}),
    });
  cluster = new Cluster({
    client,
    informers,
    clock,
    logger,
    nodeClassKinds: rawProvider.supportedNodeClasses(),
    registry,
  });
  const recorder = new EventRecorder(client, {
    clock,
    component: 'karpenter',
    host: identity,
    onError: (err) => log.debug({ err: errorMessage(err) }, 'event write failed'),
  });
  const tuning = cfg.tuning ?? {};
  const { provisioner, disruption, controllers } = buildControllers({
    client,
    cluster,
    informers,
    clock,
    logger,
    recorder,
    registry,
    options,
    tuning,
    rawProvider,
    ...(setup ? { setup } : {}),
    ...(overlayStore ? { overlayStore } : {}),
    provider: (controller) => withMetrics(rawProvider, registry, { controller }),
  });
  const runtime = createRuntime({
    client,
    ownClient: !cfg.client,
    clock,
    log,
    identity,
    options,
    installCRDs: cfg.installCRDs === true,
    crdRecheckSeconds: tuning.crdRecheckSeconds ?? 5,
    required: requiredCRDs(rawProvider.supportedNodeClasses(), ownKinds),
    ownKinds,
    registry,
    informers,
    cluster,
    recorder,
    controllers,
    ...(setup?.readiness ? { providerReadiness: () => setup.readiness?.() } : {}),
  });
  void runtime.done.then(unobserve);
  return {
    registry,
    cluster,
    client,
    cloudProvider: rawProvider,
    informers,
    recorder,
    provisioner,
    disruption,
    controllers,
    identity,
    done: runtime.done,
    get metricsPort() {
      return runtime.metricsPort;
    },
    get healthProbePort() {
      return runtime.healthProbePort;
    },
    isLeader: () => runtime.isLeader(),
    leading: () => runtime.leading(),
    readiness: () => runtime.readiness(),
    stop: () => runtime.stop(),
    start: (signal) => runtime.start(signal),
  };
}

/**
 * The operator's client: `cfg.client`, else one built from `cfg.kubeconfig` (with the options' QPS and burst).
 * @throws Error when neither is given or the kubeconfig is unusable.
 */
function operatorClient(cfg: OperatorConfig, clock: Clock): KubeClient {
  if (cfg.client) return cfg.client;
  if (!cfg.kubeconfig) throw new Error('createOperator: pass a client or a kubeconfig (path or YAML)');
  return KubeClient.fromKubeconfig(cfg.kubeconfig, {
    clock,
    userAgent: 'capenter-controller',
    qps: cfg.options.kubeClientQPS,
    burst: cfg.options.kubeClientBurst,
    ...(cfg.transport ? { transport: cfg.transport } : {}),
  });
}
