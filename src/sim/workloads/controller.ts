/**
 * Shared plumbing of the simulated cluster's stand-in controllers (kube-scheduler, kubelet, workload
 * controllers): a small controller-runtime-like loop (informer handlers → {@link WorkQueue} →
 * `reconcile(key)` via {@link runWorkers}) and pod/owner helpers. Everything talks to the API server
 * only through `kube/` (client + informers), and every delay goes through the injected {@link Clock}.
 */
import type {
  KubeObject,
  ObjectMeta,
  OwnerReference,
  Pod,
  PodCondition,
  PodTemplateSpec,
} from '../../apis/core.ts';
import type { Cache, IndexFunc } from '../../kube/cache.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import type { Informer, SharedInformers } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import { type ReconcileResult, runWorkers, WorkQueue } from '../../kube/workqueue.ts';

/** Options every stand-in controller takes. */
export interface SimControllerOptions {
  /** Client for the API server (embedded or real). */
  client: KubeClient;
  /** Shared informers (the caller starts and stops them). */
  informers: SharedInformers;
  /** Time source for every delay (use a FakeClock in tests). */
  clock: Clock;
  /** Concurrent reconciles (default per controller). */
  workers?: number;
  /**
   * Seconds for which events of an owner's children (pods of a ReplicaSet, ReplicaSets of a Deployment)
   * are collected into one reconcile of the owner (default 0.2; 0 reconciles on every event). Keeps
   * large workloads from costing one O(pods) reconcile per pod event.
   */
  batchSeconds?: number;
  /** Receives reconcile and write errors (default: ignored; failed keys are retried with backoff). */
  onError?: (err: unknown, where: string) => void;
}

/**
 * Base class of a stand-in controller: subclasses register informer handlers in {@link register} that
 * enqueue keys, and implement {@link reconcile}. `start()` registers the handlers, waits for the
 * informers named in {@link informersUsed} to sync, then runs the workers; `stop()` shuts the queue down
 * and waits for the workers to exit. Informers themselves are started/stopped by their owner.
 */
export abstract class SimController {
  protected readonly client: KubeClient;
  protected readonly informers: SharedInformers;
  protected readonly clock: Clock;
  protected readonly queue: WorkQueue<string>;
  protected readonly onError: (err: unknown, where: string) => void;
  private readonly workers: number;
  private readonly batchSeconds: number;
  private loop: Promise<void> | undefined;
  private unregister: Array<() => void> = [];

  protected constructor(
    readonly name: string,
    opts: SimControllerOptions,
    defaultWorkers: number,
  ) {
    this.client = opts.client;
    this.informers = opts.informers;
    this.clock = opts.clock;
    this.workers = opts.workers ?? defaultWorkers;
    this.batchSeconds = opts.batchSeconds ?? 0.2;
    this.onError = opts.onError ?? (() => {});
    this.queue = new WorkQueue<string>({ clock: opts.clock, name });
  }

  /** Installs informer handlers; returns the unregister functions. */
  protected abstract register(): Array<() => void>;

  /** The informers that must be synced before the first reconcile. */
  protected abstract informersUsed(): Array<Informer<ResourceRef>>;

  /** Reconciles one key. Throwing requeues it with backoff. */
  protected abstract reconcile(key: string): Promise<ReconcileResult | undefined>;

  /** Registers handlers and starts the workers once the informers have synced (idempotent). */
  start(): void {
    if (this.loop) return;
    this.unregister = this.register();
    const used = this.informersUsed();
    this.loop = (async () => {
      try {
        await Promise.all(used.map((i) => i.waitForSync()));
      } catch {
        return; // stopped before sync
      }
      await runWorkers(
        this.queue,
        this.workers,
        (key) => this.reconcile(key),
        (key, err) => this.onError(err, `${this.name} ${key}`),
      );
    })();
  }

  /** Stops the workers (in-flight reconciles finish) and removes the handlers. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    for (const u of this.unregister) u();
    this.unregister = [];
    await this.loop;
  }

  /** Queues `key` after the batching window (see {@link SimControllerOptions.batchSeconds}). */
  protected enqueueBatched(key: string): void {
    if (this.batchSeconds > 0) this.queue.addAfter(key, this.batchSeconds);
    else this.queue.add(key);
  }

  /** Runs `fn`, reporting (not throwing) its error. For fire-and-forget writes. */
  protected async bestEffort(where: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.onError(err, `${this.name} ${where}`);
    }
  }
}

/**
 * True when an update of a workload object needs a reconcile: anything but a status-only change
 * (status is written by the controller itself; reacting to it would only echo).
 */
export function specChanged(a: KubeObject, b: KubeObject): boolean {
  if (a.metadata?.generation !== b.metadata?.generation) return true;
  if (Boolean(a.metadata?.deletionTimestamp) !== Boolean(b.metadata?.deletionTimestamp)) return true;
  return (
    stableStringify([a.spec, a.metadata?.labels, a.metadata?.annotations]) !==
    stableStringify([b.spec, b.metadata?.labels, b.metadata?.annotations])
  );
}

/** Adds index `name` to `cache` unless it already exists (informers are shared between controllers). */
export function ensureIndex<T extends KubeObject>(cache: Cache<T>, name: string, fn: IndexFunc<T>): void {
  try {
    cache.indexValues(name);
  } catch {
    cache.addIndexer(name, fn);
  }
}

/** RFC 3339 timestamp (seconds precision, as the API server writes metav1.Time) of `ms` since epoch. */
export function rfc3339(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** True when the pod has finished (`Succeeded` or `Failed`). */
export function isPodTerminal(p: Pod): boolean {
  const phase = p.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** True when the pod counts towards a controller's replicas: not finished and not being deleted. */
export function isPodActive(p: Pod): boolean {
  return !isPodTerminal(p) && !p.metadata.deletionTimestamp;
}

/** True when the pod's `Ready` condition is `True`. */
export function isPodReady(p: Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The condition of `type`, if present. */
export function podCondition(p: Pod, type: string): PodCondition | undefined {
  return p.status?.conditions?.find((c) => c.type === type);
}

/**
 * Returns `conditions` with `cond` set (replacing the entry of the same type), keeping
 * `lastTransitionTime` when the status did not change; `undefined` when nothing changed (no write needed).
 */
export function withCondition<
  C extends { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string },
>(conditions: readonly C[] | undefined, cond: C, nowIso: string): C[] | undefined {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === cond.type);
  const old = i >= 0 ? list[i] : undefined;
  if (old && old.status === cond.status && old.reason === cond.reason && old.message === cond.message)
    return undefined;
  const next: C = {
    ...cond,
    lastTransitionTime: old && old.status === cond.status ? (old.lastTransitionTime ?? nowIso) : nowIso,
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

/** The controller owner reference of an object (`controller: true`), if any. */
export function controllerRef(o: KubeObject): OwnerReference | undefined {
  return o.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/** Index: uid of the controller owner reference (objects without one are not indexed). */
export const indexByControllerUID: IndexFunc<KubeObject> = (o) => {
  const r = controllerRef(o);
  return r ? [r.uid] : [];
};

/** Index name for {@link indexByControllerUID}. */
export const IndexControllerUID = 'sim:controllerUID';

/** An owner reference to `owner` with `controller: true, blockOwnerDeletion: true` (as workload controllers set). */
export function controllerOwnerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * A Pod built from a template, as the workload controllers create them (`GetPodFromTemplate` in
 * kubernetes/pkg/controller/controller_utils.go): template labels/annotations/finalizers + `extraLabels`,
 * the controller owner reference, and either a fixed `name` or a `generateName`.
 */
export function podFromTemplate(
  template: PodTemplateSpec,
  opts: {
    namespace: string;
    owner: OwnerReference;
    name?: string;
    generateName?: string;
    extraLabels?: Record<string, string>;
  },
): Pod {
  const tm = template.metadata ?? {};
  const metadata: ObjectMeta = {
    namespace: opts.namespace,
    labels: { ...(tm.labels ?? {}), ...(opts.extraLabels ?? {}) },
    ownerReferences: [opts.owner],
  };
  if (opts.name) metadata.name = opts.name;
  else metadata.generateName = opts.generateName ?? `${opts.owner.name}-`;
  if (tm.annotations) metadata.annotations = { ...tm.annotations };
  if (tm.finalizers) metadata.finalizers = [...tm.finalizers];
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: structuredClone(template.spec) };
}

/** Deterministic JSON (object keys sorted) for hashing and comparisons. */
export function stableStringify(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stableStringify(o[k])}`)
    .join(',')}}`;
}

/** 32-bit FNV-1a of a string's UTF-16 code units (as unsigned integer). */
export function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * Maps a string onto the "safe" alphabet kubernetes uses for generated names and hashes
 * (`k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`): no vowels, no confusable characters.
 */
export function safeEncode(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) out += SAFE_ALPHABET[s.charCodeAt(i) % SAFE_ALPHABET.length];
  return out;
}

/**
 * Tracks writes a controller made that its informer has not reflected yet (client-go's
 * `ControllerExpectations`, by name rather than by count): created objects count as present and deleted
 * ones as absent until the cache shows them. Entries expire after `ttlMs` on the clock (a lost event
 * must not block a controller forever).
 */
export class Expectations<T extends KubeObject = KubeObject> {
  private readonly created = new Map<string, Map<string, { obj: T; at: number }>>();
  private readonly deleted = new Map<string, Map<string, number>>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs = 60_000,
  ) {}

  /** Records that `owner` created `obj` (its cache key `key`). */
  expectCreate(owner: string, key: string, obj: T): void {
    let m = this.created.get(owner);
    if (!m) {
      m = new Map();
      this.created.set(owner, m);
    }
    m.set(key, { obj, at: this.clock.now() });
  }

  /** Records that `owner` deleted the object with cache key `key`. */
  expectDelete(owner: string, key: string): void {
    let m = this.deleted.get(owner);
    if (!m) {
      m = new Map();
      this.deleted.set(owner, m);
    }
    m.set(key, this.clock.now());
  }

  /** The informer delivered an event for `key` (add, update or delete): a pending create is settled. */
  observed(key: string): void {
    for (const m of this.created.values()) m.delete(key);
  }

  /** Objects created by `owner` that the cache does not show yet (`inCache(key)` false). */
  pendingCreates(owner: string, inCache: (key: string) => boolean): T[] {
    const m = this.created.get(owner);
    if (!m) return [];
    const now = this.clock.now();
    const out: T[] = [];
    for (const [k, v] of m) {
      if (now - v.at > this.ttlMs || inCache(k)) m.delete(k);
      else out.push(v.obj);
    }
    return out;
  }

  /** Keys deleted by `owner` that the cache still shows (`inCache(key)` true). */
  pendingDeletes(owner: string, inCache: (key: string) => boolean): Set<string> {
    const m = this.deleted.get(owner);
    const out = new Set<string>();
    if (!m) return out;
    const now = this.clock.now();
    for (const [k, at] of m) {
      if (now - at > this.ttlMs || !inCache(k)) m.delete(k);
      else out.add(k);
    }
    return out;
  }

  /** Forgets everything about `owner` (it was deleted). */
  forget(owner: string): void {
    this.created.delete(owner);
    this.deleted.delete(owner);
  }
}

/**
 * The fields of `desired` that differ from `current` (deep comparison), or undefined when none do.
 * Used to write a status only when it changed.
 */
export function changedFields(
  current: Record<string, unknown> | undefined,
  desired: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [k, v] of Object.entries(desired)) {
    if (stableStringify(current?.[k]) !== stableStringify(v)) {
      out[k] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Order in which a ReplicaSet deletes surplus pods (kubernetes `controller.ActivePods` less-than):
 * unassigned before assigned, Pending before Unknown before Running, not ready before ready, newer before
 * older. Negative when `a` should be deleted first.
 */
export function deletionOrder(a: Pod, b: Pod): number {
  const assigned = (p: Pod) => (p.spec.nodeName ? 1 : 0);
  if (assigned(a) !== assigned(b)) return assigned(a) - assigned(b);
  const rank = (p: Pod) => ({ Pending: 0, Unknown: 1, Running: 2 })[p.status?.phase as string] ?? 0;
  if (rank(a) !== rank(b)) return rank(a) - rank(b);
  const ready = (p: Pod) => (isPodReady(p) ? 1 : 0);
  if (ready(a) !== ready(b)) return ready(a) - ready(b);
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta > tb ? -1 : 1;
  return (b.metadata.name ?? '').localeCompare(a.metadata.name ?? '');
}

/** `Ready` pods whose readiness has lasted `minReadySeconds` at `nowMs` (kubernetes `IsPodAvailable`). */
export function isPodAvailable(p: Pod, minReadySeconds: number, nowMs: number): boolean {
  if (!isPodReady(p)) return false;
  if (minReadySeconds <= 0) return true;
  const since = Date.parse(podCondition(p, 'Ready')?.lastTransitionTime ?? '');
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= nowMs;
}
