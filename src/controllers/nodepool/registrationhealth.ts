/**
 * The NodePool step of `NodeRegistrationHealthy`, after kubernetes-sigs/karpenter
 * `pkg/controllers/nodepool/registrationhealth/controller.go` (v1.14): the condition says whether the NodePool's
 * recent NodeClaims launch and register (the lifecycle steps set it True/False, see
 * `nodeclaim/lifecycle/registrationhealth.ts`). This step:
 * - after a restart (empty buffer) seeds the shared {@link NodePoolHealth} from the condition (True → healthy,
 *   False → unhealthy);
 * - resets the condition to Unknown and empties the buffer when it is absent, when the NodePool's generation
 *   differs from the condition's `observedGeneration`, or when the NodeClass's generation differs from
 *   `status.nodeClassObservedGeneration` (a spec change may have fixed, or broken, the launches);
 * - records the NodeClass's generation in `status.nodeClassObservedGeneration`.
 * NodePools whose NodeClass is missing or of a kind this provider does not launch are left alone.
 */
import type { KubeObject } from '../../apis/core.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import type { NodePoolHealth } from '../../state/nodepoolhealth.ts';
import { type ConditionSet, ReasonAwaitingReconciliation } from '../runtime/conditions.ts';

/** NodePool condition type: the NodePool's recent NodeClaims launch and register (upstream v1.14). */
export const ConditionNodeRegistrationHealthy = 'NodeRegistrationHealthy';

/**
 * Applies the step to `nodePool` in memory (its conditions through `conds`) and to `health`; see the module doc.
 * `nodeClass` undefined: nothing is done.
 */
export function reconcileRegistrationHealth(
  nodePool: NodePool,
  conds: ConditionSet,
  nodeClass: KubeObject | undefined,
  health: NodePoolHealth | undefined,
): void {
  const uid = nodePool.metadata.uid;
  if (!nodeClass || !uid) return;
  const cond = conds.get(ConditionNodeRegistrationHealthy);
  if (health && health.status(uid) === 'unknown') {
    if (cond?.status === 'True') health.setStatus(uid, 'healthy');
    if (cond?.status === 'False') health.setStatus(uid, 'unhealthy');
  }
  const classGen = nodeClass.metadata?.generation ?? 0;
  nodePool.status ??= {};
  if (
    !cond ||
    nodePool.status.nodeClassObservedGeneration !== classGen ||
    nodePool.metadata.generation !== cond.observedGeneration
  ) {
    conds.setUnknown(
      ConditionNodeRegistrationHealthy,
      ReasonAwaitingReconciliation,
      'object is awaiting reconciliation',
    );
    health?.setStatus(uid, 'unknown');
  }
  nodePool.status.nodeClassObservedGeneration = classGen;
}
