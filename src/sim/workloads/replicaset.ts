/**
 * ReplicaSet controller stand-in (kube-controller-manager `replicaset`): keeps `spec.replicas` active pods
 * (named `<rs>-<5 random>` through `generateName`, owner reference with `controller: true` and
 * `blockOwnerDeletion: true`), deletes surplus pods in {@link deletionOrder} (unbound and not-ready first,
 * newest first), replaces pods that were deleted, evicted or finished, and keeps `status` (replicas,
 * fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration).
 * Not simulated: adoption/release of pods by selector, slow-start batches, status conditions.
 */
import type { Pod, ReplicaSet } from '../../apis/core.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  changedFields,
  controllerOwnerRef,
  isPodAvailable,
  isPodReady,
  podFromTemplate,
  type SimControllerOptions,
} from './controller.ts';
import { PodOwnerController } from './podowner.ts';

/** The ReplicaSet controller stand-in. */
export class ReplicaSetController extends PodOwnerController<'ReplicaSet'> {
  constructor(opts: SimControllerOptions) {
    super('replicaset', opts, 'ReplicaSet');
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const rs = this.owners.cache.get(key);
    if (!rs || rs.metadata.deletionTimestamp) return undefined;
    const pods = this.ownedPods(key, rs.metadata.uid);
    const owner = controllerOwnerRef(rs, 'apps/v1', 'ReplicaSet');
    await this.scalePods(key, rs.spec.replicas ?? 1, pods, () =>
      podFromTemplate(rs.spec.template, {
        namespace: rs.metadata.namespace ?? 'default',
        owner,
        generateName: `${rs.metadata.name ?? ''}-`,
      }),
    );
    return this.updateStatus(rs, pods.active);
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
