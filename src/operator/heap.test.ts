/** limitYoungGeneration (heap.ts) against a simulated V8 new space: when it caps, when it stops, when it stays out. */
import { describe, expect, it } from 'vitest';
import { limitYoungGeneration, type YoungGenerationHooks, YoungGenerationLimitMB } from './heap.ts';

const MB = 1024 * 1024;

/** Hooks over a simulated new space: `gc(size)` sets its size and runs the observer, as V8 and Node would. */
function fakeV8(
  sizeMB: number,
): YoungGenerationHooks & { flags: string[]; observing: boolean; gc(mb: number): void } {
  let size = sizeMB * MB;
  let onGC: (() => void) | undefined;
  const v8 = {
    flags: [] as string[],
    observing: false,
    newSpaceBytes: () => size,
    setFlags: (f: string) => void v8.flags.push(f),
    afterGC: (cb: () => void) => {
      onGC = cb;
      v8.observing = true;
      return () => {
        v8.observing = false;
        onGC = undefined;
      };
    },
    gc: (mb: number) => {
      size = mb * MB;
      onGC?.();
    },
  };
  return v8;
}

describe('limitYoungGeneration', () => {
  it('stops the growth once the new space reaches the limit, then stops observing', async () => {
    const v8 = fakeV8(1);
    expect(limitYoungGeneration({ hooks: v8 })).toBe(true);
    v8.gc(8);
    expect(v8.flags).toEqual([]);
    v8.gc(YoungGenerationLimitMB);
    expect(v8.flags).toEqual(['--semi-space-growth-factor=1']);
    await Promise.resolve();
    expect(v8.observing).toBe(false);
    v8.gc(32);
    expect(v8.flags).toHaveLength(1);
  });

  it('caps at once when the new space is already at the limit (or past it)', () => {
    const v8 = fakeV8(32);
    expect(limitYoungGeneration({ hooks: v8, limitMB: 16 })).toBe(true);
    expect(v8.flags).toEqual(['--semi-space-growth-factor=1']);
    expect(v8.observing).toBe(false);
  });

  it("leaves the young generation alone when the user's flags size it", () => {
    for (const o of [
      { nodeOptions: '--max-semi-space-size=32' },
      { nodeOptions: '--inspect --semi_space_growth_factor=4' },
      { execArgv: ['--max-heap-size=512'] },
    ]) {
      const v8 = fakeV8(64);
      expect(limitYoungGeneration({ ...o, hooks: v8 })).toBe(false);
      expect(v8.flags).toEqual([]);
      expect(v8.observing).toBe(false);
    }
  });
});
