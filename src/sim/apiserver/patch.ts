/**
 * Patch application: JSON merge patch (RFC 7386), JSON patch (RFC 6902, via fast-json-patch),
 * strategic merge patch for built-in kinds (k8s.io/apimachinery/pkg/util/strategicpatch: merge keys
 * from the Go struct tags `patchMergeKey`, directives `$patch`, `$retainKeys`,
 * `$deleteFromPrimitiveList/…`, `$setElementOrder/…`), and a simplified server-side apply.
 */
import fastJsonPatch from 'fast-json-patch';
import { ApiError, badRequest } from '../../apis/builtin/errors.ts';
import { asArr, asObj, clone, type Json, type JsonObject } from '../../apis/builtin/types.ts';

/** RFC 7386 merge patch: objects merge recursively, `null` deletes, everything else replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  const p = asObj(patch);
  if (!p) return clone(patch);
  const t: JsonObject = { ...(asObj(target) ?? {}) };
  for (const [k, v] of Object.entries(p)) {
    if (v === null) delete t[k];
    else if (v !== undefined) t[k] = mergePatch(t[k], v);
  }
  return t;
}

/** RFC 6902 JSON patch; throws 422/400-style ApiError naming the failing operation. */
export function jsonPatch(target: JsonObject, ops: Json): JsonObject {
  if (!Array.isArray(ops)) throw badRequest('json patch must be an array of operations');
  try {
    const res = fastJsonPatch.applyPatch(
      clone(target),
      ops as unknown as fastJsonPatch.Operation[],
      true,
      true,
      true,
    );
    const out = asObj(res.newDocument);
    if (!out) throw badRequest('json patch result is not an object');
    return out;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
    // the real server answers 422 for a failed test op / missing path, 400 for malformed ops
    throw new ApiError(
      422,
      'Invalid',
      `the server rejected our request due to an error in our request: ${msg}`,
    );
  }
}

/**
 * Merge key of a list field for strategic merge patch, chosen from the field name and the element shape.
 * `undefined` = atomic list (replaced whole), `''` = primitive list with merge strategy (set union).
 */
export function mergeKeyFor(field: string, sample: JsonObject | undefined): string | undefined {
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'ephemeralContainers':
    case 'volumes':
    case 'env':
    case 'imagePullSecrets':
    case 'containerStatuses':
    case 'initContainerStatuses':
      return 'name';
    case 'volumeMounts':
      return 'mountPath';
    case 'volumeDevices':
      return 'devicePath';
    case 'ports':
      return sample && 'containerPort' in sample ? 'containerPort' : 'port';
    case 'conditions':
    case 'addresses':
      return 'type';
    case 'taints':
      return 'key';
    case 'ownerReferences':
      return 'uid';
    case 'hostAliases':
      return 'ip';
    case 'topologySpreadConstraints':
      return 'topologyKey';
    case 'readinessGates':
      return 'conditionType';
    case 'finalizers':
      return '';
    default:
      return undefined;
  }
}

function keyOf(item: Json | undefined, key: string): string | undefined {
  const o = asObj(item);
  if (!o) return undefined;
  const v = o[key];
  return v === undefined ? undefined : JSON.stringify(v);
}

function smpList(
  field: string,
  orig: Json | undefined,
  patch: Json[],
  deleteFromPrimitive: Json[] | undefined,
): Json[] {
  const o = asArr(orig) ?? [];
  const sample = asObj(patch.find((x) => asObj(x)) ?? o.find((x) => asObj(x)));
  const mk = mergeKeyFor(field, sample);
  // `$patch: replace` marker inside the list replaces it wholesale
  if (patch.some((x) => asObj(x)?.$patch === 'replace')) {
    return patch.filter((x) => asObj(x)?.$patch !== 'replace').map((x) => stripDirectives(x));
  }
  if (mk === undefined) return patch.map((x) => stripDirectives(x));
  if (mk === '') {
    const out = o.filter(
      (x) => !(deleteFromPrimitive ?? []).some((d) => JSON.stringify(d) === JSON.stringify(x)),
    );
    for (const p of patch) if (!out.some((x) => JSON.stringify(x) === JSON.stringify(p))) out.push(p);
    return out;
  }
  const out: Json[] = o.map((x) => clone(x));
  for (const p of patch) {
    const po = asObj(p);
    const k = keyOf(p, mk);
    if (!po || k === undefined) {
      out.push(stripDirectives(p));
      continue;
    }
    const idx = out.findIndex((x) => keyOf(x, mk) === k);
    if (po.$patch === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMerge(out[idx], po);
    else out.push(stripDirectives(po));
  }
  return out;
}

function stripDirectives(v: Json): Json {
  const o = asObj(v);
  if (!o) return Array.isArray(v) ? v.map((x) => stripDirectives(x)) : v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(o)) {
    if (k.startsWith('$')) continue;
    if (x !== undefined && x !== null) out[k] = stripDirectives(x);
  }
  return out;
}

/**
 * Strategic merge patch of `patch` onto `target` (built-in kinds). Lists with a known merge key merge
 * element-wise (`$patch: delete` removes an element), other lists (e.g. tolerations, which are
 * atomic in Kubernetes) are replaced; `null` deletes a field; `$patch: replace` on a map replaces it.
 */
export function strategicMerge(target: Json | undefined, patch: Json): Json {
  const p = asObj(patch);
  if (!p) return clone(patch);
  if (p.$patch === 'replace') return stripDirectives(p);
  if (p.$patch === 'delete') return {};
  const t: JsonObject = { ...(asObj(target) ?? {}) };
  const retain = asArr(p.$retainKeys);
  for (const [k, v] of Object.entries(p)) {
    if (v === undefined || k.startsWith('$')) continue;
    if (v === null) {
      delete t[k];
      continue;
    }
    if (Array.isArray(v)) {
      const del = asArr(p[`$deleteFromPrimitiveList/${k}`]);
      t[k] = smpList(k, t[k], v, del);
    } else if (asObj(v)) {
      t[k] = strategicMerge(t[k], v);
    } else t[k] = v;
  }
  for (const [k, v] of Object.entries(p)) {
    const m = /^\$deleteFromPrimitiveList\/(.+)$/.exec(k);
    if (m && !(m[1]! in p)) {
      const cur = asArr(t[m[1]!]);
      const del = asArr(v) ?? [];
      if (cur) t[m[1]!] = cur.filter((x) => !del.some((d) => JSON.stringify(d) === JSON.stringify(x)));
    }
  }
  if (retain) {
    const keep = new Set(retain.map((x) => String(x)));
    for (const k of Object.keys(t)) if (!keep.has(k)) delete t[k];
  }
  return t;
}

/**
 * The merge step of server-side apply: the applied configuration is merged into the live object like a
 * strategic merge patch (lists with merge keys merge, others replace). Ownership, conflicts and the
 * removal of dropped fields are `managedfields.ts`'s part.
 */
export function applyConfig(live: JsonObject | undefined, applied: JsonObject): JsonObject {
  const out = asObj(strategicMerge(live ?? {}, applied));
  return out ?? {};
}
