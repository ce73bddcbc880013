/**
 * The run-time of an operator (upstream controller-runtime's manager): `/metrics`, `/healthz`, `/readyz` from the
 * start; the CRD gate (informers and controllers start only once the cluster serves capenter's CRDs, one error
 * naming the missing ones until then, `--install-crds` applies them first; see `./crds.ts`); leader election
 * (`karpenter-leader-election` Lease; controllers run only while leading, and losing the Lease stops the operator
 * so the process is restarted); and the ordered stop. `createOperator` (`./operator.ts`) builds one per operator.
 */
import { setMaxListeners } from 'node:events';
import type { Gauge, Registry } from 'prom-client';
import type { KarpenterKindInfo } from '../apis/schemas.ts';
import { type Controller, errorMessage } from '../controllers/runtime/index.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { SharedInformers } from '../kube/informer.ts';
import { type LeaderCallbacks, LeaderElector } from '../kube/leaderelection.ts';
import type { Logger } from '../kube/logger.ts';
import { registeredGauge } from '../kube/metrics.ts';
import type { Cluster } from '../state/cluster.ts';
import { checkCRDs, crdProblem, installCRDs, type RequiredCRD } from './crds.ts';
import type { OperatorOptions } from './options.ts';
import { type HttpEndpoints, startHttpEndpoints } from './server.ts';

/** What the run-time drives: the operator's shared pieces and its controllers. */
export interface OperatorRuntimeDeps {
  client: KubeClient;
  /** Close `client` on stop (the operator built it). */
  ownClient: boolean;
  clock: Clock;
  /** The operator's logger (component `operator`). */
  log: Logger;
  identity: string;
  options: OperatorOptions;
  /** Apply the CRDs before checking them. */
  installCRDs: boolean;
  /** Seconds between checks for missing CRDs. */
  crdRecheckSeconds: number;
  /** The CRDs that must be served (the provider's NodeClass kinds included). */
  required: RequiredCRD[];
  /** The provider module's own NodeClass kinds, whose CRDs `installCRDs` applies too (default none). */
  ownKinds?: readonly KarpenterKindInfo[];
  registry: Registry;
  informers: SharedInformers;
  cluster: Cluster;
  recorder: EventRecorder;
  controllers: readonly Controller[];
  /** The cloud provider's own readiness reason (`ProviderSetup.readiness`), checked after the informers. */
  providerReadiness?: () => string | undefined;
}

/** The run-time face of an operator (see `Operator` in `./operator.ts` for each member's contract). */
export interface OperatorRuntime {
  start(signal?: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  readonly done: Promise<void>;
  readonly metricsPort: number | undefined;
  readonly healthProbePort: number | undefined;
  isLeader(): boolean;
  leading(): Promise<AbortSignal | undefined>;
  readiness(): string | undefined;
}

/** A promise with its resolve function. */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve: (v: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * Waits until every required CRD is served: installs them first when asked, then checks every
 * `crdRecheckSeconds` (every 250 ms during the minute after an install, without an error: just-applied CRDs take a
 * moment to be Established). `problem` is the `/readyz` answer meanwhile; `served` resolves once they are.
 */
class CRDGate {
  problem: string | undefined = 'checking the CustomResourceDefinitions';
  private readonly ready = deferred<void>();
  readonly served = this.ready.promise;

  constructor(private readonly d: OperatorRuntimeDeps) {}

  /** Runs until the CRDs are served or `signal` aborts. Never rejects for API errors (they are the problem). */
  async run(signal: AbortSignal): Promise<void> {
    const { client, clock, log, required } = this.d;
    let graceUntil = Number.NEGATIVE_INFINITY;
    if (this.d.installCRDs) {
      try {
        const names = await installCRDs(client, undefined, this.d.ownKinds);
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
        this.problem = undefined;
        if (reported !== undefined)
          log.info({ crds: required.map((r) => r.name) }, 'CustomResourceDefinitions served');
        this.ready.resolve();
        return;
      }
      this.problem = problem;
      const inGrace = clock.now() < graceUntil;
      if (check.missing.length > 0 && reported === undefined && !inGrace) {
        log.error({ missing: check.missing, fix: 'kubectl apply -f crds/' }, problem);
        reported = problem;
      } else if (check.missing.length === 0 || inGrace) log.debug({ err: check.error }, problem);
      await clock.sleep(inGrace ? 250 : this.d.crdRecheckSeconds * 1000, signal);
    }
  }
}

/**
 * client-go's `leader_election_master_status{name}` gauge in `registry` (controller-runtime
 * `pkg/metrics/leaderelection.go`): 1 while this instance leads the Lease `name`, else 0. Declared also when
 * leader election is off, as controller-runtime registers it at start; it then has no series.
 */
function masterStatusGauge(registry: Registry): Gauge<'name'> {
  return registeredGauge(
    registry,
    'leader_election_master_status',
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    ['name'],
  );
}

/**
 * The leader elector of `d` (the options' Lease and timings) calling `callbacks`, keeping
 * {@link masterStatusGauge} of the Lease.
 */
function leaderElector(d: OperatorRuntimeDeps, callbacks: LeaderCallbacks): LeaderElector {
  const { options, log } = d;
  const status = masterStatusGauge(d.registry);
  const lease = { name: options.leaderElectionName };
  status.set(lease, 0);
  return new LeaderElector({
    client: d.client,
    clock: d.clock,
    lockName: options.leaderElectionName,
    lockNamespace: options.leaderElectionNamespace,
    identity: d.identity,
    leaseDurationSeconds: options.leaseDurationSeconds,
    renewDeadlineSeconds: options.renewDeadlineSeconds,
    retryPeriodSeconds: options.retryPeriodSeconds,
    onError: (err) => log.warn({ err: errorMessage(err) }, 'leader election error'),
    callbacks: {
      ...callbacks,
      onStartedLeading: (signal) => {
        status.set(lease, 1);
        callbacks.onStartedLeading(signal);
      },
      onStoppedLeading: () => {
        status.set(lease, 0);
        callbacks.onStoppedLeading();
      },
    },
  });
}

/** Starts every controller of `d` once `served` resolves, unless `signal` aborted first; resolves when all stopped. */
async function runWhenServed(
  d: OperatorRuntimeDeps,
  served: Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const { controllers, log } = d;
  setMaxListeners(10 * controllers.length, signal);
  const aborted = new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
  await Promise.race([served, aborted]);
  if (signal.aborted) return;
  log.info({ identity: d.identity, controllers: controllers.map((c) => c.name) }, 'starting controllers');
  await Promise.all(
    controllers.map((c) =>
      c
        .start(signal)
        .catch((err: unknown) =>
          log.error({ controller: c.name, err: errorMessage(err) }, 'controller stopped with an error'),
        ),
    ),
  );
}

/** Builds the run-time of `d`; nothing runs until `start`. */
export function createRuntime(d: OperatorRuntimeDeps): OperatorRuntime {
  const { client, log, identity, options } = d;
  let endpoints: HttpEndpoints | undefined;
  let elector: LeaderElector | undefined;
  let leading: AbortController | undefined;
  let running: Promise<unknown> | undefined;
  let started = false;
  let stopping: Promise<void> | undefined;
  let electionDecided = !options.leaderElect;
  masterStatusGauge(d.registry);
  const gate = new CRDGate(d);
  const done = deferred<void>();
  const leadingStarted = deferred<AbortSignal | undefined>();
  const gateAbort = new AbortController();

  const runControllers = (signal: AbortSignal): void => {
    leadingStarted.resolve(signal);
    running = runWhenServed(d, gate.served, signal);
  };

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      log.info({ identity }, 'stopping operator');
      gateAbort.abort();
      leading?.abort();
      await running;
      await elector?.stop();
      await d.recorder.flush();
      d.cluster.close();
      await d.informers.stop();
      await endpoints?.close();
      if (d.ownClient) client.close();
      leadingStarted.resolve(undefined);
      done.resolve();
    })();
    return stopping;
  };

  const elect = (): LeaderElector =>
    leaderElector(d, {
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
    });

  const rt: OperatorRuntime = {
    done: done.promise,
    get metricsPort() {
      return endpoints?.metricsPort;
    },
    get healthProbePort() {
      return endpoints?.healthProbePort;
    },
    isLeader: () => leading !== undefined && !leading.signal.aborted,
    leading: () => leadingStarted.promise,
    readiness: () => {
      if (gate.problem !== undefined) return gate.problem;
      if (!d.informers.hasSynced()) return 'informers have not synced';
      if (!electionDecided) return 'leader election has not decided';
      return d.providerReadiness?.();
    },
    stop,
    async start(signal?: AbortSignal) {
      if (started) return;
      started = true;
      // a signal that aborted before start (a SIGTERM during start-up) stops at once: its event has already fired
      if (signal?.aborted) return stop();
      signal?.addEventListener('abort', () => void stop(), { once: true });
      endpoints = await startHttpEndpoints({
        registry: d.registry,
        metricsPort: options.metricsPort,
        healthProbePort: options.healthProbePort,
        host: options.bindAddress,
        readiness: rt.readiness,
      });
      log.info(
        { metricsPort: endpoints.metricsPort, healthProbePort: endpoints.healthProbePort },
        'serving /metrics, /healthz, /readyz',
      );
      // informers and controllers start once the CRDs they read are served (no 404 retries until then)
      void gate
        .run(gateAbort.signal)
        .then(() => {
          if (!gateAbort.signal.aborted) d.informers.start();
        })
        .catch((err: unknown) =>
          log.error({ err: errorMessage(err) }, 'CustomResourceDefinition check failed'),
        );
      if (!options.leaderElect) {
        leading = new AbortController();
        runControllers(leading.signal);
        return;
      }
      elector = elect();
      elector.start();
    },
  };
  return rt;
}
