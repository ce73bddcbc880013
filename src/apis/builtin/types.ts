/**
 * Shared shapes of the embedded API server (`sim/apiserver`) and of `capenter simulate`'s manifest checks:
 * loose JSON objects as they travel on the wire, and the description of one served resource (built-in or
 * from a CustomResourceDefinition).
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
  [key: string]: Json | undefined;
}

/** `metadata` of a stored object (only the fields the server itself reads or writes are named). */
export interface Meta extends JsonObject {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerRef[];
}

/** `metav1.OwnerReference`. */
export interface OwnerRef extends JsonObject {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A Kubernetes object as stored: `apiVersion`, `kind` and `metadata` always present once stored. */
export interface KObj extends JsonObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Meta;
}

/** A stored object (metadata guaranteed). */
export interface StoredObj extends KObj {
  apiVersion: string;
  kind: string;
  metadata: Meta & { name: string; uid: string; resourceVersion: string; creationTimestamp: string };
}

/** Scale subresource mapping (CRD `subresources.scale`, or fixed for apps/v1 kinds). */
export interface ScaleSpec {
  /** JSON path like `.spec.replicas` */
  specReplicasPath: string;
  /** JSON path like `.status.replicas` */
  statusReplicasPath: string;
  /** JSON path like `.status.selector` (string form), optional */
  labelSelectorPath?: string;
}

/** One printer column (CRD `additionalPrinterColumns` shape; built-ins use it too). */
export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  format?: string;
  description?: string;
  priority?: number;
}

/**
 * One served resource in one group/version. Objects are stored once per `storageKey`
 * (`group/plural`); every served version of a CRD shares the storage (conversion strategy None:
 * only `apiVersion` is rewritten on the way out).
 */
export interface ResourceDef {
  /** `''` for the core group */
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  /** `group/plural`, shared by all versions of the resource */
  storageKey: string;
  /** apiVersion objects are stored with (`v1`, `apps/v1`, `karpenter.sh/v1`) */
  storageApiVersion: string;
  /** has a `status` subresource (status ignored on main-resource writes, spec ignored on /status) */
  hasStatus: boolean;
  scale?: ScaleSpec;
  /** metadata.generation maintained and bumped on spec changes */
  tracksGeneration: boolean;
  /** keep status sent on create (nodes) instead of resetting it */
  keepStatusOnCreate: boolean;
  /** extra subresources accepted via POST (binding, eviction) */
  postSubresources: string[];
  printerColumns?: PrinterColumn[];
  /** for custom resources: the CRD name (`plural.group`) */
  crdName?: string;
}

/** Minimal structured logger (pino-compatible subset). */
export interface ApiServerLogger {
  debug?(obj: object, msg?: string): void;
  info?(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
  error?(obj: object, msg?: string): void;
}

/** Narrow a JSON value to an object (not array, not null). */
export function asObj(v: unknown): JsonObject | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonObject) : undefined;
}

/** Narrow a JSON value to an array. */
export function asArr(v: unknown): Json[] | undefined {
  return Array.isArray(v) ? (v as Json[]) : undefined;
}

/** Narrow a JSON value to a string. */
export function asStr(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Read a dotted path (`spec.nodeName`) from an object; undefined when any step is missing. */
export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (part === '') continue;
    const o = asObj(cur);
    if (!o) return undefined;
    cur = o[part];
  }
  return cur;
}

/** Set a dotted path, creating intermediate objects. */
export function setPath(obj: JsonObject, path: string, value: Json): void {
  const parts = path.split('.').filter((p) => p !== '');
  let cur: JsonObject = obj;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i]!;
    let next = asObj(cur[p]);
    if (!next) {
      next = {};
      cur[p] = next;
    }
    cur = next;
  }
  const last = parts[parts.length - 1];
  if (last !== undefined) cur[last] = value;
}

/**
 * Deep clone of a JSON value (objects stored by the server are never mutated in place), with the result of a
 * `JSON.parse(JSON.stringify(v))` round trip: properties whose value is undefined, a function or a symbol are
 * dropped, such array elements and non-finite numbers become null, objects with `toJSON` (Dates) are
 * serialised. Copies without building the text (a third of the time, no string garbage).
 */
export function clone<T>(v: T): T {
  return v === undefined ? v : (cloneJson(v) as T);
}

function cloneJson(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) {
    if (typeof v === 'number' && !Number.isFinite(v)) return null;
    return v;
  }
  if (Array.isArray(v)) {
    const out: unknown[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      out[i] = x === undefined || typeof x === 'function' || typeof x === 'symbol' ? null : cloneJson(x);
    }
    return out;
  }
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return JSON.parse(JSON.stringify(v));
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const x: unknown = (v as Record<string, unknown>)[k];
    if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
    if (k === '__proto__')
      Object.defineProperty(out, k, {
        value: cloneJson(x),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else out[k] = cloneJson(x);
  }
  return out;
}

/** Structural equality of two JSON values (key order ignored). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!deepEqual(ao[k], bo[k])) return false;
  return true;
}
