import { describe, expect, it } from 'vitest';
import {
  balancedApprovalMessage,
  balancedApprovals,
  bySavingsRatio,
  nodePoolTotals,
  savingsRatio,
} from './balanced.ts';
import { buildClusterView } from './candidates.ts';
import { computeDisruption, type DisruptionStats } from './index.ts';
import { interweaveByNodePool } from './singlenode.ts';
import { input, node, pod, pool } from './testing.ts';

const summary = (r: ReturnType<typeof computeDisruption>) =>
  r.commands.map((c) => ({
    decision: c.decision,
    method: c.method,
    candidates: c.candidates.map((x) => x.name).sort(),
    replacements: c.replacements.map((p) => p.cheapest.instanceType.name),
    savings: c.savingsUSDPerHour,
  }));

const six = (prefix: string) => Array.from({ length: 6 }, (_, i) => pod(`${prefix}${i}`, { cpu: '500m' }));

/**
 * Pool of two m5.2xlarge ($0.384/h each): x holds six 500m pods (fits an m5.xlarge), z one 7-cpu pod (fits only
 * an m5.2xlarge, and nowhere else).
 */
function refusedScenario(policy: 'WhenEmptyOrUnderutilized' | 'Balanced') {
  const np = pool('default', { policy });
  return input(
    [
      node('x', six('x'), { type: 'm5.2xlarge', pool: np }),
      node('z', [pod('z0', { cpu: '7' })], { type: 'm5.2xlarge', pool: np }),
    ],
    { nodePools: [np] },
  );
}

describe('consolidationPolicy: Balanced (upstream v1.14 balanced.go, k = 2)', () => {
  it('pool totals: cost of every node, disruption 1 + Σ pod eviction cost per node', () => {
    const inp = refusedScenario('Balanced');
    const totals = nodePoolTotals(inp, buildClusterView(inp));
    // 2 × $0.384/h; x: 1 + 6 pods, z: 1 + 1 pod.
    expect(totals.get('default')).toEqual({ totalCost: 0.768, totalDisruptionCost: 9 });
  });

  it('WhenEmptyOrUnderutilized replaces x by an m5.xlarge; Balanced refuses (saves 25% of cost for 78% of disruption)', () => {
    expect(summary(computeDisruption(refusedScenario('WhenEmptyOrUnderutilized')))).toEqual([
      {
        decision: 'replace',
        method: 'SingleNodeConsolidation',
        candidates: ['x'],
        replacements: ['m5.xlarge'],
        savings: 0.192,
      },
    ]);
    const r = computeDisruption(refusedScenario('Balanced'));
    // score = (0.192 / 0.768) / (7 / 9) = 0.25 / 0.778 = 0.321 < 0.5
    expect(r.commands).toEqual([]);
    expect(r.blocked.find((b) => b.node === 'x')?.reason).toContain(
      'NodePool "default" is Balanced: saves 25% of its cost for 77.78% of its disruption (score 0.321, needs ≥ 0.5)',
    );
  });

  it('both policies delete y when its pod fits x (saves 33% of cost for 22% of disruption: score 1.5)', () => {
    for (const policy of ['WhenEmptyOrUnderutilized', 'Balanced'] as const) {
      const np = pool('default', { policy });
      const r = computeDisruption(
        input(
          [
            node('x', six('x'), { type: 'm5.2xlarge', pool: np }),
            node('y', [pod('y0', { cpu: '3' })], { pool: np }),
          ],
          { nodePools: [np] },
        ),
      );
      expect(summary(r)).toEqual([
        {
          decision: 'delete',
          method: 'SingleNodeConsolidation',
          candidates: ['y'],
          replacements: [],
          savings: 0.192,
        },
      ]);
    }
  });

  it('the approved score of the chosen move, as the upstream ConsolidationApproved Event reports it', () => {
    const np = pool('default', { policy: 'Balanced' });
    const inp = input(
      [
        node('x', six('x'), { type: 'm5.2xlarge', pool: np }),
        node('y', [pod('y0', { cpu: '3' })], { pool: np }),
      ],
      { nodePools: [np] },
    );
    const cmd = computeDisruption(inp).commands[0]!;
    const approvals = balancedApprovals(cmd, nodePoolTotals(inp, buildClusterView(inp)));
    // savings 0.192 of 0.576 = 33.3%; disruption 2 of 9 = 22.2%; score 1.5
    expect(approvals).toHaveLength(1);
    expect(approvals[0]).toMatchObject({ nodePool: 'default', threshold: 0.5, k: 2 });
    expect(approvals[0]!.score).toBeCloseTo(1.5, 10);
    expect(balancedApprovalMessage(approvals[0]!)).toBe(
      'score 1.50 >= threshold 0.50 (k: 2, savings 33.3%, disruption 22.2%)',
    );
    // a refused move has no approval; a pool that is not Balanced has none either
    const refused = refusedScenario('Balanced');
    const wou = computeDisruption(refusedScenario('WhenEmptyOrUnderutilized')).commands[0]!;
    expect(balancedApprovals(wou, nodePoolTotals(refused, buildClusterView(refused)))).toEqual([]);
    expect(
      balancedApprovalMessage({ ...approvals[0]!, score: Number.POSITIVE_INFINITY, disruptionFraction: 0 }),
    ).toBe('score +Inf >= threshold 0.50 (k: 2, savings 33.3%, disruption 0.0%)');
  });

  it('a move across NodePools scores the Balanced pool on its share of the savings', () => {
    const bal = pool('bal', { policy: 'Balanced' });
    const def = pool('def');
    const r = computeDisruption(
      input(
        [
          node('x', six('x'), { type: 'm5.2xlarge', pool: bal }),
          node('z', [pod('z0', { cpu: '7' })], { type: 'm5.2xlarge', pool: bal }),
          node('w', six('w'), { type: 'm5.2xlarge', pool: def }),
          node('v', [pod('v0', { cpu: '7' })], { type: 'm5.2xlarge', pool: def }),
        ],
        { nodePools: [bal, def] },
      ),
    );
    // Order by savings ratio: z, v ($0.384/h ÷ 2), then w, x (÷ 7). Batch [z, v, w] → one m5.4xlarge ($0.768/h),
    // saving $0.384/h. Pool "bal" gets 0.384 × (0.384 / 1.152) = $0.128/h = 16.7% of its $0.768/h for 2 of its 9
    // disruption (22.2%): score 0.75 ≥ 0.5. "def" is not scored. The 4-node batch would need two NodeClaims.
    expect(summary(r)).toEqual([
      {
        decision: 'replace',
        method: 'MultiNodeConsolidation',
        candidates: ['v', 'w', 'z'],
        replacements: ['m5.4xlarge'],
        savings: 0.384,
      },
    ]);
  });

  // Upstream v1.14 balanced.go ApproveCommand / EmitMultiNodeEvents feed karpenter_consolidation_moves_total and
  // karpenter_consolidation_score (metrics.go); the core hands the records over in DisruptionStats.
  describe('consolidation move records (upstream consolidation_moves_total / consolidation_score)', () => {
    const movesOf = (inp: ReturnType<typeof input>) => {
      const stats: DisruptionStats = { simulations: 0 };
      const r = computeDisruption(inp, stats);
      return { moves: stats.consolidationMoves, methods: r.commands.map((c) => c.method) };
    };
    it('single-node: a Balanced move refused at score 0.321 is counted rejected; the WhenEmptyOrUnderutilized one approved, unscored', () => {
      expect(movesOf(refusedScenario('Balanced'))).toEqual({
        moves: [
          {
            decision: 'rejected',
            nodePool: 'default',
            policy: 'Balanced',
            score: { value: expect.closeTo(0.321429, 6), decision: 'rejected' },
          },
        ],
        methods: [],
      });
      expect(movesOf(refusedScenario('WhenEmptyOrUnderutilized'))).toEqual({
        moves: [{ decision: 'approved', nodePool: 'default', policy: 'WhenEmptyOrUnderutilized' }],
        methods: ['SingleNodeConsolidation'],
      });
    });
    it('multi-node: the chosen move of a and b (score 1.0) once; a refused one once for the last failing batch (score 0.381)', () => {
      const np = pool('default', { policy: 'Balanced' });
      const one = (n: string) => node(n, [pod(`${n}0`, { cpu: '1' })], { type: 'm5.xlarge', pool: np });
      // delete a and b into c: saves $0.384 of $0.576 (66.7%) for 4 of 6 disruption (66.7%)
      expect(movesOf(input([one('a'), one('b'), one('c')], { nodePools: [np] }))).toEqual({
        moves: [
          {
            decision: 'approved',
            nodePool: 'default',
            policy: 'Balanced',
            score: { value: 1, decision: 'approved' },
          },
        ],
        methods: ['MultiNodeConsolidation'],
      });
      // c (m5.4xlarge, do-not-disrupt) takes a's and b's twelve 250m pods: $0.384 of $1.152 for 14 of 16
      const quarter = (n: string) => Array.from({ length: 6 }, (_, i) => pod(`${n}${i}`, { cpu: '250m' }));
      const busy = input(
        [
          node('a', quarter('a'), { type: 'm5.xlarge', pool: np }),
          node('b', quarter('b'), { type: 'm5.xlarge', pool: np }),
          node('c', [pod('c0', { cpu: '1' })], {
            type: 'm5.4xlarge',
            pool: np,
            nodeAnnotations: { 'karpenter.sh/do-not-disrupt': 'true' },
          }),
        ],
        { nodePools: [np] },
      );
      const { moves, methods } = movesOf(busy);
      expect(methods).toEqual([]);
      expect(moves).toEqual([
        {
          decision: 'rejected',
          nodePool: 'default',
          policy: 'Balanced',
          score: { value: expect.closeTo(0.380952, 6), decision: 'rejected' },
        },
      ]);
    });
  });
});

describe('consolidation candidate order (upstream v1.14 sortCandidates: savings ratio, highest first)', () => {
  it('orders by price / (1 + Σ pod eviction cost), not by disruption cost', () => {
    const inp = input([
      node('cheap', [pod('c0')], { type: 'm5.large' }),
      node('pricey', [pod('p0'), pod('p1'), pod('p2'), pod('p3'), pod('p4')], { type: 'm5.2xlarge' }),
      node('mid', [pod('m0')]),
    ]);
    const cands = [...buildClusterView(inp).candidates.values()];
    const sorted = [...cands].sort(bySavingsRatio);
    expect(sorted.map((c) => [c.name, savingsRatio(c)])).toEqual([
      ['mid', 0.096], // $0.192/h ÷ 2
      ['pricey', 0.064], // $0.384/h ÷ 6
      ['cheap', 0.048], // $0.096/h ÷ 2
    ]);
    // disruption cost (the old order) would have put pricey (5 pods) last and cheap first
    expect(cands.map((c) => [c.name, c.disruptionCost])).toEqual([
      ['cheap', 1],
      ['pricey', 5],
      ['mid', 1],
    ]);
  });

  it('single-node consolidation interleaves the sorted candidates by NodePool', () => {
    const a = pool('a');
    const b = pool('b');
    const inp = input(
      [
        node('a1', [pod('p1')], { type: 'm5.2xlarge', pool: a }),
        node('a2', [pod('p2')], { pool: a }),
        node('a3', [pod('p3')], { type: 'm5.large', pool: a }),
        node('b1', [pod('p4')], { type: 'm5.large', pool: b }),
      ],
      { nodePools: [a, b] },
    );
    const sorted = [...buildClusterView(inp).candidates.values()].sort(bySavingsRatio);
    expect(sorted.map((c) => c.name)).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(interweaveByNodePool(sorted).map((c) => c.name)).toEqual(['a1', 'b1', 'a2', 'a3']);
  });
});

describe('consolidateAfter protects destination nodes (upstream v1.14 isUnderConsolidateAfter)', () => {
  const np = pool('default', { after: '5m' });
  // `now` is 2026-01-01T00:00:00Z; `old` had its last pod event an hour ago, so it is consolidatable.
  const scenario = (freshLastPodEvent: string) =>
    input(
      [
        node('old', [pod('p1')], { pool: np, lastPodEventTime: '2025-12-31T23:00:00Z' }),
        node('fresh', [pod('p2')], {
          pool: np,
          lastPodEventTime: freshLastPodEvent,
          nodeAnnotations: { 'karpenter.sh/do-not-disrupt': 'true' },
        }),
      ],
      { nodePools: [np] },
    );

  it('a node whose consolidateAfter has elapsed takes the moved pod: old is deleted', () => {
    expect(summary(computeDisruption(scenario('2025-12-31T23:50:00Z')))).toEqual([
      {
        decision: 'delete',
        method: 'SingleNodeConsolidation',
        candidates: ['old'],
        replacements: [],
        savings: 0.192,
      },
    ]);
  });

  it('a node with a pod event 1 minute ago (consolidateAfter 5m) is no destination: old is replaced instead', () => {
    expect(summary(computeDisruption(scenario('2025-12-31T23:59:00Z')))).toEqual([
      {
        decision: 'replace',
        method: 'SingleNodeConsolidation',
        candidates: ['old'],
        replacements: ['m5.large'],
        savings: 0.096,
      },
    ]);
  });
});
