import { describe, expect, it } from 'vitest';
import { DurationParseError, formatDuration, parseDuration, tryParseDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['720h', 2_592_000],
    ['1h30m', 5400],
    ['0s', 0],
    ['0', 0],
    ['30s', 30],
    ['1.5h', 5400],
    ['300ms', 0.3],
    ['2h45m30s', 9930],
    ['-5m', -300],
    ['1m0s', 60],
  ])('%s is %d seconds', (text, seconds) => {
    expect(parseDuration(text)).toBeCloseTo(seconds, 9);
  });

  it('Never is infinite', () => {
    expect(parseDuration('Never')).toBe(Number.POSITIVE_INFINITY);
  });

  it.each(['', '30', '30d', 'h', '1h30', 'never', ' 5m', '5 m', '.h'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(DurationParseError);
    expect(tryParseDuration(text)).toEqual({
      ok: false,
      message: `"${text}" is not a valid duration (expected e.g. "30s", "5m", "1h30m", "720h" or "Never")`,
    });
  });
});

describe('formatDuration', () => {
  it.each([
    [2_592_000, '720h0m0s'],
    [90, '1m30s'],
    [0, '0s'],
    [0.5, '500ms'],
    [3600, '1h0m0s'],
    [-300, '-5m0s'],
    [Number.POSITIVE_INFINITY, 'Never'],
  ])('%d seconds is %s', (s, text) => {
    expect(formatDuration(s)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const s of [1, 59, 61, 3599, 86_400, 2_592_000]) expect(parseDuration(formatDuration(s))).toBe(s);
  });
});
