import { describe, expect, it } from 'vitest';
import { selectorKey, selectorMatches } from './labelselector.ts';

describe('selectorMatches', () => {
  it('matchLabels and expressions; {} matches all; undefined matches none', () => {
    const sel = {
      matchLabels: { app: 'web' },
      matchExpressions: [{ key: 'tier', operator: 'NotIn' as const, values: ['db'] }],
    };
    expect(selectorMatches(sel, { app: 'web' })).toBe(true);
    expect(selectorMatches(sel, { app: 'web', tier: 'db' })).toBe(false);
    expect(selectorMatches({}, { any: 'x' })).toBe(true);
    expect(selectorMatches(undefined, { any: 'x' })).toBe(false);
    expect(selectorKey({ matchLabels: { b: '1', a: '2' } })).toBe(
      selectorKey({ matchLabels: { a: '2', b: '1' } }),
    );
  });
});
