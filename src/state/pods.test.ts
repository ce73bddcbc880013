import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import { pendingPod } from '../controllers/provisioning/testing.ts';
import { isProvisionable, podKey, provisionableReason } from './pods.ts';

function withPatch(p: Pod, patch: (p: Pod) => void): Pod {
  const c = structuredClone(p);
  patch(c);
  return c;
}

describe('provisionableReason (upstream IsProvisionable + active + default scheduler)', () => {
  const base = pendingPod('web-1');

  it('accepts a pending pod the scheduler marked Unschedulable', () => {
    expect(provisionableReason(base)).toBeUndefined();
    expect(isProvisionable(base)).toBe(true);
    expect(podKey(base)).toBe('default/web-1');
  });

  it.each([
    [
      'bound',
      (p: Pod) => {
        p.spec.nodeName = 'n1';
      },
      'bound to node "n1"',
    ],
    [
      'not yet looked at',
      (p: Pod) => {
        p.status = { phase: 'Pending' };
      },
      'not marked Unschedulable',
    ],
    [
      'PodScheduled=False for another reason',
      (p: Pod) => {
        p.status!.conditions![0]!.reason = 'SchedulingGated';
      },
      'not marked Unschedulable',
    ],
    [
      'preempting',
      (p: Pod) => {
        p.status!.nominatedNodeName = 'n2';
      },
      'preempting pods on node "n2"',
    ],
    [
      'DaemonSet-owned',
      (p: Pod) => {
        p.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: 'u' }];
      },
      'owned by a DaemonSet',
    ],
    [
      'mirror pod',
      (p: Pod) => {
        p.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'u' }];
      },
      'mirror pod',
    ],
    [
      'terminal',
      (p: Pod) => {
        p.status!.phase = 'Failed';
      },
      'terminal (phase Failed)',
    ],
    [
      'being deleted',
      (p: Pod) => {
        p.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
      },
      'being deleted',
    ],
    [
      'other scheduler',
      (p: Pod) => {
        p.spec.schedulerName = 'volcano';
      },
      'uses scheduler "volcano"',
    ],
  ])('rejects a %s pod', (_name, patch, reason) => {
    const p = withPatch(base, patch);
    expect(provisionableReason(p)).toContain(reason);
    expect(isProvisionable(p)).toBe(false);
  });

  it('accepts an explicit default-scheduler', () => {
    expect(
      isProvisionable(
        withPatch(base, (p) => {
          p.spec.schedulerName = 'default-scheduler';
        }),
      ),
    ).toBe(true);
  });
});
