/**
 * Scaffolding shared by the NodePool and NodeClass status controllers (upstream operatorpkg's status
 * controllers): an informer-fed keyed controller ({@link defineController}), the list of NodeClass kinds the cloud provider supports, and the
 * optimistic status write (`resourceVersion` precondition; NotFound ends the reconcile, Conflict requeues).
 */
import type { KubeObject } from '../../apis/core.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { ResourceRef, ResourceType } from '../../kube/resources.ts';
import {
  type Controller,
  type ControllerDeps,
  defineController,
  type InformerController,
  type InformerSyncOptions,
  type ReconcileResult,
  type Watch,
} from '../runtime/index.ts';

/** Options every status controller takes. */
export interface StatusControllerOptions extends ControllerDeps, InformerSyncOptions {}

/**
 * Base of a keyed status controller, built with {@link defineController}. Subclasses declare their watches in
 * {@link watches} (called when the controller starts) and implement {@link reconcile}. `start()` never rejects:
 * until the informers have synced it waits, logging.
 */
export abstract class StatusController<O extends StatusControllerOptions> implements Controller {
  /** The informers, queue and handlers of the controller. */
  protected readonly kit: InformerController;

  /** `concurrency`: parallel reconciles (default 10 when omitted). */
  protected constructor(
    readonly name: string,
    protected readonly opts: O,
    concurrency?: number,
  ) {
    this.kit = defineController({
      name,
      deps: opts,
      concurrency,
      watches: () => this.watches(),
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** The watched kinds and the keys their events enqueue. */
  protected abstract watches(): Watch[];

  /** Reconciles one key (public for tests). */
  abstract reconcile(key: string): Promise<ReconcileResult>;

  /** Runs until `signal` aborts; never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.kit.start(signal);
  }

  /** Descriptors of the NodeClass kinds the cloud provider supports that the client's registry knows. */
  protected nodeClassTypes(): ResourceType[] {
    return this.opts.cloudProvider
      .supportedNodeClasses()
      .map((k) => this.opts.client.registry.forKind(`${k.kind}.${k.group}`))
      .filter((r): r is ResourceType => r !== undefined);
  }

  /**
   * Writes `obj.status` (merge patch, precondition `obj.metadata.resourceVersion`). Returns `undefined` when
   * written, `{}` when the object is gone, `{requeue: true}` on a conflict; throws other API errors.
   */
  protected async writeStatus(ref: ResourceRef, obj: KubeObject): Promise<ReconcileResult | undefined> {
    try {
      await this.opts.client.patchStatus(
        ref,
        obj.metadata?.name ?? '',
        undefined,
        { metadata: { resourceVersion: obj.metadata?.resourceVersion }, status: obj.status },
        { type: 'merge' },
      );
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return {};
      if (isConflict(err)) return { requeue: true };
      throw err;
    }
  }
}
