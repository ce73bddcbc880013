import { describe, expect, it } from 'vitest';
import { computeDisruption } from './index.ts';
import { input, node, pod, pool } from './testing.ts';

const first = (r: ReturnType<typeof computeDisruption>) =>
  r.commands.map((c) => `${c.method}:${c.decision}:${c.candidates.map((x) => x.name).join(',')}`);

describe('computeDisruption', () => {
  const empty = () => node('empty', []);
  const drifted = () => node('drifted', [pod('d', { cpu: '1' })], { type: 'c5.xlarge' });
  const under = () => node('under', [pod('u', { cpu: '500m' })], { type: 'm5.2xlarge' });

  it('runs the methods in upstream order: emptiness, drift, consolidation', () => {
    expect(first(computeDisruption(input([under(), drifted(), empty()])))).toEqual([
      'Emptiness:delete:empty',
    ]);
    expect(first(computeDisruption(input([under(), drifted()])))).toEqual(['Drift:delete:drifted']);
    expect(first(computeDisruption(input([under()])))).toEqual(['SingleNodeConsolidation:replace:under']);
  });
  it('is deterministic: the same input gives the same commands', () => {
    const a = computeDisruption(input([under(), drifted(), empty()]));
    const b = computeDisruption(input([under(), drifted(), empty()]));
    expect(first(a)).toEqual(first(b));
    expect(a.blocked).toEqual(b.blocked);
  });
  it('nodes already disrupting use up the budget', () => {
    const np = pool('default', { budgets: [{ nodes: '1' }] });
    const going = { ...node('going', [pod('g')], { pool: np }), markedForDeletion: true };
    const r = computeDisruption(input([going, node('empty', [], { pool: np })], { nodePools: [np] }));
    expect(r.commands).toEqual([]);
    expect(r.blocked).toEqual([
      {
        node: 'empty',
        reason:
          'Emptiness: empty, but the disruption budget of NodePool "default" allows no more Empty disruptions now',
      },
      { node: 'going', reason: 'node is being disrupted or deleted' },
    ]);
  });
  it('a NotReady node counts as disrupting', () => {
    const np = pool('default', { budgets: [{ nodes: '1' }] });
    const sick = node('sick', [pod('s')], { pool: np });
    sick.node.status!.conditions = [{ type: 'Ready', status: 'False' }];
    expect(
      computeDisruption(input([sick, node('empty', [], { pool: np })], { nodePools: [np] })).commands,
    ).toEqual([]);
  });
  it('lists unmanaged nodes and pending pods do not block', () => {
    const unmanaged = node('u1', [pod('x')]);
    delete unmanaged.node.metadata.labels!['karpenter.sh/nodepool'];
    const r = computeDisruption(input([unmanaged, empty()], { pendingPods: [] }));
    expect(first(r)).toEqual(['Emptiness:delete:empty']);
    expect(r.blocked).toEqual([
      { node: 'u1', reason: 'not managed by Karpenter (no karpenter.sh/nodepool label)' },
    ]);
  });
});
