/**
 * Backoff and rate limiters, after client-go `util/workqueue/default_rate_limiters.go` and
 * `apimachinery/pkg/util/wait` Backoff. All delays are in SECONDS (as the work queue's `addAfter`).
 */
import type { Clock } from './clock.ts';

/** Decides how long an item waits before it is processed again. Delays in seconds. */
export interface RateLimiter<K = string> {
  /** Delay in seconds before `item` may be processed again; counts as one more failure of it. */
  when(item: K): number;
  /** Stops tracking `item` (call after a success). */
  forget(item: K): void;
  /** How many times `item` has been asked about since the last `forget`. */
  numRequeues(item: K): number;
}

/**
 * Per-item exponential backoff: `base * 2^failures`, capped at `max` (seconds).
 * client-go's `ItemExponentialFailureRateLimiter`; the controller default is 5 ms → 1000 s.
 */
export class ItemExponentialRateLimiter<K = string> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  /**
   * @param baseSeconds first delay (default 0.005 s)
   * @param maxSeconds cap (default 1000 s)
   */
  constructor(
    private readonly baseSeconds = 0.005,
    private readonly maxSeconds = 1000,
  ) {}

  when(item: K): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    const delay = this.baseSeconds * 2 ** n;
    return Number.isFinite(delay) ? Math.min(delay, this.maxSeconds) : this.maxSeconds;
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * Overall token bucket (`qps` tokens per second, `burst` capacity) shared by all items; returns how long
 * the caller must wait for its reserved token. client-go's `BucketRateLimiter` (default 10 qps, burst 100).
 */
export class BucketRateLimiter<K = string> implements RateLimiter<K> {
  private tokens: number;
  private last: number;

  constructor(
    private readonly clock: Clock,
    private readonly qps = 10,
    private readonly burst = 100,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_item: K): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : -this.tokens / this.qps;
  }

  forget(_item: K): void {}

  numRequeues(_item: K): number {
    return 0;
  }
}

/** The longest delay of several limiters (client-go `MaxOfRateLimiter`). */
export class MaxOfRateLimiter<K = string> implements RateLimiter<K> {
  private readonly limiters: RateLimiter<K>[];
  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }
  when(item: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(item));
    return max;
  }
  forget(item: K): void {
    for (const l of this.limiters) l.forget(item);
  }
  numRequeues(item: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(item));
    return max;
  }
}

/**
 * client-go's `DefaultControllerRateLimiter`: max of per-item exponential (5 ms → 1000 s) and an overall
 * bucket of 10 qps / burst 100.
 */
export function defaultControllerRateLimiter<K = string>(clock: Clock): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialRateLimiter<K>(0.005, 1000),
    new BucketRateLimiter<K>(clock, 10, 100),
  );
}

/** Parameters of a stepwise exponential backoff (`wait.Backoff`). Durations in milliseconds. */
export interface BackoffOptions {
  /** First delay, ms. */
  initialMs: number;
  /** Upper bound for a delay, ms. */
  maxMs: number;
  /** Multiplier per step (≥ 1). */
  factor: number;
  /** Random extra fraction added to each delay, in [0, jitter] (0 disables). */
  jitter: number;
}

/**
 * Stateful exponential backoff for reconnect loops: `next()` returns the delay to wait (ms) and grows it;
 * `reset()` after a success. `random` is injected for deterministic tests (default Math.random).
 * Informer reconnects use client-go's reflector values: 800 ms → 30 s, factor 2, jitter 1.0.
 */
export class Backoff {
  private current: number;

  constructor(
    private readonly opts: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {
    this.current = opts.initialMs;
  }

  /** The delay (ms) to wait now; the following call returns a longer one (up to `maxMs`). */
  next(): number {
    const base = this.current;
    this.current = Math.min(this.opts.maxMs, this.current * this.opts.factor);
    const jittered = this.opts.jitter > 0 ? base * (1 + this.random() * this.opts.jitter) : base;
    return Math.min(jittered, this.opts.maxMs);
  }

  /** Back to the initial delay. */
  reset(): void {
    this.current = this.opts.initialMs;
  }
}
