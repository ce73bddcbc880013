/**
 * Liveness step: deletes NodeClaims that do not make progress, so provisioning can try again elsewhere.
 * Mirrors kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/liveness.go`:
 * - `Launched=False` for longer than {@link LaunchTimeoutSeconds} (5 min) → delete, reason `launch_timeout`;
 * - not `Registered=True` within {@link RegistrationTimeoutSeconds} (15 min) of the `Registered` condition's
 *   last transition → delete, reason `registration_timeout`.
 * Before deleting, the failure is recorded on the NodePool's registration health (`NodeRegistrationHealthy`, see
 * `registrationhealth.ts`; a conflict re-runs the step). Each deletion counts `karpenter_nodeclaims_disrupted_total{reason}` and records a Warning Event
 * (`LaunchTimeout` / `RegistrationTimeout`). Before the deadline the step asks to be re-run at the deadline.
 */
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { capacityTypeOf, nodePoolOf } from '../../runtime/index.ts';
import {
  ConditionLaunched,
  ConditionRegistered,
  type LifecycleContext,
  nodeClaimConditions,
  nodeClaimLogger,
  type StepResult,
  secondsSince,
} from './context.ts';
import { recordRegistrationHealth } from './registrationhealth.ts';

/** Registration TTL in seconds (upstream `registrationTimeout`, 15 min). */
export const RegistrationTimeoutSeconds = 15 * 60;
/** Launch TTL in seconds (upstream `LaunchTimeout`, 5 min). */
export const LaunchTimeoutSeconds = 5 * 60;

/** The liveness step. */
export class Liveness {
  constructor(
    private readonly ctx: LifecycleContext,
    private readonly opts: { registrationTimeoutSeconds?: number; launchTimeoutSeconds?: number } = {},
  ) {}

  /** Deletes `nodeClaim` when a timeout passed; otherwise returns when to look again. */
  async reconcile(nodeClaim: NodeClaim): Promise<StepResult> {
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    const registered = conds.get(ConditionRegistered);
    if (registered?.status === 'True') return {};
    const launched = conds.get(ConditionLaunched);
    if (launched?.status === 'False') {
      const ttl = this.opts.launchTimeoutSeconds ?? LaunchTimeoutSeconds;
      const left = ttl - secondsSince(this.ctx.clock, launched.lastTransitionTime);
      if (left > 0) return { requeueAfter: left };
      if (!(await this.recordFailure(nodeClaim))) return { requeue: true };
      await this.delete(
        nodeClaim,
        'launch_timeout',
        'LaunchTimeout',
        `NodeClaim did not launch within ${ttl}s: ${launched.message ?? ''}`,
      );
      return { deleted: true };
    }
    if (!registered) return { requeue: true };
    const ttl = this.opts.registrationTimeoutSeconds ?? RegistrationTimeoutSeconds;
    const left = ttl - secondsSince(this.ctx.clock, registered.lastTransitionTime);
    if (left > 0) return { requeueAfter: left };
    if (!(await this.recordFailure(nodeClaim))) return { requeue: true };
    await this.delete(
      nodeClaim,
      'registration_timeout',
      'RegistrationTimeout',
      `Node did not register within ${ttl}s; deleting the NodeClaim`,
    );
    return { deleted: true };
  }

  /** Records the timeout on the NodePool's registration health; false on a conflict (re-run the step). */
  private async recordFailure(nodeClaim: NodeClaim): Promise<boolean> {
    try {
      await recordRegistrationHealth(this.ctx, this.ctx.nodePoolHealth, nodeClaim, false);
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  private async delete(
    nodeClaim: NodeClaim,
    reason: string,
    eventReason: string,
    message: string,
  ): Promise<void> {
    await this.ctx.client.tryDelete('NodeClaim', nodeClaim.metadata.name as string);
    nodeClaimLogger(this.ctx, nodeClaim).info({ reason }, 'terminating due to timeout');
    this.ctx.metrics.disrupted.inc({
      reason,
      nodepool: nodePoolOf(nodeClaim),
      capacity_type: capacityTypeOf(nodeClaim),
    });
    void this.ctx.recorder.publish(nodeClaim, 'Warning', eventReason, message);
  }
}
