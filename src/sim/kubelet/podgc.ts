/**
 * Pod garbage collector stand-in (kube-controller-manager `podgc`): pods bound to a node that no longer
 * exists are deleted with `gracePeriodSeconds: 0`. When the node was seen and then deleted, its pods go
 * at once; a pod bound to a node never seen waits `quarantineSeconds` first (upstream waits 40 s so a
 * lagging node cache does not kill pods of a just-created node). Terminated-pod thresholds are not
 * simulated.
 */
import type { Pod } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import { ensureIndex, SimController, type SimControllerOptions } from '../workloads/controller.ts';

/** Options of {@link PodGCStandIn}. */
export interface PodGCOptions extends SimControllerOptions {
  /** Seconds a pod bound to an unknown node is left alone (default 40, as upstream). */
  quarantineSeconds?: number;
}

const IndexNodeName = 'spec.nodeName';

/** Deletes pods orphaned by node deletion. */
export class PodGCStandIn extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly nodes: Informer<'Node'>;
  private readonly quarantine: number;
  /** Names of nodes seen deleted (their pods go without quarantine). */
  private readonly deletedNodes = new Set<string>();
  /** pod key → ms first found orphaned */
  private readonly orphanSince = new Map<string, number>();
  /** Pods deleted (diagnostics). */
  deleted = 0;

  constructor(opts: PodGCOptions) {
    super('podgc', opts, 2);
    this.pods = opts.informers.informerFor('Pod');
    this.nodes = opts.informers.informerFor('Node');
    ensureIndex(this.pods.cache, IndexNodeName, (p: Pod) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    this.quarantine = opts.quarantineSeconds ?? 40;
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.nodes] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const check = (p: Pod): void => {
      if (p.spec.nodeName && !this.nodes.cache.get(p.spec.nodeName)) this.queue.add(objectKey(p));
    };
    const offPods = this.pods.on({
      add: check,
      update: (_o, p) => check(p),
      delete: (p) => this.orphanSince.delete(objectKey(p)),
    });
    const offNodes = this.nodes.on({
      add: (n) => this.deletedNodes.delete(n.metadata.name ?? ''),
      delete: (n) => {
        const name = n.metadata.name ?? '';
        this.deletedNodes.add(name);
        for (const p of this.pods.cache.byIndex(IndexNodeName, name)) this.queue.add(objectKey(p));
      },
    });
    return [offPods, offNodes];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const pod = this.pods.cache.get(key);
    const node = pod?.spec.nodeName;
    if (!pod || !node || this.nodes.cache.get(node)) {
      this.orphanSince.delete(key);
      return undefined;
    }
    if (!this.deletedNodes.has(node)) {
      const now = this.clock.now();
      let since = this.orphanSince.get(key);
      if (since === undefined) {
        since = now;
        this.orphanSince.set(key, since);
      }
      const due = since + this.quarantine * 1000;
      if (now < due) return { requeueAfter: (due - now) / 1000 };
    }
    try {
      await this.client.delete('Pod', pod.metadata.name ?? '', pod.metadata.namespace, {
        gracePeriodSeconds: 0,
        ...(pod.metadata.uid ? { preconditions: { uid: pod.metadata.uid } } : {}),
      });
      this.deleted++;
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    this.orphanSince.delete(key);
    return undefined;
  }
}
