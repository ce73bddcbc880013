import { describe, expect, it } from 'vitest';
import { nodeAffinityRequirements, nodeAffinityState, requiredAlternatives } from './nodeaffinity.ts';
import { nodeMatchesNodeAffinity } from './predicates.ts';
import { makePod } from './testing.ts';

const pod = makePod('p', {
  spec: {
    nodeSelector: { disk: 'ssd' },
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
          ],
        },
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 10,
            preference: { matchExpressions: [{ key: 'size', operator: 'In', values: ['small'] }] },
          },
          {
            weight: 90,
            preference: { matchExpressions: [{ key: 'size', operator: 'In', values: ['big'] }] },
          },
        ],
      },
    },
  },
});

describe('node affinity', () => {
  it('nodeSelector ∩ first required term ∩ heaviest preferred term (strict drops preferred)', () => {
    const state = nodeAffinityState(pod);
    expect(nodeAffinityRequirements(state).toString()).toBe('disk In [ssd], size In [big], zone In [a]');
    expect(nodeAffinityRequirements(state, true).toString()).toBe('disk In [ssd], zone In [a]');
    expect(requiredAlternatives(pod).map((r) => r.toString())).toEqual([
      'disk In [ssd], zone In [a]',
      'disk In [ssd], zone In [b]',
    ]);
  });
  it('a node matches when any required term matches', () => {
    expect(nodeMatchesNodeAffinity(pod.spec, 'n', { disk: 'ssd', zone: 'b' })).toBe(true);
    expect(nodeMatchesNodeAffinity(pod.spec, 'n', { disk: 'ssd', zone: 'c' })).toBe(false);
    expect(nodeMatchesNodeAffinity(pod.spec, 'n', { zone: 'a' })).toBe(false);
  });
});
