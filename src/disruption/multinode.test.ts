import { describe, expect, it } from 'vitest';
import { computeDisruption, type DisruptionStats } from './index.ts';
import { input, node, pod, pool } from './testing.ts';

const summary = (r: ReturnType<typeof computeDisruption>) =>
  r.commands.map((c) => ({
    decision: c.decision,
    method: c.method,
    candidates: c.candidates.map((x) => x.name).sort(),
    replacements: c.replacements.map((p) => p.instanceTypeOptions.map((t) => t.name)),
    savings: c.savingsUSDPerHour,
  }));

describe('multi-node consolidation', () => {
  it('replaces three lightly used m5.xlarge with one m5.large', () => {
    const r = computeDisruption(
      input([
        node('a', [pod('p1', { cpu: '500m' })]),
        node('b', [pod('p2', { cpu: '500m' })]),
        node('c', [pod('p3', { cpu: '500m' })]),
      ]),
    );
    expect(summary(r)).toEqual([
      {
        decision: 'replace',
        method: 'MultiNodeConsolidation',
        candidates: ['a', 'b', 'c'],
        replacements: [['m5.large']],
        savings: 0.48,
      },
    ]);
  });
  it('two half-empty m5.xlarge merge into one: the other is deleted (replacing both by an m5.xlarge is refused)', () => {
    const r = computeDisruption(
      input([
        node('a', [pod('p1', { cpu: '1500m', memory: '4Gi' })]),
        node('b', [pod('p2', { cpu: '1500m', memory: '4Gi' })]),
      ]),
    );
    // Multi-node: both → one new m5.xlarge, filtered out by filterOutSameType (an m5.xlarge is being removed);
    // single-node then deletes one of them, its pod moving to the other.
    expect(r.commands).toHaveLength(1);
    const c = r.commands[0]!;
    expect([c.decision, c.method, c.candidates.length, c.savingsUSDPerHour]).toEqual([
      'delete',
      'SingleNodeConsolidation',
      1,
      0.192,
    ]);
  });
  it('deletes the largest prefix whose pods fit the remaining nodes', () => {
    const stats: DisruptionStats = { simulations: 0 };
    const r = computeDisruption(
      input([
        node('a', [pod('p1', { cpu: '250m' })]),
        node('b', [pod('p2', { cpu: '250m' })]),
        node(
          'big',
          [pod('p3', { cpu: '1', priority: 1_000_000 }), pod('p4', { cpu: '1', priority: 1_000_000 })],
          { type: 'm5.2xlarge' },
        ),
      ]),
      stats,
    );
    expect(summary(r)).toEqual([
      {
        decision: 'delete',
        method: 'MultiNodeConsolidation',
        // Upstream v1.14 order (savings ratio, highest first): big $0.384/h ÷ (1 + 2 × 1.0298) = 0.1255,
        // a and b $0.192/h ÷ 2 = 0.096. Prefix [big, a] fits b (2.25 of its ~3.9 cpu); [big, a, b] does not.
        candidates: ['a', 'big'],
        replacements: [],
        savings: 0.576,
      },
    ]);
    expect(stats.simulations).toBeGreaterThan(0);
  });
  it("spends each NodePool's Underutilized budget in savings-ratio order", () => {
    const np = pool('default', { budgets: [{ nodes: '1' }] });
    const r = computeDisruption(
      input(
        [
          node('a', [pod('p1', { cpu: '250m' })], { pool: np }),
          node('b', [pod('p2', { cpu: '250m' }), pod('p3', { cpu: '250m' })], { pool: np }),
          node('big', [pod('p4', { cpu: '3' })], { type: 'm5.2xlarge', pool: np }),
        ],
        { nodePools: [np] },
      ),
    );
    expect(r.commands).toHaveLength(1);
    // Budget 1: multi-node has a single usable candidate; single-node takes the best savings ratio first:
    // big ($0.384/h ÷ 2 = 0.192) before a (0.096) and b (0.064); its 3-cpu pod fits a.
    expect(r.commands[0]!.candidates.map((x) => x.name)).toEqual(['big']);
    expect(r.commands[0]!.method).toBe('SingleNodeConsolidation');
  });
});

describe('consolidation timeouts (upstream multi-node 1 min, single-node 3 min, on the injected clock)', () => {
  /** A fake clock (ms) that moves `step` ms on every read. */
  const stepping = (step: number) => {
    let t = 0;
    return () => {
      const now = t;
      t += step;
      return now;
    };
  };
  const three = () => [
    node('a', [pod('p1', { cpu: '500m' })]),
    node('b', [pod('p2', { cpu: '500m' })]),
    node('c', [pod('p3', { cpu: '500m' })]),
  ];

  it('multi-node: past 1 min the search stops and returns the last valid command (2 of the 3 nodes)', () => {
    const stats: DisruptionStats = { simulations: 0 };
    // reads: start 0 s (deadline 60 s), before the first batch 40 s, before the second 80 s: timed out
    const r = computeDisruption(input(three(), { options: { clockMs: stepping(40_000) } }), stats);
    expect(r.commands.map((c) => [c.method, c.decision, c.candidates.length])).toEqual([
      ['MultiNodeConsolidation', 'delete', 2],
    ]);
    expect(stats.consolidationTimeouts).toEqual(['multi']);
    // without the timeout the same search takes all 3 (see above)
    const full: DisruptionStats = { simulations: 0 };
    const all = computeDisruption(input(three(), { options: { clockMs: stepping(1_000) } }), full);
    expect(all.commands.map((c) => [c.method, c.decision, c.candidates.length])).toEqual([
      ['MultiNodeConsolidation', 'replace', 3],
    ]);
    expect(full.consolidationTimeouts).toBeUndefined();
  });

  it('single-node: past 3 min it abandons the pass with no command', () => {
    const lone = [node('big', [pod('a', { cpu: '500m', memory: '1Gi' })], { type: 'm5.2xlarge' })];
    const stats: DisruptionStats = { simulations: 0 };
    // reads: start 0 s (deadline 180 s), before the candidate 200 s: timed out
    const r = computeDisruption(input(lone, { options: { clockMs: stepping(200_000) } }), stats);
    expect(r.commands).toEqual([]);
    expect(stats.consolidationTimeouts).toEqual(['single']);
    expect(stats.simulations).toBe(0);
    const ok: DisruptionStats = { simulations: 0 };
    const r2 = computeDisruption(input(lone, { options: { clockMs: stepping(100_000) } }), ok);
    expect(r2.commands.map((c) => [c.method, c.decision])).toEqual([['SingleNodeConsolidation', 'replace']]);
    expect(ok.consolidationTimeouts).toBeUndefined();
  });
});
