/**
 * The batch window of provisioning (upstream kubernetes-sigs/karpenter `pkg/controllers/provisioning/batcher.go`):
 * the first trigger opens a window; every further trigger extends it by the idle duration (default 1 s), up to
 * the max duration (default 10 s) after the first trigger. A trigger that arrives while no window is being
 * waited on (e.g. during a scheduling pass) arms the next window, like upstream's buffered channel.
 * Time runs on the injected {@link Clock}.
 */
import type { Clock, TimerHandle } from '../../kube/clock.ts';

/** Seconds without a new trigger after which the window closes (upstream `--batch-idle-duration`, 1 s). */
export const BATCH_IDLE_DURATION = 1;
/** Seconds after the first trigger after which the window closes regardless (upstream `--batch-max-duration`, 10 s). */
export const BATCH_MAX_DURATION = 10;

/** Options of {@link Batcher}. */
export interface BatcherOptions {
  clock: Clock;
  /** Idle duration in seconds (default {@link BATCH_IDLE_DURATION}). */
  idleSeconds?: number;
  /** Max duration in seconds (default {@link BATCH_MAX_DURATION}). */
  maxSeconds?: number;
}

/** Splits a stream of triggers into windows. Single consumer: one `wait()` at a time. */
export class Batcher {
  private readonly clock: Clock;
  private readonly idleMs: number;
  private readonly maxMs: number;
  private armed = false;
  /** Keys seen in the current window (a repeated key does not extend it, upstream `Trigger(elem)`). */
  private readonly seen = new Set<string>();
  private onTrigger: (() => void) | undefined;

  constructor(opts: BatcherOptions) {
    this.clock = opts.clock;
    this.idleMs = (opts.idleSeconds ?? BATCH_IDLE_DURATION) * 1000;
    this.maxMs = (opts.maxSeconds ?? BATCH_MAX_DURATION) * 1000;
    if (!(this.idleMs >= 0) || !(this.maxMs >= 0))
      throw new Error(
        `batcher: idleSeconds (${opts.idleSeconds}) and maxSeconds (${opts.maxSeconds}) must be non-negative numbers`,
      );
  }

  /**
   * Opens a window, or extends the open one by the idle duration. With `key` (e.g. a pod UID) a key already
   * seen in the current window is ignored.
   */
  trigger(key?: string): void {
    if (key !== undefined) {
      if (this.seen.has(key)) return;
      this.seen.add(key);
    }
    this.armed = true;
    this.onTrigger?.();
  }

  /** True when a trigger is pending (a window will open at once on the next `wait`). */
  get pending(): boolean {
    return this.armed;
  }

  /**
   * Waits for the first trigger (possibly one that already arrived), then until the window closes: no trigger
   * for the idle duration, or the max duration since the window opened. Resolves `true` when a window closed,
   * `false` when `signal` aborted first. Clears the keys seen once it returns.
   */
  wait(signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      if (signal?.aborted) {
        resolve(false);
        return;
      }
      let idle: TimerHandle | undefined;
      let max: TimerHandle | undefined;
      const finish = (result: boolean): void => {
        if (idle) this.clock.clearTimeout(idle);
        if (max) this.clock.clearTimeout(max);
        this.onTrigger = undefined;
        signal?.removeEventListener('abort', onAbort);
        this.seen.clear();
        resolve(result);
      };
      const onAbort = (): void => finish(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      const open = (): void => {
        this.armed = false;
        max = this.clock.setTimeout(() => finish(true), this.maxMs);
        idle = this.clock.setTimeout(() => finish(true), this.idleMs);
        this.onTrigger = () => {
          this.armed = false;
          if (idle) this.clock.clearTimeout(idle);
          idle = this.clock.setTimeout(() => finish(true), this.idleMs);
        };
      };
      if (this.armed) open();
      else this.onTrigger = open;
    });
  }
}
