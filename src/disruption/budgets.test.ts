import { describe, expect, it } from 'vitest';
import type { Budget } from '../apis/karpenter.ts';
import { allowedDisruptions, budgetActive, budgetAllowed, budgetMapping, UNLIMITED } from './budgets.ts';
import { pool } from './testing.ts';

const at = (iso: string) => Date.parse(iso);

describe('budgetAllowed', () => {
  it('rounds percentages up: 10% of 15 nodes = 2, 10% of 10 = 1, 5% of 10 = 1, 0% = 0', () => {
    const now = at('2026-01-01T00:00:00Z');
    expect(budgetAllowed({ nodes: '10%' }, 15, now)).toBe(2);
    expect(budgetAllowed({ nodes: '10%' }, 10, now)).toBe(1);
    expect(budgetAllowed({ nodes: '5%' }, 10, now)).toBe(1);
    expect(budgetAllowed({ nodes: '0%' }, 10, now)).toBe(0);
    expect(budgetAllowed({ nodes: '100%' }, 7, now)).toBe(7);
    expect(budgetAllowed({ nodes: '10%' }, 0, now)).toBe(0);
  });
  it('takes counts as they are', () => {
    expect(budgetAllowed({ nodes: '3' }, 15, 0)).toBe(3);
    expect(budgetAllowed({ nodes: '0' }, 15, 0)).toBe(0);
  });
  it('fails closed on malformed values', () => {
    expect(budgetAllowed({ nodes: 'many' }, 15, 0)).toBe(0);
    expect(budgetAllowed({ nodes: '1', schedule: 'not a cron', duration: '1h' }, 15, 0)).toBe(0);
    expect(budgetAllowed({ nodes: '1', schedule: '0 9 * * *' }, 15, 0)).toBe(0);
  });
});

describe('budget schedules (cron, UTC)', () => {
  const b: Budget = { nodes: '0', schedule: '0 9 * * mon-fri', duration: '8h' };
  it('is active from the hit for `duration`', () => {
    // Thursday 2026-01-01
    expect(budgetActive(b, at('2026-01-01T09:00:00Z')).active).toBe(true);
    expect(budgetActive(b, at('2026-01-01T12:30:00Z')).active).toBe(true);
    expect(budgetActive(b, at('2026-01-01T16:59:59Z')).active).toBe(true);
  });
  it('is inactive before the hit, after the window, and on weekends', () => {
    expect(budgetActive(b, at('2026-01-01T08:59:59Z')).active).toBe(false);
    expect(budgetActive(b, at('2026-01-01T17:00:01Z')).active).toBe(false);
    expect(budgetActive(b, at('2026-01-03T12:00:00Z')).active).toBe(false); // Saturday
  });
  it('an inactive budget does not limit; an active one does', () => {
    expect(budgetAllowed(b, 10, at('2026-01-03T12:00:00Z'))).toBe(UNLIMITED);
    expect(budgetAllowed(b, 10, at('2026-01-01T12:00:00Z'))).toBe(0);
  });
  it('supports macros such as @daily', () => {
    const d: Budget = { nodes: '0', schedule: '@daily', duration: '10m' };
    expect(budgetActive(d, at('2026-01-01T00:05:00Z')).active).toBe(true);
    expect(budgetActive(d, at('2026-01-01T00:15:00Z')).active).toBe(false);
  });
});

describe('allowedDisruptions by reason', () => {
  const np = pool('p', {
    budgets: [
      { nodes: '20%' },
      { nodes: '0', reasons: ['Drifted'] },
      { nodes: '1', reasons: ['Empty', 'Underutilized'] },
    ],
  });
  it('takes the minimum of the budgets that apply to the reason', () => {
    expect(allowedDisruptions(np, 20, 'Drifted', 0)).toBe(0);
    expect(allowedDisruptions(np, 20, 'Empty', 0)).toBe(1);
    expect(allowedDisruptions(np, 20, 'Underutilized', 0)).toBe(1);
  });
  it('is unlimited without budgets', () => {
    const free = pool('free', { budgets: [] });
    expect(allowedDisruptions(free, 20, 'Empty', 0)).toBe(UNLIMITED);
  });
  it('subtracts nodes already disrupting, never below zero', () => {
    const ten = pool('ten', { budgets: [{ nodes: '10%' }] });
    const m = budgetMapping([ten], new Map([['ten', { nodes: 30, disrupting: 1 }]]), 'Empty', 0);
    expect(m.get('ten')).toBe(2);
    const m2 = budgetMapping([ten], new Map([['ten', { nodes: 30, disrupting: 5 }]]), 'Empty', 0);
    expect(m2.get('ten')).toBe(0);
  });
});
