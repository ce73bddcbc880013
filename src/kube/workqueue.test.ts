import { describe, expect, it } from 'vitest';
import { BucketRateLimiter, ItemExponentialRateLimiter, MaxOfRateLimiter } from './backoff.ts';
import { FakeClock } from './clock.ts';
import { runWorkers, WorkQueue } from './workqueue.ts';

function queue(clock = new FakeClock()): { q: WorkQueue<string>; clock: FakeClock } {
  return {
    q: new WorkQueue<string>({ clock, rateLimiter: new ItemExponentialRateLimiter(0.005, 1000) }),
    clock,
  };
}

describe('WorkQueue', () => {
  it('dedupes keys that are queued but not yet processed', () => {
    const { q } = queue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(q.tryGet()).toBe('a');
    expect(q.tryGet()).toBe('b');
    expect(q.tryGet()).toBeUndefined();
  });

  it('re-queues a key added while processing exactly once, after done', () => {
    const { q } = queue();
    q.add('a');
    const k = q.tryGet();
    expect(k).toBe('a');
    q.add('a');
    q.add('a');
    // not handed out twice concurrently
    expect(q.tryGet()).toBeUndefined();
    expect(q.len()).toBe(0);
    q.done('a');
    expect(q.len()).toBe(1);
    expect(q.tryGet()).toBe('a');
    q.done('a');
    expect(q.len()).toBe(0);
  });

  it('get() waits for a key and resolves undefined after shutdown', async () => {
    const { q } = queue();
    const p = q.get();
    q.add('x');
    expect(await p).toBe('x');
    const p2 = q.get();
    q.shutDown();
    expect(await p2).toBeUndefined();
    q.add('y');
    expect(q.len()).toBe(0);
  });

  it('addAfter delays on the clock and keeps the earliest deadline', () => {
    const { q, clock } = queue();
    q.addAfter('a', 10);
    q.addAfter('a', 5);
    q.addAfter('a', 20);
    expect(q.delayedLen()).toBe(1);
    clock.advance(4999);
    expect(q.len()).toBe(0);
    clock.advance(1);
    expect(q.len()).toBe(1);
    expect(q.delayedLen()).toBe(0);
    clock.advance(20_000);
    expect(q.len()).toBe(1);
  });

  it('addAfter with 0 or negative adds immediately', () => {
    const { q } = queue();
    q.addAfter('a', 0);
    q.addAfter('b', -1);
    expect(q.len()).toBe(2);
  });

  it('addRateLimited backs off exponentially per item, forget resets', () => {
    const { q, clock } = queue();
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = clock.now();
      q.addRateLimited('a');
      const at = clock.nextTimerAt() as number;
      delays.push(at - before);
      clock.advance(at - before);
      expect(q.tryGet()).toBe('a');
      q.done('a');
    }
    expect(delays).toEqual([5, 10, 20, 40]);
    expect(q.numRequeues('a')).toBe(4);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
  });

  it('runWorkers reconciles, requeues after errors with backoff, honours requeueAfter', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue<string>({ clock, rateLimiter: new ItemExponentialRateLimiter(1, 100) });
    const calls: Array<[string, number]> = [];
    let failures = 2;
    const errors: string[] = [];
    const done = runWorkers(
      q,
      2,
      async (key) => {
        calls.push([key, clock.now()]);
        if (key === 'flaky' && failures-- > 0) throw new Error('boom');
        if (key === 'periodic' && calls.filter(([k]) => k === 'periodic').length < 2)
          return { requeueAfter: 30 };
        return undefined;
      },
      (key, err) => errors.push(`${key}:${(err as Error).message}`),
    );
    const t0 = clock.now();
    q.add('flaky');
    q.add('periodic');
    await clock.tick(0);
    expect(calls.map(([k]) => k).sort()).toEqual(['flaky', 'periodic']);
    await clock.tick(1000); // first retry after 1 s
    await clock.tick(2000); // second after 2 s more
    await clock.tick(30_000);
    q.shutDown();
    await done;
    expect(errors).toEqual(['flaky:boom', 'flaky:boom']);
    const flakyTimes = calls.filter(([k]) => k === 'flaky').map(([, t]) => t - t0);
    expect(flakyTimes).toEqual([0, 1000, 3000]);
    const periodicTimes = calls.filter(([k]) => k === 'periodic').map(([, t]) => t - t0);
    expect(periodicTimes).toEqual([0, 30_000]);
    expect(q.numRequeues('flaky')).toBe(0);
  });
});

describe('rate limiters', () => {
  it('item exponential caps at the maximum (5 ms → 1000 s like client-go)', () => {
    const rl = new ItemExponentialRateLimiter<string>();
    const seq = Array.from({ length: 20 }, () => rl.when('x'));
    expect(seq[0]).toBeCloseTo(0.005);
    expect(seq[1]).toBeCloseTo(0.01);
    expect(seq[10]).toBeCloseTo(5.12);
    expect(seq[19]).toBe(1000);
    expect(rl.when('y')).toBeCloseTo(0.005);
  });

  it('bucket allows a burst then spaces at qps', () => {
    const clock = new FakeClock();
    const rl = new BucketRateLimiter<string>(clock, 10, 3);
    expect([rl.when('a'), rl.when('b'), rl.when('c')]).toEqual([0, 0, 0]);
    expect(rl.when('d')).toBeCloseTo(0.1);
    expect(rl.when('e')).toBeCloseTo(0.2);
    clock.advance(1000);
    expect(rl.when('f')).toBe(0);
  });

  it('max-of picks the longer delay', () => {
    const clock = new FakeClock();
    const rl = new MaxOfRateLimiter<string>(
      new ItemExponentialRateLimiter(0.005, 1000),
      new BucketRateLimiter(clock, 1, 1),
    );
    expect(rl.when('a')).toBeCloseTo(0.005);
    expect(rl.when('a')).toBeCloseTo(1);
  });
});
