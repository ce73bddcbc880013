import { describe, expect, it } from 'vitest';
import { ResourceIndex } from './instancetypes.ts';
import { constraintKey, needsOwnNode, PodInfoCache, resourceKey } from './podinfo.ts';
import { copyConstraints, relax } from './preferences.ts';
import { makePod } from './testing.ts';
import { Topology } from './topology.ts';

const preferArm = {
  affinity: {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 5,
          preference: {
            matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In' as const, values: ['arm64'] }],
          },
        },
      ],
    },
  },
};

describe('PodInfoCache', () => {
  it('shares requests and constraints between replicas of one template, not between templates', () => {
    const cache = new PodInfoCache(new ResourceIndex(), new Topology(() => new Set()));
    const a = cache.build(
      makePod('a', { cpu: '250m', memory: '1Gi', labels: { app: 'x' }, spec: preferArm }),
    );
    const b = cache.build(
      makePod('b', { cpu: '250m', memory: '1Gi', labels: { app: 'x' }, spec: preferArm }),
    );
    const c = cache.build(
      makePod('c', { cpu: '500m', memory: '1Gi', labels: { app: 'x' }, spec: preferArm }),
    );
    const d = cache.build(
      makePod('d', { cpu: '250m', memory: '1Gi', labels: { app: 'y' }, spec: preferArm }),
    );
    expect([a.key, b.key]).toEqual(['default/a', 'default/b']);
    expect(b.pod.metadata.name).toBe('b');
    expect(b.requirements).toBe(a.requirements);
    expect(b.constraints).toBe(a.constraints);
    expect(b.template).toBe(a.template);
    expect(c.vec[0]).toBe(500);
    expect(c.template).toBe(a.template); // same constraints, other requests
    expect(d.template).not.toBe(a.template); // other labels
    expect(a.requirements.get('kubernetes.io/arch')?.toString()).toBe('In [arm64]');
    expect(a.shared).toBe(true);
  });

  it('relaxing a copy of shared constraints leaves the other replicas untouched', () => {
    const cache = new PodInfoCache(new ResourceIndex(), new Topology(() => new Set()));
    const a = cache.build(makePod('a', { cpu: '1', spec: preferArm }));
    const b = cache.build(makePod('b', { cpu: '1', spec: preferArm }));
    const copy = copyConstraints(a.constraints);
    expect(relax(copy)).toBe('removed preferred node affinity term (weight 5)');
    expect(copy.nodeAffinity.preferredTerms).toHaveLength(0);
    expect(b.constraints.nodeAffinity.preferredTerms).toHaveLength(1);
  });

  it('keys: requests and constraints are keyed separately; names and images do not matter', () => {
    const p1 = makePod('p1', { cpu: '1', labels: { app: 'x' } });
    const p2 = { ...makePod('p2', { cpu: '1', labels: { app: 'x' } }) };
    p2.spec = { ...p2.spec, containers: [{ ...p2.spec.containers[0]!, image: 'other:2', name: 'other' }] };
    expect(resourceKey(p2)).toBe(resourceKey(p1));
    expect(constraintKey(p2)).toBe(constraintKey(p1));
    expect(resourceKey(makePod('p3', { cpu: '2' }))).not.toBe(resourceKey(p1));
    expect(constraintKey(makePod('p4', { cpu: '1', namespace: 'other', labels: { app: 'x' } }))).not.toBe(
      constraintKey(p1),
    );
  });
});

describe('needsOwnNode', () => {
  const term = (app: string, topologyKey = 'kubernetes.io/hostname') => ({
    labelSelector: { matchLabels: { app } },
    topologyKey,
  });
  it('is true only for hostname anti-affinity that selects the pod itself', () => {
    const withAnti = (terms: ReturnType<typeof term>[], preferred = false) =>
      makePod('p', {
        labels: { app: 'db' },
        spec: {
          affinity: {
            podAntiAffinity: preferred
              ? {
                  preferredDuringSchedulingIgnoredDuringExecution: terms.map((t) => ({
                    weight: 1,
                    podAffinityTerm: t,
                  })),
                }
              : { requiredDuringSchedulingIgnoredDuringExecution: terms },
          },
        },
      });
    expect(needsOwnNode(withAnti([term('db')]))).toBe(true);
    expect(needsOwnNode(withAnti([term('db')], true))).toBe(true);
    expect(needsOwnNode(withAnti([term('web')]))).toBe(false);
    expect(needsOwnNode(withAnti([term('db', 'topology.kubernetes.io/zone')]))).toBe(false);
    expect(needsOwnNode(makePod('q', { labels: { app: 'db' } }))).toBe(false);
  });
});
