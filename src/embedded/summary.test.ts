/**
 * `capenter start`'s pending reasons: the newest FailedScheduling Event of capenter per pod, else of any component,
 * else the PodScheduled condition, read from an index built once per summary.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import type { KubeEvent } from '../kube/types.ts';
import { failedSchedulingIndex, pendingReason } from './summary.ts';

const ev = (
  pod: string,
  component: string,
  at: string,
  message: string,
  reason = 'FailedScheduling',
): KubeEvent =>
  ({
    metadata: { name: `${pod}.${at}`, namespace: 'default' },
    involvedObject: { kind: 'Pod', name: pod, namespace: 'default' },
    reason,
    message,
    source: { component },
    lastTimestamp: at,
  }) as KubeEvent;
const pod = (name: string, condition?: string): Pod =>
  ({
    metadata: { name, namespace: 'default' },
    spec: { containers: [] },
    status: condition
      ? { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', message: condition }] }
      : { phase: 'Pending' },
  }) as unknown as Pod;

describe('pendingReason', () => {
  const index = failedSchedulingIndex([
    ev('a', 'karpenter', '2026-12-01T10:00:02Z', 'incompatible with nodepool "default"'),
    ev('a', 'default-scheduler', '2026-12-01T10:00:05Z', '0/3 nodes are available'),
    ev('a', 'karpenter', '2026-12-01T10:00:01Z', 'older karpenter message'),
    ev('b', 'default-scheduler', '2026-12-01T10:00:01Z', 'first scheduler message'),
    ev('b', 'default-scheduler', '2026-12-01T10:00:01Z', 'same time, later in the list'),
    ev('c', 'karpenter', '2026-12-01T10:00:09Z', 'nominated', 'Nominated'),
  ]);
  it("capenter's newest FailedScheduling wins over a newer one of another component", () => {
    expect(pendingReason(pod('a'), index)).toBe('incompatible with nodepool "default"');
  });
  it('else the newest of any component (of equal times, the later in the list)', () => {
    expect(pendingReason(pod('b'), index)).toBe('same time, later in the list');
  });
  it('else the PodScheduled=False message (other reasons are not FailedScheduling), else empty', () => {
    expect(pendingReason(pod('c', 'waiting for a node'), index)).toBe('waiting for a node');
    expect(pendingReason(pod('d'), index)).toBe('');
  });
});
