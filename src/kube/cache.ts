/**
 * Thread-safe-by-construction (single-threaded) object store with secondary indexes, fed by informers.
 * Like client-go's `cache.Indexer`: objects are keyed by `namespace/name`, index functions map an object
 * to zero or more index values, `byIndex(name, value)` returns the objects with that value.
 * Objects returned are the cached instances: treat them as read-only (copy with `structuredClone` first).
 */
import type { KubeObject, Node, Pod } from '../apis/core.ts';
import type { NodeClaim } from '../apis/karpenter.ts';
import { objectKey } from './client.ts';
import {
  type FieldSelectorInput,
  type LabelSelectorInput,
  labelMatcher,
  matchesFields,
} from './selectors.ts';

/** Maps an object to the index values it is found under (empty: not indexed). */
export type IndexFunc<T> = (obj: T) => string[];

/** Options of {@link Cache.list}. */
export interface CacheListOptions {
  namespace?: string;
  labelSelector?: LabelSelectorInput;
  fieldSelector?: FieldSelectorInput;
}

/** An indexed in-memory store of objects of one kind. */
export class Cache<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  /** index name → value → keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();
  /** Last resourceVersion the cache reflects (list or last watch event/bookmark). */
  resourceVersion = '';

  /** Registers an index. May be called with objects present (they are indexed immediately). Throws on duplicate names. */
  addIndexer(name: string, fn: IndexFunc<T>): this {
    if (this.indexers.has(name)) throw new Error(`cache: index "${name}" already exists`);
    this.indexers.set(name, fn);
    const idx = new Map<string, Set<string>>();
    this.indices.set(name, idx);
    for (const [key, obj] of this.items) for (const v of fn(obj)) addTo(idx, v, key);
    return this;
  }

  /** Object stored under `key` (`namespace/name` or `name`). */
  get(key: string): T | undefined {
    return this.items.get(key);
  }

  /** Object by name (and namespace for namespaced kinds). */
  getByName(name: string, namespace?: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  /** Number of objects. */
  size(): number {
    return this.items.size;
  }

  /** All keys. */
  keys(): string[] {
    return [...this.items.keys()];
  }

  /** Objects, optionally filtered by namespace and label/field selectors (same semantics as the API). */
  list(opts: CacheListOptions = {}): T[] {
    const lm = opts.labelSelector !== undefined ? labelMatcher(opts.labelSelector) : undefined;
    const out: T[] = [];
    for (const obj of this.items.values()) {
      if (opts.namespace !== undefined && obj.metadata?.namespace !== opts.namespace) continue;
      if (lm && !lm.matches(obj.metadata?.labels)) continue;
      if (opts.fieldSelector !== undefined && !matchesFields(opts.fieldSelector, obj)) continue;
      out.push(obj);
    }
    return out;
  }

  /** Objects whose index `name` contains `value`. Throws when the index does not exist. */
  byIndex(name: string, value: string): T[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`cache: no index "${name}" (add it with addIndexer before use)`);
    const keys = idx.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const o = this.items.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  /** Distinct values present in index `name`. */
  indexValues(name: string): string[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`cache: no index "${name}"`);
    return [...idx.keys()];
  }

  /** Inserts or replaces `obj`; returns the previous version. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Removes the object with `obj`'s key; returns what was stored. */
  remove(obj: T | string): T | undefined {
    const key = typeof obj === 'string' ? obj : objectKey(obj);
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  /**
   * Replaces the whole content (after a relist). Returns what changed, so the informer can emit
   * add/update/delete: `added`, `updated` (`[old, new]`, only when resourceVersion differs), `deleted`.
   */
  replace(objs: T[], resourceVersion: string): { added: T[]; updated: Array<[T, T]>; deleted: T[] } {
    const added: T[] = [];
    const updated: Array<[T, T]> = [];
    const seen = new Set<string>();
    for (const o of objs) {
      const key = objectKey(o);
      seen.add(key);
      const old = this.upsert(o);
      if (!old) added.push(o);
      else if (old.metadata?.resourceVersion !== o.metadata?.resourceVersion) updated.push([old, o]);
    }
    const deleted: T[] = [];
    for (const [key, o] of [...this.items]) {
      if (!seen.has(key)) {
        this.remove(key);
        deleted.push(o);
      }
    }
    this.resourceVersion = resourceVersion;
    return { added, updated, deleted };
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indices.get(name) as Map<string, Set<string>>;
      for (const v of fn(obj)) addTo(idx, v, key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indices.get(name) as Map<string, Set<string>>;
      for (const v of fn(obj)) {
        const s = idx.get(v);
        if (!s) continue;
        s.delete(key);
        if (s.size === 0) idx.delete(v);
      }
    }
  }
}

function addTo(idx: Map<string, Set<string>>, v: string, key: string): void {
  let s = idx.get(v);
  if (!s) {
    s = new Set();
    idx.set(v, s);
  }
  s.add(key);
}

/** Index names used by the ready-made index functions below. */
export const IndexNames = {
  namespace: 'namespace',
  nodeName: 'spec.nodeName',
  providerID: 'providerID',
  ownerUID: 'ownerUID',
  nodeClaimNodeName: 'status.nodeName',
} as const;

/** Index: `metadata.namespace`. */
export const indexByNamespace: IndexFunc<KubeObject> = (o) =>
  o.metadata?.namespace ? [o.metadata.namespace] : [];

/** Index: pods by `spec.nodeName` (unbound pods are not indexed). */
export const indexPodsByNodeName: IndexFunc<Pod> = (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []);

/** Index: NodeClaims by `status.providerID`, Nodes by `spec.providerID` (objects without one are not indexed). */
export const indexByProviderID: IndexFunc<NodeClaim | Node> = (o) => {
  const id =
    (o as NodeClaim).status?.providerID ??
    ((o as Node).spec as { providerID?: string } | undefined)?.providerID;
  return typeof id === 'string' && id !== '' ? [id] : [];
};

/** Index: NodeClaims by `status.nodeName`. */
export const indexNodeClaimsByNodeName: IndexFunc<NodeClaim> = (o) => {
  const n = (o.status as { nodeName?: string } | undefined)?.nodeName;
  return n ? [n] : [];
};

/** Index: uids of `metadata.ownerReferences`. */
export const indexByOwnerUID: IndexFunc<KubeObject> = (o) =>
  (o.metadata?.ownerReferences ?? []).map((r) => r.uid);

/** Index factory: the value of label `key` (objects without it are not indexed). Name it e.g. `label:<key>`. */
export function indexByLabel(key: string): IndexFunc<KubeObject> {
  return (o) => {
    const v = o.metadata?.labels?.[key];
    return v !== undefined ? [v] : [];
  };
}
