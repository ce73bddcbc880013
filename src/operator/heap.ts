/**
 * V8 heap settings of the controller process.
 *
 * The young generation (V8's "new space": two semi-spaces that new objects are allocated in) doubles whenever more
 * bytes have survived its collections since its last growth than it holds. The controller's informers keep every
 * object they receive, so under a stream of watch events it keeps growing up to V8's limit, which on Node 24 is
 * four times Node 20's on a host with much memory: 128 MB (2 × 64 MB semi-spaces) against 32 MB, measured on the
 * 24-GB benchmark machine (V8 derives the limit from the physical memory, or a container's memory limit). At the
 * 1,000 pods of upstream's "basic" case the controller's young generation reached 64 MB while its live heap stayed
 * near 35 MB, and its peak RSS was 168–175 MB. {@link limitYoungGeneration} stops the growth at 16 MB (8 MB per
 * semi-space): 131–133 MB peak for the same CPU time (0.84–1.06 s from apply, against 0.78–1.11 s); three runs
 * each, interleaved, Node 24.22, 2-core machine under load (load average 12–16), 2026-12-02. Never letting it grow
 * (1-MB semi-spaces) gave 114–119 MB for 15–20 % more CPU time; stopping at 32 MB, Node 20's limit, 146–149 MB.
 *
 * V8 fixes the semi-space limit (`--max-semi-space-size`) when the process starts, but reads the growth factor
 * (`--semi-space-growth-factor`) at each growth, so setting it to 1 at run time keeps the young generation at the
 * size it has then. The factor is set from a GC observer, whose callbacks run between event-loop turns, so the cap
 * can land one doubling later (32 MB) when many collections run in one synchronous stretch. V8 still shrinks the
 * young generation when allocation slows down.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** Size in MB of the young generation (both semi-spaces) at which {@link limitYoungGeneration} stops its growth. */
export const YoungGenerationLimitMB = 16;

/** What {@link limitYoungGeneration} needs from V8 and Node (injected by tests). */
export interface YoungGenerationHooks {
  /** Size of V8's `new_space` in bytes (both semi-spaces). */
  newSpaceBytes(): number;
  /** `v8.setFlagsFromString`. */
  setFlags(flags: string): void;
  /** Calls `onGC` after garbage collections (batched, between event-loop turns); returns the function that stops it. */
  afterGC(onGC: () => void): () => void;
}

const nodeHooks: YoungGenerationHooks = {
  newSpaceBytes: () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0,
  setFlags: setFlagsFromString,
  afterGC: (onGC) => {
    const obs = new PerformanceObserver(() => onGC());
    obs.observe({ entryTypes: ['gc'] });
    return () => obs.disconnect();
  },
};

/** The V8 flags that size the young generation; when the user gives one, {@link limitYoungGeneration} does nothing. */
const YOUNG_GENERATION_FLAGS =
  /--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor|max[-_]heap[-_]size)\b/;

/**
 * Caps the young generation at `limitMB` MB (default {@link YoungGenerationLimitMB}) for the rest of the process:
 * after each garbage collection, once V8's new space has reached the limit, sets `--semi-space-growth-factor=1` and
 * stops observing. Not applied when the process's own flags (`execArgv`) or `NODE_OPTIONS` size the young
 * generation (`--max-semi-space-size`, `--semi-space-growth-factor`, `--max-heap-size`): the user's choice wins.
 * Returns whether it applies the cap (now, or at a later collection).
 */
export function limitYoungGeneration(
  opts: {
    nodeOptions?: string | undefined;
    execArgv?: readonly string[];
    limitMB?: number;
    hooks?: YoungGenerationHooks;
  } = {},
): boolean {
  if (YOUNG_GENERATION_FLAGS.test(`${opts.nodeOptions ?? ''} ${(opts.execArgv ?? []).join(' ')}`))
    return false;
  const hooks = opts.hooks ?? nodeHooks;
  const limit = (opts.limitMB ?? YoungGenerationLimitMB) * 1024 * 1024;
  const cap = (): boolean => {
    if (hooks.newSpaceBytes() < limit) return false;
    hooks.setFlags('--semi-space-growth-factor=1');
    return true;
  };
  if (cap()) return true;
  let capped = false;
  const stop = hooks.afterGC(() => {
    if (capped || !cap()) return;
    capped = true;
    queueMicrotask(() => stop());
  });
  return true;
}
