import { describe, expect, it } from 'vitest';
import { normalizeLabelKey, Requirement, RequirementError, Requirements } from './requirements.ts';

describe('Requirement', () => {
  it('In/NotIn/Exists/DoesNotExist membership and absence', () => {
    const inR = Requirement.from({ key: 'k', operator: 'In', values: ['a', 'b'] });
    expect([inR.has('a'), inR.has('c'), inR.allowsAbsent()]).toEqual([true, false, false]);
    const notIn = Requirement.from({ key: 'k', operator: 'NotIn', values: ['a'] });
    expect([notIn.has('a'), notIn.has('z'), notIn.allowsAbsent(), notIn.operator()]).toEqual([
      false,
      true,
      true,
      'NotIn',
    ]);
    expect(Requirement.exists('k').operator()).toBe('Exists');
    expect(Requirement.doesNotExist('k').allowsAbsent()).toBe(true);
  });

  it('Gt/Lt/Gte/Lte are integer bounds', () => {
    const gte = Requirement.from({ key: 'cpu', operator: 'Gte', values: ['4'] });
    expect([gte.has('3'), gte.has('4'), gte.has('64'), gte.has('x')]).toEqual([false, true, true, false]);
    const both = gte.intersection(Requirement.from({ key: 'cpu', operator: 'Lt', values: ['8'] }));
    expect([both.has('4'), both.has('7'), both.has('8')]).toEqual([true, true, false]);
    expect(both.toNodeSelector()).toEqual([
      { key: 'cpu', operator: 'Gt', values: ['3'] },
      { key: 'cpu', operator: 'Lt', values: ['8'] },
    ]);
    expect(() => Requirement.from({ key: 'cpu', operator: 'Gt', values: ['four'] })).toThrow(
      RequirementError,
    );
    const empty = Requirement.from({ key: 'c', operator: 'Gt', values: ['4'] }).intersection(
      Requirement.from({ key: 'c', operator: 'Lt', values: ['5'] }),
    );
    expect(empty.len()).toBe(0);
  });

  it('intersection of In and NotIn keeps the allowed values; minValues takes the max', () => {
    const a = Requirement.in('f', ['m5', 'c5', 'r5'], 2);
    const b = Requirement.notIn('f', ['r5']);
    const r = a.intersection(b);
    expect([...r.values].sort()).toEqual(['c5', 'm5']);
    expect(r.minValues).toBe(2);
    expect(
      Requirement.notIn('f', ['x'])
        .intersection(Requirement.notIn('f', ['y']))
        .toString(),
    ).toBe('NotIn [x, y]');
  });

  it('subsetOf', () => {
    expect(Requirement.in('k', ['a']).subsetOf(Requirement.in('k', ['a', 'b']))).toBe(true);
    expect(Requirement.in('k', ['a', 'c']).subsetOf(Requirement.in('k', ['a', 'b']))).toBe(false);
    expect(Requirement.in('k', ['a']).subsetOf(Requirement.notIn('k', ['b']))).toBe(true);
    expect(Requirement.exists('k').subsetOf(Requirement.in('k', ['a']))).toBe(false);
    expect(Requirement.notIn('k', ['a', 'b']).subsetOf(Requirement.notIn('k', ['a']))).toBe(true);
  });
});

describe('Requirements', () => {
  const nodePool = Requirements.fromNodeSelector([
    { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['c6a', 'c7i'] },
    { key: 'team', operator: 'In', values: ['a'] },
  ]);

  it('reports the key and values when In sets do not intersect', () => {
    const pod = Requirements.fromLabels({ 'karpenter.k8s.aws/instance-family': 'm5' });
    expect(nodePool.compatible(pod)).toBe(
      'key "karpenter.k8s.aws/instance-family" values [m5] not in [c6a, c7i]',
    );
  });

  it('custom labels must be defined unless NotIn/DoesNotExist; well-known may be undefined when allowed', () => {
    expect(nodePool.compatible(Requirements.fromLabels({ other: 'x' }))).toContain(
      'label "other" does not have known values',
    );
    expect(
      nodePool.compatible(
        Requirements.fromNodeSelector([{ key: 'other', operator: 'NotIn', values: ['x'] }]),
      ),
    ).toBeUndefined();
    const zone = Requirements.fromLabels({ 'topology.kubernetes.io/zone': 'z1' });
    expect(nodePool.compatible(zone)).toBeDefined();
    expect(nodePool.compatible(zone, new Set(['topology.kubernetes.io/zone']))).toBeUndefined();
  });

  it('DoesNotExist against In fails; against NotIn passes', () => {
    const pool = Requirements.fromLabels({ 'karpenter.sh/nodepool': 'general' });
    const pod = Requirements.fromNodeSelector([{ key: 'karpenter.sh/nodepool', operator: 'DoesNotExist' }]);
    expect(pool.compatible(pod)).toBe(
      'key "karpenter.sh/nodepool" requires DoesNotExist but only In [general] is possible',
    );
    const notIn = Requirements.fromNodeSelector([{ key: 'x', operator: 'NotIn', values: ['a'] }]);
    expect(
      notIn.compatible(Requirements.fromNodeSelector([{ key: 'x', operator: 'DoesNotExist' }])),
    ).toBeUndefined();
  });

  it('add intersects per key, labels() returns single values, toNodeSelector is sorted', () => {
    const r = nodePool.clone().add(Requirement.in('karpenter.k8s.aws/instance-family', ['c7i', 'm5']));
    expect(r.labels()).toEqual({ 'karpenter.k8s.aws/instance-family': 'c7i', team: 'a' });
    expect(r.toNodeSelector()).toEqual([
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['c7i'] },
      { key: 'team', operator: 'In', values: ['a'] },
    ]);
    expect(nodePool.get('karpenter.k8s.aws/instance-family')!.values.size).toBe(2);
    expect(r.signature()).not.toBe(nodePool.signature());
  });

  it('toNodeSelector(override) puts the given entry in its key order, replacing the key held', () => {
    const r = nodePool
      .clone()
      .add(Requirement.in('node.kubernetes.io/instance-type', ['m5.large', 'c5.large']));
    expect(r.toNodeSelector()[1]).toEqual({
      key: 'node.kubernetes.io/instance-type',
      operator: 'In',
      values: ['c5.large', 'm5.large'],
    });
    const it = { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: ['c5.large'] };
    expect(r.toNodeSelector(it).map((q) => [q.key, q.values])).toEqual([
      ['karpenter.k8s.aws/instance-family', ['c6a', 'c7i']],
      ['node.kubernetes.io/instance-type', ['c5.large']],
      ['team', ['a']],
    ]);
    expect(nodePool.toNodeSelector(it).map((q) => q.key)).toEqual([
      'karpenter.k8s.aws/instance-family',
      'node.kubernetes.io/instance-type',
      'team',
    ]);
  });

  it('matchesLabels honours absence', () => {
    const r = Requirements.fromNodeSelector([
      { key: 'a', operator: 'In', values: ['1'] },
      { key: 'b', operator: 'DoesNotExist' },
    ]);
    expect(r.matchesLabels({ a: '1' })).toBe(true);
    expect(r.matchesLabels({ a: '1', b: 'x' })).toBe(false);
    expect(r.matchesLabels({})).toBe(false);
  });
});

describe('deprecated label keys (upstream v1.NormalizedLabels)', () => {
  it('maps every deprecated key to its well-known key in every factory', () => {
    expect(Requirement.in('beta.kubernetes.io/os', ['linux']).key).toBe('kubernetes.io/os');
    expect(Requirement.notIn('beta.kubernetes.io/arch', ['arm64']).key).toBe('kubernetes.io/arch');
    expect(Requirement.exists('beta.kubernetes.io/instance-type').key).toBe(
      'node.kubernetes.io/instance-type',
    );
    expect(Requirement.doesNotExist('failure-domain.beta.kubernetes.io/zone').key).toBe(
      'topology.kubernetes.io/zone',
    );
    expect(
      Requirement.from({ key: 'failure-domain.beta.kubernetes.io/region', operator: 'In', values: ['r1'] })
        .key,
    ).toBe('topology.kubernetes.io/region');
    expect(Requirement.in('example.com/os', ['x']).key).toBe('example.com/os');
    expect(normalizeLabelKey('beta.kubernetes.io/os')).toBe('kubernetes.io/os');
    expect(normalizeLabelKey('toString')).toBe('toString');
  });

  it('a deprecated and a current key for the same label intersect into one requirement', () => {
    const r = Requirements.fromLabels({ 'beta.kubernetes.io/os': 'linux' });
    r.add(Requirement.in('kubernetes.io/os', ['linux', 'windows']));
    expect(r.size).toBe(1);
    expect(r.get('kubernetes.io/os')!.toString()).toBe('In [linux]');
    expect(r.matchesLabels({ 'kubernetes.io/os': 'linux' })).toBe(true);
    const clash = Requirements.fromLabels({ 'beta.kubernetes.io/arch': 'amd64' });
    expect(clash.compatible(Requirements.fromLabels({ 'kubernetes.io/arch': 'arm64' }))).toContain(
      'kubernetes.io/arch',
    );
  });
});
