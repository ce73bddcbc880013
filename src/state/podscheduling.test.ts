import { describe, expect, it } from 'vitest';
import { PodSchedulingTimes } from './podscheduling.ts';

describe('PodSchedulingTimes (upstream cluster state pod maps)', () => {
  it('keeps the first ack, reports each first decision once, and a failure drops the schedulable time', () => {
    const t = new PodSchedulingTimes();
    t.ack(['shop/a', 'shop/b'], 1_000);
    t.ack(['shop/a'], 5_000);
    expect(t.ackTime('shop/a')).toBe(1_000);
    // a placed, b unschedulable, c never acked (decided but not observed)
    expect(t.markDecisions(['shop/b'], ['shop/a', 'shop/c'], 3_500)).toEqual([2.5, 2.5]);
    expect(t.decisionTime('shop/a')).toBe(3_500);
    expect(t.decisionTime('shop/c')).toBe(3_500);
    expect(t.schedulableTime('shop/a')).toBe(3_500);
    expect(t.schedulableTime('shop/b')).toBeUndefined();
    // second pass: no new first decisions; a stays schedulable since 3.5 s, b becomes schedulable at 8 s
    expect(t.markDecisions([], ['shop/a', 'shop/b'], 8_000)).toEqual([]);
    expect(t.schedulableTime('shop/a')).toBe(3_500);
    expect(t.schedulableTime('shop/b')).toBe(8_000);
    // a fails later: its schedulable time goes, its decision time stays
    t.markDecisions(['shop/a'], [], 9_000);
    expect(t.schedulableTime('shop/a')).toBeUndefined();
    expect(t.decisionTime('shop/a')).toBe(3_500);
    expect(t.size).toBe(3);
    t.clear('shop/a');
    expect(t.ackTime('shop/a')).toBeUndefined();
    expect(t.decisionTime('shop/a')).toBeUndefined();
    expect(t.size).toBe(2);
  });
});
