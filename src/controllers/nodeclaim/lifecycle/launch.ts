/**
 * Launch step: calls `CloudProvider.create` once per NodeClaim and copies the launch onto it (provider ID,
 * capacity, allocatable, image ID, resolved labels and annotations), then `Launched=True`.
 * Mirrors kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/launch.go`:
 * - the launched result is cached by NodeClaim UID for an hour, so a failed status patch (conflict) or a stale
 *   read never launches a second instance;
 * - InsufficientCapacityError → Warning Event `InsufficientCapacityError`, the NodeClaim is deleted (pods go back
 *   to pending and provisioning re-plans; the provider's ICE cache skips that offering), counted in
 *   `karpenter_nodeclaims_disrupted_total{reason="insufficient_capacity"}`;
 * - NodeClassNotReadyError → Warning Event `NodeClassNotReady`, `Launched=False` reason `NodeClassNotReady`, requeue;
 * - CreateError → `Launched=False` with its `conditionReason`/`conditionMessage`, error (backoff);
 * - anything else → `Launched=False` reason `LaunchFailed` (message truncated to 300 chars), error (backoff).
 */
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  isCreateError,
  isInsufficientCapacityError,
  isNodeClassNotReadyError,
} from '../../../cloudprovider/types.ts';
import { capacityTypeOf, errorMessage, nodePoolOf, truncateMessage } from '../../runtime/index.ts';
import {
  ConditionLaunched,
  type LifecycleContext,
  nodeClaimConditions,
  nodeClaimLogger,
  type StepResult,
} from './context.ts';

/** How long a launch result is remembered (upstream: go-cache with a 1 h TTL). */
export const LaunchCacheTTLSeconds = 3600;

/** The launch step. One instance per controller (it owns the launch cache). */
export class Launch {
  private readonly launched = new Map<string, { at: number; nodeClaim: NodeClaim }>();

  constructor(private readonly ctx: LifecycleContext) {}

  /** Launches `nodeClaim` unless `Launched=True`; mutates it in place. Throws for CreateError and unknown errors. */
  async reconcile(nodeClaim: NodeClaim): Promise<StepResult> {
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    if (conds.isTrue(ConditionLaunched)) return {};
    this.expire();
    const uid = nodeClaim.metadata.uid ?? nodeClaim.metadata.name ?? '';
    let created = this.launched.get(uid)?.nodeClaim;
    if (!created) {
      try {
        created = await this.ctx.cloudProvider.create(structuredClone(nodeClaim));
      } catch (err) {
        return this.onError(nodeClaim, err);
      }
      this.launched.set(uid, { at: this.ctx.clock.now(), nodeClaim: created });
      const labels = created.metadata.labels ?? {};
      nodeClaimLogger(this.ctx, nodeClaim).info(
        {
          'provider-id': created.status?.providerID,
          'instance-type': labels['node.kubernetes.io/instance-type'],
          zone: labels['topology.kubernetes.io/zone'],
          'capacity-type': labels['karpenter.sh/capacity-type'],
          allocatable: created.status?.allocatable,
        },
        'launched nodeclaim',
      );
    }
    populateNodeClaimDetails(nodeClaim, created);
    conds.setTrue(ConditionLaunched);
    this.ctx.metrics.launched.inc({ nodepool: nodePoolOf(nodeClaim) });
    const labels = nodeClaim.metadata.labels ?? {};
    void this.ctx.recorder.publish(
      nodeClaim,
      'Normal',
      'Launched',
      `Launched ${labels['node.kubernetes.io/instance-type'] ?? 'instance'} in ${labels['topology.kubernetes.io/zone'] ?? '?'} (${labels['karpenter.sh/capacity-type'] ?? '?'}) as ${nodeClaim.status?.providerID ?? '?'}`,
    );
    return {};
  }

  /** Forgets the cached launch of a NodeClaim UID (after termination). */
  forget(uid: string): void {
    this.launched.delete(uid);
  }

  private expire(): void {
    const now = this.ctx.clock.now();
    for (const [k, v] of this.launched)
      if (now - v.at > LaunchCacheTTLSeconds * 1000) this.launched.delete(k);
  }

  private async onError(nodeClaim: NodeClaim, err: unknown): Promise<StepResult> {
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    const name = nodeClaim.metadata.name ?? '';
    const msg = truncateMessage(errorMessage(err));
    if (isInsufficientCapacityError(err)) {
      void this.ctx.recorder.publish(
        nodeClaim,
        'Warning',
        'InsufficientCapacityError',
        `NodeClaim ${name} event: ${msg}`,
      );
      nodeClaimLogger(this.ctx, nodeClaim).error({ error: msg }, 'failed launching nodeclaim');
      await this.ctx.client.tryDelete('NodeClaim', name);
      this.ctx.metrics.disrupted.inc({
        reason: 'insufficient_capacity',
        nodepool: nodePoolOf(nodeClaim),
        capacity_type: capacityTypeOf(nodeClaim),
      });
      return { deleted: true };
    }
    if (isNodeClassNotReadyError(err)) {
      void this.ctx.recorder.publish(
        nodeClaim,
        'Warning',
        'NodeClassNotReady',
        `NodeClaim ${name} event: ${msg}`,
      );
      conds.setFalse(ConditionLaunched, 'NodeClassNotReady', msg);
      return { requeue: true };
    }
    if (isCreateError(err)) {
      conds.setFalse(ConditionLaunched, err.conditionReason, truncateMessage(err.conditionMessage));
    } else {
      conds.setFalse(ConditionLaunched, 'LaunchFailed', msg);
    }
    throw new Error(`launching nodeclaim ${name}, ${msg}`, { cause: err });
  }
}

/**
 * Copies a launch result onto the NodeClaim (kubernetes-sigs/karpenter v1.14.1
 * `pkg/controllers/nodeclaim/lifecycle/launch.go` `PopulateNodeClaimDetails`). Labels: the provider-resolved
 * labels of `created`, overridden by the NodeClaim's own labels — requirement values are not copied here (upstream
 * dropped that step in #2586): custom single-value requirements were already resolved into the NodeClaim's labels
 * at creation (`provisioning/nodeclaim.ts` `resolveCustomLabelsFromRequirements`), and well-known labels
 * (instance type, zone, capacity type…) come from the launch, so `node.kubernetes.io/instance-type In [m5.large]`
 * never hides the `m5.xlarge` the provider launched. Annotations: the NodeClaim's, overridden by the launch's.
 * Status: `providerID`, `imageID`, `capacity`, `allocatable` from the launch when set.
 */
export function populateNodeClaimDetails(nodeClaim: NodeClaim, created: NodeClaim): void {
  nodeClaim.metadata.labels = {
    ...(created.metadata.labels ?? {}),
    ...(nodeClaim.metadata.labels ?? {}),
  };
  const annotations = { ...(nodeClaim.metadata.annotations ?? {}), ...(created.metadata.annotations ?? {}) };
  if (Object.keys(annotations).length > 0) nodeClaim.metadata.annotations = annotations;
  nodeClaim.status ??= {};
  const st = nodeClaim.status;
  const cs = created.status ?? {};
  if (cs.providerID !== undefined) st.providerID = cs.providerID;
  if (cs.imageID !== undefined) st.imageID = cs.imageID;
  if (cs.capacity !== undefined) st.capacity = cs.capacity;
  if (cs.allocatable !== undefined) st.allocatable = cs.allocatable;
}
