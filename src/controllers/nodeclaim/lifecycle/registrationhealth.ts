/**
 * Records a NodeClaim's launch/registration outcome on its NodePool, after the `updateNodePoolRegistrationHealth`
 * functions of kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/{registration,liveness}.go`:
 * - only for a NodeClaim owned by its NodePool (an owner reference with the NodePool's UID);
 * - success: when recording it would leave the NodePool healthy and `NodeRegistrationHealthy` is not True yet, the
 *   condition becomes True;
 * - failure: when recording it would leave the NodePool unhealthy and the condition is not False yet, it becomes
 *   False with reason `RegistrationFailed` "Failed to register node" (the NodeClaim launched) or the `Launched`
 *   condition's reason and message (it never launched);
 * - the outcome is then recorded in the shared {@link NodePoolHealth}.
 * The status patch carries the resourceVersion (a conflict throws; the caller requeues).
 */
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { LabelNodePool } from '../../../apis/labels.ts';
import type { NodePoolHealth } from '../../../state/nodepoolhealth.ts';
import { NodePoolDependents } from '../../nodepool/controller.ts';
import { ConditionNodeRegistrationHealthy } from '../../nodepool/registrationhealth.ts';
import { ConditionSet } from '../../runtime/index.ts';
import { ConditionLaunched, type LifecycleContext } from './context.ts';

/**
 * Records `success` for `nodeClaim` on its NodePool (see the module doc). No-op without `health` (the context
 * has none), without a NodePool label, when the NodePool is gone or does not own the NodeClaim.
 */
export async function recordRegistrationHealth(
  ctx: LifecycleContext,
  health: NodePoolHealth | undefined,
  nodeClaim: NodeClaim,
  success: boolean,
): Promise<void> {
  const name = nodeClaim.metadata.labels?.[LabelNodePool];
  if (!health || !name) return;
  const nodePool = await ctx.client.tryGet('NodePool', name);
  const uid = nodePool?.metadata.uid;
  if (!nodePool || !uid) return;
  const owned = (nodeClaim.metadata.ownerReferences ?? []).some(
    (o) => o.kind === 'NodePool' && o.uid === uid,
  );
  if (!owned) return;
  // not a dependent: the NodePool's root Ready does not depend on it
  const conds = new ConditionSet(nodePool, NodePoolDependents, ctx.clock);
  const cur = conds.get(ConditionNodeRegistrationHealthy)?.status;
  let changed = false;
  if (success && health.dryRun(uid, true) === 'healthy' && cur !== 'True') {
    conds.setTrue(ConditionNodeRegistrationHealthy);
    changed = true;
  }
  if (!success && health.dryRun(uid, false) === 'unhealthy' && cur !== 'False') {
    const launched = nodeClaim.status?.conditions?.find((c) => c.type === ConditionLaunched);
    if (launched?.status === 'True')
      conds.setFalse(ConditionNodeRegistrationHealthy, 'RegistrationFailed', 'Failed to register node');
    else
      conds.setFalse(
        ConditionNodeRegistrationHealthy,
        launched?.reason || 'LaunchFailed',
        launched?.message || 'Failed to launch node',
      );
    changed = true;
  }
  if (changed) {
    await ctx.client.patchStatus(
      'NodePool',
      name,
      undefined,
      {
        metadata: { resourceVersion: nodePool.metadata.resourceVersion },
        status: { conditions: conds.list() },
      },
      { type: 'merge' },
    );
  }
  health.update(uid, success);
}
