/**
 * `nodeclaim.podevents`: records the last time a pod was bound to or left a node in its NodeClaim's
 * `status.lastPodEventTime`, after kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/podevents/controller.go`.
 * The disruption core counts `consolidateAfter` from it (the `Consolidatable` condition). Events: a pod bound to
 * the node (added bound, or `spec.nodeName` set), a bound pod becoming terminal or terminating, a bound pod deleted.
 * Writes are deduplicated: not again within {@link PodEventDedupeSeconds} of the last recorded time.
 */
import type { Node, Pod } from '../../../apis/core.ts';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { isActive } from '../../../apis/pod.ts';
import type { Cache } from '../../../kube/cache.ts';
import { isNotFound } from '../../../kube/errors.ts';
import { SharedInformers } from '../../../kube/informer.ts';
import {
  type Controller,
  type ControllerDeps,
  type InformerSyncOptions,
  indexProviderID,
  nodeClaimsForNode,
  QueueController,
  type ReconcileResult,
  rfc3339,
  runQueueWithInformers,
} from '../../runtime/index.ts';

/** Seconds within which a new pod event does not rewrite `lastPodEventTime` (upstream `dedupeTimeout`, 5 s). */
export const PodEventDedupeSeconds = 5;

/** Options of {@link PodEventsController}. */
export interface PodEventsOptions
  extends Omit<ControllerDeps, 'cloudProvider' | 'recorder' | 'registry'>,
    InformerSyncOptions {}

const gone = (p: Pod): boolean => !isActive(p);

/** The node a pod event concerns, or undefined when the change is not a pod event (see the module doc). Pure. */
export function podEventNode(old: Pod | undefined, pod: Pod | undefined): string | undefined {
  if (!pod) return old?.spec?.nodeName || undefined;
  const node = pod.spec?.nodeName;
  if (!node) return undefined;
  if (!old) return node;
  if (old.spec?.nodeName !== node) return node;
  if (gone(pod) !== gone(old)) return node;
  return undefined;
}

/** The pod-events controller. */
export class PodEventsController implements Controller {
  readonly name = 'nodeclaim.podevents';
  readonly queue: QueueController;
  private readonly informers: SharedInformers;
  private readonly ownInformers: boolean;
  private nodes: Cache<Node> | undefined;
  private nodeClaims: Cache<NodeClaim> | undefined;

  constructor(private readonly opts: PodEventsOptions) {
    this.ownInformers = opts.informers === undefined;
    this.informers = opts.informers ?? new SharedInformers(opts.client, { clock: opts.clock });
    this.queue = new QueueController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      concurrency: 5,
      reconcile: (key) => this.reconcile(key),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const podInf = this.informers.informerFor('Pod');
    const nodeInf = this.informers.informerFor('Node');
    const ncInf = this.informers.informerFor('NodeClaim');
    indexProviderID(ncInf.cache);
    this.nodes = nodeInf.cache;
    this.nodeClaims = ncInf.cache;
    let synced = false;
    const on = (n: string | undefined): void => {
      if (n && synced) this.queue.enqueue(n);
    };
    const off = podInf.on({
      add: (p) => on(podEventNode(undefined, p)),
      update: (o, p) => on(podEventNode(o, p)),
      delete: (p) => on(podEventNode(p, undefined)),
    });
    await runQueueWithInformers({
      name: this.name,
      logger: this.opts.logger,
      informers: this.informers,
      ownInformers: this.ownInformers,
      queue: this.queue,
      signal,
      offs: [off],
      syncTimeoutMs: this.opts.syncTimeoutMs,
      onSynced: () => {
        synced = true; // the initial list is not a pod event
      },
    });
  }

  /** Records a pod event now on the NodeClaims of Node `nodeName` (exposed for tests). */
  async reconcile(nodeName: string): Promise<ReconcileResult> {
    const node = this.nodes?.get(nodeName) ?? (await this.opts.client.tryGet('Node', nodeName));
    if (!node) return {};
    const claims = this.nodeClaims
      ? nodeClaimsForNode(this.nodeClaims, node)
      : (await this.opts.client.list('NodeClaim')).items.filter(
          (c) => c.status?.providerID === node.spec?.providerID,
        );
    const now = this.opts.clock.now();
    for (const nc of claims) {
      if (nc.metadata.deletionTimestamp) continue;
      const last = Date.parse(nc.status?.lastPodEventTime ?? '');
      if (Number.isFinite(last) && now - last < PodEventDedupeSeconds * 1000) continue;
      try {
        await this.opts.client.patchStatus(
          'NodeClaim',
          nc.metadata.name as string,
          undefined,
          { status: { lastPodEventTime: rfc3339(now) } },
          { type: 'merge' },
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return {};
  }
}
