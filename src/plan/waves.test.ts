/** The pace of a roll-out under disruption budgets (`waves.ts`). */
import { describe, expect, it } from 'vitest';
import type { NodePool } from '../apis/karpenter.ts';
import { computeWaves, type WaveNode } from './waves.ts';

const pool = (budgets: unknown[]): NodePool =>
  ({
    metadata: { name: 'p' },
    spec: { disruption: { budgets }, template: { spec: {} } },
  }) as unknown as NodePool;
const nodes = (n: number, pods = 1): WaveNode[] =>
  Array.from({ length: n }, (_, i) => ({ name: `n${i}`, nodePool: 'p', pods, budgeted: true }));
const T0 = Date.parse('2026-12-03T10:00:00Z');

describe('computeWaves', () => {
  it('a 20 % budget of 10 nodes replaces 2 a wave; nodes already disrupting count against it', () => {
    const state = new Map([['p', { nodes: 10, disrupting: 0 }]]);
    const w = computeWaves(nodes(5), new Map([['p', pool([{ nodes: '20%' }])]]), state, T0, 60);
    expect(w.waves.map((x) => [x.startMs - T0, x.nodes])).toEqual([
      [0, ['n0', 'n1']],
      [60_000, ['n2', 'n3']],
      [120_000, ['n4']],
    ]);
    const busy = new Map([['p', { nodes: 10, disrupting: 1 }]]);
    expect(
      computeWaves(nodes(2), new Map([['p', pool([{ nodes: '20%' }])]]), busy, T0, 60).waves,
    ).toHaveLength(2);
  });

  it('a budget of "0" with no schedule never opens: every node is blocked at once', () => {
    const w = computeWaves(nodes(2), new Map([['p', pool([{ nodes: '0' }])]]), new Map(), T0, 60);
    expect(w.waves).toEqual([]);
    expect([...w.blocked.keys()]).toEqual(['n0', 'n1']);
  });

  it('empty nodes go first, and a deleted NodePool’s nodes all go in the first wave', () => {
    const list: WaveNode[] = [
      { name: 'busy', nodePool: 'p', pods: 5, budgeted: true },
      { name: 'empty', nodePool: 'p', pods: 0, budgeted: true },
      { name: 'gone-1', nodePool: 'q', pods: 3, budgeted: false },
      { name: 'gone-2', nodePool: 'q', pods: 3, budgeted: false },
    ];
    const w = computeWaves(list, new Map([['p', pool([{ nodes: '1' }])]]), new Map(), T0, 60);
    expect(w.waves.map((x) => x.nodes)).toEqual([['gone-1', 'gone-2', 'empty'], ['busy']]);
  });
});
