/**
 * Go-style durations (`time.ParseDuration`) as used by Karpenter fields such as `expireAfter`,
 * `consolidateAfter`, `terminationGracePeriod`, budget `duration` and KWOK `nodeRegistrationDelay`.
 *
 * Grammar (Go `time.ParseDuration`): an optional sign, then one or more `<decimal><unit>` pairs, units
 * `ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`, `h` (`"720h"`, `"1h30m"`, `"1.5h"`, `"300ms"`); `"0"` alone is zero.
 * Karpenter's `NillableDuration` adds the literal `"Never"` (no deadline), which parses to `Infinity`.
 * Sources: Go `src/time/format.go` (ParseDuration, Duration.String), kubernetes-sigs/karpenter
 * `pkg/apis/v1/duration.go`.
 */

/** The literal Karpenter uses for "no deadline" (`expireAfter: Never`, `consolidateAfter: Never`). */
export const Never = 'Never';

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  μs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

const PART_RE = /^(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)/;

/** Thrown by {@link parseDuration} for a string that is not a Go duration nor `Never`. */
export class DurationParseError extends Error {
  readonly code = 'InvalidDuration' as const;
  constructor(readonly value: string) {
    super(`"${value}" is not a valid duration (expected e.g. "30s", "5m", "1h30m", "720h" or "Never")`);
  }
}

/** Result of {@link tryParseDuration}: seconds, or the reason the text is not a duration. */
export type DurationResult = { ok: true; seconds: number } | { ok: false; message: string };

/**
 * Parses a Go duration string into seconds (fractional for sub-second units); `"Never"` gives
 * `Number.POSITIVE_INFINITY`. Failure is a value, never an exception.
 */
export function tryParseDuration(text: string): DurationResult {
  if (text === Never) return { ok: true, seconds: Number.POSITIVE_INFINITY };
  const fail = { ok: false as const, message: new DurationParseError(text).message };
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return { ok: true, seconds: 0 };
  if (s === '') return fail;
  let total = 0;
  while (s.length > 0) {
    const m = PART_RE.exec(s);
    if (!m) return fail;
    const num = m[1]!;
    if (num === '' || num === '.') return fail;
    total += Number(num) * UNIT_SECONDS[m[2]!]!;
    s = s.slice(m[0].length);
  }
  return { ok: true, seconds: sign * total };
}

/**
 * Parses a Go duration string (`"720h"`, `"1h30m"`, `"0s"`) into seconds; `"Never"` gives `Infinity`.
 * @throws DurationParseError when the text is neither a Go duration nor `Never`.
 */
export function parseDuration(text: string): number {
  const r = tryParseDuration(text);
  if (!r.ok) throw new DurationParseError(text);
  return r.seconds;
}

/**
 * Formats seconds the way Go's `time.Duration.String()` does for whole seconds and above:
 * `2592000` → `"720h0m0s"`, `90` → `"1m30s"`, `0` → `"0s"`, `0.5` → `"500ms"`; `Infinity` → `"Never"`.
 */
export function formatDuration(seconds: number): string {
  if (seconds === Number.POSITIVE_INFINITY) return Never;
  if (seconds === 0) return '0s';
  const neg = seconds < 0;
  let rest = Math.abs(seconds);
  let out: string;
  if (rest < 1) {
    const ms = rest * 1e3;
    out = ms >= 1 ? `${trim(ms)}ms` : rest * 1e6 >= 1 ? `${trim(rest * 1e6)}µs` : `${trim(rest * 1e9)}ns`;
  } else {
    const h = Math.floor(rest / 3600);
    rest -= h * 3600;
    const m = Math.floor(rest / 60);
    rest -= m * 60;
    const s = `${trim(rest)}s`;
    out = h > 0 ? `${h}h${m}m${s}` : m > 0 ? `${m}m${s}` : s;
  }
  return neg ? `-${out}` : out;
}

function trim(n: number): string {
  return String(Number(n.toFixed(9)));
}
