import { describe, expect, it } from 'vitest';
import type { Pod } from './core.ts';
import { doNotDisruptEvent, doNotDisruptState, isDoNotDisruptActive } from './donotdisrupt.ts';
import { parseGoDuration } from './duration.ts';

const pod = (value: string | undefined, startTime?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'batch-1',
    namespace: 'default',
    ...(value !== undefined ? { annotations: { 'karpenter.sh/do-not-disrupt': value } } : {}),
  },
  spec: { containers: [] },
  status: { phase: 'Running', ...(startTime ? { startTime } : {}) },
});

describe('parseGoDuration (Go time.ParseDuration)', () => {
  it.each([
    ['87600h', 315_360_000],
    ['30m', 1800],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['.5h', 1800],
    ['1.h', 3600],
    ['500ms', 0.5],
    ['1µs', 0.000001],
    ['1μs', 0.000001],
    ['-5s', -5],
    ['0s', 0],
    ['0', 0],
    ['-0', 0],
    ['2562047h', 9_223_369_200],
  ])('%j is %d seconds', (text, seconds) => {
    const r = parseGoDuration(text);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.seconds).toBeCloseTo(seconds, 9);
  });

  it.each([
    ['', 'time: invalid duration ""'],
    ['abc', 'time: invalid duration "abc"'],
    ['true', 'time: invalid duration "true"'],
    ['.s', 'time: invalid duration ".s"'],
    ['1', 'time: missing unit in duration "1"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['1h 30m', 'time: unknown unit "h " in duration "1h 30m"'],
    ['2562048h', 'time: invalid duration "2562048h"'],
    ['9223372036854775808ns', 'time: invalid duration "9223372036854775808ns"'],
    ['Never', 'time: invalid duration "Never"'],
  ])("rejects %j with Go's text", (text, goError) => {
    expect(parseGoDuration(text)).toEqual({ ok: false, goError });
  });
});

describe('doNotDisruptState', () => {
  it('"87600h" on a pod started 2026-11-01 is active on 2026-12-02, until 2036-10-29', () => {
    const p = pod('87600h', '2026-11-01T00:00:00Z');
    const now = Date.parse('2026-12-02T00:00:00Z');
    const s = doNotDisruptState(p, now);
    expect(s).toEqual({ state: 'active', value: '87600h', untilMs: Date.parse('2036-10-29T00:00:00Z') });
    expect(isDoNotDisruptActive(p, now)).toBe(true);
    expect(doNotDisruptEvent(s)).toEqual({
      type: 'Normal',
      reason: 'DoNotDisruptUntil',
      message: 'The karpenter.sh/do-not-disrupt grace period will elapse at 2036-10-29T00:00:00Z',
    });
  });

  it('"30m" on a pod started 31 minutes ago has elapsed; at 29 minutes it is active', () => {
    const start = Date.parse('2026-12-02T10:00:00Z');
    const p = pod('30m', '2026-12-02T10:00:00Z');
    expect(doNotDisruptState(p, start + 31 * 60_000)).toEqual({
      state: 'elapsed',
      value: '30m',
      untilMs: Date.parse('2026-12-02T10:30:00Z'),
    });
    expect(isDoNotDisruptActive(p, start + 31 * 60_000)).toBe(false);
    expect(isDoNotDisruptActive(p, start + 29 * 60_000)).toBe(true);
    // the boundary: active while age < duration (upstream podAge < duration)
    expect(isDoNotDisruptActive(p, start + 30 * 60_000)).toBe(false);
    expect(doNotDisruptEvent(doNotDisruptState(p, start + 31 * 60_000))).toEqual({
      type: 'Normal',
      reason: 'DoNotDisruptGracePeriodElapsed',
      message: 'The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable',
    });
  });

  it('"true" is active forever, with no Event; no annotation is none', () => {
    const s = doNotDisruptState(pod('true', '2020-01-01T00:00:00Z'), Date.parse('2030-01-01T00:00:00Z'));
    expect(s).toEqual({ state: 'active', value: 'true' });
    expect(doNotDisruptEvent(s)).toBeUndefined();
    expect(doNotDisruptState(pod(undefined), 0)).toEqual({ state: 'none' });
    expect(isDoNotDisruptActive(pod(undefined), 0)).toBe(false);
  });

  it('a duration on a pod without startTime protects (upstream fail safe), with no Event', () => {
    const s = doNotDisruptState(pod('1h'), Date.parse('2026-12-02T00:00:00Z'));
    expect(s).toEqual({ state: 'active', value: '1h' });
    expect(doNotDisruptEvent(s)).toBeUndefined();
  });

  it('"abc", "false", "0s" and "-5m" are invalid: ignored (not protected), with a Warning', () => {
    const now = Date.parse('2026-12-02T00:00:00Z');
    const abc = doNotDisruptState(pod('abc', '2026-12-01T23:59:00Z'), now);
    expect(abc).toEqual({
      state: 'invalid',
      value: 'abc',
      message: 'failed to parse "abc" as a duration: time: invalid duration "abc"',
    });
    expect(isDoNotDisruptActive(pod('abc', '2026-12-01T23:59:00Z'), now)).toBe(false);
    expect(doNotDisruptEvent(abc)).toEqual({
      type: 'Warning',
      reason: 'InvalidDoNotDisruptAnnotation',
      message:
        'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "abc" as a duration: time: invalid duration "abc", ignoring annotation',
    });
    expect(doNotDisruptState(pod('false'), now).state).toBe('invalid');
    expect(doNotDisruptState(pod('0s'), now)).toEqual({
      state: 'invalid',
      value: '0s',
      message: 'duration "0s" must be positive',
    });
    expect(doNotDisruptState(pod('-5m'), now)).toMatchObject({ message: 'duration "-5m" must be positive' });
  });
});
