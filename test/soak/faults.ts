/**
 * Seeded randomness and the fault schedule of a soak run. The scenario and the fault schedule draw from two
 * independent streams of the run seed, so shrinking the fault schedule never changes the scenario.
 */

import { mulberry32 } from '../../bench/scheduling.ts';
import { API_FAULT_KINDS, type ApiFaultKind } from './proxy.ts';

/**
 * Every fault kind of the soak: API-server faults, controller restarts, provider and node faults (ICE, never
 * registers, never Ready, instance vanishes behind the controller's back), clock jumps, and a launch whose reply is
 * lost after the instance was created, followed by a restart (`lostLaunch`: the process died between the
 * cloud provider's create and the NodeClaim status write).
 */
export type FaultKind =
  | ApiFaultKind
  | 'restart'
  | 'ice'
  | 'noRegister'
  | 'notReady'
  | 'vanish'
  | 'clockJump'
  | 'lostLaunch';

/** All fault kinds in a stable order (the soak asserts a count for each). */
export const FAULT_KINDS: readonly FaultKind[] = [
  ...API_FAULT_KINDS,
  'restart',
  'ice',
  'noRegister',
  'notReady',
  'vanish',
  'clockJump',
  'lostLaunch',
];

/** One scheduled fault: at step `step`, `kind` armed `n` times (`restart`: down for `n` steps; `clockJump`: `n` minutes). */
export interface FaultEvent {
  step: number;
  kind: FaultKind;
  n: number;
}

/** mulberry32, the same deterministic PRNG as the benchmarks' workloads; returns floats in [0, 1). */
export const prng: (seed: number) => () => number = mulberry32;

/** Integer in [lo, hi] from `r`. */
export function int(r: () => number, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

/** One element of `xs` from `r` (xs non-empty). */
export function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

/**
 * The fault schedule of a run of `steps` steps: about one fault every `1/rate` steps over the first 85% of the
 * steps (the rest is fault-free, so the "eventually runs" invariant can be checked), kinds drawn uniformly.
 */
export function faultSchedule(seed: number, steps: number, rate = 0.35): FaultEvent[] {
  const r = prng(seed ^ 0x5eed_fa17);
  const out: FaultEvent[] = [];
  const last = Math.floor(steps * 0.85);
  for (let step = 1; step < last; step++) {
    if (r() >= rate) continue;
    const kind = pick(r, FAULT_KINDS);
    const n =
      kind === 'restart'
        ? int(r, 0, 3)
        : kind === 'clockJump'
          ? int(r, 1, 20)
          : kind === 'slow'
            ? int(r, 1, 8)
            : int(r, 1, 3);
    out.push({ step, kind, n });
  }
  return out;
}

/** `step:kind:n,...` — the replay form of a schedule (see {@link parseSchedule}). */
export function formatSchedule(events: readonly FaultEvent[]): string {
  return events.map((e) => `${e.step}:${e.kind}:${e.n}`).join(',');
}

/** Parses {@link formatSchedule}'s output. @throws Error naming the bad entry and the expected form. */
export function parseSchedule(text: string): FaultEvent[] {
  if (text.trim() === '') return [];
  return text.split(',').map((part) => {
    const [s, kind, n] = part.split(':');
    if (
      !kind ||
      !(FAULT_KINDS as readonly string[]).includes(kind) ||
      !/^\d+$/.test(s ?? '') ||
      !/^\d+$/.test(n ?? '')
    )
      throw new Error(
        `--faults: bad entry "${part}"; expected step:kind:n with kind one of ${FAULT_KINDS.join('|')}`,
      );
    return { step: Number(s), kind: kind as FaultKind, n: Number(n) };
  });
}
