import { describe, expect, it } from 'vitest';
import { podConstraints, relax } from './preferences.ts';
import { makePod } from './testing.ts';

describe('relax', () => {
  it('follows upstream order, one step at a time', () => {
    const term = (key: string) => ({ labelSelector: { matchLabels: { app: 'x' } }, topologyKey: key });
    const pod = makePod('p', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'a', operator: 'Exists' }] },
                { matchExpressions: [{ key: 'b', operator: 'Exists' }] },
              ],
            },
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, preference: { matchExpressions: [{ key: 'c', operator: 'Exists' }] } },
            ],
          },
          podAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: term('zone') }],
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: term('host-light') },
              { weight: 50, podAffinityTerm: term('host-heavy') },
            ],
          },
        },
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' },
          { maxSkew: 1, topologyKey: 'host', whenUnsatisfiable: 'ScheduleAnyway' },
        ],
      },
    });
    const c = podConstraints(pod);
    const steps: string[] = [];
    for (let s = relax(c); s; s = relax(c)) steps.push(s);
    expect(steps).toEqual([
      'removed required node affinity term [0] (trying the next ORed term)',
      'removed preferred pod affinity term (weight 5, topologyKey zone)',
      'removed preferred pod anti-affinity term (weight 50, topologyKey host-heavy)',
      'removed preferred pod anti-affinity term (weight 1, topologyKey host-light)',
      'removed preferred node affinity term (weight 1)',
      'removed ScheduleAnyway topology spread constraint on host',
      'added toleration for PreferNoSchedule taints',
    ]);
    expect(c.topologySpread.map((t) => t.topologyKey)).toEqual(['zone']);
    expect(c.nodeAffinity.requiredTerms).toHaveLength(1);
    expect(pod.spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(
      2,
    );
  });
});
