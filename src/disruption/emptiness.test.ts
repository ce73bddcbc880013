import { describe, expect, it } from 'vitest';
import { computeDisruption } from './index.ts';
import { input, node, pod, pool } from './testing.ts';

const names = (r: ReturnType<typeof computeDisruption>) =>
  r.commands.map((c) => c.candidates.map((x) => x.name).sort());

describe('emptiness', () => {
  it('deletes every empty node in one command, within the Empty budget', () => {
    const np = pool('default', { budgets: [{ nodes: '2' }] });
    const r = computeDisruption(
      input(
        [
          node('e1', [], { pool: np }),
          node('e2', [], { pool: np }),
          node('e3', [], { pool: np }),
          node('busy', [pod('a', { cpu: '3' })], { pool: np }),
        ],
        {
          nodePools: [np],
        },
      ),
    );
    expect(r.commands).toHaveLength(1);
    expect(r.commands[0]!.decision).toBe('delete');
    expect(r.commands[0]!.reason).toBe('Empty');
    expect(names(r)).toEqual([['e1', 'e2']]);
    expect(r.commands[0]!.savingsUSDPerHour).toBe(0.384);
    expect(r.blocked.find((b) => b.node === 'e3')!.reason).toBe(
      'Emptiness: empty, but the disruption budget of NodePool "default" allows no more Empty disruptions now',
    );
  });
  it('runs with WhenEmpty and ignores DaemonSet pods', () => {
    const np = pool('default', { policy: 'WhenEmpty' });
    const r = computeDisruption(
      input([node('e1', [pod('ds', { ownerKind: 'DaemonSet' })], { pool: np })], { nodePools: [np] }),
    );
    expect(names(r)).toEqual([['e1']]);
  });
  it('waits for consolidateAfter and never runs with Never', () => {
    const np = pool('default', { after: '30s' });
    const r = computeDisruption(
      input([node('e1', [], { pool: np, created: '2025-12-31T23:59:50Z' })], { nodePools: [np] }),
    );
    expect(r.commands).toEqual([]);
    expect(r.blocked[0]!.reason).toBe(
      'consolidateAfter 30s has not elapsed since the last pod event (10s ago)',
    );
    const never = pool('default', { after: 'Never' });
    const r2 = computeDisruption(
      input([node('e1', [], { pool: never, created: '2025-12-20T00:00:00Z' })], { nodePools: [never] }),
    );
    expect(r2.commands).toEqual([]);
  });
  it('a budget of 0 for Empty blocks while other reasons stay open', () => {
    const np = pool('default', { budgets: [{ nodes: '0', reasons: ['Empty'] }, { nodes: '100%' }] });
    const r = computeDisruption(input([node('e1', [], { pool: np })], { nodePools: [np] }));
    expect(r.commands).toEqual([]);
  });
  it('a node whose pods all cost ≤ 0 to evict is empty (upstream v1.14 IsEmpty): deleted as Empty, not consolidated', () => {
    const np = pool('default', { budgets: [{ nodes: '100%' }] });
    const cheap = { 'controller.kubernetes.io/pod-deletion-cost': '-2147483647' }; // 1 − 16 → clamped to −10
    const r = computeDisruption(
      input(
        [
          node('cheap', [pod('c1', { annotations: cheap }), pod('c2', { priority: -100_000_000 })], {
            pool: np,
          }),
          node('normal', [pod('n1')], { pool: np }),
          node('big', [pod('b1', { cpu: '3' })], { pool: np }),
        ],
        { nodePools: [np] },
      ),
    );
    // c2: 1 + (−1e8 / 2^25 ≈ −2.98) < 0; both pods add nothing to the reschedule cost
    expect(r.commands[0]).toMatchObject({ method: 'Emptiness', reason: 'Empty', decision: 'delete' });
    expect(names(r)[0]).toEqual(['cheap']);
    // a pod with the default cost keeps its node out of emptiness
    const solo = computeDisruption(input([node('normal', [pod('n1')], { pool: np })], { nodePools: [np] }));
    expect(solo.commands.filter((c) => c.method === 'Emptiness')).toEqual([]);
  });
});
