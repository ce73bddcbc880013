/**
 * Base of the stand-in controllers that own pods directly (ReplicaSet, Job, DaemonSet): the pod informer
 * indexed by controller uid, {@link Expectations} for pods created/deleted but not yet in the cache, the
 * event wiring (a pod event requeues its controller owner after the batching window; an owner spec change
 * requeues it at once; a deleted owner is forgotten) and the create/delete/scale writes, which record
 * every write in the expectations (kube-controller-manager `controller.PodControlInterface` +
 * `ControllerExpectations`).
 */
import type { Pod } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import {
  controllerRef,
  deletionOrder,
  Expectations,
  ensureIndex,
  IndexControllerUID,
  indexByControllerUID,
  isPodActive,
  SimController,
  type SimControllerOptions,
  specChanged,
} from './controller.ts';

/** Kinds whose controllers own pods through {@link PodOwnerController}. */
export type PodOwnerKind = 'ReplicaSet' | 'Job' | 'DaemonSet';

/** The pods of one owner as a reconcile sees them. */
export interface OwnedPods {
  /** Every pod whose controller owner reference has the owner's uid (also finished and deleting ones). */
  owned: Pod[];
  /** Cache keys of owned pods this controller deleted that the cache still shows. */
  deleting: ReadonlySet<string>;
  /** Owned pods that are neither finished nor being deleted (nor deleted by us). */
  active: Pod[];
  /** Pods this controller created that the cache does not show yet. */
  creating: Pod[];
}

/**
 * A {@link SimController} for owner kind `K` whose objects own pods. Subclasses implement `reconcile`;
 * they may extend {@link informersUsed} and {@link register} (calling `super`) for further informers.
 */
export abstract class PodOwnerController<K extends PodOwnerKind> extends SimController {
  protected readonly pods: Informer<'Pod'>;
  protected readonly owners: Informer<K>;
  protected readonly expectations: Expectations<Pod>;

  protected constructor(
    name: string,
    opts: SimControllerOptions,
    private readonly ownerKind: K,
  ) {
    super(name, opts, 4);
    this.pods = opts.informers.informerFor('Pod');
    this.owners = opts.informers.informerFor(ownerKind);
    ensureIndex(this.pods.cache, IndexControllerUID, indexByControllerUID);
    this.expectations = new Expectations(opts.clock);
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.owners] as Array<Informer<ResourceRef>>;
  }

  protected register(): Array<() => void> {
    const onPod = (p: Pod): void => {
      this.expectations.observed(objectKey(p));
      const ref = controllerRef(p);
      if (ref?.kind === this.ownerKind) this.enqueueBatched(`${p.metadata.namespace}/${ref.name}`);
    };
    const offPods = this.pods.on({ add: onPod, update: (_o, p) => onPod(p), delete: onPod });
    const offOwners = this.owners.on({
      add: (o) => this.queue.add(objectKey(o)),
      update: (o, n) => {
        if (specChanged(o, n)) this.queue.add(objectKey(n));
      },
      delete: (o) => this.expectations.forget(objectKey(o)),
    });
    return [offPods, offOwners];
  }

  /** The pods of the owner with queue key `key` and uid `uid`, net of the pending writes. */
  protected ownedPods(key: string, uid: string | undefined): OwnedPods {
    const inCache = (k: string) => this.pods.cache.get(k) !== undefined;
    const deleting = this.expectations.pendingDeletes(key, inCache);
    const owned = this.pods.cache.byIndex(IndexControllerUID, uid ?? '');
    const active = owned.filter((p) => isPodActive(p) && !deleting.has(objectKey(p)));
    const creating = this.expectations.pendingCreates(key, inCache);
    return { owned, deleting, active, creating };
  }

  /** Creates `pod` for the owner `key` and expects it. Throws on API errors. */
  protected async createPod(key: string, pod: Pod): Promise<void> {
    const created = await this.client.create(pod);
    this.expectations.expectCreate(key, objectKey(created), created);
  }

  /** Deletes `pod` (uid precondition) for the owner `key` and expects it gone; NotFound is success. */
  protected async deletePod(key: string, pod: Pod): Promise<void> {
    this.expectations.expectDelete(key, objectKey(pod));
    try {
      await this.client.delete('Pod', pod.metadata.name ?? '', pod.metadata.namespace, {
        ...(pod.metadata.uid ? { preconditions: { uid: pod.metadata.uid } } : {}),
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Brings `active + creating` to `want` (ReplicaSet `manageReplicas`): creates the missing pods from
   * `build()`, or deletes the surplus in {@link deletionOrder}. Every write is attempted; the first
   * failure is thrown afterwards.
   */
  protected async scalePods(
    key: string,
    want: number,
    pods: Pick<OwnedPods, 'active' | 'creating'>,
    build: () => Pod,
  ): Promise<void> {
    const have = pods.active.length + pods.creating.length;
    if (have < want) await settleAll(Array.from({ length: want - have }, () => this.createPod(key, build())));
    else if (have > want)
      await settleAll(
        [...pods.active]
          .sort(deletionOrder)
          .slice(0, have - want)
          .map((p) => this.deletePod(key, p)),
      );
  }
}

/** Waits for every promise, then throws the first rejection (so no write is abandoned half-way). */
export async function settleAll(writes: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(writes)).find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
