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

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions<K> {
  /** Time source for delayed adds. */
  clock: Clock;
  /** Backoff for `addRateLimited`; default {@link defaultControllerRateLimiter}. */
  rateLimiter?: RateLimiter<K>;
  /** Name for diagnostics/metrics. */
  name?: string;
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
  /** Name given in the options (diagnostics). */
  readonly name: string;

  constructor(opts: WorkQueueOptions<K>) {
    this.clock = opts.clock;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(opts.clock);
    this.name = opts.name ?? 'queue';
  }

  /** Queues `key` unless already queued; if it is being processed it is re-queued on `done`. No-op after shutdown. */
  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const w = this.waiters.shift();
    if (w) {
      this.dirty.delete(key);
      this.processing.add(key);
      w(key);
      return;
    }
    this.queue.push(key);
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
    this.processing.add(k);
    return k;
  }

  /** Marks `key` finished; if it was added while processing it is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
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

/**
 * Runs `concurrency` workers pulling from `queue` until it shuts down. For each key: `reconcile(key)`;
 * on success `forget` and (if asked) `addAfter(requeueAfter)` or `addRateLimited` (requeue); on a thrown
 * error `addRateLimited` and `onError(key, err)`. Resolves when all workers have exited.
 * Mirrors controller-runtime's reconcile loop semantics.
 */
export async function runWorkers<K>(
  queue: WorkQueue<K>,
  concurrency: number,
  // biome-ignore lint/suspicious/noConfusingVoidType: a reconciler may simply return nothing
  reconcile: (key: K) => Promise<ReconcileResult | undefined | void>,
  onError: (key: K, err: unknown) => void = () => {},
): Promise<void> {
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        const res = await reconcile(key);
        if (res?.requeue) {
          queue.addRateLimited(key);
        } else {
          queue.forget(key);
          if (res?.requeueAfter !== undefined) queue.addAfter(key, res.requeueAfter);
        }
      } catch (err) {
        queue.addRateLimited(key);
        onError(key, err);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}
