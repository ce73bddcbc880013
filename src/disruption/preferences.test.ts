import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import { solve } from '../scheduling/scheduler.ts';
import { makeNodePool, makePod, smallCatalog } from '../scheduling/testing.ts';
import { computeDisruption } from './index.ts';
import { input, node, pod } from './testing.ts';

const spreadOut = (p: Pod): Pod => ({
  ...p,
  spec: {
    ...p.spec,
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              labelSelector: { matchLabels: { app: 'web' } },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    },
  },
});

describe('preferences must not cost money', () => {
  const nodes = () => [
    node('n-1', [spreadOut(pod('web-1', { labels: { app: 'web' } }))]),
    node('n-2', [spreadOut(pod('web-2', { labels: { app: 'web' } }))]),
  ];

  it('a preferred anti-affinity does not keep a node: the pods fit on one, so the other is deleted', () => {
    // each pod on its own m5.large: both onto one of them beats launching anything
    const small = () => [
      node('n-1', [spreadOut(pod('web-1', { labels: { app: 'web' } }))], { type: 'm5.large' }),
      node('n-2', [spreadOut(pod('web-2', { labels: { app: 'web' } }))], { type: 'm5.large' }),
    ];
    const r = computeDisruption(input(small()));
    expect(r.commands.map((c) => [c.decision, c.candidates.length, c.replacements.length])).toEqual([
      ['delete', 1, 0],
    ]);
    // the same with --preference-policy Ignore
    const ignored = computeDisruption(input(small(), { options: { preferencePolicy: 'Ignore' } }));
    expect(ignored.commands.map((c) => [c.decision, c.candidates.length])).toEqual([['delete', 1]]);
  });

  it('Respect and Ignore agree when replacing both nodes by one cheaper node is the saving', () => {
    const summary = (o = {}) =>
      computeDisruption(input(nodes(), o)).commands.map((c) => [
        c.decision,
        c.candidates.map((x) => x.node.metadata.name).sort(),
        c.replacements.map((p) => p.cheapest.instanceType.name),
      ]);
    expect(summary()).toEqual(summary({ options: { preferencePolicy: 'Ignore' } }));
    expect(summary()[0]![0]).toBe('replace');
  });

  it('provisioning: Respect pins a preferred zone, Ignore leaves the zone open', () => {
    const p = makePod('p', {
      cpu: '1',
      spec: {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 1,
                preference: {
                  matchExpressions: [
                    { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['test-zone-b'] },
                  ],
                },
              },
            ],
          },
        },
      },
    });
    const base = {
      pods: [p],
      existingNodes: [],
      nodePools: [makeNodePool('general')],
      instanceTypes: { general: smallCatalog() },
      daemonSets: [],
    };
    const zone = (r: ReturnType<typeof solve>) =>
      r.newNodeClaims[0]!.requirements.find((x) => x.key === 'topology.kubernetes.io/zone')?.values;
    expect(zone(solve(base))).toEqual(['test-zone-b']);
    const ignored = solve({ ...base, preferencePolicy: 'Ignore' });
    expect(zone(ignored)).toBeUndefined();
    expect(ignored.newNodeClaims[0]!.pods[0]).toBe(p);
  });
});
