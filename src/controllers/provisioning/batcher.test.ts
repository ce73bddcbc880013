import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../kube/clock.ts';
import { Batcher } from './batcher.ts';

/** Starts a wait and records the fake-clock time (ms after start) at which it resolved. */
function track(b: Batcher, clock: FakeClock, signal?: AbortSignal) {
  const t0 = clock.now();
  const state: { done: boolean; result?: boolean; at?: number } = { done: false };
  void b.wait(signal).then((r) => {
    state.done = true;
    state.result = r;
    state.at = clock.now() - t0;
  });
  return state;
}

describe('Batcher', () => {
  it('closes the window 1 s after a single trigger (idle)', async () => {
    const clock = new FakeClock();
    const b = new Batcher({ clock });
    const s = track(b, clock);
    await clock.tick(5000);
    expect(s.done).toBe(false); // no trigger yet: waits indefinitely
    b.trigger();
    await clock.tick(999);
    expect(s.done).toBe(false);
    await clock.tick(1);
    expect(s).toMatchObject({ done: true, result: true, at: 6000 });
  });

  it('each trigger extends the idle window; continuous triggers close at the 10 s max', async () => {
    const clock = new FakeClock();
    const b = new Batcher({ clock });
    b.trigger(); // before wait: arms the next window
    const s = track(b, clock);
    for (let i = 0; i < 30; i++) {
      await clock.tick(500);
      b.trigger();
    }
    expect(s).toMatchObject({ done: true, result: true, at: 10_000 });
  });

  it('triggers 900 ms apart extend the window; a 1 s gap closes it', async () => {
    const clock = new FakeClock();
    const b = new Batcher({ clock });
    const s = track(b, clock);
    b.trigger();
    await clock.tick(900);
    b.trigger();
    await clock.tick(900);
    b.trigger();
    await clock.tick(999);
    expect(s.done).toBe(false);
    await clock.tick(1);
    expect(s.at).toBe(2800);
  });

  it('a repeated key does not extend the window; new keys do', async () => {
    const clock = new FakeClock();
    const b = new Batcher({ clock });
    const s = track(b, clock);
    b.trigger('pod-a');
    await clock.tick(800);
    b.trigger('pod-a');
    await clock.tick(200);
    expect(s).toMatchObject({ done: true, at: 1000 });
    // keys are forgotten after the window: the same key opens the next one
    const s2 = track(b, clock);
    b.trigger('pod-a');
    await clock.tick(800);
    b.trigger('pod-b');
    await clock.tick(999);
    expect(s2.done).toBe(false);
    await clock.tick(1);
    expect(s2.at).toBe(1800);
  });

  it('custom durations and abort', async () => {
    const clock = new FakeClock();
    const b = new Batcher({ clock, idleSeconds: 2, maxSeconds: 3 });
    const s = track(b, clock);
    b.trigger();
    await clock.tick(1500);
    b.trigger();
    await clock.tick(1500);
    expect(s).toMatchObject({ done: true, at: 3000 });
    const ac = new AbortController();
    const s2 = track(b, clock, ac.signal);
    ac.abort();
    await clock.tick(0);
    expect(s2).toMatchObject({ done: true, result: false });
    expect(() => new Batcher({ clock, idleSeconds: -1 })).toThrow(/non-negative/);
  });
});
