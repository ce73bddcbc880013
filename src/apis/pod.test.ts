import { describe, expect, it } from 'vitest';
import type { Pod } from './core.ts';
import {
  isActive,
  isOwnedByDaemonSet,
  isOwnedByNode,
  isReschedulable,
  isTerminal,
  isTerminating,
} from './pod.ts';

function pod(patch: (p: Pod) => void = () => {}): Pod {
  const p: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'a', namespace: 'default' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x' }] },
    status: { phase: 'Running' },
  };
  patch(p);
  return p;
}

describe('pod predicates (upstream pkg/utils/pod)', () => {
  it('a running workload pod is active and moves with its node', () => {
    const p = pod();
    expect([isTerminal(p), isTerminating(p), isActive(p), isReschedulable(p)]).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });

  it('finished or terminating pods are not active and do not move', () => {
    for (const phase of ['Succeeded', 'Failed'] as const) {
      const p = pod((x) => {
        x.status = { phase };
      });
      expect([isTerminal(p), isActive(p), isReschedulable(p)]).toEqual([true, false, false]);
    }
    const t = pod((x) => {
      x.metadata.deletionTimestamp = '2025-01-01T00:00:00Z';
    });
    expect([isTerminating(t), isActive(t), isReschedulable(t)]).toEqual([true, false, false]);
  });

  it('DaemonSet pods and mirror pods (Node owner or kubelet annotation) do not move', () => {
    const ds = pod((x) => {
      x.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'u' }];
    });
    expect([isOwnedByDaemonSet(ds), isReschedulable(ds)]).toEqual([true, false]);
    const owned = pod((x) => {
      x.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u' }];
    });
    const annotated = pod((x) => {
      x.metadata.annotations = { 'kubernetes.io/config.mirror': 'abc' };
    });
    for (const m of [owned, annotated]) expect([isOwnedByNode(m), isReschedulable(m)]).toEqual([true, false]);
    expect(isOwnedByNode(pod())).toBe(false);
  });
});
