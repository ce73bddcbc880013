import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../apis/core.ts';
import { drainTier, isEvictable, isWaitingEviction, planDrain, podDeleteTime } from './drain.ts';

const NOW = Date.UTC(2025, 0, 1, 12);
const pod = (
  name: string,
  o: Partial<Pod['spec']> & { ann?: Record<string, string>; daemon?: boolean; deleting?: number } = {},
): Pod => {
  const { ann, daemon, deleting, ...spec } = o;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'w',
      uid: name,
      ...(ann ? { annotations: ann } : {}),
      ...(daemon
        ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'd' }] }
        : {}),
      ...(deleting !== undefined ? { deletionTimestamp: new Date(deleting).toISOString() } : {}),
    },
    spec: { nodeName: 'n', containers: [{ name: 'c', image: 'x' }], ...spec },
  };
};

describe('drain planning', () => {
  it('orders tiers: non-critical, non-critical daemon, critical, critical daemon', () => {
    expect(drainTier(pod('a'))).toBe(0);
    expect(drainTier(pod('b', { daemon: true }))).toBe(1);
    expect(drainTier(pod('c', { priorityClassName: 'system-cluster-critical' }))).toBe(2);
    expect(drainTier(pod('d', { priorityClassName: 'system-node-critical', daemon: true }))).toBe(3);
    const pods = [
      pod('d', { priorityClassName: 'system-node-critical', daemon: true }),
      pod('c', { priorityClassName: 'system-cluster-critical' }),
      pod('b', { daemon: true }),
    ];
    const plan = planDrain(pods, NOW, undefined);
    expect(plan.tier).toBe(1);
    expect(plan.evict.map((p) => p.metadata.name)).toEqual(['b']);
    expect(plan.waiting).toHaveLength(3);
  });

  it('holds the next tier while a pod of an earlier tier is still terminating or protected (upstream #1478)', () => {
    const app = pod('app', { deleting: NOW + 100_000, terminationGracePeriodSeconds: 135 });
    const ds = pod('ds', { daemon: true });
    // (a) was asked to leave 35 s ago and runs its preStop hook: the DaemonSet pod waits
    let plan = planDrain([app, ds], NOW, undefined);
    expect(plan.tier).toBe(0);
    expect(plan.evict).toEqual([]);
    expect(plan.waiting.map((p) => p.metadata.name)).toEqual(['app', 'ds']);
    // a do-not-disrupt pod of tier 0 holds tier 1 as well
    const keep = pod('keep', { ann: { 'karpenter.sh/do-not-disrupt': 'true' } });
    plan = planDrain([keep, ds], NOW, undefined);
    expect([plan.tier, plan.evict.length]).toEqual([0, 0]);
    // (a) gone: tier 1 is evicted
    plan = planDrain([ds], NOW, undefined);
    expect([plan.tier, plan.evict.map((p) => p.metadata.name)]).toEqual([1, ['ds']]);
    // at the node's deadline every tier's pods are deleted at once, tier order no longer applies
    const crit = pod('crit', { daemon: true, priorityClassName: 'system-node-critical' });
    plan = planDrain([app, ds, crit], NOW + 200_000, NOW + 100_000);
    expect(plan.delete.map((d) => [d.pod.metadata.name, d.graceSeconds])).toEqual([
      ['ds', 0],
      ['crit', 0],
    ]);
  });

  it('keeps do-not-disrupt pods waiting, deletes them at deadline minus their grace period with the time left', () => {
    const keep = pod('keep', {
      ann: { 'karpenter.sh/do-not-disrupt': 'true' },
      terminationGracePeriodSeconds: 90,
    });
    expect(isEvictable(keep, NOW)).toBe(false);
    expect(isWaitingEviction(keep, NOW)).toBe(true);
    const deadline = NOW + 100_000;
    expect(podDeleteTime(keep, deadline)).toBe(NOW + 10_000);
    expect(planDrain([keep], NOW, deadline)).toMatchObject({ delete: [], evict: [], waiting: [keep] });
    expect(planDrain([keep], NOW + 10_000, deadline).delete).toEqual([{ pod: keep, graceSeconds: 90 }]);
    // default grace period 30 s; past the deadline: grace 0
    expect(planDrain([pod('p')], deadline + 5_000, deadline).delete[0]?.graceSeconds).toBe(0);
  });

  it('do-not-disrupt durations: a running one keeps the pod, an elapsed or invalid one lets it be evicted', () => {
    const started = (p: Pod, ms: number): Pod => ({
      ...p,
      status: { startTime: new Date(ms).toISOString() },
    });
    const running = started(
      pod('running', { ann: { 'karpenter.sh/do-not-disrupt': '1h' } }),
      NOW - 30 * 60_000,
    );
    const elapsed = started(
      pod('elapsed', { ann: { 'karpenter.sh/do-not-disrupt': '30m' } }),
      NOW - 31 * 60_000,
    );
    const invalid = started(pod('invalid', { ann: { 'karpenter.sh/do-not-disrupt': 'abc' } }), NOW - 60_000);
    expect(isEvictable(running, NOW)).toBe(false);
    expect(isEvictable(running, NOW + 30 * 60_000)).toBe(true); // 1h after its start
    expect(isEvictable(elapsed, NOW)).toBe(true);
    expect(isEvictable(invalid, NOW)).toBe(true);
    const plan = planDrain([running, elapsed, invalid], NOW, undefined);
    expect(plan.evict.map((p) => p.metadata.name)).toEqual(['elapsed', 'invalid']);
    expect(plan.waiting.map((p) => p.metadata.name)).toEqual(['running', 'elapsed', 'invalid']);
    expect(plan.doNotDisrupt.map((d) => [d.pod.metadata.name, d.state])).toEqual([
      ['running', { state: 'active', value: '1h', untilMs: NOW + 30 * 60_000 }],
      ['elapsed', { state: 'elapsed', value: '30m', untilMs: NOW - 60_000 }],
      [
        'invalid',
        {
          state: 'invalid',
          value: 'abc',
          message: 'failed to parse "abc" as a duration: time: invalid duration "abc"',
        },
      ],
    ]);
  });

  it('ignores terminal, static, disrupted-tolerating and stuck-terminating pods', () => {
    const pods = [
      { ...pod('done'), status: { phase: 'Succeeded' } } as Pod,
      pod('mirror', { ann: { 'kubernetes.io/config.mirror': 'x' } }),
      pod('tol', {
        tolerations: [{ key: 'karpenter.sh/disrupted', operator: 'Exists', effect: 'NoSchedule' }],
      }),
      pod('stuck', { deleting: NOW - 61_000 }),
    ];
    expect(planDrain(pods, NOW, undefined)).toMatchObject({ delete: [], evict: [], waiting: [] });
    // terminating (not stuck) pods are waited for but not evicted again
    const term = pod('term', { deleting: NOW - 10_000 });
    expect(planDrain([term], NOW, undefined)).toMatchObject({ evict: [], waiting: [term] });
  });
});
