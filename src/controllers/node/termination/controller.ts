/**
 * `node.termination`: finalizes Nodes carrying `karpenter.sh/termination` once they are being deleted, after
 * kubernetes-sigs/karpenter `pkg/controllers/node/termination/controller.go` (basic part):
 * 1. delete the Node's NodeClaims (so they never outlive the Node);
 * 2. cordon: `spec.unschedulable=true` and the taint `karpenter.sh/disrupted:NoSchedule`;
 * 3. drain ({@link drainNode}); pods are deleted outright after the NodeClaim's
 *    `karpenter.sh/nodeclaim-termination-timestamp`; re-checked every second until drained;
 * 4. terminate the instance of each NodeClaim (`CloudProvider.delete`, then `get` until NodeClaimNotFound,
 *    `InstanceTerminating=True` meanwhile, re-checked every 5 s);
 * 5. remove the finalizer; count `karpenter_nodes_terminated_total` and `karpenter_nodes_termination_duration_seconds`.
 */
import type { Node, Taint } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import {
  AnnotationNodeClaimTerminationTimestamp,
  FinalizerTermination,
  TaintDisrupted,
} from '../../../apis/labels.ts';
import { isNodeClaimNotFoundError } from '../../../cloudprovider/types.ts';
import type { Cache } from '../../../kube/cache.ts';
import { isConflict, isNotFound } from '../../../kube/errors.ts';
import { SharedInformers } from '../../../kube/informer.ts';
import { ConditionSet } from '../../nodeclaim/conditions.ts';
import { ConditionInstanceTerminating, NodeClaimDependents } from '../../nodeclaim/lifecycle/context.ts';
import type { ControllerDeps } from '../../nodeclaim/lifecycle/controller.ts';
import { type LifecycleMetrics, lifecycleMetrics } from '../../nodeclaim/metrics.ts';
import {
  indexProviderID,
  matchTaint,
  nodeClaimsForNode,
  nodePoolOf,
  withoutFinalizer,
} from '../../nodeclaim/util.ts';
import { type Controller, QueueController, type ReconcileResult } from '../../runtime.ts';
import { drainNode } from './drain.ts';

/** Options of {@link NodeTerminationController}. */
export interface NodeTerminationOptions extends ControllerDeps {
  concurrency?: number;
  syncTimeoutMs?: number;
  /**
   * NodeClaims of a Node (default: the informer cache joined by provider ID). Injected by unit tests.
   */
  nodeClaimsFor?: (node: Node) => NodeClaim[] | Promise<NodeClaim[]>;
}

/** The Node termination controller. */
export class NodeTerminationController implements Controller {
  readonly name = 'node.termination';
  readonly queue: QueueController;
  private readonly informers: SharedInformers;
  private readonly ownInformers: boolean;
  private nodeClaims: Cache<NodeClaim> | undefined;
  private readonly metrics: LifecycleMetrics;

  constructor(private readonly opts: NodeTerminationOptions) {
    this.ownInformers = opts.informers === undefined;
    this.informers = opts.informers ?? new SharedInformers(opts.client, { clock: opts.clock });
    this.metrics = lifecycleMetrics(opts.registry);
    this.queue = new QueueController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      concurrency: opts.concurrency ?? 10,
      reconcile: (key) => this.reconcile(key),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const nodeInf = this.informers.informerFor('Node');
    const ncInf = this.informers.informerFor('NodeClaim');
    indexProviderID(ncInf.cache);
    indexProviderID(nodeInf.cache);
    this.nodeClaims = ncInf.cache;
    const maybe = (n: Node): void => {
      if (n.metadata.deletionTimestamp && (n.metadata.finalizers ?? []).includes(FinalizerTermination))
        this.queue.enqueue(n.metadata.name as string);
    };
    const off = nodeInf.on({ add: maybe, update: (_, n) => maybe(n) });
    this.informers.start();
    try {
      await this.informers.waitForSync(this.opts.syncTimeoutMs ?? 60_000);
      await this.queue.start(signal);
    } catch (err) {
      this.opts.logger.error({ controller: this.name, err: String(err) }, 'informers did not sync');
    } finally {
      off();
      if (this.ownInformers) await this.informers.stop();
    }
  }

  private async claimsFor(node: Node): Promise<NodeClaim[]> {
    if (this.opts.nodeClaimsFor) return this.opts.nodeClaimsFor(node);
    return this.nodeClaims ? nodeClaimsForNode(this.nodeClaims, node) : [];
  }

  /** One finalization pass for the Node `name` (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const log = this.opts.logger.child({ controller: this.name, node: name });
    const node = await this.opts.client.tryGet('Node', name);
    if (!node?.metadata.deletionTimestamp || !(node.metadata.finalizers ?? []).includes(FinalizerTermination))
      return {};
    const claims = await this.claimsFor(node);
    for (const nc of claims) {
      if (!nc.metadata.deletionTimestamp)
        await this.opts.client.tryDelete('NodeClaim', nc.metadata.name as string);
    }
    // cordon + disrupted taint
    const taints: Taint[] = [...(node.spec?.taints ?? [])];
    if (!taints.some((t) => matchTaint(t, TaintDisrupted)) || node.spec?.unschedulable !== true) {
      if (!taints.some((t) => matchTaint(t, TaintDisrupted)))
        taints.push({ key: TaintDisrupted.key, effect: TaintDisrupted.effect });
      try {
        await this.opts.client.patch(
          'Node',
          name,
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
    }
    // drain
    const deadline = claims
      .map((c) => Date.parse(c.metadata.annotations?.[AnnotationNodeClaimTerminationTimestamp] ?? ''))
      .filter(Number.isFinite)
      .sort((a, b) => a - b)[0];
    const force = deadline !== undefined && this.opts.clock.now() >= deadline;
    const drain = await drainNode(this.opts.client, name, force);
    if (drain.evicted.length + drain.deleted.length > 0)
      log.info({ evicted: drain.evicted, deleted: drain.deleted }, 'draining node');
    if (drain.remaining > 0) {
      if (drain.blocked.length > 0) {
        void this.opts.recorder.publish(
          node,
          'Warning',
          'FailedDraining',
          `Failed to drain node, ${drain.blocked.length} pods are waiting to be evicted`,
        );
      }
      return { requeueAfter: 1 };
    }
    // instance termination
    for (const nc of claims) {
      if (!(await this.ensureTerminated(nc))) return { requeueAfter: 5 };
    }
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
    this.metrics.nodesTerminated.inc({ nodepool });
    this.metrics.nodeTerminationDuration.observe(
      { nodepool },
      Math.max(0, (Date.now() - Date.parse(node.metadata.deletionTimestamp)) / 1000) || 0,
    );
    log.info('deleted node');
    return {};
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
