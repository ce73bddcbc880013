import { describe, expect, it } from 'vitest';
import { NodePoolHealth, registrationHealthOf } from './nodepoolhealth.ts';

describe('NodePoolHealth (upstream pkg/state/nodepoolhealth)', () => {
  it('unknown when empty; unhealthy at 2 failures of the 4-slot buffer; the oldest outcome drops out', () => {
    expect(registrationHealthOf([])).toBe('unknown');
    expect(registrationHealthOf([false])).toBe('healthy'); // 1/4 < 50%
    expect(registrationHealthOf([false, false])).toBe('unhealthy'); // 2/4
    const h = new NodePoolHealth();
    expect(h.status('a')).toBe('unknown');
    h.update('a', false);
    expect(h.dryRun('a', false)).toBe('unhealthy');
    expect(h.status('a')).toBe('healthy'); // dry run recorded nothing
    h.update('a', false);
    for (const next of [true, true]) {
      h.update('a', next);
      expect(h.status('a')).toBe('unhealthy');
    }
    h.update('a', true); // [false, true, true, true]
    expect(h.status('a')).toBe('healthy');
    expect(h.status('b')).toBe('unknown');
  });

  it('setStatus seeds the buffer: healthy = one success, unhealthy = two failures, unknown = empty', () => {
    const h = new NodePoolHealth();
    h.setStatus('a', 'unhealthy');
    expect(h.status('a')).toBe('unhealthy');
    expect(h.dryRun('a', true)).toBe('unhealthy'); // [f, f, t]
    h.setStatus('a', 'healthy');
    expect(h.dryRun('a', false)).toBe('healthy'); // [t, f]
    h.setStatus('a', 'unknown');
    expect(h.status('a')).toBe('unknown');
  });
});
