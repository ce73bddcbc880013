/**
 * The one polling helper of the tests: waits for an observable state (an object in the API server, a cache
 * entry, a counter) instead of sleeping for a fixed time. Test support only; never imported by library code.
 */

/** `T` without its falsy members (what a successful {@link eventually} returns). */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/** Options of {@link eventually}. */
export interface EventuallyOptions {
  /** Give up after this many milliseconds (default 10,000): a bound for a hung test, not a timing assertion. */
  timeoutMs?: number;
  /** Milliseconds between attempts (default 20). */
  intervalMs?: number;
}

/**
 * Calls `fn` until it returns a truthy value and returns that value. An attempt that throws counts as not yet;
 * after `timeoutMs` it throws `timed out waiting for <what>` with the last value or error.
 */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  what: string,
  opts: EventuallyOptions | number = {},
): Promise<Truthy<T>> {
  const { timeoutMs = 10_000, intervalMs = 20 } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as Truthy<T>;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
