import { describe, expect, it } from 'vitest';
import { input, node, pool } from '../../../disruption/testing.ts';
import { wantedDisruptionConditions } from './conditions.ts';

describe('wantedDisruptionConditions', () => {
  it('marks Consolidatable after consolidateAfter since the last pod event, and Drifted with its reason', () => {
    const np = pool('default', { after: '10m' });
    const recent = node('recent', [], { pool: np, lastPodEventTime: '2025-01-01T11:55:00Z' });
    const idle = node('idle', [], { pool: np, lastPodEventTime: '2025-01-01T11:00:00Z' });
    const other = pool('default', { after: '10m', families: ['c5'] });
    const inp = input([recent, idle], { nodePools: [other], now: Date.UTC(2025, 0, 1, 12) });
    const w = wantedDisruptionConditions(inp);
    expect(w.get('recent')).toEqual({ consolidatable: undefined, drifted: 'RequirementsDrifted' });
    expect(w.get('idle')).toEqual({ consolidatable: 'Consolidatable', drifted: 'RequirementsDrifted' });
  });

  it('drops a stale Drifted condition once the node matches its NodePool again', () => {
    const np = pool('default', { after: '10m' });
    const dn = node('n', [], { pool: np, lastPodEventTime: '2025-01-01T11:59:00Z' });
    dn.nodeClaim?.status?.conditions?.push({
      type: 'Drifted',
      status: 'True',
      reason: 'RequirementsDrifted',
      message: '',
      lastTransitionTime: '2025-01-01T11:00:00Z',
    });
    const w = wantedDisruptionConditions(input([dn], { nodePools: [np], now: Date.UTC(2025, 0, 1, 12) }));
    expect(w.get('n')).toEqual({ consolidatable: undefined, drifted: undefined });
  });
});
