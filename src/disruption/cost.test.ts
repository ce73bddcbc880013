import { describe, expect, it } from 'vitest';
import { disruptionCost, evictionCost, lifetimeRemaining, reschedulingCost } from './cost.ts';
import { pod } from './testing.ts';

describe('evictionCost', () => {
  it('is 1 for a plain pod', () => {
    expect(evictionCost(pod('a'))).toBe(1);
  });
  it('adds pod-deletion-cost / 2^27 and priority / 2^25', () => {
    expect(
      evictionCost(
        pod('a', { annotations: { 'controller.kubernetes.io/pod-deletion-cost': String(2 ** 27) } }),
      ),
    ).toBe(2);
    expect(evictionCost(pod('a', { priority: 2 ** 25 }))).toBe(2);
    expect(evictionCost(pod('a', { priority: -(2 ** 26) }))).toBe(-1);
  });
  it('clamps to [-10, 10] and ignores malformed annotations', () => {
    expect(evictionCost(pod('a', { priority: 1_000_000_000 }))).toBe(10);
    expect(
      evictionCost(
        pod('a', { annotations: { 'controller.kubernetes.io/pod-deletion-cost': '-2147483647' } }),
      ),
    ).toBe(-10);
    expect(
      evictionCost(pod('a', { annotations: { 'controller.kubernetes.io/pod-deletion-cost': 'x' } })),
    ).toBe(1);
  });
});

describe('lifetimeRemaining and disruptionCost', () => {
  const day = 86_400_000;
  it('is the fraction of expireAfter left', () => {
    expect(lifetimeRemaining('48h', 0, day)).toBe(0.5);
    expect(lifetimeRemaining('48h', 0, 3 * day)).toBe(0);
    expect(lifetimeRemaining('Never', 0, day)).toBe(1);
    expect(lifetimeRemaining(undefined, 0, day)).toBe(1);
    expect(lifetimeRemaining('48h', undefined, day)).toBe(1);
  });
  it('scales the rescheduling cost', () => {
    expect(reschedulingCost([pod('a'), pod('b'), pod('c')])).toBe(3);
    expect(disruptionCost([pod('a'), pod('b')], '48h', 0, day)).toBe(1);
  });
});
