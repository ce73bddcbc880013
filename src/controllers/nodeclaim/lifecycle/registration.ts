/**
 * Registration step: finds the Node with the NodeClaim's provider ID and makes it Karpenter's: owner reference
 * Node → NodeClaim, the `karpenter.sh/termination` finalizer, the NodeClaim's labels, annotations, taints and
 * startup taints synced onto the Node (unless the Node is labelled `karpenter.sh/do-not-sync-taints=true`), the `karpenter.sh/unregistered:NoExecute` taint removed and the label
 * `karpenter.sh/registered=true` set; then `status.nodeName` and `Registered=True`.
 * Mirrors kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/registration.go`:
 * - runs only while `Registered` is Unknown; no Node → `Registered=Unknown` reason `NodeNotFound`;
 * - several Nodes → `Registered=False` reason `MultipleNodesFound`;
 * - a Node with neither the unregistered taint nor the registered label → `Registered=False` reason
 *   `UnregisteredTaintNotFound` and an error (the kubelet must register with the taint);
 * - the Node patch is optimistic (resourceVersion); a conflict requeues.
 * A registration is then recorded on the NodePool's registration health (`NodeRegistrationHealthy`, see
 * `registrationhealth.ts`), after `Registered=True` and `status.nodeName` are set, as upstream v1.14 orders it: a
 * conflict on the NodePool's status requeues with the NodeClaim registered (the controller persists the status
 * before returning), and the next reconcile does not record it again (upstream likewise). Counts `karpenter_nodeclaims_registered_total` and `karpenter_nodes_created_total`; Event `Registered`.
 */
import type { Node } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  FinalizerTermination,
  LabelNodeDoNotSyncTaints,
  LabelNodeRegistered,
  LabelTopologyZone,
  TaintUnregistered,
} from '../../../apis/labels.ts';
import { isConflict } from '../../../kube/errors.ts';
import { matchTaint, mergeTaints, nodePoolOf, withFinalizer } from '../../runtime/index.ts';
import {
  ConditionRegistered,
  type LifecycleContext,
  nodeClaimConditions,
  nodeClaimLogger,
  type StepResult,
} from './context.ts';
import { recordRegistrationHealth } from './registrationhealth.ts';

/** The registration step. */
export class Registration {
  constructor(private readonly ctx: LifecycleContext) {}

  /** Registers the NodeClaim's Node; mutates `nodeClaim` (conditions, `status.nodeName`). */
  async reconcile(nodeClaim: NodeClaim): Promise<StepResult> {
    const conds = nodeClaimConditions(nodeClaim, this.ctx.clock);
    if (conds.get(ConditionRegistered)?.status !== 'Unknown') return {};
    const nodes = await this.ctx.nodesFor(nodeClaim);
    if (nodes.length === 0) {
      conds.setUnknown(ConditionRegistered, 'NodeNotFound', 'Node not registered with cluster');
      return {};
    }
    if (nodes.length > 1) {
      conds.setFalse(ConditionRegistered, 'MultipleNodesFound', 'Invariant violated, matched multiple nodes');
      return {};
    }
    const node = nodes[0] as Node;
    const hasTaint = (node.spec?.taints ?? []).some((t) => matchTaint(t, TaintUnregistered));
    if (!hasTaint && node.metadata.labels?.[LabelNodeRegistered] === undefined) {
      conds.setFalse(
        ConditionRegistered,
        'UnregisteredTaintNotFound',
        `Invariant violated, ${TaintUnregistered.key} taint must be present on Karpenter-managed nodes`,
      );
      // upstream v1.14 registration.go UnregisteredTaintMissingEvent (deduped per NodeClaim by the recorder)
      void this.ctx.recorder.publish(
        nodeClaim,
        'Warning',
        'UnregisteredTaintMissing',
        `Missing ${TaintUnregistered.key} taint which prevents registration related race conditions on Karpenter-managed nodes`,
      );
      throw new Error(
        `Node "${node.metadata.name}" of NodeClaim "${nodeClaim.metadata.name}" registered without the ${TaintUnregistered.key}:${TaintUnregistered.effect} taint; configure the kubelet to register with it`,
      );
    }
    try {
      await syncNode(this.ctx, nodeClaim, node);
    } catch (err) {
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
    conds.setTrue(ConditionRegistered);
    nodeClaim.status ??= {};
    nodeClaim.status.nodeName = node.metadata.name as string;
    nodeClaimLogger(this.ctx, nodeClaim).info('registered nodeclaim');
    this.ctx.metrics.registered.inc({ nodepool: nodePoolOf(nodeClaim) });
    this.ctx.metrics.nodesCreated.inc({
      nodepool: nodePoolOf(nodeClaim),
      zone: nodeClaim.metadata.labels?.[LabelTopologyZone] ?? '',
    });
    void this.ctx.recorder.publish(
      nodeClaim,
      'Normal',
      'Registered',
      `Status condition transitioned, Type: Registered, Status: True, Node: ${node.metadata.name}`,
    );
    // after Registered=True and status.nodeName, as upstream: a conflicting NodePool status write requeues with the
    // NodeClaim registered (the controller persists it), never with a synced Node (unregistered taint gone) and
    // Registered still Unknown, which initialization could pass in the same reconcile
    try {
      await recordRegistrationHealth(this.ctx, this.ctx.nodePoolHealth, nodeClaim, true);
    } catch (err) {
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
    return {};
  }
}

/**
 * The Node as registration wants it (pure): finalizer, owner reference, labels/annotations from the NodeClaim,
 * NodeClaim taints and startup taints merged (not when the Node carries `karpenter.sh/do-not-sync-taints=true`:
 * the provider manages its taints), unregistered taint removed, `karpenter.sh/registered=true`.
 */
export function registeredNode(nodeClaim: NodeClaim, node: Node): Node {
  const out = structuredClone(node);
  const meta = out.metadata;
  // read on the Node's own labels, before the NodeClaim's are merged (upstream syncNode)
  const syncTaints = meta.labels?.[LabelNodeDoNotSyncTaints] !== 'true';
  if (!meta.deletionTimestamp) meta.finalizers = withFinalizer(meta.finalizers, FinalizerTermination);
  const owners = (meta.ownerReferences ?? []).filter(
    (o) => !(o.kind === 'NodeClaim' && o.apiVersion.startsWith('karpenter.sh/')),
  );
  owners.push({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    name: nodeClaim.metadata.name as string,
    uid: nodeClaim.metadata.uid as string,
    blockOwnerDeletion: true,
  });
  meta.ownerReferences = owners;
  meta.labels = {
    ...(meta.labels ?? {}),
    ...(nodeClaim.metadata.labels ?? {}),
    [LabelNodeRegistered]: 'true',
  };
  const annotations = { ...(meta.annotations ?? {}), ...(nodeClaim.metadata.annotations ?? {}) };
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  let taints = out.spec?.taints ?? [];
  if (syncTaints) {
    taints = mergeTaints(taints, nodeClaim.spec.taints);
    taints = mergeTaints(taints, nodeClaim.spec.startupTaints);
  }
  taints = taints.filter((t) => !matchTaint(t, TaintUnregistered));
  out.spec = { ...(out.spec ?? {}), taints };
  return out;
}

async function syncNode(ctx: LifecycleContext, nodeClaim: NodeClaim, node: Node): Promise<void> {
  const want = registeredNode(nodeClaim, node);
  if (
    JSON.stringify(want.metadata) === JSON.stringify(node.metadata) &&
    JSON.stringify(want.spec) === JSON.stringify(node.spec)
  )
    return;
  const m = want.metadata;
  await ctx.client.patch(
    'Node',
    node.metadata.name as string,
    undefined,
    {
      metadata: {
        labels: m.labels,
        annotations: m.annotations ?? null,
        finalizers: m.finalizers ?? null,
        ownerReferences: m.ownerReferences,
        resourceVersion: node.metadata.resourceVersion,
      },
      spec: { taints: want.spec?.taints ?? [] },
    },
    { type: 'merge' },
  );
}
