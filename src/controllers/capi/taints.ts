/**
 * CAPI taint fixes on capenter's own nodes in the workload cluster (`capi.taints`, keyed by Node name):
 *
 * 1. `node.cluster.x-k8s.io/uninitialized`: CAPI's MachinePool controller removes it for nodes whose provider ID is
 *    in the MachinePool's `providerIDList`, but Karpenter re-applies startup taints at registration: if CAPI
 *    stripped it first it comes back and CAPI may not look again (kubernetes-sigs/cluster-api#9858). So once a node
 *    of a Karpenter NodePool is otherwise initialized (Ready, registered, no other startup or ephemeral taint) and
 *    still carries the taint `uninitializedTimeoutSeconds` (default 120) after turning Ready, capenter removes it.
 * 2. `karpenter.sh/unregistered`: CAPI may write a stale taint list back onto a registered node
 *    (kubernetes-sigs/cluster-api#11401), re-adding the registration taint; a node labelled
 *    `karpenter.sh/registered=true` never legitimately carries it, so capenter removes it again and counts it
 *    (`capenter_capi_unregistered_taint_removed_total`).
 * Taint writes are optimistic (resourceVersion precondition); a conflict requeues.
 */

import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { TaintUninitializedKey } from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { LabelNodePool, LabelNodeRegistered, TaintUnregistered } from '../../apis/labels.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { SharedInformers } from '../../kube/informer.ts';
import { notInitializedReason } from '../nodeclaim/lifecycle/initialization.ts';
import {
  type Controller,
  defineController,
  type InformerController,
  indexProviderID,
  nodeClaimsForNode,
  type ReconcileResult,
  watch,
} from '../runtime/index.ts';

/** Default seconds a node may keep the uninitialized taint after turning Ready before capenter removes it. */
export const DefaultUninitializedTimeoutSeconds = 120;

/** Options of {@link CAPITaintController}. */
export interface CAPITaintOptions {
  /** Workload-cluster client. */
  client: KubeClient;
  /** Workload-cluster informers (shared with the operator when given). */
  informers?: SharedInformers;
  clock: Clock;
  logger: Logger;
  registry?: Registry;
  /** Seconds before capenter removes the uninitialized taint itself (default 120). */
  uninitializedTimeoutSeconds?: number;
}

/** What to do with one node. Pure. */
export type TaintAction =
  | { kind: 'none' }
  | { kind: 'wait'; seconds: number }
  | { kind: 'remove'; taints: Taint[]; removed: Array<'uninitialized' | 'unregistered'> };

/**
 * Decides the taint fix for `node` (see the module comment) at `nowMs`. `nodeClaim` is the node's NodeClaim (by
 * provider ID), needed to judge "otherwise initialized". Pure.
 */
export function taintAction(
  node: Node,
  nodeClaim: NodeClaim | undefined,
  nowMs: number,
  timeoutSeconds: number,
): TaintAction {
  if (!node.metadata.labels?.[LabelNodePool] || node.metadata.deletionTimestamp) return { kind: 'none' };
  const taints = node.spec?.taints ?? [];
  const registered = node.metadata.labels?.[LabelNodeRegistered] === 'true';
  const removed: Array<'uninitialized' | 'unregistered'> = [];
  let keep = taints;
  if (registered && taints.some((t) => t.key === TaintUnregistered.key)) {
    keep = keep.filter((t) => t.key !== TaintUnregistered.key);
    removed.push('unregistered');
  }
  const uninit = keep.find((t) => t.key === TaintUninitializedKey);
  let wait: number | undefined;
  if (uninit && registered && nodeClaim) {
    const without: Node = { ...node, spec: { ...node.spec, taints: keep.filter((t) => t !== uninit) } };
    const claim: NodeClaim = {
      ...nodeClaim,
      spec: {
        ...nodeClaim.spec,
        startupTaints: (nodeClaim.spec.startupTaints ?? []).filter((t) => t.key !== TaintUninitializedKey),
      },
    };
    if (!notInitializedReason(claim, without)) {
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      const since = Date.parse(ready?.lastTransitionTime ?? node.metadata.creationTimestamp ?? '');
      const elapsed = Number.isNaN(since) ? timeoutSeconds : (nowMs - since) / 1000;
      if (elapsed >= timeoutSeconds) {
        keep = keep.filter((t) => t !== uninit);
        removed.push('uninitialized');
      } else wait = Math.max(0.1, timeoutSeconds - elapsed);
    }
  }
  if (removed.length > 0) return { kind: 'remove', taints: keep, removed };
  if (wait !== undefined) return { kind: 'wait', seconds: wait };
  return { kind: 'none' };
}

/** The CAPI taint controller; see the module comment. */
export class CAPITaintController implements Controller {
  readonly name = 'capi.taints';
  private readonly kit: InformerController;
  private readonly removedUninitialized: Counter<'nodepool'>;
  private readonly removedUnregistered: Counter<'nodepool'>;

  constructor(private readonly opts: CAPITaintOptions) {
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: 5,
      watches: [
        watch('Node', {
          events: ['add', 'update'],
          map: (n) => (n.metadata.labels?.[LabelNodePool] ? (n.metadata.name as string) : undefined),
        }),
        watch('NodeClaim', {
          index: indexProviderID,
          events: ['update'],
          map: (nc) => nc.status?.nodeName || undefined,
        }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
    const counter = (name: string, help: string): Counter<'nodepool'> => {
      const existing = opts.registry?.getSingleMetric(name);
      if (existing) return existing as Counter<'nodepool'>;
      return new Counter({
        name,
        help,
        labelNames: ['nodepool'],
        registers: opts.registry ? [opts.registry] : [],
      });
    };
    this.removedUninitialized = counter(
      'capenter_capi_uninitialized_taint_removed_total',
      'node.cluster.x-k8s.io/uninitialized taints capenter removed because no CAPI controller did in time',
    );
    this.removedUnregistered = counter(
      'capenter_capi_unregistered_taint_removed_total',
      'karpenter.sh/unregistered taints put back on registered nodes (cluster-api#11401) and removed again',
    );
  }

  /** Totals so far: `{uninitialized, unregistered}` (all NodePools). */
  async counts(): Promise<{ uninitialized: number; unregistered: number }> {
    const sum = async (c: Counter<'nodepool'>) => (await c.get()).values.reduce((s, v) => s + v.value, 0);
    return {
      uninitialized: await sum(this.removedUninitialized),
      unregistered: await sum(this.removedUnregistered),
    };
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Reconciles one Node (exposed for tests). */
  async reconcile(name: string): Promise<ReconcileResult> {
    const node = this.kit.informers.informerFor('Node').cache.getByName(name) as Node | undefined;
    if (!node) return {};
    const nc = nodeClaimsForNode(this.kit.informers.informerFor('NodeClaim').cache, node)[0];
    const action = taintAction(
      node,
      nc,
      this.opts.clock.now(),
      this.opts.uninitializedTimeoutSeconds ?? DefaultUninitializedTimeoutSeconds,
    );
    if (action.kind === 'none') return {};
    if (action.kind === 'wait') return { requeueAfter: action.seconds };
    try {
      await this.opts.client.patch(
        'Node',
        name,
        undefined,
        { metadata: { resourceVersion: node.metadata.resourceVersion }, spec: { taints: action.taints } },
        { type: 'merge' },
      );
    } catch (err) {
      if (isConflict(err)) return { requeue: true } as ReconcileResult;
      if (isNotFound(err)) return {};
      throw err;
    }
    const pool = node.metadata.labels?.[LabelNodePool] ?? '';
    for (const r of action.removed) {
      (r === 'uninitialized' ? this.removedUninitialized : this.removedUnregistered).inc({ nodepool: pool });
      this.opts.logger.info({ node: name, nodepool: pool, taint: r }, 'removed CAPI-related taint');
    }
    return {};
  }
}
