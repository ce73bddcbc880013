/**
 * `nodeclaim.podevents`: records the last time a pod was bound to or left a node in its NodeClaim's
 * `status.lastPodEventTime`, after kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/podevents/controller.go`.
 * The disruption core counts `consolidateAfter` from it (the `Consolidatable` condition). Events: a pod bound to
 * the node (added bound, or `spec.nodeName` set), a bound pod becoming terminal or terminating, a bound pod deleted.
 * Writes are deduplicated: not again within {@link PodEventDedupeSeconds} of the last recorded time.
 */
import type { Pod } from '../../../apis/core.ts';
import { isActive } from '../../../apis/pod.ts';
import { isNotFound } from '../../../kube/errors.ts';
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
  private readonly kit: InformerController;

  constructor(private readonly opts: PodEventsOptions) {
    this.kit = defineController({
      name: this.name,
      deps: opts,
      concurrency: 5,
      watches: [
        watch('Pod', {
          afterSync: true, // the initial list is not a pod event
          map: (p, e) =>
            e.type === 'delete'
              ? podEventNode(p, undefined)
              : podEventNode(e.type === 'update' ? e.old : undefined, p),
        }),
        watch('Node'),
        watch('NodeClaim', { index: indexProviderID }),
      ],
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Runs until `signal` aborts (see {@link defineController}); never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Records a pod event now on the NodeClaims of Node `nodeName` (exposed for tests). */
  async reconcile(nodeName: string): Promise<ReconcileResult> {
    const node = this.kit.cache('Node')?.get(nodeName) ?? (await this.opts.client.tryGet('Node', nodeName));
    if (!node) return {};
    const nodeClaims = this.kit.cache('NodeClaim');
    const claims = nodeClaims
      ? nodeClaimsForNode(nodeClaims, node)
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
