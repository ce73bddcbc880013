/**
 * `node.health`: node auto-repair behind the `NodeRepair` feature gate, after kubernetes-sigs/karpenter v1.14.1
 * `pkg/controllers/node/health/controller.go` (+ `events.go`, `metrics.go`):
 * 1. a Node with exactly one NodeClaim (by provider ID) whose condition matches one of
 *    `CloudProvider.repairPolicies()` (type and status) is unhealthy; among several matches the one whose
 *    toleration ends first counts;
 * 2. before `lastTransitionTime + tolerationDurationSeconds` nothing happens and the Node is re-checked then;
 * 3. afterwards, unless more than 20 % (rounded up, as a PDB percentage) of the nodes of the NodeClaim's NodePool
 *    (of the cluster, for a NodeClaim without NodePool) match a repair policy — a node counts as soon as its
 *    condition matches, whatever its age — the NodeClaim gets `karpenter.sh/nodeclaim-termination-timestamp` = now
 *    (kept when already in the past) and is deleted: the termination controller then deletes its pods at once,
 *    bypassing PDBs and `karpenter.sh/do-not-disrupt` (drain deadline = now), and terminates the instance.
 *    Disruption budgets are not consulted.
 * 4. when too many are unhealthy: Warning `NodeRepairBlocked` on the Node, "more than 20% nodes are unhealthy in the
 *    nodepool" (upstream publishes it three times, deduplicated for 15 min by the Node's, the NodeClaim's and the
 *    NodePool's UID, all about the Node; so is this), re-checked after 5 min;
 * 5. after the delete: `karpenter_nodeclaims_disrupted_total{reason="unhealthy",nodepool,capacity_type}` and
 *    `karpenter_nodeclaims_unhealthy_disrupted_total{condition,nodepool,capacity_type,image_id}` (labels from the
 *    Node; `condition` in snake case, e.g. `ready`; `image_id` the NodeClaim's `status.imageID`).
 */
import type { KubeObject, Node, NodeCondition } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  AnnotationNodeClaimTerminationTimestamp,
  LabelCapacityType,
  LabelNodePool,
} from '../../../apis/labels.ts';
import type { RepairPolicy } from '../../../cloudprovider/types.ts';
import { isNotFound } from '../../../kube/errors.ts';
import { lifecycleMetrics } from '../../nodeclaim/metrics.ts';
import {
  type Controller,
  type ControllerDeps,
  defineController,
  type InformerController,
  type InformerSyncOptions,
  indexProviderID,
  nodeClaimsForNode,
  type ReconcileResult,
  rfc3339,
  watch,
} from '../../runtime/index.ts';
import { unhealthyDisruptedTotal } from './metrics.ts';

/** Percentage of a NodePool's (or the cluster's) nodes that may be unhealthy before repair stops (upstream 20%). */
export const AllowedUnhealthyPercent = 20;
/** Seconds before a blocked repair is re-checked (upstream 5 min). */
export const BlockedRequeueSeconds = 300;
/** Seconds a `NodeRepairBlocked` Event is not published again for the same dedupe value (upstream 15 min). */
export const BlockedEventDedupeSeconds = 900;
/** Event reason of a blocked repair (upstream `events.NodeRepairBlocked`). */
export const ReasonNodeRepairBlocked = 'NodeRepairBlocked';

/** The repair policy a Node matches, with the matching condition and when its toleration ends. */
export interface UnhealthyMatch {
  condition: NodeCondition;
  policy: RepairPolicy;
  /** `lastTransitionTime + tolerationDurationSeconds`, ms since the epoch (a missing time counts as the epoch). */
  terminationAt: number;
}

/**
 * The policy of `policies` that `node` matches (condition of that type with that status) whose toleration ends
 * first, or undefined when it matches none (upstream `findUnhealthyConditions`). A condition without a parsable
 * `lastTransitionTime` counts from the epoch (upstream's zero time: its toleration is over). Pure.
 */
export function findUnhealthyCondition(
  node: Node,
  policies: readonly RepairPolicy[],
): UnhealthyMatch | undefined {
  let best: UnhealthyMatch | undefined;
  for (const policy of policies) {
    const condition = (node.status?.conditions ?? []).find((c) => c.type === policy.conditionType);
    if (!condition || condition.status !== policy.conditionStatus) continue;
    const since = Date.parse(condition.lastTransitionTime ?? '');
    const terminationAt = (Number.isFinite(since) ? since : 0) + policy.tolerationDurationSeconds * 1000;
    if (!best || terminationAt < best.terminationAt) best = { condition, policy, terminationAt };
  }
  return best;
}

/** True when `node` has a condition matching one of `policies` (however recent; upstream `areNodesHealthy`). Pure. */
export function matchesRepairPolicy(node: Node, policies: readonly RepairPolicy[]): boolean {
  return policies.some((p) =>
    (node.status?.conditions ?? []).some((c) => c.type === p.conditionType && c.status === p.conditionStatus),
  );
}

/**
 * How many of `total` nodes may be unhealthy: {@link AllowedUnhealthyPercent} of them rounded up (upstream
 * `intstr.GetScaledValueFromIntOrPercent(20%, total, true)`): 10 → 2, 3 → 1, 0 → 0. Pure.
 */
export function allowedUnhealthy(total: number): number {
  return Math.ceil((AllowedUnhealthyPercent * total) / 100);
}

/** Upstream `pretty.ToSnakeCase`: `AcceleratedHardwareReady` → `accelerated_hardware_ready`. Pure. */
export function toSnakeCase(s: string): string {
  return s
    .replace(/(.)([A-Z][a-z]+)/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

/** Options of {@link NodeHealthController}. */
export interface NodeHealthOptions extends ControllerDeps, InformerSyncOptions {
  /** Parallel reconciles (default 10, upstream's minimum). */
  concurrency?: number;
}

const conditionsChanged = (old: Node, cur: Node): boolean => {
  const a = old.status?.conditions ?? [];
  const b = cur.status?.conditions ?? [];
  if (a.length !== b.length) return true;
  return a.some((o) => {
    const n = b.find((c) => c.type === o.type);
    return !n || n.status !== o.status || n.lastTransitionTime !== o.lastTransitionTime;
  });
};

/** The node health (auto-repair) controller; see the module comment. */
export class NodeHealthController implements Controller {
  readonly name = 'node.health';
  private readonly kit: InformerController;
  private readonly lastEvents = new Map<string, number>();

  constructor(private readonly opts: NodeHealthOptions) {
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: opts.concurrency ?? 10,
      watches: [
        // upstream's update predicate: only a condition appearing, vanishing or changing status or transition time
        watch('Node', {
          index: indexProviderID,
          events: ['add', 'update'],
          map: (n, e) =>
            e.type === 'update' && !conditionsChanged(e.old, n) ? undefined : (n.metadata.name as string),
        }),
        watch('NodeClaim', { index: indexProviderID }),
        watch('NodePool'),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /**
   * One health check of Node `name` (exposed for tests); see the module comment. Returns `{requeueAfter}` (seconds)
   * until the toleration ends or while repair is blocked, `{}` otherwise.
   */
  async reconcile(name: string): Promise<ReconcileResult> {
    const node = this.kit.cache('Node')?.get(name) ?? (await this.opts.client.tryGet('Node', name));
    if (!node) return {};
    const claims = await this.claimsFor(node);
    // upstream ignores NodeClaimNotFound and DuplicateNodeClaim errors
    if (claims.length !== 1) return {};
    const nodeClaim = claims[0] as NodeClaim;
    const match = findUnhealthyCondition(node, this.opts.cloudProvider.repairPolicies());
    if (!match) return {};
    if (!Number.isFinite(Date.parse(match.condition.lastTransitionTime ?? '')))
      this.log(name).warn(
        { condition: match.condition.type },
        'node condition matching a repair policy has no valid status.conditions[].lastTransitionTime (the kubelet or node agent must set it to when the status began); counting its toleration as over, as upstream',
      );
    const now = this.opts.clock.now();
    if (now < match.terminationAt) return { requeueAfter: (match.terminationAt - now) / 1000 };
    const poolName = nodeClaim.metadata.labels?.[LabelNodePool];
    if (!(await this.healthyEnough(poolName))) {
      await this.publishBlocked(node, nodeClaim, poolName);
      return { requeueAfter: BlockedRequeueSeconds };
    }
    if (!(await this.annotateTerminationTimestamp(nodeClaim))) return {};
    return this.deleteNodeClaim(node, nodeClaim, match);
  }

  private log(node: string) {
    return this.opts.logger.child({ controller: this.name, node });
  }

  private async claimsFor(node: Node): Promise<NodeClaim[]> {
    const cache = this.kit.cache('NodeClaim');
    if (cache) return nodeClaimsForNode(cache, node);
    const id = node.spec?.providerID;
    if (!id) return [];
    return (await this.opts.client.list('NodeClaim')).items.filter((c) => c.status?.providerID === id);
  }

  /**
   * True when at most {@link allowedUnhealthy} of the nodes labelled with NodePool `poolName` (every node when
   * undefined) match a repair policy.
   */
  private async healthyEnough(poolName: string | undefined): Promise<boolean> {
    const inScope = (n: Node): boolean =>
      poolName === undefined || n.metadata.labels?.[LabelNodePool] === poolName;
    const cache = this.kit.cache('Node');
    const nodes = cache
      ? cache.list().filter(inScope)
      : (
          await this.opts.client.list(
            'Node',
            poolName === undefined ? {} : { labelSelector: { [LabelNodePool]: poolName } },
          )
        ).items;
    const policies = this.opts.cloudProvider.repairPolicies();
    const unhealthy = nodes.filter((n) => matchesRepairPolicy(n, policies)).length;
    return unhealthy <= allowedUnhealthy(nodes.length);
  }

  /**
   * Publishes upstream's `NodeRepairBlocked` Events about `node`: in a NodePool (which must exist, as upstream)
   * one per dedupe value (Node, NodeClaim, NodePool UID), else one per Node and NodeClaim UID with upstream's
   * cluster message.
   */
  private async publishBlocked(
    node: Node,
    nodeClaim: NodeClaim,
    poolName: string | undefined,
  ): Promise<void> {
    const dedupe: KubeObject[] = [node, nodeClaim];
    let message = `more then ${AllowedUnhealthyPercent}% nodes are unhealthy in the cluster`;
    if (poolName !== undefined) {
      const pool =
        this.kit.cache('NodePool')?.get(poolName) ?? (await this.opts.client.tryGet('NodePool', poolName));
      if (!pool) return;
      dedupe.push(pool);
      message = `more than ${AllowedUnhealthyPercent}% nodes are unhealthy in the nodepool`;
    }
    const now = this.opts.clock.now();
    for (const o of dedupe) {
      const key = `${ReasonNodeRepairBlocked}-${o.metadata?.uid ?? o.metadata?.name}`;
      const last = this.lastEvents.get(key);
      if (last !== undefined && now - last < BlockedEventDedupeSeconds * 1000) continue;
      if (this.lastEvents.size > 10_000) this.lastEvents.clear();
      this.lastEvents.set(key, now);
      void this.opts.recorder.publish(node, 'Warning', ReasonNodeRepairBlocked, message);
    }
  }

  /**
   * Sets `karpenter.sh/nodeclaim-termination-timestamp` to now unless it already holds a time in the past
   * (upstream `annotateTerminationGracePeriod`: a later NodePool `terminationGracePeriod` deadline is overridden).
   * False when the NodeClaim is gone.
   */
  private async annotateTerminationTimestamp(nodeClaim: NodeClaim): Promise<boolean> {
    const now = this.opts.clock.now();
    const current = Date.parse(
      nodeClaim.metadata.annotations?.[AnnotationNodeClaimTerminationTimestamp] ?? '',
    );
    if (Number.isFinite(current) && current < now) return true;
    const at = rfc3339(now);
    try {
      await this.opts.client.patch(
        'NodeClaim',
        nodeClaim.metadata.name as string,
        undefined,
        { metadata: { annotations: { [AnnotationNodeClaimTerminationTimestamp]: at } } },
        { type: 'merge' },
      );
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    this.log(nodeClaim.metadata.name as string).info(
      { nodeclaim: nodeClaim.metadata.name, [AnnotationNodeClaimTerminationTimestamp]: at },
      'annotated nodeclaim',
    );
    return true;
  }

  /** Deletes the NodeClaim (unless already being deleted) and counts the disruption. */
  private async deleteNodeClaim(
    node: Node,
    nodeClaim: NodeClaim,
    match: UnhealthyMatch,
  ): Promise<ReconcileResult> {
    if (nodeClaim.metadata.deletionTimestamp) return {};
    if (!(await this.opts.client.tryDelete('NodeClaim', nodeClaim.metadata.name as string))) return {};
    this.log(node.metadata.name as string).info(
      { nodeclaim: nodeClaim.metadata.name, condition: match.condition.type },
      'deleting unhealthy node',
    );
    const nodepool = node.metadata.labels?.[LabelNodePool] ?? '';
    const capacity_type = node.metadata.labels?.[LabelCapacityType] ?? '';
    lifecycleMetrics(this.opts.registry).disrupted.inc({ reason: 'unhealthy', nodepool, capacity_type });
    unhealthyDisruptedTotal(this.opts.registry).inc({
      condition: toSnakeCase(match.condition.type),
      nodepool,
      capacity_type,
      image_id: nodeClaim.status?.imageID ?? '',
    });
    return {};
  }
}
