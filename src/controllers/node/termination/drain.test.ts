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
