import { describe, expect, it } from 'vitest';
import type { PodDisruptionBudget } from '../apis/core.ts';
import { computeDisruptionsAllowed, pdbBlocks, resolvePDBs } from './pdb.ts';
import { pod } from './testing.ts';

const pdb = (
  name: string,
  spec: PodDisruptionBudget['spec'],
  status?: PodDisruptionBudget['status'],
): PodDisruptionBudget => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name, namespace: 'default' },
  spec,
  ...(status ? { status } : {}),
});
const web = (n: string, ready = true) => pod(n, { labels: { app: 'web' }, ready });

describe('computeDisruptionsAllowed', () => {
  const pods = [web('w1'), web('w2'), web('w3'), web('w4', false)];
  it('minAvailable int and percent (rounded up)', () => {
    expect(
      computeDisruptionsAllowed(
        pdb('a', { selector: { matchLabels: { app: 'web' } }, minAvailable: 2 }),
        pods,
      ),
    ).toBe(1);
    expect(
      computeDisruptionsAllowed(
        pdb('a', { selector: { matchLabels: { app: 'web' } }, minAvailable: '50%' }),
        pods,
      ),
    ).toBe(1);
  });
  it('maxUnavailable int and percent', () => {
    // expected 4, desired = 4 - 1 = 3, healthy 3 -> 0
    expect(
      computeDisruptionsAllowed(
        pdb('a', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 1 }),
        pods,
      ),
    ).toBe(0);
    // 50% of 4 = 2 -> desired 2, healthy 3 -> 1
    expect(
      computeDisruptionsAllowed(
        pdb('a', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: '50%' }),
        pods,
      ),
    ).toBe(1);
    expect(
      computeDisruptionsAllowed(
        pdb('a', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 0 }),
        pods,
      ),
    ).toBe(0);
  });
  it('selects nothing with a nil selector', () => {
    expect(computeDisruptionsAllowed(pdb('a', { minAvailable: 10 }), pods)).toBe(0);
  });
});

describe('pdbBlocks', () => {
  it('uses status.disruptionsAllowed when present', () => {
    const r = resolvePDBs(
      [pdb('a', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 0 }, { disruptionsAllowed: 1 })],
      [],
    );
    expect(pdbBlocks(web('w1'), r)).toBeUndefined();
  });
  it('blocks with 0 allowed', () => {
    const r = resolvePDBs(
      [pdb('a', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 0 })],
      [web('w1')],
    );
    expect(pdbBlocks(web('w1'), r)).toBe(
      'PodDisruptionBudget default/a allows 0 disruptions (pod default/w1)',
    );
  });
  it('AlwaysAllow lets unhealthy pods go', () => {
    const r = resolvePDBs(
      [
        pdb('a', {
          selector: { matchLabels: { app: 'web' } },
          maxUnavailable: 0,
          unhealthyPodEvictionPolicy: 'AlwaysAllow',
        }),
      ],
      [web('w1', false)],
    );
    expect(pdbBlocks(web('w1', false), r)).toBeUndefined();
  });
  it('blocks pods selected by two PDBs', () => {
    const r = resolvePDBs(
      [
        pdb('a', { selector: { matchLabels: { app: 'web' } } }, { disruptionsAllowed: 5 }),
        pdb('b', { selector: {} }, { disruptionsAllowed: 5 }),
      ],
      [],
    );
    expect(pdbBlocks(web('w1'), r)).toContain('more than one PodDisruptionBudget (default/a, default/b)');
  });
});
