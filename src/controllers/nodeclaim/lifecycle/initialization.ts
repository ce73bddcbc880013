/**
 * Initialization step: a registered Node is initialized once it is Ready, carries none of the NodeClaim's startup
 * taints, none of the known ephemeral taints (CAPI's `node.cluster.x-k8s.io/uninitialized` among them), and every resource the NodeClaim requests shows non-zero allocatable. Then the Node gets the label
 * `karpenter.sh/initialized=true` and the NodeClaim `Initialized=True`.
 * Mirrors kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/initialization.go` (v1: not-yet states
 * are `Initialized=Unknown` with reasons NotLaunched, NodeNotFound, NodeNotReady, StartupTaintsExist,
 * KnownEphemeralTaintsExist, ResourceNotRegistered). Counts `karpenter_nodeclaims_initialized_total`.
 */
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { LabelNodeInitialized } from '../../../apis/labels.ts';
import { parseQuantity } from '../../../apis/quantity.ts';
import { isEphemeralTaint } from '../../../scheduling/predicates.ts';
import { formatTaint } from '../../../scheduling/taints.ts';
import { matchTaint, nodePoolOf } from '../../runtime/index.ts';
import {
  ConditionInitialized,
  ConditionLaunched,
  type LifecycleContext,
  nodeClaimConditions,
  nodeClaimLogger,
  type StepResult,
} from './context.ts';

/** Why a Node is not initialized yet, or `undefined` when it is. Pure. */
export function notInitializedReason(
  nodeClaim: NodeClaim,
  node: Node,
): { reason: string; message: string } | undefined {
  const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return { reason: 'NodeNotReady', message: 'Node status is NotReady' };
  const taints = node.spec?.taints ?? [];
  for (const st of nodeClaim.spec.startupTaints ?? []) {
    const t = taints.find((x) => matchTaint(x, st));
    if (t) return { reason: 'StartupTaintsExist', message: `StartupTaint "${formatTaint(t)}" still exists` };
  }
  // Upstream KnownEphemeralTaintsRemoved: the first of the Node's taints that is a known ephemeral one (Cluster
  // API's uninitialized taint among them, issue 29: its pods' nominations hold and no second NodeClaim is launched).
  const ephemeral = taints.find(isEphemeralTaint);
  if (ephemeral)
    return {
      reason: 'KnownEphemeralTaintsExist',
      message: `KnownEphemeralTaint "${formatTaint(ephemeral)}" still exists`,
    };
  for (const [name, q] of Object.entries(nodeClaim.spec.resources?.requests ?? {})) {
    if (isZero(q)) continue;
    if (isZero(node.status?.allocatable?.[name])) {
      return {
        reason: 'ResourceNotRegistered',
        message: `Resource "${name}" was requested but not registered`,
      };
    }
  }
  return undefined;
}

function isZero(q: string | number | undefined): boolean {
  if (q === undefined) return true;
  try {
    return parseQuantity(q) === 0;
  } catch {
    return true;
  }
}

/** The initialization step. */
export class Initialization {
  constructor(private readonly ctx: LifecycleContext) {}

  /** Marks the NodeClaim (and its Node) initialized when the Node is ready; mutates `nodeClaim`. */
  async reconcile(nodeClaim: NodeClaim): Promise<StepResult> {
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    if (conds.isTrue(ConditionInitialized)) return {};
    if (!conds.isTrue(ConditionLaunched)) {
      conds.setUnknown(ConditionInitialized, 'NotLaunched', 'Node not launched');
      return {};
    }
    const nodes = await this.ctx.nodesFor(nodeClaim);
    const node = nodes.length === 1 ? nodes[0] : undefined;
    if (!node) {
      conds.setUnknown(ConditionInitialized, 'NodeNotFound', 'Node not registered with cluster');
      return {};
    }
    const why = notInitializedReason(nodeClaim, node);
    if (why) {
      conds.setUnknown(ConditionInitialized, why.reason, why.message);
      return {};
    }
    if (node.metadata.labels?.[LabelNodeInitialized] !== 'true') {
      await this.ctx.client.patch(
        'Node',
        node.metadata.name as string,
        undefined,
        { metadata: { labels: { [LabelNodeInitialized]: 'true' } } },
        { type: 'merge' },
      );
    }
    conds.setTrue(ConditionInitialized);
    nodeClaimLogger(this.ctx, nodeClaim).info(
      { allocatable: node.status?.allocatable },
      'initialized nodeclaim',
    );
    this.ctx.metrics.initialized.inc({ nodepool: nodePoolOf(nodeClaim) });
    void this.ctx.recorder.publish(
      nodeClaim,
      'Normal',
      'Initialized',
      `Status condition transitioned, Type: Initialized, Status: True, Node: ${node.metadata.name}`,
    );
    return {};
  }
}
