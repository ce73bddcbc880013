/**
 * Informers: keep a {@link Cache} of one kind in sync with the API server and notify handlers.
 * Reflector semantics after client-go `tools/cache/reflector.go`: list (paged), then watch from the
 * list's resourceVersion with bookmarks; a closed watch resumes from the last seen resourceVersion;
 * 410 Gone (an ERROR event or HTTP status) triggers a relist whose differences are delivered as
 * add/update/delete; connection failures retry with exponential backoff (800 ms → 30 s, jittered) on
 * the injected {@link Clock}. Server watch timeouts are randomised in [5, 10) minutes like client-go.
 */
import type { KubeObject } from '../apis/core.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { Cache } from './cache.ts';
import type { KubeClient } from './client.ts';
import type { Clock } from './clock.ts';
import { isGone, KubeApiError } from './errors.ts';
import type { ObjectOf, ResourceRef } from './resources.ts';
import type { FieldSelectorInput, LabelSelectorInput } from './selectors.ts';
import type { Status, WatchEvent } from './types.ts';

/** Callbacks for cache changes. Exceptions thrown by handlers are reported to `onError` and swallowed. */
export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

/** Options of {@link Informer}. */
export interface InformerOptions {
  /** Time source for backoff sleeps. */
  clock: Clock;
  /** Restrict to one namespace. */
  namespace?: string;
  labelSelector?: LabelSelectorInput;
  fieldSelector?: FieldSelectorInput;
  /** List page size (default 500). */
  pageSize?: number;
  /** Server-side watch timeout in seconds; default random in [300, 600). */
  watchTimeoutSeconds?: number;
  /** Reconnect backoff (default 800 ms → 30 s, factor 2, jitter 1). */
  backoff?: BackoffOptions;
  /** Randomness for jitter/timeouts (default Math.random). */
  random?: () => number;
  /** Called with errors from list/watch/handlers (default: ignore). */
  onError?: (err: unknown, phase: 'list' | 'watch' | 'handler') => void;
  /**
   * Applied to every listed or watched object before it enters the cache and reaches the handlers (client-go's
   * `SharedInformer.SetTransform`), e.g. {@link stripManagedFields}. Receives a freshly decoded object: it may
   * change and return it, but must be idempotent, since in-process informers with the same transform share the
   * objects of a watch event (`WatchOptions.shareDecoded`), and each applies it.
   */
  transform?: (obj: KubeObject) => KubeObject;
}

/**
 * Drops `metadata.managedFields` (controller-runtime's `cache.TransformStripManagedFields`, which upstream
 * Karpenter sets as its cache's `DefaultTransform`; kube-scheduler and kube-controller-manager trim them from
 * their informers too): nothing reads them from a cache, and they are often as large as the rest of the object.
 * An update sent without them keeps the stored ones (API server semantics).
 */
export function stripManagedFields(obj: KubeObject): KubeObject {
  if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
  return obj;
}

/** The {@link WatchOptions.shareDecoded} token of informers without a transform. */
const NO_TRANSFORM = {};

/** Counters for diagnostics and tests. */
export interface InformerStats {
  /** Completed lists (initial + relists). */
  lists: number;
  /** Watches opened. */
  watches: number;
  /** 410 Gone responses seen (each leads to a relist). */
  gone: number;
  /** Watch events applied (ADDED/MODIFIED/DELETED). */
  events: number;
  /** Bookmarks received. */
  bookmarks: number;
}

type WatchOutcome = { kind: 'closed' } | { kind: 'gone' } | { kind: 'error'; err: unknown };

/** {@link Informer.waitForSync} ran out of time: the informer keeps trying (list/watch with backoff). */
export class InformerSyncTimeoutError extends Error {
  readonly code = 'InformerSyncTimeout';
  constructor(
    /** The informer's kind, e.g. `PersistentVolumeClaim`. */
    readonly kind: string,
    /** The timeout that passed, in ms on the informer's clock. */
    readonly timeoutMs: number,
  ) {
    super(`informer ${kind}: not synced after ${timeoutMs} ms`);
    this.name = 'InformerSyncTimeoutError';
  }
}

/** True for an {@link InformerSyncTimeoutError}. */
export function isInformerSyncTimeout(err: unknown): err is InformerSyncTimeoutError {
  return err instanceof InformerSyncTimeoutError;
}

/** A single-kind informer. Create, register handlers, `start()`, then `await waitForSync()`. */
export class Informer<R extends ResourceRef, T extends KubeObject = ObjectOf<R> & KubeObject> {
  /** The synced store. Read-only for callers. */
  readonly cache: Cache<T>;
  readonly stats: InformerStats = { lists: 0, watches: 0, gone: 0, events: 0, bookmarks: 0 };
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly abort = new AbortController();
  private currentWatch: { stop(): void } | undefined;
  private started = false;
  private synced = false;
  private syncWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private readonly backoff: Backoff;
  private readonly random: () => number;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly ref: R,
    private readonly opts: InformerOptions,
    cache?: Cache<T>,
  ) {
    this.cache = cache ?? new Cache<T>();
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff(
      opts.backoff ?? { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 1 },
      this.random,
    );
    client.resource(ref); // validate the kind early
  }

  /**
   * Registers handlers; returns a function that unregisters them. When the cache already has objects
   * (late registration) `add` is called for each of them first, like client-go's AddEventHandler.
   */
  on(h: InformerHandlers<T>): () => void {
    this.handlers.add(h);
    if (this.synced && h.add) for (const o of this.cache.list()) this.call(() => h.add?.(o));
    return () => this.handlers.delete(h);
  }

  /** Starts list+watch in the background (idempotent). */
  start(): this {
    if (this.started) return this;
    this.started = true;
    this.loop = this.run();
    return this;
  }

  /** Stops watching and rejects pending `waitForSync` calls. Resolves when the loop has exited. */
  async stop(): Promise<void> {
    if (this.abort.signal.aborted) return;
    this.abort.abort();
    this.currentWatch?.stop();
    for (const w of this.syncWaiters.splice(0)) w.reject(new Error('informer stopped before sync'));
    await this.loop;
  }

  /** True once the first list has been applied to the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** The kind this informer lists and watches, e.g. `Pod`. */
  get kind(): string {
    return this.client.resource(this.ref).kind;
  }

  /**
   * Resolves once synced. Rejects when stopped first, or after `timeoutMs` (ms on the informer's clock,
   * default none) with an {@link InformerSyncTimeoutError} naming the kind; the informer keeps trying either way.
   */
  waitForSync(timeoutMs?: number): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.abort.signal.aborted) return Promise.reject(new Error('informer stopped'));
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject };
      this.syncWaiters.push(entry);
      if (timeoutMs !== undefined) {
        const t = this.opts.clock.setTimeout(() => {
          this.syncWaiters = this.syncWaiters.filter((w) => w !== entry);
          reject(new InformerSyncTimeoutError(this.kind, timeoutMs));
        }, timeoutMs);
        const done = entry.resolve;
        entry.resolve = () => {
          this.opts.clock.clearTimeout(t);
          done();
        };
      }
    });
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let rv: string;
      try {
        rv = await this.listAll();
      } catch (err) {
        if (this.stopped) return;
        this.opts.onError?.(err, 'list');
        await this.opts.clock.sleep(this.backoff.next(), this.abort.signal);
        continue;
      }
      this.backoff.reset();
      // watch until Gone (→ relist) or stop
      for (;;) {
        if (this.stopped) return;
        const outcome = await this.watchOnce(rv);
        rv = this.cache.resourceVersion || rv;
        if (this.stopped) return;
        if (outcome.kind === 'gone') {
          this.stats.gone++;
          break;
        }
        if (outcome.kind === 'error') {
          this.opts.onError?.(outcome.err, 'watch');
          await this.opts.clock.sleep(this.backoff.next(), this.abort.signal);
        }
      }
    }
  }

  private async listAll(): Promise<string> {
    const list = await this.client.list(this.ref, {
      ...(this.opts.namespace !== undefined ? { namespace: this.opts.namespace } : {}),
      ...(this.opts.labelSelector !== undefined ? { labelSelector: this.opts.labelSelector } : {}),
      ...(this.opts.fieldSelector !== undefined ? { fieldSelector: this.opts.fieldSelector } : {}),
      pageSize: this.opts.pageSize ?? 500,
      signal: this.abort.signal,
    });
    if (this.stopped) return '';
    const rv = list.metadata.resourceVersion ?? '';
    const transform = this.opts.transform;
    const items = (transform
      ? list.items.map((o) => transform(o as KubeObject))
      : list.items) as unknown as T[];
    const diff = this.cache.replace(items, rv);
    this.stats.lists++;
    for (const o of diff.added) this.emit('add', o);
    for (const [a, b] of diff.updated) this.emit('update', a, b);
    for (const o of diff.deleted) this.emit('delete', o);
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w.resolve();
    }
    return rv;
  }

  private watchOnce(rv: string): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      let settled = false;
      let sawEvent = false;
      const settle = (o: WatchOutcome): void => {
        if (settled) return;
        settled = true;
        this.currentWatch?.stop();
        this.currentWatch = undefined;
        resolve(o);
      };
      const timeout = this.opts.watchTimeoutSeconds ?? Math.floor(300 * (1 + this.random()));
      this.stats.watches++;
      this.client
        .watch(
          this.ref,
          {
            resourceVersion: rv,
            allowWatchBookmarks: true,
            timeoutSeconds: timeout,
            ...(this.opts.namespace !== undefined ? { namespace: this.opts.namespace } : {}),
            ...(this.opts.labelSelector !== undefined ? { labelSelector: this.opts.labelSelector } : {}),
            ...(this.opts.fieldSelector !== undefined ? { fieldSelector: this.opts.fieldSelector } : {}),
            // informers never change a cached object, and their transform is idempotent: the in-process
            // informers of one transform share decoded events (kube/client.ts decodeShared)
            shareDecoded: this.opts.transform ?? NO_TRANSFORM,
          },
          (ev) => {
            if (settled) return;
            if (!sawEvent) {
              sawEvent = true;
              this.backoff.reset();
            }
            this.handleEvent(ev as unknown as WatchEvent<T>, settle);
          },
          (err) => {
            if (err === undefined || err === null) settle({ kind: 'closed' });
            else if (isGone(err)) settle({ kind: 'gone' });
            else settle({ kind: 'error', err });
          },
        )
        .then(
          (h) => {
            if (settled || this.stopped) h.stop();
            else this.currentWatch = h;
          },
          (err) => settle({ kind: 'error', err }),
        );
    });
  }

  private handleEvent(ev: WatchEvent<T>, settle: (o: WatchOutcome) => void): void {
    const transform = this.opts.transform;
    const obj =
      transform && (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED')
        ? (transform(ev.object) as T)
        : ev.object;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED': {
        const old = this.cache.upsert(obj);
        this.cache.resourceVersion = obj.metadata?.resourceVersion ?? this.cache.resourceVersion;
        this.stats.events++;
        if (old) this.emit('update', old, obj);
        else this.emit('add', obj);
        return;
      }
      case 'DELETED': {
        const old = this.cache.remove(obj);
        this.cache.resourceVersion = obj.metadata?.resourceVersion ?? this.cache.resourceVersion;
        this.stats.events++;
        this.emit('delete', old ?? obj);
        return;
      }
      case 'BOOKMARK':
        this.stats.bookmarks++;
        if (obj?.metadata?.resourceVersion) this.cache.resourceVersion = obj.metadata.resourceVersion;
        return;
      case 'ERROR': {
        const st = obj as unknown as Status;
        const code = st?.code ?? 500;
        const err = new KubeApiError(
          code,
          st?.reason ?? (code === 410 ? 'Gone' : 'InternalError'),
          st?.message ?? '',
          st,
        );
        if (isGone(err)) settle({ kind: 'gone' });
        else settle({ kind: 'error', err });
        return;
      }
    }
  }

  private emit(kind: 'add' | 'delete', obj: T): void;
  private emit(kind: 'update', oldObj: T, newObj: T): void;
  private emit(kind: 'add' | 'update' | 'delete', a: T, b?: T): void {
    for (const h of this.handlers) {
      if (kind === 'add') this.call(() => h.add?.(a));
      else if (kind === 'delete') this.call(() => h.delete?.(a));
      else this.call(() => h.update?.(a, b as T));
    }
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.opts.onError?.(err, 'handler');
    }
  }
}

/**
 * A set of informers shared by controllers: one per (kind, namespace, selectors), created on first use.
 * `start()` starts all (and later ones immediately), `waitForSync()` waits for all, `stop()` stops all.
 */
export class SharedInformers {
  private readonly informers = new Map<string, Informer<ResourceRef>>();
  private started = false;

  constructor(
    private readonly client: KubeClient,
    private readonly defaults: InformerOptions,
  ) {}

  /**
   * The namespace every informer is restricted to unless its own options name another (the defaults'
   * `namespace`, controller-runtime's `cache.Options.DefaultNamespaces`); undefined: all namespaces.
   */
  get namespace(): string | undefined {
    return this.defaults.namespace;
  }

  /** The informer for `ref` with `opts` (merged over the defaults), created if needed. */
  informerFor<R extends ResourceRef>(ref: R, opts: Partial<InformerOptions> = {}): Informer<R> {
    const rt = this.client.resource(ref);
    const key = JSON.stringify([rt.group, rt.kind, opts.namespace, opts.labelSelector, opts.fieldSelector]);
    let inf = this.informers.get(key);
    if (!inf) {
      inf = new Informer(this.client, rt as ResourceRef, {
        ...this.defaults,
        ...opts,
      }) as Informer<ResourceRef>;
      this.informers.set(key, inf);
      if (this.started) inf.start();
    }
    return inf as unknown as Informer<R>;
  }

  /** Starts every informer (idempotent). */
  start(): void {
    this.started = true;
    for (const i of this.informers.values()) i.start();
  }

  /** Resolves when all current informers have synced; rejects after `timeoutMs` if given. */
  async waitForSync(timeoutMs?: number): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(timeoutMs)));
  }

  /** The kinds of the informers that have not synced yet (sorted, each once). */
  unsynced(): string[] {
    const kinds = [...this.informers.values()].filter((i) => !i.hasSynced()).map((i) => i.kind);
    return [...new Set(kinds)].sort();
  }

  /** True when every informer has synced. */
  hasSynced(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced());
  }

  /** Stops all informers. */
  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}
