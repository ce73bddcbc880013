/**
 * Injected time source. Everything time-based in `kube/` (work queue delays, backoff, informer reconnects,
 * event dedupe windows, leader election) reads time and sleeps only through a {@link Clock}, so tests can
 * drive it with a {@link FakeClock}. Mirrors the role of k8s.io/utils/clock in client-go.
 */

/** Opaque handle returned by {@link Clock.setTimeout}. */
export interface TimerHandle {
  readonly id: number;
}

/** A source of time and timers. All durations are in milliseconds. */
export interface Clock {
  /** Current time in milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds (clamped to ≥ 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a no-op for fired or unknown handles. */
  clearTimeout(handle: TimerHandle): void;
  /**
   * Resolves after `ms` milliseconds. With an `AbortSignal`, resolves early (never rejects) when aborted,
   * so loops can `await clock.sleep(x, signal)` and then check `signal.aborted`.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Sleeps on `clock`, resolving early (not rejecting) when `signal` aborts. Shared by both clocks. */
function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The wall clock: `Date.now()` and Node timers. Timers are `unref`'d so they never keep the process alive. */
export class RealClock implements Clock {
  private nextId = 1;
  private readonly timers = new Map<number, NodeJS.Timeout>();

  now(): number {
    return Date.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    const t = setTimeout(
      () => {
        this.timers.delete(id);
        fn();
      },
      Math.max(0, ms),
    );
    t.unref();
    this.timers.set(id, t);
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    const t = this.timers.get(handle.id);
    if (t !== undefined) {
      clearTimeout(t);
      this.timers.delete(handle.id);
    }
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}

interface FakeTimer {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A manually advanced clock for tests. Time moves only through {@link FakeClock.advance} /
 * {@link FakeClock.tick} / {@link FakeClock.set}; due timers fire in (due time, creation order) order.
 */
export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private seq = 0;
  private timers: FakeTimer[] = [];

  /** @param startMs initial time in ms since epoch (default 2024-01-01T00:00:00Z). */
  constructor(startMs = Date.UTC(2024, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.current + Math.max(0, ms), seq: this.seq++, fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Number of timers not yet fired. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /** Due time (ms since epoch) of the earliest pending timer, or undefined. */
  nextTimerAt(): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) if (min === undefined || t.at < min) min = t.at;
    return min;
  }

  /**
   * Moves time forward by `ms` synchronously, firing every timer that becomes due (in order; timers created
   * by fired callbacks fire too if due). Promise continuations run only after this returns; use
   * {@link FakeClock.tick} when async code must react between timers.
   */
  advance(ms: number): void {
    const target = this.current + Math.max(0, ms);
    for (;;) {
      const t = this.popDue(target);
      if (!t) break;
      this.current = Math.max(this.current, t.at);
      t.fn();
    }
    this.current = target;
  }

  /** Sets the clock to an absolute time (must not go backwards), firing due timers like {@link advance}. */
  set(ms: number): void {
    if (ms < this.current) throw new Error(`FakeClock.set: cannot go back in time (${ms} < ${this.current})`);
    this.advance(ms - this.current);
  }

  /**
   * Like {@link advance} but async: after each fired timer it lets pending promise continuations and
   * immediates run, so code awaiting `sleep()` can schedule its next timer before time moves on.
   */
  async tick(ms: number): Promise<void> {
    const target = this.current + Math.max(0, ms);
    await flush();
    for (;;) {
      const t = this.popDue(target);
      if (!t) break;
      this.current = Math.max(this.current, t.at);
      t.fn();
      await flush();
    }
    this.current = target;
    await flush();
  }

  private popDue(target: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.at > target) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    if (best) this.timers = this.timers.filter((t) => t !== best);
    return best;
  }
}

/** Lets queued microtasks and one macrotask turn run (used by {@link FakeClock.tick}). */
async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}
