/**
 * The builder of informer-fed controllers, after controller-runtime's `pkg/builder` (`ControllerManagedBy(mgr)
 * .For(...).Watches(kind, handler.EnqueueRequestsFromMapFunc(fn)).WithOptions({MaxConcurrentReconciles})
 * .Complete(r)`): a controller declares what it watches and how an event maps to keys; the kit owns the rest:
 * - the informers: the operator's shared ones, else private ones it creates, starts and stops itself;
 * - the keyed, rate-limited queue ({@link QueueController}: its metrics are named after the controller,
 *   requeue/backoff, `concurrency` parallel reconciles of distinct keys);
 * - the event handlers (registered at start, unregistered at stop);
 * - the sync wait ({@link runQueueWithInformers}: reconciles start once every watched cache has synced).
 *
 * ```ts
 * this.kit = defineController({
 *   name: 'nodeclaim.expiration', deps: opts, concurrency: 5,
 *   watches: [watch('NodeClaim', { events: ['add', 'update'], map: (nc) => nc.metadata.name })],
 *   reconcile: (key) => this.reconcile(key),
 * });
 * ```
 */
import type { Registry } from 'prom-client';
import type { KubeObject } from '../../apis/core.ts';
import type { Cache } from '../../kube/cache.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { type InformerHandlers, type InformerOptions, SharedInformers } from '../../kube/informer.ts';
import type { Logger } from '../../kube/logger.ts';
import type { ObjectOf, ResourceRef } from '../../kube/resources.ts';
import { type Controller, QueueController, type QueueControllerOptions } from './controller.ts';
import { type InformerSyncOptions, runQueueWithInformers } from './sync.ts';

/** The informer events a watch can map to keys. */
export type InformerEventType = 'add' | 'update' | 'delete';

/** One informer event as a watch's `map` sees it (the object itself is `map`'s first argument; `old` is the previous one of an update). */
export type InformerEvent<T> = { type: 'add' } | { type: 'update'; old: T } | { type: 'delete' };

/** The keys an event enqueues: one, several, or none (`undefined`). */
export type Keys = string | Iterable<string> | undefined;

/** What a controller does with one watched kind (see {@link watch}). */
export interface WatchSpec<T extends KubeObject> {
  /** Informer options beyond the clock (a namespace, a label selector): they pick the shared informer. */
  informer?: Partial<InformerOptions>;
  /** Runs on the kind's cache when the controller starts, before the informers do (e.g. `indexProviderID`). */
  index?: (cache: Cache<T>) => void;
  /**
   * The keys to reconcile for one event (controller-runtime's map function; on `update`, `obj` is the new
   * object). Without it the kind is only read from its cache, which still has to sync before the first reconcile.
   */
  map?: (obj: T, event: InformerEvent<T>) => Keys;
  /** The events `map` sees (default: add, update and delete). */
  events?: readonly InformerEventType[];
  /** Drops events that arrive before the caches have synced: the initial list is not an event. */
  afterSync?: boolean;
}

/** Where a {@link Watch} sends keys. */
export interface WatchSink {
  /** Queues `key` (deduplicated). */
  enqueue(key: string): void;
  /** True once every informer of the controller has synced. */
  synced(): boolean;
}

/** One watched kind with its object type erased, so a controller can list watches of several kinds; made by {@link watch}. */
export interface Watch {
  /** The kind watched. */
  readonly kind: ResourceRef;
  /** Gets the informer from `informers`, runs `index`, registers the handlers; returns their unregister function. */
  register(informers: SharedInformers, sink: WatchSink): () => void;
}

const AllEvents: readonly InformerEventType[] = ['add', 'update', 'delete'];

/** A watch of `kind` (a kind name or a resource descriptor); see {@link WatchSpec}. */
export function watch<R extends ResourceRef>(kind: R, spec: WatchSpec<ObjectOf<R> & KubeObject> = {}): Watch {
  type T = ObjectOf<R> & KubeObject;
  return {
    kind,
    register(informers, sink) {
      const inf = informers.informerFor(kind, spec.informer);
      spec.index?.(inf.cache);
      const map = spec.map;
      if (!map) return () => {};
      const send = (keys: Keys): void => {
        if (keys === undefined || (spec.afterSync && !sink.synced())) return;
        if (typeof keys === 'string') sink.enqueue(keys);
        else for (const k of keys) sink.enqueue(k);
      };
      const events = spec.events ?? AllEvents;
      const h: InformerHandlers<T> = {};
      if (events.includes('add')) h.add = (o) => send(map(o, { type: 'add' }));
      if (events.includes('update')) h.update = (old, o) => send(map(o, { type: 'update', old }));
      if (events.includes('delete')) h.delete = (o) => send(map(o, { type: 'delete' }));
      return inf.on(h);
    },
  };
}

/** What a {@link defineController} controller takes from its owner's dependencies (a `ControllerDeps` fits). */
export interface InformerControllerDeps extends InformerSyncOptions {
  /** Client of the private informers (used only without `informers`). */
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** The operator's shared informers; without them the controller creates private ones and stops them when it stops. */
  informers?: SharedInformers | undefined;
  /** Where the controller's reconcile and work-queue metrics go (`metrics.ts`); none without it. */
  registry?: Registry | undefined;
}

/** Options of {@link defineController}. */
export interface InformerControllerOptions {
  /** Controller name, as upstream names it (`nodeclaim.lifecycle`): log field and work-queue metrics label. */
  name: string;
  deps: InformerControllerDeps;
  /** Parallel reconciles of distinct keys (default 10). */
  concurrency?: number | undefined;
  /** The watched kinds; a function is called when the controller starts (for kinds known only then). */
  watches: readonly Watch[] | (() => readonly Watch[]);
  /** Reconciles one key; see {@link QueueControllerOptions.reconcile} for requeue and backoff. */
  reconcile: QueueControllerOptions['reconcile'];
}

/** An informer-fed keyed controller built by {@link defineController}. */
export class InformerController implements Controller {
  readonly name: string;
  /** The keyed queue (its reconciles run once the caches have synced). */
  readonly queue: QueueController;
  /** The informers the controller reads: the shared ones, or its private ones. */
  readonly informers: SharedInformers;
  private readonly ownInformers: boolean;
  private started = false;
  private synced = false;

  constructor(private readonly o: InformerControllerOptions) {
    this.name = o.name;
    const { deps } = o;
    this.ownInformers = deps.informers === undefined;
    this.informers = deps.informers ?? new SharedInformers(deps.client, { clock: deps.clock });
    this.queue = new QueueController({
      name: o.name,
      clock: deps.clock,
      logger: deps.logger,
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
      registry: deps.registry,
      reconcile: o.reconcile,
    });
  }

  /** Queues `key` for reconciliation now (deduplicated). */
  enqueue(key: string): void {
    this.queue.enqueue(key);
  }

  /**
   * The cache of a watched `kind` (same informer options as its watch), or undefined before the controller
   * started: a reconcile called directly (tests) then reads through the client instead.
   */
  cache<R extends ResourceRef>(
    kind: R,
    opts?: Partial<InformerOptions>,
  ): Cache<ObjectOf<R> & KubeObject> | undefined {
    return this.started ? this.informers.informerFor(kind, opts).cache : undefined;
  }

  /**
   * Registers the watches, starts the informers, waits for their caches, then reconciles until `signal` aborts;
   * unregisters the handlers and stops private informers on the way out. Never rejects.
   */
  async start(signal: AbortSignal): Promise<void> {
    const watches = typeof this.o.watches === 'function' ? this.o.watches() : this.o.watches;
    const sink: WatchSink = { enqueue: (key) => this.queue.enqueue(key), synced: () => this.synced };
    this.started = true;
    const offs = watches.map((w) => w.register(this.informers, sink));
    await runQueueWithInformers({
      name: this.name,
      logger: this.o.deps.logger,
      informers: this.informers,
      ownInformers: this.ownInformers,
      queue: this.queue,
      signal,
      offs,
      syncTimeoutMs: this.o.deps.syncTimeoutMs,
      onSynced: () => {
        this.synced = true;
      },
    });
  }
}

/** Builds an informer-fed keyed controller from its watches and its reconcile; see the module doc. */
export function defineController(o: InformerControllerOptions): InformerController {
  return new InformerController(o);
}
