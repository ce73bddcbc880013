import { describe, expect, it } from 'vitest';
import { podConstraints } from './preferences.ts';
import { Requirements } from './requirements.ts';
import { makePod } from './testing.ts';
import { Topology } from './topology.ts';

const ZONES = new Set(['z1', 'z2', 'z3']);
const topo = () => new Topology((key) => (key === 'zone' ? ZONES : new Set()));
const spreadPod = (name: string, extra: object = {}) =>
  makePod(name, {
    labels: { app: 'web' },
    spec: {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'zone',
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: { matchLabels: { app: 'web' } },
          ...extra,
        },
      ],
    },
  });
const tp = (p: ReturnType<typeof makePod>) => ({ namespace: 'default', labels: p.metadata.labels ?? {} });
const newCandidate = (domains: string[]) => ({
  kind: 'new' as const,
  hostname: 'h1',
  requirements: new Requirements(),
  domains: () => new Set(domains),
});

describe('Topology', () => {
  it('spread pins a new NodeClaim to the least-loaded allowed zone', () => {
    const t = topo();
    const p = spreadPod('a');
    const groups = t.ownedGroups(tp(p), podConstraints(p));
    const node = (zone: string) => ({ hostname: `n-${zone}`, labels: { zone } });
    t.countExisting(tp(p), node('z1'), []);
    t.countExisting(tp(p), node('z2'), []);
    const r = t.requirementsFor(tp(p), groups, new Requirements(), newCandidate(['z1', 'z2', 'z3']));
    expect(r.ok && r.requirements.map((q) => q.toString())).toEqual(['In [z3]']);
    // existing node in z1 would make z1=2 while z3=0: skew 2 > 1
    const onNode = t.requirementsFor(tp(p), groups, new Requirements(), {
      kind: 'node',
      hostname: 'n-z1',
      labels: { zone: 'z1' },
    });
    expect(onNode.ok).toBe(false);
    if (!onNode.ok)
      expect(onNode.reason).toBe(
        'topology spread on "zone" (maxSkew 1) would be violated in every possible domain [z1] (matching pods: z1=1)',
      );
  });

  it('minDomains raises the skew floor to zero while too few domains are eligible', () => {
    const t = topo();
    const p = spreadPod('a', { minDomains: 5, maxSkew: 2 });
    const groups = t.ownedGroups(tp(p), podConstraints(p));
    for (const z of ['z1', 'z2', 'z3']) t.countExisting(tp(p), { hostname: z, labels: { zone: z } }, []);
    t.countExisting(tp(p), { hostname: 'x', labels: { zone: 'z1' } }, []);
    // counts z1=2, z2=1, z3=1; min forced to 0 → only zones with count+1 ≤ 2 are allowed
    const r = t.requirementsFor(tp(p), groups, new Requirements(), newCandidate(['z1', 'z2', 'z3']));
    expect(r.ok && r.requirements.map((q) => q.toString())).toEqual(['In [z2]']);
  });

  it('pod affinity bootstraps when the pod selects itself; anti-affinity avoids occupied domains', () => {
    const t = topo();
    const aff = makePod('a', {
      labels: { app: 'c' },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'c' } }, topologyKey: 'zone' },
            ],
          },
        },
      },
    });
    const g = t.ownedGroups(tp(aff), podConstraints(aff));
    const first = t.requirementsFor(tp(aff), g, new Requirements(), newCandidate(['z2', 'z3']));
    expect(first.ok && first.requirements.map((q) => q.toString())).toEqual(['In [z2]']);
    t.record(tp(aff), [], {
      kind: 'new',
      hostname: 'h1',
      requirements: new Requirements(first.ok ? first.requirements : []),
    });
    const second = t.requirementsFor(tp(aff), g, new Requirements(), newCandidate(['z1', 'z3']));
    expect(second.ok).toBe(false);

    const anti = makePod('b', {
      labels: { app: 'c' },
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'c' } }, topologyKey: 'zone' },
            ],
          },
        },
      },
    });
    const ga = t.ownedGroups(tp(anti), podConstraints(anti));
    const r = t.requirementsFor(tp(anti), ga, new Requirements(), newCandidate(['z1', 'z2', 'z3']));
    expect(r.ok && r.requirements.map((q) => q.toString())).toEqual(['In [z1]']);
  });

  it('hostnameBlocked checks hostname spread/anti-affinity without allocation', () => {
    const t = topo();
    const p = makePod('a', {
      labels: { app: 'db' },
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'db' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    });
    const g = t.ownedGroups(tp(p), podConstraints(p));
    expect(t.hostnameBlocked(tp(p), g, 'h1')).toBe(false);
    t.record(tp(p), [], { kind: 'node', hostname: 'h1', labels: {} });
    expect(t.hostnameBlocked(tp(p), g, 'h1')).toBe(true);
    expect(t.hostnameBlocked(tp(p), g, 'h2')).toBe(false);
  });
});
