/**
 * ReplicaSet controller stand-in (kube-controller-manager `replicaset`): keeps `spec.replicas` active pods
 * (named `<rs>-<5 random>` through `generateName`, owner reference with `controller: true` and
 * `blockOwnerDeletion: true`), deletes surplus pods in {@link deletionOrder} (unbound and not-ready first,
 * newest first), replaces pods that were deleted, evicted or finished, and keeps `status` (replicas,
 * fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration).
 * Not simulated: adoption/release of pods by selector, slow-start batches, status conditions.
 */
import type { Pod, ReplicaSet } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  changedFields,
  controllerOwnerRef,
  controllerRef,
  deletionOrder,
  Expectations,
  ensureIndex,
  IndexControllerUID,
  indexByControllerUID,
  isPodActive,
  isPodAvailable,
  isPodReady,
  podFromTemplate,
  SimController,
  type SimControllerOptions,
  specChanged,
} from './controller.ts';

/** The ReplicaSet controller stand-in. */
export class ReplicaSetController extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly replicaSets: Informer<'ReplicaSet'>;
  private readonly expectations: Expectations<Pod>;

  constructor(opts: SimControllerOptions) {
    super('replicaset', opts, 4);
    this.pods = opts.informers.informerFor('Pod');
    this.replicaSets = opts.informers.informerFor('ReplicaSet');
    ensureIndex(this.pods.cache, IndexControllerUID, indexByControllerUID);
    this.expectations = new Expectations(opts.clock);
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.replicaSets] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const onPod = (p: Pod): void => {
      this.expectations.observed(objectKey(p));
      const ref = controllerRef(p);
      if (ref?.kind === 'ReplicaSet') this.enqueueBatched(`${p.metadata.namespace}/${ref.name}`);
    };
    const offPods = this.pods.on({ add: onPod, update: (_o, p) => onPod(p), delete: onPod });
    const offRs = this.replicaSets.on({
      add: (rs) => this.queue.add(objectKey(rs)),
      update: (o, rs) => {
        if (specChanged(o, rs)) this.queue.add(objectKey(rs));
      },
      delete: (rs) => this.expectations.forget(objectKey(rs)),
    });
    return [offPods, offRs];
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const rs = this.replicaSets.cache.get(key);
    if (!rs || rs.metadata.deletionTimestamp) return undefined;
    const ns = rs.metadata.namespace ?? 'default';
    const owned = this.pods.cache.byIndex(IndexControllerUID, rs.metadata.uid ?? '');
    const inCache = (k: string) => this.pods.cache.get(k) !== undefined;
    const deleting = this.expectations.pendingDeletes(key, inCache);
    const active = owned.filter((p) => isPodActive(p) && !deleting.has(objectKey(p)));
    const creating = this.expectations.pendingCreates(key, inCache);
    const want = rs.spec.replicas ?? 1;
    const have = active.length + creating.length;

    if (have < want) {
      const owner = controllerOwnerRef(rs, 'apps/v1', 'ReplicaSet');
      const name = rs.metadata.name ?? '';
      const results = await Promise.allSettled(
        Array.from({ length: want - have }, async () => {
          const pod = podFromTemplate(rs.spec.template, { namespace: ns, owner, generateName: `${name}-` });
          const created = await this.client.create(pod);
          this.expectations.expectCreate(key, objectKey(created), created);
        }),
      );
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
    } else if (have > want && active.length > 0) {
      const victims = [...active].sort(deletionOrder).slice(0, Math.min(active.length, have - want));
      await Promise.all(
        victims.map(async (p) => {
          this.expectations.expectDelete(key, objectKey(p));
          try {
            await this.client.delete('Pod', p.metadata.name ?? '', ns, {
              ...(p.metadata.uid ? { preconditions: { uid: p.metadata.uid } } : {}),
            });
          } catch (err) {
            if (!isNotFound(err)) throw err;
          }
        }),
      );
    }
    return this.updateStatus(rs, active);
  }

  private async updateStatus(rs: ReplicaSet, active: Pod[]): Promise<ReconcileResult | undefined> {
    const now = this.clock.now();
    const minReady = Number(rs.spec.minReadySeconds ?? 0) || 0;
    const ready = active.filter(isPodReady).length;
    const available = active.filter((p) => isPodAvailable(p, minReady, now)).length;
    const desired = {
      replicas: active.length,
      fullyLabeledReplicas: active.length,
      readyReplicas: ready,
      availableReplicas: available,
      observedGeneration: rs.metadata.generation ?? 1,
    };
    const patch = changedFields(rs.status as Record<string, unknown> | undefined, desired);
    if (patch)
      await this.client.patchStatus('ReplicaSet', rs.metadata.name ?? '', rs.metadata.namespace, {
        status: patch,
      });
    // availability depends on time: look again when the next pod becomes available
    if (available < ready) return { requeueAfter: Math.max(1, minReady) };
    return undefined;
  }
}
