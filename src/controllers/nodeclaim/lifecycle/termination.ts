/**
 * NodeClaim finalization (the `karpenter.sh/termination` finalizer), after kubernetes-sigs/karpenter
 * `pkg/controllers/nodeclaim/lifecycle/controller.go` `finalize`:
 * 1. with `spec.terminationGracePeriod`, annotate `karpenter.sh/nodeclaim-termination-timestamp` =
 *    deletionTimestamp + grace period (RFC 3339) once;
 * 2. if the NodeClaim was registered, delete its Nodes and wait until they are gone (the Node termination
 *    controller drains them and terminates the instance);
 * 3. with a provider ID, `CloudProvider.delete` until it reports NodeClaimNotFound (`InstanceTerminating=True`
 *    meanwhile, re-checked every 5 s);
 * 4. remove the finalizer; count `karpenter_nodeclaims_terminated_total` and the termination duration.
 */

import { parseDuration } from '../../../apis/duration.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  AnnotationNodeClaimTerminationTimestamp,
  FinalizerTermination,
  LabelTopologyZone,
} from '../../../apis/labels.ts';
import { isNodeClaimNotFoundError } from '../../../cloudprovider/types.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { capacityTypeOf, nodePoolOf, rfc3339, withoutFinalizer } from '../../runtime/index.ts';
import {
  ConditionInstanceTerminating,
  ConditionRegistered,
  type LifecycleContext,
  nodeClaimConditions,
  nodeClaimLogger,
  type StepResult,
  secondsSince,
} from './context.ts';

/** Seconds between checks while the instance terminates (upstream 5 s). */
export const InstanceTerminationRecheckSeconds = 5;

/** Finalizes a NodeClaim that has a deletionTimestamp. */
export class NodeClaimTermination {
  constructor(private readonly ctx: LifecycleContext) {}

  /** One finalization pass; see the module doc. Conflicts requeue; other API errors throw. */
  async reconcile(nodeClaim: NodeClaim): Promise<StepResult> {
    const name = nodeClaim.metadata.name as string;
    if (!(nodeClaim.metadata.finalizers ?? []).includes(FinalizerTermination)) return {};
    try {
      await this.annotateTerminationTime(nodeClaim);
    } catch (err) {
      if (isConflict(err)) return { requeue: true };
      if (isNotFound(err)) return {};
      throw err;
    }
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    if (conds.isTrue(ConditionRegistered)) {
      const nodes = await this.ctx.nodesFor(nodeClaim);
      for (const node of nodes) {
        if (node.metadata.deletionTimestamp) continue;
        await this.ctx.client.tryDelete('Node', node.metadata.name as string);
      }
      if (nodes.length > 0) return { requeueAfter: InstanceTerminationRecheckSeconds };
    }
    if (nodeClaim.status?.providerID) {
      let gone = false;
      try {
        await this.ctx.cloudProvider.delete(nodeClaim);
      } catch (err) {
        if (!isNodeClaimNotFoundError(err)) throw err;
        gone = true;
      }
      if (!gone) {
        if (!conds.isTrue(ConditionInstanceTerminating)) {
          conds.setTrue(ConditionInstanceTerminating);
          try {
            await this.ctx.client.patchStatus(
              'NodeClaim',
              name,
              undefined,
              {
                metadata: { resourceVersion: nodeClaim.metadata.resourceVersion },
                status: { conditions: conds.list() },
              },
              { type: 'merge' },
            );
          } catch (err) {
            if (isNotFound(err)) return {};
            if (isConflict(err)) return { requeue: true };
            throw err;
          }
        }
        return { requeueAfter: InstanceTerminationRecheckSeconds };
      }
      const terminating = conds.get(ConditionInstanceTerminating);
      if (terminating?.status === 'True') {
        this.ctx.metrics.instanceTerminationDuration.observe(
          { nodepool: nodePoolOf(nodeClaim) },
          Math.max(0, secondsSince(this.ctx.clock, terminating.lastTransitionTime)),
        );
      }
    }
    try {
      await this.ctx.client.patch(
        'NodeClaim',
        name,
        undefined,
        {
          metadata: {
            finalizers: withoutFinalizer(nodeClaim.metadata.finalizers, FinalizerTermination),
            resourceVersion: nodeClaim.metadata.resourceVersion,
          },
        },
        { type: 'merge' },
      );
    } catch (err) {
      if (isConflict(err)) return { requeue: true };
      if (isNotFound(err)) return {};
      throw err;
    }
    nodeClaimLogger(this.ctx, nodeClaim).info('deleted nodeclaim');
    const nodepool = nodePoolOf(nodeClaim);
    this.ctx.metrics.nodeClaimTerminationDuration.observe(
      { nodepool },
      Math.max(0, (Date.now() - Date.parse(nodeClaim.metadata.deletionTimestamp ?? '')) / 1000) || 0,
    );
    this.ctx.metrics.terminated.inc({
      nodepool,
      capacity_type: capacityTypeOf(nodeClaim),
      zone: nodeClaim.metadata.labels?.[LabelTopologyZone] ?? '',
    });
    return { deleted: true };
  }

  private async annotateTerminationTime(nodeClaim: NodeClaim): Promise<void> {
    const ann = nodeClaim.metadata.annotations ?? {};
    const tgp = nodeClaim.spec.terminationGracePeriod;
    const del = nodeClaim.metadata.deletionTimestamp;
    if (ann[AnnotationNodeClaimTerminationTimestamp] !== undefined || !tgp || !del) return;
    const at = rfc3339(Date.parse(del) + parseDuration(tgp) * 1000);
    const updated = await this.ctx.client.patch(
      'NodeClaim',
      nodeClaim.metadata.name as string,
      undefined,
      {
        metadata: {
          annotations: { [AnnotationNodeClaimTerminationTimestamp]: at },
          resourceVersion: nodeClaim.metadata.resourceVersion,
        },
      },
      { type: 'merge' },
    );
    nodeClaim.metadata.annotations = { ...ann, [AnnotationNodeClaimTerminationTimestamp]: at };
    if (updated.metadata.resourceVersion)
      nodeClaim.metadata.resourceVersion = updated.metadata.resourceVersion;
    void this.ctx.recorder.publish(
      nodeClaim,
      'Warning',
      'TerminationGracePeriodExpiring',
      `All pods will be deleted by ${at}`,
    );
  }
}
