/**
 * Rate-limited, delaying, deduplicating work queue with client-go `util/workqueue` semantics:
 * - a key is queued at most once ("dirty" set);
 * - a key being processed (between `get` and `done`) is never handed to a second worker; if it is added
 *   again meanwhile it is processed exactly once more after `done`;
 * - `addAfter(key, seconds)` delays on the injected {@link Clock} (earliest deadline wins per key);
 * - `addRateLimited(key)` delays by the {@link RateLimiter} (default: per-item 5 ms → 1000 s exponential
 *   plus a 10 qps / burst 100 bucket), `forget(key)` resets it.
 */
import { defaultControllerRateLimiter, type RateLimiter } from './backoff.ts';
import type { Clock, TimerHandle } from './clock.ts';

/**
 * What a {@link WorkQueue} reports, as client-go's `workqueue.MetricsProvider` (the metrics themselves are in
 * `src/controllers/runtime/metrics.ts`). Durations in seconds on the queue's clock.
 */
export interface WorkQueueObserver {
  /** A key became queued (not counted when it already was): `workqueue_adds_total`. */
  added(): void;
  /** A key was handed to a worker after waiting `seconds` since it was queued: `workqueue_queue_duration_seconds`. */
  queued(seconds: number): void;
  /** A worker finished a key it held `seconds`: `workqueue_work_duration_seconds`. */
  worked(seconds: number): void;
  /** `addRateLimited` was called: `workqueue_retries_total`. */
  retried(): void;
}

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions<K> {
  /** Time source for delayed adds. */
  clock: Clock;
  /** Backoff for `addRateLimited`; default {@link defaultControllerRateLimiter}. */
  rateLimiter?: RateLimiter<K>;
  /** Name for diagnostics/metrics. */
  name?: string;
  /** Metric hooks (client-go's workqueue metrics); none by default. */
  observer?: WorkQueueObserver;
}

/** Outcome of one reconcile, as returned to {@link runWorkers}. */
export interface ReconcileResult {
  /** Requeue after this many seconds (and forget the failure count). */
  requeueAfter?: number;
  /** Requeue with rate-limited backoff (as if it failed, without an error). */
  requeue?: boolean;
}

/** A work queue of keys (usually `namespace/name` strings). */
export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly waiting = new Map<K, { at: number; handle: TimerHandle }>();
  private readonly waiters: Array<(k: K | undefined) => void> = [];
  private shuttingDown = false;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter<K>;
  private readonly observer: WorkQueueObserver | undefined;
  /** When each queued key was added (ms, the clock's), with an observer. */
  private readonly addedAt = new Map<K, number>();
  /** When each key being processed was handed out (ms), with an observer. */
  private readonly startedAt = new Map<K, number>();
  /** Name given in the options (diagnostics). */
  readonly name: string;

  constructor(opts: WorkQueueOptions<K>) {
    this.clock = opts.clock;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(opts.clock);
    this.name = opts.name ?? 'queue';
    this.observer = opts.observer;
  }

  /** Queues `key` unless already queued; if it is being processed it is re-queued on `done`. No-op after shutdown. */
  add(key: K): void {
    this.enqueue(key, true);
  }

  /** {@link add}; `fresh` false for a key added while processed and queued on `done` (counted when it was added). */
  private enqueue(key: K, fresh: boolean): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.observer && fresh) {
      this.observer.added();
      this.addedAt.set(key, this.clock.now());
    }
    if (this.processing.has(key)) return;
    const w = this.waiters.shift();
    if (w) {
      this.dirty.delete(key);
      this.handOut(key);
      w(key);
      return;
    }
    this.queue.push(key);
  }

  /** Marks `key` processing (and reports how long it was queued). */
  private handOut(key: K): void {
    this.processing.add(key);
    if (!this.observer) return;
    const now = this.clock.now();
    const at = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (at !== undefined) this.observer.queued((now - at) / 1000);
    this.startedAt.set(key, now);
  }

  /**
   * Adds `key` after `seconds` (≤ 0 adds now). If the key is already waiting, the earlier deadline wins.
   */
  addAfter(key: K, seconds: number): void {
    if (this.shuttingDown) return;
    if (!(seconds > 0)) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + seconds * 1000;
    const existing = this.waiting.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.clock.clearTimeout(existing.handle);
    const handle = this.clock.setTimeout(() => {
      const cur = this.waiting.get(key);
      if (cur?.handle === handle) this.waiting.delete(key);
      this.add(key);
    }, seconds * 1000);
    this.waiting.set(key, { at, handle });
  }

  /** Adds `key` after the rate limiter's delay for it (one more failure counted). */
  addRateLimited(key: K): void {
    this.observer?.retried();
    this.addAfter(key, this.limiter.when(key));
  }

  /** Resets the rate limiter's failure count for `key` (call after a successful reconcile). */
  forget(key: K): void {
    this.limiter.forget(key);
  }

  /** Failures counted for `key` since the last `forget`. */
  numRequeues(key: K): number {
    return this.limiter.numRequeues(key);
  }

  /**
   * Next key to process, waiting until one is available. Resolves `undefined` once the queue is shut down
   * and (for `get`) empty. The caller must call `done(key)` when finished.
   */
  get(): Promise<K | undefined> {
    const k = this.tryGet();
    if (k !== undefined) return Promise.resolve(k);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Like `get` but never waits: the next key or `undefined` if none is ready. */
  tryGet(): K | undefined {
    if (this.head >= this.queue.length) return undefined;
    const k = this.queue[this.head] as K;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.dirty.delete(k);
    this.handOut(k);
    return k;
  }

  /** Marks `key` finished; if it was added while processing it is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    const started = this.startedAt.get(key);
    if (started !== undefined) {
      this.startedAt.delete(key);
      this.observer?.worked((this.clock.now() - started) / 1000);
    }
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.enqueue(key, false);
    }
  }

  /** Keys ready to be processed now (not counting delayed or in-process keys). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** Keys currently waiting on `addAfter`. */
  delayedLen(): number {
    return this.waiting.size;
  }

  /** Keys currently being processed. */
  processingLen(): number {
    return this.processing.size;
  }

  /**
   * Keys queued and not yet handed to a worker, those added again while processed included (client-go's
   * `workqueue_depth`).
   */
  depth(): number {
    return this.dirty.size;
  }

  /**
   * Seconds the keys being processed have been held so far, in total and the longest (client-go's
   * `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`); zeros without an
   * observer.
   */
  unfinishedWork(): { totalSeconds: number; longestSeconds: number } {
    const now = this.clock.now();
    let total = 0;
    let longest = 0;
    for (const at of this.startedAt.values()) {
      const s = (now - at) / 1000;
      total += s;
      longest = Math.max(longest, s);
    }
    return { totalSeconds: total, longestSeconds: longest };
  }

  /** True after {@link shutDown}. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops accepting keys, cancels delayed adds and releases all waiting `get` calls with `undefined`. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const w of this.waiting.values()) this.clock.clearTimeout(w.handle);
    this.waiting.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}

/** How a reconcile ended, as controller-runtime's `controller_runtime_reconcile_total` `result` label. */
export type ReconcileOutcome = 'success' | 'error' | 'requeue' | 'requeue_after';

/**
 * What {@link runWorkers} reports (the metrics are in `src/controllers/runtime/metrics.ts`): `started()` as a
 * reconcile begins returns the function called with its outcome when it ends.
 */
export interface ReconcileObserver {
  started(): (outcome: ReconcileOutcome) => void;
}

/**
 * Runs `concurrency` workers pulling from `queue` until it shuts down. For each key: `reconcile(key)`;
 * on success `forget` and (if asked) `addAfter(requeueAfter)` or `addRateLimited` (requeue); on a thrown
 * error `addRateLimited` and `onError(key, err)`. Resolves when all workers have exited. `observer` sees every
 * reconcile's outcome: `error` when it threw, else `requeue_after` for a positive `requeueAfter`, else `requeue`,
 * else `success` (controller-runtime's order).
 * Mirrors controller-runtime's reconcile loop semantics.
 */
export async function runWorkers<K>(
  queue: WorkQueue<K>,
  concurrency: number,
  // biome-ignore lint/suspicious/noConfusingVoidType: a reconciler may simply return nothing
  reconcile: (key: K) => Promise<ReconcileResult | undefined | void>,
  onError: (key: K, err: unknown) => void = () => {},
  observer?: ReconcileObserver,
): Promise<void> {
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const ended = observer?.started();
      try {
        const res = await reconcile(key);
        if (res?.requeue) {
          queue.addRateLimited(key);
        } else {
          queue.forget(key);
          if (res?.requeueAfter !== undefined) queue.addAfter(key, res.requeueAfter);
        }
        ended?.(
          res?.requeueAfter !== undefined && res.requeueAfter > 0
            ? 'requeue_after'
            : res?.requeue
              ? 'requeue'
              : 'success',
        );
      } catch (err) {
        ended?.('error');
        queue.addRateLimited(key);
        onError(key, err);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}
