/**
 * The two shapes every capenter controller takes, so the operator can start and stop them uniformly (mirrors
 * controller-runtime reconcilers and upstream Karpenter's singleton controllers).
 *
 * - {@link QueueController}: keyed reconciles fed by informer events through a rate-limited
 *   {@link WorkQueue} (one key is never reconciled concurrently with itself); an informer-fed one is built
 *   with `defineController` (`builder.ts`).
 * - {@link SingletonController}: one reconcile loop that runs again after the `requeueAfter` it returns
 *   (provisioning batcher, disruption every 10 s, garbage collection every 2 min).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Clock } from '../../kube/clock.ts';
import { type ReconcileObserver, type ReconcileResult, runWorkers, WorkQueue } from '../../kube/workqueue.ts';
import { errorMessage } from './errors.ts';
import { reconcileMetrics, workQueueMetrics } from './metrics.ts';

export type { ReconcileResult } from '../../kube/workqueue.ts';

/** Anything the operator can run until its signal aborts. */
export interface Controller {
  /** Name, as upstream names it (`nodeclaim.lifecycle`, `provisioner`, `disruption`, ...). */
  readonly name: string;
  /** Runs until `signal` aborts; resolves once in-flight work has finished. Never rejects. */
  start(signal: AbortSignal): Promise<void>;
}

/** Options of a {@link QueueController}. */
export interface QueueControllerOptions {
  name: string;
  clock: Clock;
  logger: Logger;
  /** Parallel reconciles of distinct keys (default 10). */
  concurrency?: number;
  /** Where the controller's reconcile and work-queue metrics go (`metrics.ts`); none without it. */
  registry?: Registry | undefined;
  /**
   * Reconciles one key (`name` or `namespace/name`). Returning `{requeueAfter: s}` re-runs it after `s`
   * seconds; throwing re-runs it with exponential backoff (5 ms → 1000 s) and logs the error.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a reconciler may simply return nothing
  reconcile: (key: string) => Promise<ReconcileResult | undefined | void>;
}

/** A keyed controller: enqueue keys from informer handlers, reconcile them with backoff. */
export class QueueController implements Controller {
  readonly name: string;
  readonly queue: WorkQueue<string>;
  private readonly opts: QueueControllerOptions;

  private readonly observer: ReconcileObserver | undefined;

  constructor(opts: QueueControllerOptions) {
    this.name = opts.name;
    this.opts = opts;
    const metrics = opts.registry ? workQueueMetrics(opts.registry, opts.name) : undefined;
    this.queue = new WorkQueue<string>({
      clock: opts.clock,
      name: opts.name,
      ...(metrics ? { observer: metrics } : {}),
    });
    metrics?.track(this.queue as WorkQueue<unknown>);
    this.observer = opts.registry
      ? reconcileMetrics(opts.registry, opts.name, opts.concurrency ?? 10, opts.clock)
      : undefined;
  }

  /** Queues `key` for reconciliation now (deduplicated). */
  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Queues `key` after `seconds` (earliest deadline wins). */
  enqueueAfter(key: string, seconds: number): void {
    this.queue.addAfter(key, seconds);
  }

  async start(signal: AbortSignal): Promise<void> {
    const log = this.opts.logger.child({ controller: this.name });
    signal.addEventListener('abort', () => this.queue.shutDown(), { once: true });
    if (signal.aborted) this.queue.shutDown();
    await runWorkers(
      this.queue,
      this.opts.concurrency ?? 10,
      this.opts.reconcile,
      (key, err) => log.error({ key, err: errorMessage(err) }, 'reconcile failed'),
      this.observer,
    );
  }
}

/** Options of a {@link SingletonController}. */
export interface SingletonControllerOptions {
  name: string;
  clock: Clock;
  logger: Logger;
  /**
   * One pass. Returns the seconds until the next pass (`requeueAfter`); throwing logs the error and retries
   * after `errorBackoffSeconds`.
   */
  reconcile: (signal: AbortSignal) => Promise<{ requeueAfter: number }>;
  /** Seconds to wait after a failed pass (default 5). */
  errorBackoffSeconds?: number;
}

/** A controller with a single reconcile loop; {@link SingletonController.trigger} wakes it early. */
export class SingletonController implements Controller {
  readonly name: string;
  private readonly opts: SingletonControllerOptions;
  private wake: (() => void) | undefined;
  private pending = false;

  constructor(opts: SingletonControllerOptions) {
    this.name = opts.name;
    this.opts = opts;
  }

  /** Runs the next pass as soon as the current one (if any) finishes. */
  trigger(): void {
    this.pending = true;
    this.wake?.();
  }

  async start(signal: AbortSignal): Promise<void> {
    const log = this.opts.logger.child({ controller: this.name });
    while (!signal.aborted) {
      this.pending = false;
      let waitSeconds: number;
      try {
        waitSeconds = (await this.opts.reconcile(signal)).requeueAfter;
      } catch (err) {
        log.error({ err: errorMessage(err) }, 'reconcile failed');
        waitSeconds = this.opts.errorBackoffSeconds ?? 5;
      }
      if (signal.aborted || this.pending) continue;
      const ac = new AbortController();
      const onAbort = (): void => ac.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.wake = () => ac.abort();
      await this.opts.clock.sleep(Math.max(0, waitSeconds) * 1000, ac.signal);
      this.wake = undefined;
      signal.removeEventListener('abort', onAbort);
    }
  }
}
