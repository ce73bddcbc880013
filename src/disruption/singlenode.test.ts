import { describe, expect, it } from 'vitest';
import type { PodDisruptionBudget } from '../apis/core.ts';
import { buildClusterView } from './candidates.ts';
import { PassContext } from './context.ts';
import { computeDisruption, type DisruptionStats } from './index.ts';
import { SingleNodeConsolidation, SpareCapacity } from './singlenode.ts';
import { CATALOG, input, node, pod, pool } from './testing.ts';

const big = (pods = [pod('a', { cpu: '500m', memory: '1Gi' })], o = {}) =>
  node('big', pods, { type: 'm5.2xlarge', ...o });

describe('single-node consolidation', () => {
  it('replaces an underutilized m5.2xlarge with an m5.large ($0.384 → $0.096)', () => {
    const r = computeDisruption(input([big()]));
    expect(r.commands).toHaveLength(1);
    const c = r.commands[0]!;
    expect([c.decision, c.reason, c.method]).toEqual(['replace', 'Underutilized', 'SingleNodeConsolidation']);
    // as upstream (flexible on-demand replacements, the default): every type cheaper than the candidate
    expect(c.replacements[0]!.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large', 'm5.xlarge']);
    expect(c.savingsUSDPerHour).toBe(0.288);
  });
  it('keeps only the cheapest-priced type with flexibleOnDemandReplacements: false (capenter narrowing)', () => {
    const r = computeDisruption(input([big()], { options: { flexibleOnDemandReplacements: false } }));
    expect(r.commands[0]!.replacements[0]!.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large']);
  });
  it('no command when no cheaper type holds the pods', () => {
    const r = computeDisruption(
      input([node('n', [pod('a', { cpu: '1500m', memory: '1Gi' })], { type: 'm5.large' })]),
    );
    expect(r.commands).toEqual([]);
    expect(r.blocked[0]!.reason).toMatch(/^SingleNodeConsolidation: cannot be consolidated: /);
  });
  it('WhenEmpty skips underutilized nodes', () => {
    const np = pool('default', { policy: 'WhenEmpty' });
    const r = computeDisruption(input([big(undefined, { pool: np })], { nodePools: [np] }));
    expect(r.commands).toEqual([]);
    expect(r.blocked).toEqual([
      { node: 'big', reason: 'consolidationPolicy is WhenEmpty and the node is not empty' },
    ]);
  });
  it('consolidateAfter 30s not yet elapsed → no command; Never → no consolidation', () => {
    const np = pool('default', { after: '30s' });
    const r = computeDisruption(
      input([big(undefined, { pool: np, created: '2025-12-31T23:59:45Z' })], { nodePools: [np] }),
    );
    expect(r.commands).toEqual([]);
    expect(r.blocked[0]!.reason).toBe(
      'consolidateAfter 30s has not elapsed since the last pod event (15s ago)',
    );
    const later = computeDisruption(
      input([big(undefined, { pool: np, created: '2025-12-31T23:59:15Z' })], { nodePools: [np] }),
    );
    expect(later.commands[0]!.decision).toBe('replace');
    const never = pool('default', { after: 'Never' });
    const r2 = computeDisruption(
      input([big(undefined, { pool: never, created: '2025-12-20T00:00:00Z' })], { nodePools: [never] }),
    );
    expect(r2.commands).toEqual([]);
    expect(r2.blocked[0]!.reason).toBe('consolidateAfter is Never');
  });
  it("reports upstream's Unconsolidatable messages: no cheaper node, WhenEmpty, consolidation disabled", () => {
    const full = computeDisruption(
      input([node('n', [pod('a', { cpu: '1500m', memory: '1Gi' })], { type: 'm5.large' })]),
    );
    expect(full.unconsolidatable).toEqual([{ node: 'n', message: "Can't replace with a cheaper node" }]);
    const whenEmpty = pool('default', { policy: 'WhenEmpty' });
    expect(
      computeDisruption(input([big(undefined, { pool: whenEmpty })], { nodePools: [whenEmpty] }))
        .unconsolidatable,
    ).toEqual([
      {
        node: 'big',
        message: 'NodePool "default" has consolidation policy WhenEmpty, but node is not empty',
      },
    ]);
    const never = pool('default', { after: 'Never' });
    expect(
      computeDisruption(input([big(undefined, { pool: never })], { nodePools: [never] })).unconsolidatable,
    ).toEqual([{ node: 'big', message: 'NodePool "default" has consolidation disabled' }]);
    // a replaced node gets none
    expect(computeDisruption(input([big()])).unconsolidatable).toBeUndefined();
  });
  it('a do-not-disrupt pod blocks', () => {
    const r = computeDisruption(
      input([big([pod('a', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } })])]),
    );
    expect(r.commands).toEqual([]);
    expect(r.blocked[0]!.reason).toBe('pod default/a is annotated karpenter.sh/do-not-disrupt');
  });
  it('a PDB with 0 disruptions allowed blocks; with 1 allowed it does not', () => {
    const pdb = (allowed: number): PodDisruptionBudget => ({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 0 },
      status: { disruptionsAllowed: allowed },
    });
    const pods = [pod('a', { labels: { app: 'web' } })];
    const r = computeDisruption(input([big(pods)], { pdbs: [pdb(0)] }));
    expect(r.commands).toEqual([]);
    expect(r.blocked[0]!.reason).toBe('PodDisruptionBudget default/web allows 0 disruptions (pod default/a)');
    expect(computeDisruption(input([big(pods)], { pdbs: [pdb(1)] })).commands).toHaveLength(1);
  });
  it('spot-to-spot needs the feature gate and 15 cheaper types', () => {
    const np = pool('default', { capacityTypes: ['spot'], families: ['m5', 'c5', 'r5'] });
    const spotBig = node('big', [pod('a', { cpu: '500m', memory: '1Gi' })], {
      type: 'r5.4xlarge',
      capacityType: 'spot',
      pool: np,
    });
    const off = computeDisruption(input([spotBig], { nodePools: [np] }));
    expect(off.commands).toEqual([]);
    expect(off.blocked[0]!.reason).toContain('SpotToSpotConsolidation feature gate');
    const on = computeDisruption(
      input([spotBig], { nodePools: [np], featureGates: { spotToSpotConsolidation: true } }),
    );
    expect(on.commands).toEqual([]);
    // 11 of the 12 m5/c5/r5 types are cheaper than r5.4xlarge spot: fewer than 15
    expect(on.blocked[0]!.reason).toContain('needs 15 cheaper instance types, found 11');
  });
  it('reserved capacity is never consolidated to on-demand: reserved → reserved only, pinned (issue 28)', () => {
    // upstream's reserved price: on-demand / 10,000,000; the candidate m5.2xlarge runs in a reservation
    const reserved = (name: string, id: string) => {
      const it = CATALOG.find((t) => t.name === name)!;
      const od = it.offerings.find((o) => o.capacityType === 'on-demand' && o.zone === 'test-zone-a')!;
      return {
        ...it,
        offerings: [
          ...it.offerings,
          {
            ...od,
            capacityType: 'reserved' as const,
            priceUSDPerHour: od.priceUSDPerHour / 10_000_000,
            reservationID: id,
            reservationCapacity: 1,
          },
        ],
      };
    };
    const np = pool('default', { capacityTypes: ['reserved', 'on-demand'] });
    const cand = big(undefined, { pool: np, capacityType: 'reserved' });
    const only2x = CATALOG.map((t) => (t.name === 'm5.2xlarge' ? reserved(t.name, 'cr-2x') : t));
    const none = computeDisruption(input([cand], { nodePools: [np], instanceTypes: { default: only2x } }));
    expect(none.commands).toEqual([]);
    expect(none.blocked[0]!.reason).toContain('no instance type cheaper than $3.84e-8/h holds that');
    const withLarge = only2x.map((t) => (t.name === 'm5.large' ? reserved(t.name, 'cr-l') : t));
    const r = computeDisruption(input([cand], { nodePools: [np], instanceTypes: { default: withLarge } }));
    const plan = r.commands[0]!.replacements[0]!;
    expect(plan.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large']);
    expect(plan.requirements.find((x) => x.key === 'karpenter.sh/capacity-type')?.values).toEqual([
      'reserved',
    ]);
    expect([plan.cheapest.offering.capacityType, plan.cheapest.offering.priceUSDPerHour]).toEqual([
      'reserved',
      0.096 / 10_000_000,
    ]);
  });
  it('on-demand → spot replacement is pinned to spot', () => {
    const np = pool('default', { capacityTypes: ['spot', 'on-demand'] });
    const r = computeDisruption(input([big(undefined, { pool: np })], { nodePools: [np] }));
    const plan = r.commands[0]!.replacements[0]!;
    expect(plan.requirements.find((x) => x.key === 'karpenter.sh/capacity-type')).toEqual({
      key: 'karpenter.sh/capacity-type',
      operator: 'In',
      values: ['spot'],
    });
    expect(plan.cheapest.offering.capacityType).toBe('spot');
    expect(plan.cheapest.instanceType.name).toBe('m5.large');
  });
  it('stops after singleNodeMaxSimulations simulations', () => {
    // x has spare cpu but no memory, y spare memory but no cpu: a's and a2's pods fit neither, though the
    // per-resource spare capacity cannot prove it, so each needs a simulation.
    const stats: DisruptionStats = { simulations: 0 };
    // A budget of 1 keeps multi-node consolidation (which would merge a, a2 and x into one m5.xlarge) out.
    const np = pool('default', { budgets: [{ nodes: '1' }] });
    const large = (n: string, cpu: string, memory: string) =>
      node(n, [pod(`${n}-p`, { cpu, memory })], { type: 'm5.large', pool: np });
    const nodes = [
      large('a', '1', '2Gi'),
      large('a2', '1', '2Gi'),
      large('x', '500m', '6500Mi'),
      large('y', '1500m', '1Gi'),
    ];
    const r = computeDisruption(
      input(nodes, { nodePools: [np], options: { singleNodeMaxSimulations: 1 } }),
      stats,
    );
    expect(r.commands).toEqual([]);
    expect(stats.simulations).toBe(1);
    const reasons = Object.fromEntries(r.blocked.map((b) => [b.node, b.reason]));
    expect(reasons.a).toContain(
      'SingleNodeConsolidation: cannot be consolidated: no cheaper replacement: cheapest option m5.large costs $0.096/h, not below $0.096/h',
    );
    expect(reasons.a2).toContain(
      'SingleNodeConsolidation: not evaluated: single-node consolidation reached its limit of 1 simulations this pass',
    );
    expect(reasons.x).toMatch(/cannot be consolidated: its pods need at least/);
  });
  it('prunes candidates whose pods cannot fit elsewhere nor on a cheaper type', () => {
    const inp = input([
      node('a', [pod('pa', { cpu: '1800m', memory: '6Gi' })], { type: 'm5.large' }),
      node('b', [pod('pb', { cpu: '1800m' })], { type: 'm5.large' }),
    ]);
    const view = buildClusterView(inp);
    const spare = new SpareCapacity(new PassContext(inp, view, new Set()));
    expect(spare.prune(view.candidates.get('a')!)).toMatch(
      /no instance type cheaper than \$0.096\/h holds that/,
    );
    const roomy = input([
      node('a', [pod('pa', { cpu: '1' })], { type: 'm5.large' }),
      node('b', [], { type: 'm5.2xlarge' }),
    ]);
    const v2 = buildClusterView(roomy);
    expect(
      new SpareCapacity(new PassContext(roomy, v2, new Set())).prune(v2.candidates.get('a')!),
    ).toBeUndefined();
  });
  // Upstream v1.14 pkg/controllers/disruption/consolidation.go ShouldDisrupt ("Empty nodes are handled by
  // Emptiness (reason "Empty") for correct budget accounting"; before v1.14 the same skip sat in
  // singlenodeconsolidation.go: "Filter out empty candidates ... budgets").
  it('skips empty candidates: an Empty budget of 0 keeps an empty node although Underutilized allows 100%', () => {
    const np = pool('default', { budgets: [{ nodes: '0', reasons: ['Empty'] }, { nodes: '100%' }] });
    const nodes = [
      node('idle-1', [], { type: 'm5.2xlarge', pool: np }),
      node('busy-1', [pod('a', { cpu: '500m', memory: '1Gi' })], { type: 'm5.2xlarge', pool: np }),
    ];
    const inp = input(nodes, { nodePools: [np] });
    const r = computeDisruption(inp);
    expect(r.commands.map((c) => [c.method, c.reason, c.decision, c.candidates.map((n) => n.name)])).toEqual([
      ['SingleNodeConsolidation', 'Underutilized', 'delete', ['busy-1']],
    ]);
    // busy-1's pod moves onto idle-1; idle-1 alone is deleted by no method.
    expect(computeDisruption(input([nodes[0]!], { nodePools: [np] })).commands).toEqual([]);
    // The method alone, with Underutilized budget left for NodePool "default": the empty node is not its to delete.
    const view = buildClusterView(input([nodes[0]!], { nodePools: [np] }));
    const idle = view.candidates.get('idle-1')!;
    expect(idle.reschedulablePods).toEqual([]);
    const out = new SingleNodeConsolidation().computeCommands(
      new PassContext(inp, view, new Set()),
      new Map([['default', 10]]),
      [idle],
    );
    expect(out.commands).toEqual([]);
  });
});
