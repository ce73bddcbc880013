import { describe, expect, it } from 'vitest';
import type { PodSpec, Taint } from '../apis/core.ts';
import {
  daemonSetNodeFit,
  daemonSetPodTolerations,
  nodeMatchesNodeAffinity,
  nodeMatchesTerm,
  selectorMatches,
  selectorWithLabelKeys,
  spreadCountsNode,
  withoutEphemeralTaints,
} from './predicates.ts';

const view = (labels: Record<string, string>, taints: Taint[] = [], name = 'n1') => ({
  name,
  labels,
  taints,
});

describe('ephemeral taints', () => {
  it('drops the known key:effect pairs and the readiness.k8s.io/ family, keeps the rest', () => {
    const taints: Taint[] = [
      { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
      { key: 'readiness.k8s.io/gpu-driver', value: 'pending', effect: 'NoSchedule' },
      { key: 'readiness.k8s.io/drain', effect: 'NoExecute' },
      { key: 'readiness.k8s.io', effect: 'NoSchedule' }, // no `/`: not of the family
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      // upstream KnownEphemeralTaints match on key AND effect (corev1 MatchTaint): these effects are not listed
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
      { key: 'karpenter.sh/unregistered', effect: 'NoSchedule' },
      // the value is ignored, as MatchTaint ignores it (upstream lists uninitialized with value "true")
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
    ];
    expect(withoutEphemeralTaints(taints).map((t) => `${t.key}:${t.effect}`)).toEqual([
      'readiness.k8s.io:NoSchedule',
      'dedicated:NoSchedule',
      'node.kubernetes.io/unreachable:NoExecute',
      'karpenter.sh/unregistered:NoSchedule',
    ]);
  });
});

describe('node selector terms', () => {
  it('matchExpressions and matchFields (metadata.name In/NotIn) must all hold; an empty term matches nothing', () => {
    const term = {
      matchExpressions: [{ key: 'zone', operator: 'In' as const, values: ['a'] }],
      matchFields: [{ key: 'metadata.name', operator: 'In' as const, values: ['n1'] }],
    };
    expect(nodeMatchesTerm(term, 'n1', { zone: 'a' })).toBe(true);
    expect(nodeMatchesTerm(term, 'n2', { zone: 'a' })).toBe(false);
    expect(nodeMatchesTerm(term, 'n1', { zone: 'b' })).toBe(false);
    expect(
      nodeMatchesTerm(
        { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['n1'] }] },
        'n2',
        {},
      ),
    ).toBe(true);
    expect(nodeMatchesTerm({}, 'n1', { zone: 'a' })).toBe(false);
  });
  it('Gt/Lt compare integers, deprecated keys read their well-known label, malformed terms match nothing', () => {
    expect(
      nodeMatchesTerm({ matchExpressions: [{ key: 'cpu', operator: 'Gt', values: ['4'] }] }, 'n', {
        cpu: '8',
      }),
    ).toBe(true);
    expect(
      nodeMatchesTerm({ matchExpressions: [{ key: 'cpu', operator: 'Gt', values: ['4'] }] }, 'n', {
        cpu: '4',
      }),
    ).toBe(false);
    expect(
      nodeMatchesTerm(
        { matchExpressions: [{ key: 'beta.kubernetes.io/arch', operator: 'In', values: ['arm64'] }] },
        'n',
        {
          'kubernetes.io/arch': 'arm64',
        },
      ),
    ).toBe(true);
    expect(
      nodeMatchesTerm({ matchExpressions: [{ key: 'cpu', operator: 'Gt', values: ['x'] }] }, 'n', {
        cpu: '8',
      }),
    ).toBe(false);
  });
  it('nodeSelector and ANY required term', () => {
    const spec: PodSpec = {
      containers: [],
      nodeSelector: { disk: 'ssd' },
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
              { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['special'] }] },
            ],
          },
        },
      },
    };
    expect(nodeMatchesNodeAffinity(spec, 'n', { disk: 'ssd', zone: 'a' })).toBe(true);
    expect(nodeMatchesNodeAffinity(spec, 'special', { disk: 'ssd', zone: 'c' })).toBe(true);
    expect(nodeMatchesNodeAffinity(spec, 'n', { disk: 'ssd', zone: 'c' })).toBe(false);
    expect(nodeMatchesNodeAffinity(spec, 'n', { zone: 'a' })).toBe(false);
  });
});

describe('selectors with label keys', () => {
  it('matchLabelKeys adds In [own value], mismatchLabelKeys NotIn [own value]; nil stays nil', () => {
    const sel = selectorWithLabelKeys(
      { matchLabels: { app: 'web' } },
      { app: 'web', rev: '2', team: 'x' },
      ['rev'],
      ['team'],
    );
    expect(selectorMatches(sel, { app: 'web', rev: '2', team: 'y' })).toBe(true);
    expect(selectorMatches(sel, { app: 'web', rev: '1', team: 'y' })).toBe(false);
    expect(selectorMatches(sel, { app: 'web', rev: '2', team: 'x' })).toBe(false);
    expect(selectorWithLabelKeys(undefined, { a: 'b' }, ['a'])).toBeUndefined();
  });
});

describe('spread node inclusion policies', () => {
  const spec: PodSpec = { containers: [], nodeSelector: { pool: 'a' } };
  const tainted = view({ pool: 'a' }, [{ key: 'gpu', effect: 'NoSchedule' }]);
  it('nodeAffinityPolicy defaults to Honor, nodeTaintsPolicy to Ignore', () => {
    expect(spreadCountsNode({}, spec, view({ pool: 'b' }))).toBe(false);
    expect(spreadCountsNode({ nodeAffinityPolicy: 'Ignore' }, spec, view({ pool: 'b' }))).toBe(true);
    expect(spreadCountsNode({}, spec, tainted)).toBe(true);
    expect(spreadCountsNode({ nodeTaintsPolicy: 'Honor' }, spec, tainted)).toBe(false);
  });
});

describe('DaemonSet placement', () => {
  const template: PodSpec = { containers: [], nodeSelector: { os: 'linux' } };
  it('defaults tolerate unschedulable and not-ready NoExecute, not other taints; NoSchedule lets a pod continue', () => {
    expect(daemonSetNodeFit(template, view({ os: 'linux' }))).toEqual({
      shouldRun: true,
      shouldContinue: true,
    });
    expect(daemonSetNodeFit(template, view({ os: 'windows' }))).toEqual({
      shouldRun: false,
      shouldContinue: false,
    });
    expect(
      daemonSetNodeFit(
        template,
        view({ os: 'linux' }, [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]),
      ),
    ).toEqual({ shouldRun: true, shouldContinue: true });
    expect(
      daemonSetNodeFit(
        template,
        view({ os: 'linux' }, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }]),
      ),
    ).toEqual({ shouldRun: true, shouldContinue: true });
    expect(
      daemonSetNodeFit(template, view({ os: 'linux' }, [{ key: 'dedicated', effect: 'NoSchedule' }])),
    ).toEqual({
      shouldRun: false,
      shouldContinue: true,
    });
    const unregistered: Taint[] = [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }];
    expect(daemonSetNodeFit(template, view({ os: 'linux' }, unregistered))).toEqual({
      shouldRun: false,
      shouldContinue: false,
    });
    expect(
      daemonSetNodeFit(template, view({ os: 'linux' }, withoutEphemeralTaints(unregistered))).shouldRun,
    ).toBe(true);
  });
  it('hostNetwork templates also tolerate network-unavailable; own tolerations are kept, defaults not duplicated', () => {
    const keys = (s: PodSpec) => daemonSetPodTolerations(s).map((t) => `${t.key}:${t.effect}`);
    expect(keys({ containers: [] })).not.toContain('node.kubernetes.io/network-unavailable:NoSchedule');
    expect(keys({ containers: [], hostNetwork: true })).toContain(
      'node.kubernetes.io/network-unavailable:NoSchedule',
    );
    const own = {
      key: 'node.kubernetes.io/not-ready',
      operator: 'Exists' as const,
      effect: 'NoExecute' as const,
    };
    const t = daemonSetPodTolerations({
      tolerations: [own, { key: 'x', operator: 'Exists' }],
    });
    expect(t.filter((x) => x.key === 'node.kubernetes.io/not-ready')).toHaveLength(1);
    expect(t[1]).toEqual({ key: 'x', operator: 'Exists' });
    expect(t).toHaveLength(7);
  });
});
