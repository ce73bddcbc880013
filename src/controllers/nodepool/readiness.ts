/**
 * NodePool readiness (upstream `pkg/controllers/nodepool/readiness`): condition `NodeClassReady` from the
 * NodeClass named by `spec.template.spec.nodeClassRef`:
 * - kind not launched by this cloud provider → False `NodeClassNotSupported` (capenter addition; upstream ignores);
 * - missing → False `NodeClassNotFound`; being deleted → False `NodeClassTerminating`;
 * - its `Ready` Unknown/absent → False `NodeClassReadinessUnknown`; False → False with its reason and message;
 * - True → True.
 */
import type { KubeObject } from '../../apis/core.ts';
import type { Condition, NodePool } from '../../apis/karpenter.ts';
import type { NodeClassKind } from '../../cloudprovider/types.ts';

/** Condition type set by this step. */
export const ConditionNodeClassReady = 'NodeClassReady';

/** The `NodeClassReady` verdict. Pure. */
export function nodeClassReadiness(
  nodePool: NodePool,
  nodeClass: KubeObject | undefined,
  supported: readonly NodeClassKind[],
): { status: 'True' } | { status: 'False'; reason: string; message: string } {
  const ref = nodePool.spec.template.spec.nodeClassRef;
  if (!supported.some((k) => k.group === ref.group && k.kind === ref.kind)) {
    return {
      status: 'False',
      reason: 'NodeClassNotSupported',
      message: `nodeClassRef ${ref.group}/${ref.kind} is not launched by this cloud provider; use one of ${supported.map((k) => `${k.group}/${k.kind}`).join(', ')}`,
    };
  }
  if (!nodeClass)
    return {
      status: 'False',
      reason: 'NodeClassNotFound',
      message: `NodeClass not found on cluster (${ref.kind} "${ref.name}")`,
    };
  if (nodeClass.metadata?.deletionTimestamp)
    return { status: 'False', reason: 'NodeClassTerminating', message: 'NodeClass is Terminating' };
  const conds = (nodeClass.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  const ready = conds.find((c) => c.type === 'Ready');
  if (!ready || ready.status === 'Unknown')
    return { status: 'False', reason: 'NodeClassReadinessUnknown', message: 'Node Class Readiness Unknown' };
  if (ready.status === 'False')
    return {
      status: 'False',
      reason: ready.reason || 'NodeClassNotReady',
      message: ready.message || 'NodeClass is not Ready',
    };
  return { status: 'True' };
}
