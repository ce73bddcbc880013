/**
 * `node.termination`: finalizes Nodes carrying `karpenter.sh/termination` once they are being deleted, after
 * kubernetes-sigs/karpenter `pkg/controllers/node/termination/controller.go`:
 * 1. delete the Node's NodeClaims (so they never outlive the Node; the NodeClaim finalizer stamps
 *    `karpenter.sh/nodeclaim-termination-timestamp` = deletion + `terminationGracePeriod`);
 * 2. cordon: `spec.unschedulable=true` and the taint `karpenter.sh/disrupted:NoSchedule`;
 * 3. drain ({@link Drainer}, see `drain.ts`): evictions in four tiers through the Eviction API (429 → Warning
 *    `FailedDraining` on the Node, retried with backoff), `karpenter.sh/do-not-disrupt` pods wait while protected
 *    (with upstream's pod Events `DoNotDisruptUntil`, `DoNotDisruptGracePeriodElapsed`,
 *    `InvalidDoNotDisruptAnnotation`, deduplicated 2 min), pods past
 *    (deadline − their terminationGracePeriodSeconds) are deleted regardless; re-checked every second; NodeClaim
 *    condition `Drained`;
 * 4. wait until the node's VolumeAttachments are gone (unless the deadline passed); condition `VolumesDetached`;
 * 5. terminate the instance of each NodeClaim (`CloudProvider.delete`, then `get` until NodeClaimNotFound,
 *    `InstanceTerminating=True` meanwhile, re-checked every 5 s);
 * 6. remove the finalizer; count `karpenter_nodes_terminated_total` and `karpenter_nodes_termination_duration_seconds`
 *    (plus `karpenter_nodes_drained_total`, `karpenter_pods_drained_total`, `karpenter_pods_eviction_requests_total`). */
import type { KubeObject, Node, Taint } from '../../../apis/core.ts';
import { doNotDisruptEvent } from '../../../apis/donotdisrupt.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  AnnotationNodeClaimTerminationTimestamp,
  ConditionDisruptionReason,
  FinalizerTermination,
  LabelTopologyZone,
  TaintDisrupted,
} from '../../../apis/labels.ts';
import { isTerminal } from '../../../apis/pod.ts';
import { isNodeClaimNotFoundError } from '../../../cloudprovider/types.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { ConditionInstanceTerminating, NodeClaimDependents } from '../../nodeclaim/lifecycle/context.ts';
import { type LifecycleMetrics, lifecycleMetrics } from '../../nodeclaim/metrics.ts';
import {
  ConditionSet,
  type Controller,
  type ControllerDeps,
  defineController,
  type InformerController,
  type InformerSyncOptions,
  indexProviderID,
  matchTaint,
  nodeClaimsForNode,
  nodePoolOf,
  type ReconcileResult,
  rfc3339,
  watch,
  withoutFinalizer,
} from '../../runtime/index.ts';
import { DefaultPodTerminationGracePeriodSeconds, Drainer, isWaitingEviction, podID } from './drain.ts';
import { type DrainMetrics, drainMetrics } from './metrics.ts';

/** Seconds before the termination controller publishes the same Event again (upstream default dedupe, 2 min). */
export const EventDedupeSeconds = 120;

/** NodeClaim condition: the node's pods were drained (upstream `ConditionTypeDrained`). */
export const ConditionDrained = 'Drained';
/** NodeClaim condition: the node's volume attachments are gone (upstream `ConditionTypeVolumesDetached`). */
export const ConditionVolumesDetached = 'VolumesDetached';

interface VolumeAttachmentLike {
  spec?: { nodeName?: string; source?: { persistentVolumeName?: string } };
}

/**
 * The disruption reason of a Node's NodeClaims (condition `DisruptionReason`'s reason, e.g. `Underutilized`),
 * else `Forceful Termination` (upstream label value of `karpenter_pods_drained_total`).
 */
export function disruptionReasonOf(claims: readonly NodeClaim[]): string {
  for (const nc of claims) {
    const c = (nc.status?.conditions ?? []).find((x) => x.type === ConditionDisruptionReason);
    if (c?.status === 'True' && c.reason) return c.reason;
  }
  return 'Forceful Termination';
}

/** Options of {@link NodeTerminationController}. */
export interface NodeTerminationOptions extends ControllerDeps, InformerSyncOptions {
  concurrency?: number;
  /**
   * NodeClaims of a Node (default: the informer cache joined by provider ID). Injected by unit tests.
   */
  nodeClaimsFor?: (node: Node) => NodeClaim[] | Promise<NodeClaim[]>;
}

/**
 * The earliest termination deadline (epoch ms) of the claims' `karpenter.sh/nodeclaim-termination-timestamp`
 * annotations, or undefined when none has one.
 */
function terminationDeadline(claims: readonly NodeClaim[]): number | undefined {
  return claims
    .map((c) => Date.parse(c.metadata.annotations?.[AnnotationNodeClaimTerminationTimestamp] ?? ''))
    .filter(Number.isFinite)
    .sort((a, b) => a - b)[0];
}

/** The Node termination controller. */
export class NodeTerminationController implements Controller {
  readonly name = 'node.termination';
  private readonly kit: InformerController;
  private readonly metrics: LifecycleMetrics;
  private readonly drainMetrics: DrainMetrics;
  private readonly drainer: Drainer;
  private readonly drainedNodes = new Set<string>();
  private readonly lastEvents = new Map<string, number>();

  constructor(private readonly opts: NodeTerminationOptions) {
    this.metrics = lifecycleMetrics(opts.registry);
    this.drainMetrics = drainMetrics(opts.registry);
    this.drainer = new Drainer({ client: opts.client, now: () => opts.clock.now() });
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: opts.concurrency,
      watches: [
        watch('Node', {
          index: indexProviderID,
          events: ['add', 'update'],
          map: (n) =>
            n.metadata.deletionTimestamp && (n.metadata.finalizers ?? []).includes(FinalizerTermination)
              ? (n.metadata.name as string)
              : undefined,
        }),
        watch('NodeClaim', { index: indexProviderID }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  private async claimsFor(node: Node): Promise<NodeClaim[]> {
    if (this.opts.nodeClaimsFor) return this.opts.nodeClaimsFor(node);
    const nodeClaims = this.kit.cache('NodeClaim');
    return nodeClaims ? nodeClaimsForNode(nodeClaims, node) : [];
  }

  /**
   * One finalization pass for the Node `name` (exposed for tests), upstream's termination tiers in order: delete
   * its NodeClaims, taint and cordon it, drain it, wait for its volumes to detach, terminate the instances, remove
   * the finalizer. Each step either lets the pass go on or ends it with the result it returns.
   */
  async reconcile(name: string): Promise<ReconcileResult> {
    const node = await this.opts.client.tryGet('Node', name);
    if (!node?.metadata.deletionTimestamp || !(node.metadata.finalizers ?? []).includes(FinalizerTermination))
      return {};
    const claims = await this.claimsFor(node);
    for (const nc of claims) {
      if (!nc.metadata.deletionTimestamp)
        await this.opts.client.tryDelete('NodeClaim', nc.metadata.name as string);
    }
    const tainted = await this.taintDisrupted(node);
    if (tainted) return tainted;
    const deadline = terminationDeadline(claims);
    // upstream nodeTerminationTime: each pass of a Node whose NodeClaim has a termination timestamp warns on the Node
    const expiring = claims
      .map((c) => c.metadata.annotations?.[AnnotationNodeClaimTerminationTimestamp])
      .find((a) => a !== undefined);
    if (expiring !== undefined)
      this.publishDeduped(
        node,
        'Warning',
        'TerminationGracePeriodExpiring',
        `All pods will be deleted by ${expiring}`,
      );
    const drained = await this.awaitDrain(node, claims, deadline);
    if (drained) return drained;
    const detached = await this.awaitVolumeDetachment(node, claims, deadline);
    if (detached) return detached;
    for (const nc of claims) {
      if (!(await this.ensureTerminated(nc))) return { requeueAfter: 5 };
    }
    return this.removeFinalizer(node);
  }

  /** The logger of one Node's passes. */
  private logFor(name: string) {
    return this.opts.logger.child({ controller: this.name, node: name });
  }

  /**
   * Cordons the Node and adds the `karpenter.sh/disrupted:NoSchedule` taint (one optimistic-locked patch) unless
   * both are there. Returns `{requeue}` on a conflict, `{}` when the Node is gone, undefined to go on.
   */
  private async taintDisrupted(node: Node): Promise<ReconcileResult | undefined> {
    const taints: Taint[] = [...(node.spec?.taints ?? [])];
    if (taints.some((t) => matchTaint(t, TaintDisrupted)) && node.spec?.unschedulable === true)
      return undefined;
    if (!taints.some((t) => matchTaint(t, TaintDisrupted)))
      taints.push({ key: TaintDisrupted.key, effect: TaintDisrupted.effect });
    try {
      await this.opts.client.patch(
        'Node',
        node.metadata.name as string,
        undefined,
        {
          metadata: { resourceVersion: node.metadata.resourceVersion },
          spec: { unschedulable: true, taints },
        },
        { type: 'merge' },
      );
    } catch (err) {
      if (isConflict(err)) return { requeue: true };
      if (isNotFound(err)) return {};
      throw err;
    }
    return undefined;
  }

  /**
   * Drains the Node (tiered, PDB-safe; pods past `deadline`, epoch ms, are deleted), with the eviction metrics and
   * Events. While pods remain: a `FailedDraining` Event, `Drained=Unknown` on the claims, requeue after 1 s.
   * Once drained: `Drained=True` and the drained-nodes metric (once per Node); returns undefined to go on.
   */
  private async awaitDrain(
    node: Node,
    claims: NodeClaim[],
    deadline: number | undefined,
  ): Promise<ReconcileResult | undefined> {
    const name = node.metadata.name as string;
    const reason = disruptionReasonOf(claims);
    const drain = await this.drainer.drain(name, deadline, {
      onEvictionRequest: (code) => this.drainMetrics.evictionRequests.inc({ code: String(code) }),
      onEvicted: (pod) => {
        this.drainMetrics.podsDrained.inc({ reason });
        void this.opts.recorder.publish(pod, 'Normal', 'Evicted', `Evicted pod: ${reason}`);
      },
      onDeleted: (pod, grace) => {
        const tgp = pod.spec?.terminationGracePeriodSeconds ?? DefaultPodTerminationGracePeriodSeconds;
        void this.opts.recorder.publish(
          pod,
          'Normal',
          'Disrupted',
          `Deleting the pod to accommodate the terminationTime ${rfc3339(deadline ?? 0)} of the node. The pod was granted ${grace} seconds of grace-period of its ${tgp} terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.`,
        );
      },
      onBlocked: (pod, message, status) => {
        const why =
          status === 429
            ? `evicting pod ${podID(pod)} violates a PDB: ${message}`
            : `evicting pod ${podID(pod)}: ${message}`;
        this.publishDeduped(node, 'Warning', 'FailedDraining', `Failed to drain node, ${why}`);
      },
      onDoNotDisrupt: (pod, state) => {
        const e = doNotDisruptEvent(state);
        if (e) this.publishDeduped(pod, e.type, e.reason, e.message);
      },
    });
    if (drain.evicted.length + drain.deleted.length > 0)
      this.logFor(name).info(
        { evicted: drain.evicted, deleted: drain.deleted, tier: drain.tier },
        'draining node',
      );
    if (drain.remaining > 0) {
      this.publishDeduped(
        node,
        'Warning',
        'FailedDraining',
        `Failed to drain node, ${drain.remaining} pods are waiting to be evicted`,
      );
      await this.setClaimCondition(claims, ConditionDrained, 'Unknown', 'Draining', 'Draining');
      return { requeueAfter: 1 };
    }
    if (await this.setClaimCondition(claims, ConditionDrained, 'True', ConditionDrained, '')) {
      const uid = node.metadata.uid ?? name;
      if (!this.drainedNodes.has(uid)) {
        this.drainedNodes.add(uid);
        if (this.drainedNodes.size > 10_000) this.drainedNodes.clear();
        this.drainMetrics.nodesDrained.inc({ nodepool: nodePoolOf(node) });
      }
    }
    return undefined;
  }

  /**
   * Volume attachments of drained pods must be gone before the instance goes, unless `deadline` (epoch ms)
   * passed: while some remain, an `AwaitingVolumeDetachment` Event, `VolumesDetached=Unknown`, requeue after
   * 1 s. Then `VolumesDetached` is `True`, or `False` (TerminationGracePeriodElapsed) when some were left
   * behind; returns undefined to go on.
   */
  private async awaitVolumeDetachment(
    node: Node,
    claims: NodeClaim[],
    deadline: number | undefined,
  ): Promise<ReconcileResult | undefined> {
    const pastDeadline = deadline !== undefined && this.opts.clock.now() >= deadline;
    const attached = await this.blockingVolumeAttachments(node.metadata.name as string);
    if (attached.length > 0 && !pastDeadline) {
      this.publishDeduped(
        node,
        'Normal',
        'AwaitingVolumeDetachment',
        `Awaiting deletion of bound volumeattachments (${attached.join(', ')})`,
      );
      await this.setClaimCondition(
        claims,
        ConditionVolumesDetached,
        'Unknown',
        'AwaitingVolumeDetachment',
        'AwaitingVolumeDetachment',
      );
      return { requeueAfter: 1 };
    }
    if (attached.length > 0)
      await this.setClaimCondition(
        claims,
        ConditionVolumesDetached,
        'False',
        'TerminationGracePeriodElapsed',
        'TerminationGracePeriodElapsed',
      );
    else await this.setClaimCondition(claims, ConditionVolumesDetached, 'True', ConditionVolumesDetached, '');
    return undefined;
  }

  /**
   * Removes the termination finalizer (the Node goes) and records the terminated-nodes metrics. Returns
   * `{requeue}` on a conflict, `{}` otherwise.
   */
  private async removeFinalizer(node: Node): Promise<ReconcileResult> {
    const name = node.metadata.name as string;
    try {
      await this.opts.client.patch(
        'Node',
        name,
        undefined,
        {
          metadata: {
            finalizers: withoutFinalizer(node.metadata.finalizers, FinalizerTermination),
            resourceVersion: undefined,
          },
        },
        { type: 'merge' },
      );
    } catch (err) {
      if (isNotFound(err)) return {};
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
    const nodepool = nodePoolOf(node);
    this.metrics.nodesTerminated.inc({ nodepool, zone: node.metadata.labels?.[LabelTopologyZone] ?? '' });
    this.metrics.nodeTerminationDuration.observe(
      { nodepool },
      Math.max(0, (Date.now() - Date.parse(node.metadata.deletionTimestamp!)) / 1000) || 0,
    );
    this.metrics.nodeLifetimeDuration.observe(
      { nodepool },
      Math.max(0, (Date.now() - Date.parse(node.metadata.creationTimestamp ?? '')) / 1000) || 0,
    );
    this.logFor(name).info('deleted node');
    return {};
  }

  /**
   * Publishes an Event unless the same one (object, reason, message) was published less than
   * {@link EventDedupeSeconds} ago by this controller (upstream's recorder drops such repeats; ours would bump the
   * Event's count with an API write on every 1 s pass).
   */
  private publishDeduped(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const key = `${obj.metadata?.uid ?? obj.metadata?.name}|${reason}|${message}`;
    const now = this.opts.clock.now();
    const last = this.lastEvents.get(key);
    if (last !== undefined && now - last < EventDedupeSeconds * 1000) return;
    if (this.lastEvents.size > 10_000) this.lastEvents.clear();
    this.lastEvents.set(key, now);
    void this.opts.recorder.publish(obj, type, reason, message);
  }

  /**
   * Names of the VolumeAttachments (storage.k8s.io/v1, `spec.nodeName` = the node) still to wait for: those not
   * backing a pod that stays on the node until the end (pods the drain leaves alone, e.g. tolerating the disrupted
   * taint, static pods), as upstream `filterVolumeAttachments`.
   */
  private async blockingVolumeAttachments(nodeName: string): Promise<string[]> {
    let vas: KubeObject[];
    try {
      vas = (await this.opts.client.list('VolumeAttachment')).items.filter(
        (va) => (va as VolumeAttachmentLike).spec?.nodeName === nodeName,
      );
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    if (vas.length === 0) return [];
    const pods = (
      await this.opts.client.list('Pod', { fieldSelector: `spec.nodeName=${nodeName}` })
    ).items.filter(
      (p) => p.spec?.nodeName === nodeName && !isTerminal(p) && !isWaitingEviction(p, this.opts.clock.now()),
    );
    const keep = new Set<string>();
    for (const p of pods) {
      for (const v of p.spec?.volumes ?? []) {
        const claim = v.persistentVolumeClaim?.claimName;
        if (!claim) continue;
        const pvc = await this.opts.client.tryGet('PersistentVolumeClaim', claim, p.metadata.namespace);
        const pv = pvc?.spec?.volumeName;
        if (pv) keep.add(pv);
      }
    }
    return vas
      .filter((va) => !keep.has((va as VolumeAttachmentLike).spec?.source?.persistentVolumeName ?? ''))
      .map((va) => va.metadata?.name ?? '')
      .sort();
  }

  /**
   * Sets condition `type` on each NodeClaim when it differs (status + reason). Returns true when every NodeClaim
   * now has it (written or already there); conflicts leave it for the next pass.
   */
  private async setClaimCondition(
    claims: NodeClaim[],
    type: string,
    status: 'True' | 'False' | 'Unknown',
    reason: string,
    message: string,
  ): Promise<boolean> {
    let ok = true;
    for (const nc of claims) {
      const cur = (nc.status?.conditions ?? []).find((c) => c.type === type);
      if (cur?.status === status && cur.reason === reason) continue;
      try {
        const fresh = await this.opts.client.tryGet('NodeClaim', nc.metadata.name as string);
        if (!fresh) continue;
        const conds = new ConditionSet(fresh, NodeClaimDependents, this.opts.clock);
        if (status === 'True') conds.setTrue(type, reason, message);
        else if (status === 'False') conds.setFalse(type, reason, message);
        else conds.setUnknown(type, reason, message);
        const updated = await this.opts.client.patchStatus(
          'NodeClaim',
          nc.metadata.name as string,
          undefined,
          {
            metadata: { resourceVersion: fresh.metadata.resourceVersion },
            status: { conditions: conds.list() },
          },
          { type: 'merge' },
        );
        if (updated.status) nc.status = updated.status;
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
        ok = false;
      }
    }
    return ok;
  }

  /** True once the NodeClaim's instance is gone (upstream `termination.EnsureTerminated`). */
  private async ensureTerminated(nc: NodeClaim): Promise<boolean> {
    const conds = new ConditionSet(nc, NodeClaimDependents, this.opts.clock);
    if (!nc.status?.providerID) return true;
    if (!conds.isTrue(ConditionInstanceTerminating)) {
      try {
        await this.opts.cloudProvider.delete(nc);
      } catch (err) {
        if (isNodeClaimNotFoundError(err)) return true;
        throw err;
      }
      conds.setTrue(ConditionInstanceTerminating);
      try {
        await this.opts.client.patchStatus(
          'NodeClaim',
          nc.metadata.name as string,
          undefined,
          { status: { conditions: conds.list() } },
          { type: 'merge' },
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return false;
    }
    try {
      await this.opts.cloudProvider.get(nc.status.providerID);
      return false;
    } catch (err) {
      if (isNodeClaimNotFoundError(err)) return true;
      throw err;
    }
  }
}
