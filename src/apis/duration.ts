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

/** Thrown by {@link parseDuration} for a string that is not a Go duration nor `Never`. */
export class DurationParseError extends Error {
  readonly code = 'InvalidDuration' as const;
  constructor(readonly value: string) {
    super(`"${value}" is not a valid duration (expected e.g. "30s", "5m", "1h30m", "720h" or "Never")`);
  }
}

/** Result of {@link tryParseDuration}: seconds, or the reason the text is not a duration. */
export type DurationResult = { ok: true; seconds: number } | { ok: false; message: string };

/** Result of {@link parseGoDuration}: seconds, or Go's own error text (`time: invalid duration "abc"`). */
export type GoDurationResult = { ok: true; seconds: number } | { ok: false; goError: string };

/** Nanoseconds per unit, as Go's `unitMap` (`src/time/format.go`). */
const UNIT_NANOS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek letter mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_NANOS = 1n << 63n; // |Duration| bound, as Go's uint64 accumulator checks

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** Go `quote` for error texts (ASCII: a double-quoted string with `"` and `\` escaped). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/**
 * Parses one `<decimal><unit>` element at the start of `s` (Go `ParseDuration`'s loop body). Returns its
 * nanoseconds and the rest, or the Go error text.
 */
function parseElement(s: string, orig: string): { nanos: bigint; rest: string } | { goError: string } {
  const invalid = { goError: `time: invalid duration ${goQuote(orig)}` };
  if (!(s[0] === '.' || isDigit(s[0]))) return invalid;
  let i = 0;
  while (isDigit(s[i])) i++;
  const intPart = s.slice(0, i);
  let frac = '';
  if (s[i] === '.') {
    let j = i + 1;
    while (isDigit(s[j])) j++;
    frac = s.slice(i + 1, j);
    i = j;
  }
  if (intPart === '' && frac === '') return invalid; // no digits, e.g. ".s"
  let u = i;
  while (u < s.length && !(s[u] === '.' || isDigit(s[u]))) u++;
  if (u === i) return { goError: `time: missing unit in duration ${goQuote(orig)}` };
  const unitText = s.slice(i, u);
  const unit = UNIT_NANOS[unitText];
  if (unit === undefined)
    return { goError: `time: unknown unit ${goQuote(unitText)} in duration ${goQuote(orig)}` };
  const v = BigInt(intPart || '0');
  if (v > MAX_NANOS / unit) return invalid; // overflow (also covers Go's leadingInt overflow)
  let nanos = v * unit;
  if (frac !== '') {
    // Go keeps at most the digits that fit an int64 and scales with float64 (nanosecond accurate for hours).
    const f = Number(`0.${frac}`);
    nanos += BigInt(Math.floor(f * Number(unit)));
    if (nanos > MAX_NANOS) return invalid;
  }
  return { nanos, rest: s.slice(u) };
}

/**
 * Parses a Go duration exactly as Go's `time.ParseDuration` (`src/time/format.go`), into seconds (fractional for
 * sub-second units): an optional sign, then one or more `<decimal><unit>` elements with units `ns`, `us`/`µs`/`μs`,
 * `ms`, `s`, `m`, `h` (`"1h30m"`, `"1.5h"`, `"500ms"`, `"-30s"`); `"0"` (optionally signed) alone is zero; an
 * empty string, a missing or unknown unit, or a magnitude of 2^63 ns (about 2562047h) or more is an error, reported
 * with Go's own text (`time: invalid duration "abc"`, `time: missing unit in duration "1"`,
 * `time: unknown unit "d" in duration "1d"`) because upstream Karpenter puts that text in user-facing Events.
 * Not a library: no duration package is a dependency, the grammar is small, and Go's exact accept set and error
 * texts are the point. Karpenter's `"Never"` is not accepted here (see {@link tryParseDuration}). Pure; failure is
 * a value, never an exception.
 */
export function parseGoDuration(text: string): GoDurationResult {
  const r = parseGoDurationNanos(text);
  if (!r.ok) return r;
  const total = r.nanos < 0n ? -r.nanos : r.nanos;
  const seconds = Number(total / 1_000_000_000n) + Number(total % 1_000_000_000n) / 1e9;
  return { ok: true, seconds: r.nanos < 0n ? -seconds : seconds };
}

/**
 * {@link parseGoDuration} as Go's `time.Duration` value: signed nanoseconds, exact (the drift hashes hash the
 * int64). Pure; failure is a value carrying Go's error text.
 */
export function parseGoDurationNanos(
  text: string,
): { ok: true; nanos: bigint } | { ok: false; goError: string } {
  const invalid = { ok: false as const, goError: `time: invalid duration ${goQuote(text)}` };
  let s = text;
  let neg = false;
  if (s[0] === '-' || s[0] === '+') {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return { ok: true, nanos: 0n };
  if (s === '') return invalid;
  let total = 0n;
  while (s !== '') {
    const e = parseElement(s, text);
    if ('goError' in e) return { ok: false, goError: e.goError };
    total += e.nanos;
    if (total > MAX_NANOS) return invalid;
    s = e.rest;
  }
  if (!neg && total > MAX_NANOS - 1n) return invalid;
  return { ok: true, nanos: neg ? -total : total };
}

/**
 * Parses a Go duration string into seconds (fractional for sub-second units); `"Never"` gives
 * `Number.POSITIVE_INFINITY`. Failure is a value, never an exception. Grammar: {@link parseGoDuration}.
 */
export function tryParseDuration(text: string): DurationResult {
  if (text === Never) return { ok: true, seconds: Number.POSITIVE_INFINITY };
  const r = parseGoDuration(text);
  return r.ok ? r : { ok: false, message: new DurationParseError(text).message };
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
