import { describe, expect, it } from 'vitest';
import type { Node } from '../../apis/core.ts';
import type { ClusterChange, Nomination } from '../../state/cluster.ts';
import { pendingPod, testNodePool } from './testing.ts';
import { triggerKeyFor } from './trigger.ts';

const noNominations = { inFlightNominationFor: (): Nomination | undefined => undefined };
const nominated = {
  inFlightNominationFor: (): Nomination => ({
    target: { kind: 'nodeclaim', name: 'x' },
    until: 1,
    ttlSeconds: 20,
  }),
};

function node(
  taints: Node['spec'] extends infer S ? (S extends { taints?: infer T } ? T : never) : never,
): Node {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec: { taints } };
}

describe('triggerKeyFor', () => {
  it('provisionable, un-nominated pods trigger with their UID', () => {
    const pod = pendingPod('a', { uid: 'u-1' });
    expect(triggerKeyFor({ kind: 'Pod', type: 'add', object: pod }, noNominations)).toBe('u-1');
    expect(triggerKeyFor({ kind: 'Pod', type: 'update', object: pod, old: pod }, noNominations)).toBe('u-1');
    expect(triggerKeyFor({ kind: 'Pod', type: 'add', object: pod }, nominated)).toBeUndefined();
    expect(triggerKeyFor({ kind: 'Pod', type: 'delete', object: pod }, noNominations)).toBeUndefined();
    const fresh = pendingPod('b', { notYetUnschedulable: true });
    expect(triggerKeyFor({ kind: 'Pod', type: 'add', object: fresh }, noNominations)).toBeUndefined();
  });

  it('nodes becoming disrupted or deleting, deleted NodeClaims and NodePool changes trigger without a key', () => {
    const before = node([]);
    const disrupted = node([{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }]);
    const c = (x: Partial<ClusterChange>): ClusterChange => ({
      kind: 'Node',
      type: 'update',
      object: disrupted,
      ...x,
    });
    expect(triggerKeyFor(c({ old: before }), noNominations)).toBe('');
    expect(triggerKeyFor(c({ old: disrupted }), noNominations)).toBeUndefined(); // already disrupted
    expect(triggerKeyFor(c({ object: before, old: before }), noNominations)).toBeUndefined();
    expect(triggerKeyFor(c({ type: 'delete' }), noNominations)).toBeUndefined();
    const nc = { apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', metadata: { name: 'x' } };
    expect(triggerKeyFor({ kind: 'NodeClaim', type: 'delete', object: nc }, noNominations)).toBe('');
    expect(triggerKeyFor({ kind: 'NodeClaim', type: 'add', object: nc }, noNominations)).toBeUndefined();
    expect(
      triggerKeyFor({ kind: 'NodePool', type: 'update', object: testNodePool('p') }, noNominations),
    ).toBe('');
    expect(triggerKeyFor({ kind: 'DaemonSet', type: 'add', object: {} }, noNominations)).toBeUndefined();
  });
});
