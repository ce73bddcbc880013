/**
 * Controller runtime: the two shapes every capenter controller takes, so the operator can start and stop
 * them uniformly (mirrors controller-runtime reconcilers and upstream Karpenter's singleton controllers).
 *
 * - {@link QueueController}: keyed reconciles fed by informer events through a rate-limited
 *   {@link WorkQueue} (one key is never reconciled concurrently with itself).
 * - {@link SingletonController}: one reconcile loop that runs again after the `requeueAfter` it returns
 *   (provisioning batcher, disruption every 10 s, garbage collection every 2 min).
 */
import type { Logger } from 'pino';
import type { Clock } from '../kube/clock.ts';
import { isInformerSyncTimeout, type SharedInformers } from '../kube/informer.ts';
import { type ReconcileResult, runWorkers, WorkQueue } from '../kube/workqueue.ts';

export type { ReconcileResult } from '../kube/workqueue.ts';

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

  constructor(opts: QueueControllerOptions) {
    this.name = opts.name;
    this.opts = opts;
    this.queue = new WorkQueue<string>({ clock: opts.clock, name: opts.name });
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
    await runWorkers(this.queue, this.opts.concurrency ?? 10, this.opts.reconcile, (key, err) =>
      log.error({ key, err: errorMessage(err) }, 'reconcile failed'),
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

/** A printable message for any thrown value (never includes request bodies). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The option of every informer-fed controller on how it waits for its informers ({@link runQueueWithInformers}). */
export interface InformerSyncOptions {
  /** Ms on the injected clock between the error lines while the informers have not synced (default 60,000; {@link waitForInformerSync}). */
  syncTimeoutMs?: number;
}

/** Options of {@link waitForInformerSync}. */
export interface InformerSyncWait {
  /** Controller name, for the log lines. */
  name: string;
  logger: Logger;
  informers: SharedInformers;
  /** Stops the wait (the controller is stopping). */
  signal: AbortSignal;
  /** Milliseconds on the informers' clock between two error lines (default 60,000). */
  timeoutMs?: number | undefined;
}

/**
 * Waits until every informer of `informers` has synced, however long that takes: true once synced, false when
 * `signal` aborts or the informers are stopped first. Every `timeoutMs` without sync logs one error naming the
 * kinds still unsynced and how long it has waited (`informers have not synced; the controller starts once they
 * do`), then waits again; the informers retry list/watch with backoff meanwhile, and the operator's `/readyz`
 * answers `informers have not synced`.
 *
 * controller-runtime's `CacheSyncTimeout` (2 min) makes the controller's `Start` fail instead, which stops the
 * manager so that the kubelet restarts the process. A capenter controller never stops on its own
 * ({@link Controller.start} never rejects), and giving up left it stopped inside a running operator: in the aws
 * soak of 2026-12-02 (seed 14) a clock jump right after a restart passed the 60-s timeout of every controller at
 * once, and `nodeclaim.lifecycle` never ran again (a NodeClaim stayed unregistered for 29 min, its pods pending).
 */
export async function waitForInformerSync(o: InformerSyncWait): Promise<boolean> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  let waitedMs = 0;
  while (!o.signal.aborted) {
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      o.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const r = await Promise.race([
        o.informers.waitForSync(timeoutMs).then(() => 'synced' as const),
        aborted,
      ]);
      return r === 'synced';
    } catch (err) {
      if (!isInformerSyncTimeout(err)) {
        if (!o.signal.aborted)
          o.logger.error(
            { controller: o.name, err: errorMessage(err) },
            'informers stopped before they synced',
          );
        return false;
      }
      waitedMs += timeoutMs;
      o.logger.error(
        { controller: o.name, kinds: o.informers.unsynced(), waitedMs },
        'informers have not synced; the controller starts once they do',
      );
    } finally {
      if (onAbort) o.signal.removeEventListener('abort', onAbort);
    }
  }
  return false;
}

/** Options of {@link runQueueWithInformers}. */
export interface InformerQueueRun {
  /** Controller name, for the log lines. */
  name: string;
  logger: Logger;
  /** The informers whose caches the controller reads (started here; idempotent when shared). */
  informers: SharedInformers;
  /** True when the controller created `informers` itself: they are stopped when it stops. */
  ownInformers: boolean;
  queue: QueueController;
  signal: AbortSignal;
  /** Unsubscribe functions of the informer handlers, called when the controller stops. */
  offs: ReadonlyArray<() => void>;
  /** Milliseconds between the error lines while the caches have not synced (default 60,000; see {@link waitForInformerSync}). */
  syncTimeoutMs?: number | undefined;
  /** Called once the caches have synced, before the first reconcile. */
  onSynced?: () => void;
}

/**
 * The common body of an informer-fed {@link QueueController}'s `start`: start the informers, wait for their
 * caches ({@link waitForInformerSync}: as long as it takes, logging while it does), run the queue until `signal`
 * aborts, then drop the handlers and stop informers it owns. Never rejects.
 */
export async function runQueueWithInformers(o: InformerQueueRun): Promise<void> {
  o.informers.start();
  try {
    const synced = await waitForInformerSync({
      name: o.name,
      logger: o.logger,
      informers: o.informers,
      signal: o.signal,
      timeoutMs: o.syncTimeoutMs,
    });
    if (!synced) return;
    o.onSynced?.();
    await o.queue.start(o.signal);
  } catch (err) {
    o.logger.error({ controller: o.name, err: errorMessage(err) }, 'controller stopped on an error');
  } finally {
    for (const off of o.offs) off();
    if (o.ownInformers) await o.informers.stop();
  }
}
