import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.ts';
import { FakeClock, RealClock } from './clock.ts';
import { ResourceRegistry, Resources } from './resources.ts';

describe('FakeClock', () => {
  it('fires timers in due order and only when advanced', () => {
    const c = new FakeClock(1000);
    const fired: string[] = [];
    c.setTimeout(() => fired.push('b'), 20);
    c.setTimeout(() => fired.push('a'), 10);
    const h = c.setTimeout(() => fired.push('x'), 15);
    c.clearTimeout(h);
    c.advance(9);
    expect(fired).toEqual([]);
    c.advance(11);
    expect(fired).toEqual(['a', 'b']);
    expect(c.now()).toBe(1020);
  });

  it('sleep resolves after tick and early on abort', async () => {
    const c = new FakeClock();
    let done = false;
    const p = c.sleep(1000).then(() => {
      done = true;
    });
    await c.tick(999);
    expect(done).toBe(false);
    await c.tick(1);
    await p;
    expect(done).toBe(true);
    const ac = new AbortController();
    const s = c.sleep(1e9, ac.signal);
    ac.abort();
    await s;
    expect(c.pendingTimers()).toBe(0);
  });

  it('chained sleeps progress under tick', async () => {
    const c = new FakeClock(0);
    const seen: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 3; i++) {
        await c.sleep(100);
        seen.push(c.now());
      }
    })();
    await c.tick(300);
    await loop;
    expect(seen).toEqual([100, 200, 300]);
  });

  it('RealClock sleeps for real', async () => {
    const c = new RealClock();
    const t0 = Date.now();
    await c.sleep(20);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15);
  });
});

describe('Backoff', () => {
  it('grows by factor up to max and resets', () => {
    const b = new Backoff({ initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([
      800, 1600, 3200, 6400, 12_800, 25_600, 30_000,
    ]);
    b.reset();
    expect(b.next()).toBe(800);
    const j = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 1 }, () => 0.5);
    expect(j.next()).toBe(150);
  });
});

describe('ResourceRegistry', () => {
  it('resolves kinds by name, Kind.group and apiVersion', () => {
    const r = new ResourceRegistry();
    expect(r.forKind('Pod')).toEqual(Resources.Pod);
    expect(r.forKind('NodeClaim')?.group).toBe('karpenter.sh');
    expect(r.forKind('Machine.cluster.x-k8s.io')?.plural).toBe('machines');
    expect(r.forApiVersionKind('policy/v1', 'PodDisruptionBudget')?.plural).toBe('poddisruptionbudgets');
    expect(r.forApiVersionKind('cluster.x-k8s.io/v1beta1', 'Machine')?.version).toBe('v1beta1');
    expect(r.forKind('Widget')).toBeUndefined();
    r.register({ group: 'example.com', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true });
    expect(r.forKind('Widget')?.plural).toBe('widgets');
  });
});
