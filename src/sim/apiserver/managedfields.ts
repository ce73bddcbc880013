/**
 * Field ownership (`metadata.managedFields`) the way the real server's structured-merge-diff keeps it:
 * - every write names a manager (`fieldManager`, else the User-Agent's program name, else `unknown`);
 * - an Update (create, PUT, non-apply PATCH) gives its manager the fields it changed and takes them from
 *   the others; entries list `.` for the maps and keyed list items a manager owns;
 * - an Apply owns exactly the fields of its configuration: a field another manager owns with a
 *   different value is a 409 conflict (unless `force`, which takes it over), and fields the manager
 *   applied before and dropped now are removed from the object when nobody else owns them.
 * Field paths follow FieldsV1: `f:<key>` for map keys, `k:{"name":"c"}` for items of keyed lists,
 * `v:<json>` for items of sets; other lists are atomic. Conflict paths read `.data.x`,
 * `.spec.containers[name="c"].image`. Source: sigs.k8s.io/structured-merge-diff v4, apiserver fieldmanager.
 */
import { ApiError } from '../../apis/builtin/errors.ts';
import { asArr, asObj, deepEqual, type Json, type JsonObject, type KObj } from '../../apis/builtin/types.ts';
import { mergeKeyFor } from './patch.ts';

const SEP = '\u0001';

/** A set of leaf field paths (segments joined by U+0001). */
export type FieldSet = Set<string>;

/** The part of an object whose fields are owned: no status (main resource) and no system metadata. */
export function ownedPart(obj: KObj, subresource: string | undefined, hasStatus: boolean): JsonObject {
  if (subresource === 'status') return { status: obj.status ?? {} };
  const copy: JsonObject = { ...obj };
  delete copy.apiVersion;
  delete copy.kind;
  if (hasStatus) delete copy.status;
  const meta = asObj(copy.metadata);
  if (meta) {
    const m: JsonObject = {};
    for (const k of ['labels', 'annotations', 'finalizers', 'ownerReferences'])
      if (meta[k] !== undefined) m[k] = meta[k];
    if (Object.keys(m).length > 0) copy.metadata = m;
    else delete copy.metadata;
  }
  return copy;
}

/**
 * Leaf paths of a value. `dots`: mark owned maps with `.` (Update entries); keyed list items always
 * get `.`.
 */
export function leaves(v: Json, dots: boolean, out: FieldSet = new Set(), prefix = '', field = ''): FieldSet {
  const o = asObj(v);
  if (o) {
    const keys = Object.keys(o).filter((k) => o[k] !== undefined);
    if (keys.length === 0) {
      if (prefix !== '') out.add(prefix);
      return out;
    }
    if (dots && prefix !== '' && field !== 'metadata') out.add(join(prefix, '.'));
    for (const k of keys) leaves(o[k] as Json, dots, out, join(prefix, `f:${k}`), k);
    return out;
  }
  const a = asArr(v);
  if (a) {
    const mk = mergeKeyFor(field, asObj(a[0]));
    if (mk === undefined || a.length === 0) out.add(prefix);
    else if (mk === '') for (const item of a) out.add(join(prefix, `v:${JSON.stringify(item)}`));
    else
      for (const item of a) {
        const io = asObj(item);
        if (!io || io[mk] === undefined) continue;
        const ip = join(prefix, `k:${JSON.stringify({ [mk]: io[mk] })}`);
        out.add(join(ip, '.'));
        for (const [k, x] of Object.entries(io))
          if (x !== undefined) leaves(x, dots, out, join(ip, `f:${k}`), k);
      }
    return out;
  }
  out.add(prefix);
  return out;
}

function join(prefix: string, seg: string): string {
  return prefix === '' ? seg : `${prefix}${SEP}${seg}`;
}

/** FieldsV1 JSON of a set. */
export function toFieldsV1(set: FieldSet): JsonObject {
  const root: JsonObject = {};
  for (const p of [...set].sort()) {
    let cur = root;
    for (const seg of p.split(SEP)) {
      cur[seg] ??= {};
      cur = cur[seg] as JsonObject;
    }
  }
  return root;
}

/** The set of a FieldsV1 JSON tree. */
export function fromFieldsV1(v: Json | undefined, out: FieldSet = new Set(), prefix = ''): FieldSet {
  const o = asObj(v);
  if (!o) return out;
  const keys = Object.keys(o);
  if (keys.length === 0 && prefix !== '') out.add(prefix);
  for (const k of keys) fromFieldsV1(o[k], out, join(prefix, k));
  return out;
}

/** The value at a path (undefined when absent); `.` is the node itself. */
function valueAt(obj: Json | undefined, path: string): Json | undefined {
  let cur: Json | undefined = obj;
  for (const seg of path.split(SEP)) {
    if (cur === undefined || cur === null) return undefined;
    if (seg === '.') continue;
    if (seg.startsWith('f:')) cur = asObj(cur)?.[seg.slice(2)];
    else if (seg.startsWith('k:')) {
      const key = JSON.parse(seg.slice(2)) as JsonObject;
      cur = asArr(cur)?.find((x) => Object.entries(key).every(([k, v]) => deepEqual(asObj(x)?.[k], v)));
    } else if (seg.startsWith('v:')) {
      const want = JSON.parse(seg.slice(2)) as Json;
      cur = asArr(cur)?.some((x) => deepEqual(x, want)) ? want : undefined;
    } else return undefined;
  }
  return cur;
}

/** `.data.x`, `.spec.containers[name="c"].image` */
function displayPath(path: string): string {
  let out = '';
  for (const seg of path.split(SEP)) {
    if (seg === '.') continue;
    if (seg.startsWith('f:')) out += `.${seg.slice(2)}`;
    else if (seg.startsWith('k:')) {
      const key = JSON.parse(seg.slice(2)) as JsonObject;
      out += `[${Object.entries(key)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',')}]`;
    } else if (seg.startsWith('v:')) out += `[=${seg.slice(2)}]`;
  }
  return out;
}

/** Remove the field at a path from `obj` (in place); a keyed item goes when its `.` is removed. */
function removeAt(obj: JsonObject, path: string): void {
  const segs = path.split(SEP);
  let last = segs.pop()!;
  if (last === '.') last = segs.pop() ?? '';
  const parent = valueAt(obj, segs.join(SEP));
  if (last.startsWith('f:')) {
    const p = asObj(parent);
    if (p) delete p[last.slice(2)];
    return;
  }
  const arr = asArr(parent);
  if (!arr) return;
  const target = valueAt(arr, last);
  const i = target === undefined ? -1 : arr.indexOf(target);
  if (i >= 0) arr.splice(i, 1);
}

/** One `managedFields` entry, decoded. */
interface Entry {
  manager: string;
  operation: string;
  subresource: string | undefined;
  raw: JsonObject;
  set: FieldSet;
}

function decode(managedFields: Json | undefined): Entry[] {
  return (asArr(managedFields) ?? []).flatMap((e) => {
    const o = asObj(e);
    if (!o) return [];
    return [
      {
        manager: String(o.manager ?? ''),
        operation: String(o.operation ?? ''),
        subresource: typeof o.subresource === 'string' ? o.subresource : undefined,
        raw: o,
        set: fromFieldsV1(o.fieldsV1),
      },
    ];
  });
}

const seconds = (e: Entry): number => (typeof e.raw.time === 'string' ? Date.parse(e.raw.time) / 1000 : 0);

/** Entries in the real server's order: operation, then time (none first), then manager, then apiVersion. */
function encode(entries: Entry[]): JsonObject[] {
  return entries
    .filter((e) => e.set.size > 0)
    .sort(
      (a, b) =>
        a.operation.localeCompare(b.operation) ||
        seconds(a) - seconds(b) ||
        a.manager.localeCompare(b.manager) ||
        String(a.raw.apiVersion ?? '').localeCompare(String(b.raw.apiVersion ?? '')),
    )
    .map((e) => ({ ...e.raw, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(e.set) }));
}

/** Who writes and how: manager, apiVersion the request used, time, subresource. */
export interface WriteContext {
  manager: string;
  apiVersion: string;
  time: string;
  subresource: string | undefined;
  hasStatus: boolean;
}

function entryFor(entries: Entry[], w: WriteContext, operation: string): Entry {
  let e = entries.find(
    (x) => x.manager === w.manager && x.operation === operation && x.subresource === w.subresource,
  );
  if (!e) {
    e = { manager: w.manager, operation, subresource: w.subresource, raw: {}, set: new Set() };
    entries.push(e);
  }
  e.raw = {
    manager: w.manager,
    operation,
    apiVersion: w.apiVersion,
    time: w.time,
    ...(w.subresource ? { subresource: w.subresource } : {}),
  };
  return e;
}

/**
 * managedFields after an Update (create, PUT, non-apply PATCH) that turned `old` (undefined on create)
 * into `next`, starting from `managedFields` (the stored ones, or what a PUT sent): the changed fields move
 * to the writer.
 */
export function recordUpdate(
  managedFields: Json | undefined,
  old: KObj | undefined,
  next: KObj,
  w: WriteContext,
): JsonObject[] {
  const entries = decode(managedFields);
  const after = ownedPart(next, w.subresource, w.hasStatus);
  const before = old ? ownedPart(old, w.subresource, w.hasStatus) : undefined;
  const now = leaves(after, true);
  const had = before ? leaves(before, true) : new Set<string>();
  // a `.` (the map or item itself) changes hands only when it is new; a leaf whenever its value changes
  const changed = [...now].filter(
    (p) => !had.has(p) || (!p.endsWith('.') && !deepEqual(valueAt(before, p), valueAt(after, p))),
  );
  for (const e of entries) {
    if (e.subresource !== w.subresource) continue;
    for (const p of changed) e.set.delete(p);
    for (const p of [...e.set]) if (!now.has(p) && valueAt(after, p) === undefined) e.set.delete(p);
  }
  if (changed.length > 0) {
    const mine = entryFor(entries, w, 'Update');
    for (const p of changed) mine.set.add(p);
  }
  return encode(entries);
}

/** The result of an apply: the object to store (before defaulting) and its managedFields. */
export interface ApplyResult {
  obj: JsonObject;
  managedFields: JsonObject[];
}

/**
 * Server-side apply of configuration `config` by `w.manager` onto `live` (undefined: create), merging
 * with `merge(liveWithoutDroppedFields, config)`.
 * @throws ApiError 409 Conflict listing every field another manager owns with a different value
 *   (unless `force`)
 */
export function apply(
  live: KObj | undefined,
  config: JsonObject,
  w: WriteContext,
  force: boolean,
  merge: (live: JsonObject, config: JsonObject) => JsonObject,
): ApplyResult {
  const entries = decode(live?.metadata?.managedFields);
  const cfg = ownedPart(config as KObj, w.subresource, w.hasStatus);
  const applied = leaves(cfg, false);
  const livePart = live ? ownedPart(live, w.subresource, w.hasStatus) : {};
  const conflicts = new Map<string, string[]>();
  for (const e of entries) {
    if (e.manager === w.manager && e.subresource === w.subresource) continue;
    for (const p of applied) {
      if (p.endsWith('.') || !e.set.has(p)) continue;
      if (deepEqual(valueAt(livePart, p), valueAt(cfg, p))) continue;
      if (force) e.set.delete(p);
      else conflicts.set(e.manager, [...(conflicts.get(e.manager) ?? []), p]);
    }
  }
  for (const ps of conflicts.values()) ps.sort((x, y) => displayPath(x).localeCompare(displayPath(y)));
  if (conflicts.size > 0) throw conflictError(conflicts);
  const prevTime = entries.find(
    (e) => e.manager === w.manager && e.operation === 'Apply' && e.subresource === w.subresource,
  )?.raw.time;
  const mine = entryFor(entries, w, 'Apply');
  const othersOwn = new Set(entries.filter((e) => e !== mine).flatMap((e) => [...e.set]));
  const base = structuredClone((live ?? {}) as JsonObject);
  for (const p of mine.set) if (!applied.has(p) && !othersOwn.has(p)) removeAt(base, p);
  mine.set = applied;
  const obj = merge(base, config);
  // an apply that changes nothing leaves the entry's time as it was (none for a new entry)
  if (live && deepEqual(livePart, ownedPart(obj as KObj, w.subresource, w.hasStatus))) {
    if (prevTime === undefined) delete mine.raw.time;
    else mine.raw.time = prevTime;
  }
  return { obj, managedFields: encode(entries) };
}

function conflictError(conflicts: Map<string, string[]>): ApiError {
  const total = [...conflicts.values()].reduce((n, ps) => n + ps.length, 0);
  const groups = [...conflicts].map(([m, ps]) =>
    ps.length === 1
      ? `conflict with "${m}": ${displayPath(ps[0]!)}`
      : `conflicts with "${m}":\n${ps.map((p) => `- ${displayPath(p)}`).join('\n')}`,
  );
  return new ApiError(
    409,
    'Conflict',
    `Apply failed with ${total} conflict${total === 1 ? '' : 's'}: ${groups.join('\n')}`,
    {
      causes: [...conflicts].flatMap(([m, ps]) =>
        ps.map((p) => ({
          reason: 'FieldManagerConflict',
          message: `conflict with "${m}"`,
          field: displayPath(p),
        })),
      ),
    },
  );
}
