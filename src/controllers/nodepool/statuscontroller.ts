/**
 * Scaffolding shared by the NodePool and NodeClass status controllers (upstream operatorpkg's status
 * controllers): a keyed {@link QueueController} fed by informer handlers (the operator's shared informers, or
 * private ones it starts and stops itself), the list of NodeClass kinds the cloud provider supports, and the
 * optimistic status write (`resourceVersion` precondition; NotFound ends the reconcile, Conflict requeues).
 */
import type { KubeObject } from '../../apis/core.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { SharedInformers } from '../../kube/informer.ts';
import type { ResourceRef, ResourceType } from '../../kube/resources.ts';
import {
  type Controller,
  type ControllerDeps,
  type InformerSyncOptions,
  QueueController,
  type ReconcileResult,
  runQueueWithInformers,
} from '../runtime/index.ts';

/** Options every status controller takes. */
export interface StatusControllerOptions extends ControllerDeps, InformerSyncOptions {}

/**
 * Base of a keyed status controller. Subclasses register their informer handlers in {@link watch} (returning
 * the unregister functions) and implement {@link reconcile}. `start()` never rejects: until the informers have
 * synced it waits, logging (runtime.ts `runQueueWithInformers`).
 */
export abstract class StatusController<O extends StatusControllerOptions> implements Controller {
  readonly queue: QueueController;
  protected readonly informers: SharedInformers;
  private readonly ownInformers: boolean;

  /** `concurrency`: parallel reconciles (QueueController default 10 when omitted). */
  protected constructor(
    readonly name: string,
    protected readonly opts: O,
    concurrency?: number,
  ) {
    this.ownInformers = opts.informers === undefined;
    this.informers = opts.informers ?? new SharedInformers(opts.client, { clock: opts.clock });
    this.queue = new QueueController({
      name,
      clock: opts.clock,
      logger: opts.logger,
      ...(concurrency !== undefined ? { concurrency } : {}),
      reconcile: (key) => this.reconcile(key),
    });
  }

  /** Registers the informer handlers that enqueue keys; returns their unregister functions. */
  protected abstract watch(): Array<() => void>;

  /** Reconciles one key (public for tests). */
  abstract reconcile(key: string): Promise<ReconcileResult>;

  async start(signal: AbortSignal): Promise<void> {
    const offs = this.watch();
    await runQueueWithInformers({
      name: this.name,
      logger: this.opts.logger,
      informers: this.informers,
      ownInformers: this.ownInformers,
      queue: this.queue,
      signal,
      offs,
      syncTimeoutMs: this.opts.syncTimeoutMs,
    });
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
