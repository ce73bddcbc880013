import { describe, expect, it } from 'vitest';
import { computeDisruption } from './index.ts';
import { input, node, pod } from './testing.ts';

describe('expiration', () => {
  it('deletes expired nodes regardless of do-not-disrupt and budgets, oldest first', () => {
    const dnd = { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } };
    const r = computeDisruption(
      input([
        node('young', [pod('a')], { created: '2025-12-31T00:00:00Z', expireAfter: '48h' }),
        node('old2', [pod('b', dnd)], { created: '2025-12-01T00:00:00Z', expireAfter: '48h' }),
        node('old1', [pod('c')], { created: '2025-11-01T00:00:00Z', expireAfter: '48h' }),
      ]),
    );
    const expired = r.commands.filter((c) => c.reason === 'Expired');
    expect(expired.map((c) => [c.decision, c.method, c.candidates[0]!.name])).toEqual([
      ['delete', 'Expiration', 'old1'],
      ['delete', 'Expiration', 'old2'],
    ]);
  });
  it('Never and unknown ages never expire; the NodePool expireAfter is the fallback', () => {
    const r = computeDisruption(
      input([
        node('never', [pod('a')], { created: '2000-01-01T00:00:00Z', expireAfter: 'Never' }),
        node('unknown', [pod('b')]),
        node('pool', [pod('c')], { created: '2025-11-01T00:00:00Z' }), // pool() template: 720h
      ]),
    );
    expect(r.commands.filter((c) => c.reason === 'Expired').map((c) => c.candidates[0]!.name)).toEqual([
      'pool',
    ]);
  });
  it('an expired node takes no pods in the same pass', () => {
    const r = computeDisruption(
      input([
        node('old', [pod('a', { cpu: '1' })], { created: '2025-11-01T00:00:00Z', expireAfter: '48h' }),
        node('under', [pod('b', { cpu: '500m' })], { type: 'm5.2xlarge' }),
      ]),
    );
    expect(r.commands.map((c) => [c.reason, c.candidates.map((x) => x.name)])).toEqual([
      ['Expired', ['old']],
      ['Underutilized', ['under']],
    ]);
    expect(r.commands[1]!.decision).toBe('replace');
  });
});
