import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { computeDisruption, type DisruptionStats } from '../../disruption/index.ts';
import { input, node, pod, pool } from '../../disruption/testing.ts';
import { disruptionMetrics, recordConsolidationMoves, recordConsolidationTimeouts } from './metrics.ts';

/** One pass's consolidation move records (see `DisruptionStats.consolidationMoves`). */
function passMoves(policy: 'Balanced' | 'WhenEmptyOrUnderutilized') {
  const np = pool('default', { policy });
  const six = Array.from({ length: 6 }, (_, i) => pod(`x${i}`, { cpu: '500m' }));
  const stats: DisruptionStats = { simulations: 0 };
  computeDisruption(
    input(
      [
        node('x', six, { type: 'm5.2xlarge', pool: np }),
        node('z', [pod('z0', { cpu: '7' })], { type: 'm5.2xlarge', pool: np }),
      ],
      { nodePools: [np] },
    ),
    stats,
  );
  return stats.consolidationMoves;
}

// Upstream v1.14.1 pkg/controllers/disruption/metrics.go ConsolidationMovesTotal / ConsolidationScoreHistogram.
describe('consolidation move metrics (upstream v1.14 karpenter_consolidation_moves_total / _score)', () => {
  it('counts a rejected Balanced move with its score and an approved WhenEmptyOrUnderutilized move without one', async () => {
    const registry = new Registry();
    const m = disruptionMetrics(registry);
    recordConsolidationMoves(m, passMoves('Balanced'));
    recordConsolidationMoves(m, passMoves('Balanced'));
    recordConsolidationMoves(m, passMoves('WhenEmptyOrUnderutilized'));
    recordConsolidationMoves(m, undefined);

    const moves = await registry.getSingleMetricAsString('karpenter_consolidation_moves_total');
    expect(moves.split('\n')).toEqual([
      '# HELP karpenter_consolidation_moves_total Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.',
      '# TYPE karpenter_consolidation_moves_total counter',
      'karpenter_consolidation_moves_total{decision="rejected",nodepool="default",policy="Balanced"} 2',
      'karpenter_consolidation_moves_total{decision="approved",nodepool="default",policy="WhenEmptyOrUnderutilized"} 1',
    ]);

    const score = (await registry.getSingleMetricAsString('karpenter_consolidation_score')).split('\n');
    expect(score.slice(0, 2)).toEqual([
      '# HELP karpenter_consolidation_score Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.',
      '# TYPE karpenter_consolidation_score histogram',
    ]);
    const labels = 'decision="rejected",nodepool="default",policy="Balanced"';
    // score (0.192 / 0.768) / (7 / 9) = 0.321: above the 0.25 bucket, within 0.33
    expect(score).toContain(`karpenter_consolidation_score_bucket{le="0.25",${labels}} 0`);
    expect(score).toContain(`karpenter_consolidation_score_bucket{le="0.33",${labels}} 2`);
    expect(score).toContain(`karpenter_consolidation_score_bucket{le="10",${labels}} 2`);
    expect(score).toContain(`karpenter_consolidation_score_count{${labels}} 2`);
    const sum = score.find((l) => l.startsWith('karpenter_consolidation_score_sum'));
    expect(Number(sum?.split(' ')[1])).toBeCloseTo(2 * 0.321429, 5);
    // buckets as upstream: 0.1, 0.25, 0.33, 0.5, 1, 2, 5, 10 (+Inf)
    expect(
      score
        .filter((l) => l.startsWith('karpenter_consolidation_score_bucket'))
        .map((l) => /le="([^"]+)"/.exec(l)![1]),
    ).toEqual(['0.1', '0.25', '0.33', '0.5', '1', '2', '5', '10', '+Inf']);
    // the approved WhenEmptyOrUnderutilized move has no score series
    expect(score.some((l) => l.includes('WhenEmptyOrUnderutilized'))).toBe(false);
  });

  it('is registered once per registry: a second call shares the metrics', () => {
    const registry = new Registry();
    expect(disruptionMetrics(registry).consolidationMoves).toBe(
      disruptionMetrics(registry).consolidationMoves,
    );
  });
});

describe('karpenter_voluntary_disruption_consolidation_timeouts_total (upstream ConsolidationTimeoutsTotal)', () => {
  it('counts a multi-node search and a single-node pass stopped by their 1 min / 3 min timeouts on a fake clock', async () => {
    /** A fake clock (ms) that moves `step` ms on every read. */
    const stepping = (step: number) => {
      let t = 0;
      return () => {
        const now = t;
        t += step;
        return now;
      };
    };
    const pass = (nodes: ReturnType<typeof node>[], step: number) => {
      const stats: DisruptionStats = { simulations: 0 };
      computeDisruption(input(nodes, { options: { clockMs: stepping(step) } }), stats);
      return stats.consolidationTimeouts;
    };
    const three = ['a', 'b', 'c'].map((n) => node(n, [pod(`${n}0`, { cpu: '500m' })]));
    const lone = [node('big', [pod('x', { cpu: '500m' })], { type: 'm5.2xlarge' })];
    const registry = new Registry();
    const m = disruptionMetrics(registry);
    recordConsolidationTimeouts(m, pass(three, 40_000)); // 0 s start, 40 s, 80 s > 60 s
    recordConsolidationTimeouts(m, pass(lone, 200_000)); // 0 s start, 200 s > 180 s
    recordConsolidationTimeouts(m, pass(lone, 1_000)); // within 3 min: nothing
    const text = await registry.getSingleMetricAsString(
      'karpenter_voluntary_disruption_consolidation_timeouts_total',
    );
    expect(text.split('\n').filter((l) => !l.startsWith('#'))).toEqual([
      'karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type="multi"} 1',
      'karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type="single"} 1',
    ]);
  });
});
