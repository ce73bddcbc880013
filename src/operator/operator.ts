/**
 * The operator: wires one capenter controller process (upstream kubernetes-sigs/karpenter `pkg/operator` +
 * `cmd/controller`). It builds the Kubernetes client, the shared informers and cluster state, the cloud provider
 * (the embedded kwok provider with EC2NodeClass support unless one is injected) decorated with cloud-provider
 * metrics, an EventRecorder (component `karpenter`) and every controller:
 * provisioner + its trigger, `nodeclaim.lifecycle`, `nodeclaim.garbagecollection`, `node.termination`,
 * `nodepool` (hash, validation, readiness, counter), `nodeclass.status` and the metrics controllers.
 * Controllers run only while this process holds the leader Lease (`karpenter-leader-election` in
 * `kube-system`, 15 s / 10 s / 2 s); like upstream, losing leadership stops the operator (the process should
 * exit and be restarted). `/metrics`, `/healthz` and `/readyz` are served from the start; ready means the
 * CRDs are served, the informers have synced and leader election has decided (we lead, or another candidate is
 * known to). Controllers start only once the cluster serves capenter's CRDs (see crds.ts): until then one error
 * names the missing CRDs and the fix, and `/readyz` says which are missing; `installCRDs` applies them first.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { KubeObject } from '../apis/core.ts';
import { withMetrics } from '../cloudprovider/metrics.ts';
import type { CloudProvider } from '../cloudprovider/types.ts';
import {
  DisruptionController,
  type DisruptionControllerOptions,
} from '../controllers/disruption/controller.ts';
import { metricsControllers } from '../controllers/metrics/index.ts';
import { NodeTerminationController } from '../controllers/node/termination/controller.ts';
import { PodEventsController } from '../controllers/nodeclaim/disruption/podevents.ts';
import { ExpirationController } from '../controllers/nodeclaim/expiration/controller.ts';
import { NodeClaimGarbageCollectionController } from '../controllers/nodeclaim/garbagecollection/controller.ts';
import { NodeClaimLifecycleController } from '../controllers/nodeclaim/lifecycle/controller.ts';
import { NodePoolController } from '../controllers/nodepool/controller.ts';
import { NodePoolHashVersion, nodePoolHash } from '../controllers/nodepool/hash.ts';
import { NodeClassStatusController } from '../controllers/nodepool/nodeclass.ts';
import { Provisioner } from '../controllers/provisioning/provisioner.ts';
import { ProvisioningTrigger } from '../controllers/provisioning/trigger.ts';
import { type Controller, type ControllerDeps, errorMessage } from '../controllers/runtime/index.ts';
import { KubeClient } from '../kube/client.ts';
import { type Clock, RealClock } from '../kube/clock.ts';
import { EventRecorder } from '../kube/events.ts';
import { SharedInformers, stripManagedFields } from '../kube/informer.ts';
import { LeaderElector } from '../kube/leaderelection.ts';
import { type Logger, silentLogger } from '../kube/logger.ts';
import type { KubeTransport } from '../kube/transport.ts';
import { Cluster } from '../state/cluster.ts';
import { KubeNodeWriter } from '../state/kwoknodes.ts';
import { checkCRDs, crdProblem, installCRDs, requiredCRDs } from './crds.ts';
import { EmbeddedCloudProvider, type EmbeddedCloudProviderDeps } from './embedded.ts';
import type { OperatorOptions } from './options.ts';
import { type HttpEndpoints, startHttpEndpoints } from './server.ts';

/**
 * What a cloud provider built by the operator gets (see {@link OperatorConfig.cloudProvider}): the operator's
 * clock and logger, and the NodeClasses of its cluster state.
 */
export interface ProviderContext {
  clock: Clock;
  /** The operator's logger (component `operator`). */
  logger: Logger;
  /** A NodeClass of the cluster state by reference (`undefined` when not known yet). */
  nodeClass: (ref: { group: string; kind: string; name: string }) => KubeObject | undefined;
}

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
   * The cloud provider, or the function that builds it from the operator's clock, logger and cluster state;
   * default: {@link EmbeddedCloudProvider} (kwok Nodes, AWS catalog of `options.region`, KWOKNodeClass and
   * EC2NodeClass). A provider module gives this with its `extraControllers` and `nodeClassDependents`:
   * `awsOperatorConfig` (`./aws.ts`) for `--cloud-provider aws`, `clusterAPIOperatorConfig` (`./clusterapi.ts`)
   * for `--cloud-provider clusterapi`. Callers import those modules only for their provider, so the kwok
   * controller never loads the AWS SDK.
   */
  cloudProvider?: CloudProvider | ((ctx: ProviderContext) => CloudProvider);
  /** Extra kwok options for the default provider (instance IDs, registration delay, ...). */
  kwok?: EmbeddedCloudProviderDeps['kwok'];
  /**
   * Provider-specific controllers run under leadership with the others (e.g. the ClusterAPINodeClass status of
   * `--cloud-provider clusterapi`, the EC2NodeClass and interruption controllers of `--cloud-provider aws`), built
   * from the operator's client, informers and registry; `provider` is the cloud provider without the metrics
   * decoration of `deps.cloudProvider`.
   */
  extraControllers?: (deps: ControllerDeps, provider: CloudProvider) => Controller[];
  /** More dependents of a NodeClass kind's `Ready` (e.g. `{ClusterAPINodeClass: ['MachineDeploymentsReady']}`). */
  nodeClassDependents?: Record<string, string[]>;
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
  tuning?: {
    gcInstanceGraceSeconds?: number;
    registrationTimeoutSeconds?: number;
    launchTimeoutSeconds?: number;
    /** Seconds between checks for missing CRDs (default 5). */
    crdRecheckSeconds?: number;
    /** Seconds between provisioning resyncs of waiting pods (default 10). */
    provisioningResyncSeconds?: number;
    /** Disruption controller tunables (poll and validation periods, replacement timeout, core options). */
    disruption?: Pick<
      DisruptionControllerOptions,
      'pollSeconds' | 'validationSeconds' | 'replacementTimeoutSeconds' | 'coreOptions' | 'syncConditions'
    >;
  };
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
 * Builds an operator; nothing runs until `start`.
 * @throws Error when neither `client` nor `kubeconfig` is given, the kubeconfig is unusable, or the region has
 * no catalog (default provider).
 */
export function createOperator(cfg: OperatorConfig): Operator {
  const options = cfg.options;
  const clock = cfg.clock ?? new RealClock();
  const logger = cfg.logger ?? silentLogger();
  const log = logger.child({ component: 'operator' });
  let client: KubeClient;
  if (cfg.client) client = cfg.client;
  else if (cfg.kubeconfig)
    client = KubeClient.fromKubeconfig(cfg.kubeconfig, {
      clock,
      userAgent: 'capenter-controller',
      qps: options.kubeClientQPS,
      burst: options.kubeClientBurst,
      ...(cfg.transport ? { transport: cfg.transport } : {}),
    });
  else throw new Error('createOperator: pass a client or a kubeconfig (path or YAML)');
  const ownClient = !cfg.client;
  const identity = cfg.identity ?? `${hostname()}_${randomBytes(4).toString('hex')}`;

  const registry = new Registry();
  if (cfg.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

  const informers = new SharedInformers(client, {
    clock,
    // as upstream's cache DefaultTransform: managedFields are never read from the cache
    transform: stripManagedFields,
    onError: (err, phase) => log.debug({ phase, err: errorMessage(err) }, 'informer error (retrying)'),
  });
  let cluster: Cluster | undefined;
  const nodeClassLookup = (ref: { group: string; kind: string; name: string }): KubeObject | undefined =>
    cluster?.getNodeClass(ref);
  const rawProvider: CloudProvider =
    (typeof cfg.cloudProvider === 'function'
      ? cfg.cloudProvider({ clock, logger: log, nodeClass: nodeClassLookup })
      : cfg.cloudProvider) ??
    new EmbeddedCloudProvider({
      region: options.region,
      nodes: new KubeNodeWriter(client),
      clock,
      nodeClass: nodeClassLookup,
      kwok: {
        onError: (err, ctx) =>
          log.warn(
            { nodeclaim: ctx.nodeClaim, action: ctx.action, err: errorMessage(err) },
            'kwok node write failed',
          ),
        ...(cfg.kwok ?? {}),
      },
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
  const provider = (controller: string): CloudProvider => withMetrics(rawProvider, registry, { controller });
  const deps = (controller: string): ControllerDeps => ({
    client,
    cloudProvider: provider(controller),
    clock,
    logger,
    recorder,
    registry,
    informers,
  });
  const tuning = cfg.tuning ?? {};
  const provisioner = new Provisioner({
    client,
    cluster,
    cloudProvider: provider('provisioner'),
    clock,
    logger,
    recorder,
    registry,
    options: {
      batchIdleSeconds: options.batchIdleSeconds,
      batchMaxSeconds: options.batchMaxSeconds,
      nodePoolHash: (np) => ({ hash: nodePoolHash(np), version: NodePoolHashVersion }),
      ...(options.preferencePolicy ? { preferencePolicy: options.preferencePolicy } : {}),
    },
  });
  const disruption = new DisruptionController({
    client,
    cluster,
    cloudProvider: provider('disruption'),
    clock,
    logger,
    recorder,
    registry,
    nodePoolHash: (np) => ({ hash: nodePoolHash(np), version: NodePoolHashVersion }),
    launcher: provisioner.launcher,
    featureGates: { spotToSpotConsolidation: options.featureGates.SpotToSpotConsolidation === true },
    ...(options.preferencePolicy ? { coreOptions: { preferencePolicy: options.preferencePolicy } } : {}),
    ...(tuning.disruption ?? {}),
  });
  const metricsDeps = { cluster, clock, logger, registry, periodSeconds: options.metricsPeriodSeconds };
  const controllers: Controller[] = [
    provisioner,
    new ProvisioningTrigger({
      cluster,
      provisioner,
      clock,
      logger,
      ...(tuning.provisioningResyncSeconds !== undefined
        ? { resyncSeconds: tuning.provisioningResyncSeconds }
        : {}),
    }),
    new NodeClaimLifecycleController({
      ...deps('nodeclaim.lifecycle'),
      ...(tuning.registrationTimeoutSeconds !== undefined
        ? { registrationTimeoutSeconds: tuning.registrationTimeoutSeconds }
        : {}),
      ...(tuning.launchTimeoutSeconds !== undefined
        ? { launchTimeoutSeconds: tuning.launchTimeoutSeconds }
        : {}),
    }),
    new NodeClaimGarbageCollectionController({
      ...deps('nodeclaim.garbagecollection'),
      periodSeconds: options.gcPeriodSeconds,
      ...(tuning.gcInstanceGraceSeconds !== undefined
        ? { instanceGraceSeconds: tuning.gcInstanceGraceSeconds }
        : {}),
    }),
    new NodeTerminationController(deps('node.termination')),
    disruption,
    new ExpirationController(deps('nodeclaim.expiration')),
    new PodEventsController(deps('nodeclaim.podevents')),
    new NodePoolController(deps('nodepool')),
    new NodeClassStatusController({
      ...deps('nodeclass.status'),
      ...(cfg.nodeClassDependents ? { extraDependents: cfg.nodeClassDependents } : {}),
    }),
    ...metricsControllers(metricsDeps),
    ...(cfg.extraControllers ? cfg.extraControllers(deps('nodeclass'), rawProvider) : []),
  ];

  let endpoints: HttpEndpoints | undefined;
  let elector: LeaderElector | undefined;
  let leading: AbortController | undefined;
  let running: Promise<unknown> | undefined;
  let started = false;
  let stopping: Promise<void> | undefined;
  let electionDecided = !options.leaderElect;
  const required = requiredCRDs(rawProvider.supportedNodeClasses());
  let crdsNotReady: string | undefined = 'checking the CustomResourceDefinitions';
  let resolveCRDs: () => void = () => {};
  const crdsServed = new Promise<void>((r) => {
    resolveCRDs = r;
  });
  /** Installs the CRDs when asked, then checks until every required one is served (one error while not). */
  const crdGate = async (signal: AbortSignal): Promise<void> => {
    // just-applied CRDs take a moment to be Established: no error for them during this grace period
    let graceUntil = Number.NEGATIVE_INFINITY;
    if (cfg.installCRDs) {
      try {
        const names = await installCRDs(client);
        log.info({ crds: names }, 'applied CustomResourceDefinitions (--install-crds)');
        graceUntil = clock.now() + 60_000;
      } catch (err) {
        log.error(
          { err: errorMessage(err) },
          'cannot apply the CustomResourceDefinitions (--install-crds); apply them with `kubectl apply -f crds/`',
        );
      }
    }
    let reported: string | undefined;
    while (!signal.aborted) {
      const check = await checkCRDs(client, required);
      const problem = crdProblem(check);
      if (problem === undefined) {
        crdsNotReady = undefined;
        if (reported !== undefined)
          log.info({ crds: required.map((r) => r.name) }, 'CustomResourceDefinitions served');
        resolveCRDs();
        return;
      }
      crdsNotReady = problem;
      const inGrace = clock.now() < graceUntil;
      if (check.missing.length > 0 && reported === undefined && !inGrace) {
        log.error({ missing: check.missing, fix: 'kubectl apply -f crds/' }, problem);
        reported = problem;
      } else if (check.missing.length === 0 || inGrace) log.debug({ err: check.error }, problem);
      await clock.sleep(inGrace ? 250 : (tuning.crdRecheckSeconds ?? 5) * 1000, signal);
    }
  };
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => {
    resolveDone = r;
  });

  let resolveLeading: (s: AbortSignal | undefined) => void = () => {};
  const leadingStarted = new Promise<AbortSignal | undefined>((r) => {
    resolveLeading = r;
  });
  const runControllers = (signal: AbortSignal): void => {
    setMaxListeners(10 * controllers.length, signal);
    resolveLeading(signal);
    const aborted = new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
    running = (async () => {
      await Promise.race([crdsServed, aborted]);
      if (signal.aborted) return;
      log.info({ identity, controllers: controllers.map((c) => c.name) }, 'starting controllers');
      await Promise.all(
        controllers.map((c) =>
          c
            .start(signal)
            .catch((err: unknown) =>
              log.error({ controller: c.name, err: errorMessage(err) }, 'controller stopped with an error'),
            ),
        ),
      );
    })();
  };
  const gateAbort = new AbortController();

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      log.info({ identity }, 'stopping operator');
      gateAbort.abort();
      leading?.abort();
      await running;
      await elector?.stop();
      await recorder.flush();
      cluster.close();
      await informers.stop();
      await endpoints?.close();
      if (ownClient) client.close();
      resolveLeading(undefined);
      resolveDone();
    })();
    return stopping;
  };

  const op: Operator = {
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
    done,
    get metricsPort() {
      return endpoints?.metricsPort;
    },
    get healthProbePort() {
      return endpoints?.healthProbePort;
    },
    isLeader: () => leading !== undefined && !leading.signal.aborted,
    leading: () => leadingStarted,
    readiness: () => {
      if (crdsNotReady !== undefined) return crdsNotReady;
      if (!informers.hasSynced()) return 'informers have not synced';
      if (!electionDecided) return 'leader election has not decided';
      return undefined;
    },
    stop,
    async start(signal?: AbortSignal) {
      if (started) return;
      started = true;
      signal?.addEventListener('abort', () => void stop(), { once: true });
      endpoints = await startHttpEndpoints({
        registry,
        metricsPort: options.metricsPort,
        healthProbePort: options.healthProbePort,
        host: options.bindAddress,
        readiness: op.readiness,
      });
      log.info(
        { metricsPort: endpoints.metricsPort, healthProbePort: endpoints.healthProbePort },
        'serving /metrics, /healthz, /readyz',
      );
      // informers and controllers start once the CRDs they read are served (no 404 retries until then)
      void crdGate(gateAbort.signal)
        .then(() => {
          if (!gateAbort.signal.aborted) informers.start();
        })
        .catch((err: unknown) =>
          log.error({ err: errorMessage(err) }, 'CustomResourceDefinition check failed'),
        );
      if (!options.leaderElect) {
        leading = new AbortController();
        runControllers(leading.signal);
        return;
      }
      elector = new LeaderElector({
        client,
        clock,
        lockName: options.leaderElectionName,
        lockNamespace: options.leaderElectionNamespace,
        identity,
        leaseDurationSeconds: options.leaseDurationSeconds,
        renewDeadlineSeconds: options.renewDeadlineSeconds,
        retryPeriodSeconds: options.retryPeriodSeconds,
        onError: (err) => log.warn({ err: errorMessage(err) }, 'leader election error'),
        callbacks: {
          onStartedLeading: (s) => {
            electionDecided = true;
            leading = new AbortController();
            s.addEventListener('abort', () => leading?.abort(), { once: true });
            log.info({ identity }, 'acquired leader lease');
            runControllers(leading.signal);
          },
          onStoppedLeading: () => {
            log.info({ identity }, 'leader lease lost or released');
            void stop();
          },
          onNewLeader: (id) => {
            electionDecided = true;
            if (id !== identity) log.info({ leader: id }, 'another instance leads');
          },
        },
      });
      elector.start();
    },
  };
  return op;
}
