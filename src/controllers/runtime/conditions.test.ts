import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../kube/clock.ts';
import { ConditionSet } from './conditions.ts';

describe('ConditionSet', () => {
  it('initialises Unknown, keeps transition times while status holds, computes Ready', () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const obj: { status?: Record<string, unknown> } = {};
    const cs = new ConditionSet(obj, ['A', 'B'], clock);
    expect(cs.list().map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual([
      'A=Unknown/AwaitingReconciliation',
      'B=Unknown/AwaitingReconciliation',
      'Ready=Unknown/AwaitingReconciliation',
    ]);
    clock.advance(5000);
    cs.setUnknown('B', 'Waiting', 'still waiting');
    expect(cs.get('B')?.lastTransitionTime).toBe('2025-01-01T00:00:00Z');
    cs.setTrue('A');
    expect(cs.get('A')).toMatchObject({
      status: 'True',
      reason: 'A',
      lastTransitionTime: '2025-01-01T00:00:05Z',
    });
    expect(cs.get('Ready')).toMatchObject({ status: 'Unknown', reason: 'Waiting' });
    cs.setFalse('B', 'Broken', 'it broke');
    expect(cs.get('Ready')).toMatchObject({ status: 'False', reason: 'Broken', message: 'it broke' });
    cs.setTrue('B');
    expect(cs.get('Ready')).toMatchObject({ status: 'True', reason: 'Ready' });
  });
});
