/**
 * mitchellh/hashstructure v2 (`hashstructure.Hash(v, FormatV2, &HashOptions{SlicesAsSets, IgnoreZeroValue,
 * ZeroNil})`, v2.0.2 `hashstructure.go` `walker.visit`), as upstream Karpenter calls it for the drift hashes
 * (`NodePool.Hash()`, `EC2NodeClass.Hash()`), over JSON values described by a Go type ({@link GoType}).
 *
 * Go's reflection supplies what JSON lacks: struct type names and Go field names (both hashed), field order (a
 * struct's hash is order-dependent: each field is XOR-ed in, then the running value is re-hashed), integer widths
 * (an `int32` hashes 4 little-endian bytes, an `int64` 8, a `bool` one byte) and `hash:"ignore"` / `hash:"string"`
 * tags. Rules reproduced: pointers and interfaces dereference, a nil one hashes as its element's zero value;
 * with IgnoreZeroValue a struct field whose value is Go's zero (nil pointer, nil or empty slice/map... see
 * {@link isZero}) is skipped; slices are sets (XOR, no finishing); maps XOR hash(key, value) pairs then finish;
 * strings hash their bytes; numbers their little-endian bytes. FNV-1 64 throughout (`fnv.New64`, not 1a). Pure: no I/O.
 */

/** A Go type as hashstructure sees it. Struct fields are in Go declaration order. */
export type GoType =
  | { kind: 'string' }
  | { kind: 'bool' }
  | { kind: 'int32' }
  | { kind: 'int64' }
  /** raw bytes hashed as written (`binary.Write` of a `[]byte`, as for `time.Time`'s MarshalBinary) */
  | { kind: 'bytes' }
  | { kind: 'ptr'; elem: GoType }
  | { kind: 'slice'; elem: GoType }
  | { kind: 'map'; key: GoType; value: GoType }
  | { kind: 'struct'; name: string; fields: GoField[] }
  /**
   * a Go type whose JSON differs from its fields (`metav1.Duration` is `"1h"` in JSON, a struct holding an int64 in
   * Go): `decode` turns the JSON into the JSON-like shape `type` describes, as the type's `UnmarshalJSON` does
   */
  | { kind: 'decode'; type: GoType; decode: (json: unknown, where: string) => unknown };

/**
 * A struct field: its Go name, JSON name (undefined for a field JSON never carries, e.g. an embedded struct whose
 * fields are inlined: then `inline`), type and `hash:` tag.
 */
export interface GoField {
  name: string;
  json?: string;
  /** an embedded struct whose JSON fields sit in the parent object (Go `ObjectMeta \`json:",inline"\``-like) */
  inline?: boolean;
  type: GoType;
  tag?: 'ignore' | 'string';
  /** for `hash:"string"`: the value's `String()` */
  stringer?: (json: unknown) => string;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** FNV-1 64 of bytes (Go's `hash/fnv.New64`, hashstructure's default hasher: multiply, then XOR). */
export function fnv64(bytes: Uint8Array): bigint {
  let h = FNV_OFFSET;
  for (const b of bytes) {
    h = (h * FNV_PRIME) & MASK;
    h ^= BigInt(b);
  }
  return h;
}

function le(value: bigint, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let v = BigInt.asUintN(bytes * 8, value);
  for (let i = 0; i < bytes; i++) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** hashstructure's `hashUpdateOrdered`: FNV of a then b, each 8 little-endian bytes. */
function ordered(a: bigint, b: bigint): bigint {
  const buf = new Uint8Array(16);
  buf.set(le(a, 8), 0);
  buf.set(le(b, 8), 8);
  return fnv64(buf);
}

/** hashstructure's `hashFinishUnordered`. */
function finish(a: bigint): bigint {
  return fnv64(le(a, 8));
}

/** The hash of a Go string. */
export function hashString(s: string): bigint {
  return fnv64(new TextEncoder().encode(s));
}

/** The hash of a Go `int64` (e.g. a `time.Duration` in nanoseconds). */
export function hashInt64(n: bigint): bigint {
  return fnv64(le(n, 8));
}

function toBigInt(v: unknown, where: string): bigint {
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'bigint') return v;
  throw new Error(`hashstructure: ${where} must be an integer, got ${JSON.stringify(v)}`);
}

/** Go's `reflect.Value.IsZero` of the value JSON `v` decodes to as `t`. */
export function isZero(t: GoType, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  switch (t.kind) {
    case 'string':
      return v === '';
    case 'bool':
      return v === false;
    case 'int32':
    case 'int64':
      return Number(v) === 0;
    case 'bytes':
      return false;
    case 'ptr':
    case 'slice':
    case 'map':
      return false; // a non-nil pointer, slice or map is never zero (even when empty)
    case 'struct':
      return t.fields.every((f) => isZero(f.type, fieldValue(f, v as Record<string, unknown>)));
    case 'decode':
      return isZero(t.type, t.decode(v, 'value'));
  }
}

function fieldValue(f: GoField, obj: Record<string, unknown>): unknown {
  if (f.inline) return obj;
  return f.json === undefined ? undefined : obj[f.json];
}

/** The zero JSON value of `t` (a nil pointer's element, as ZeroNil hashes it). */
function zeroOf(t: GoType): unknown {
  switch (t.kind) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'int32':
    case 'int64':
      return 0;
    case 'struct':
      return {};
    default:
      return undefined;
  }
}

/**
 * hashstructure's `visit` with SlicesAsSets, IgnoreZeroValue and ZeroNil, FormatV2. `where` names the value in
 * errors. Throws when the JSON does not match the Go type (an integer field holding a string, ...).
 */
export function hashValue(t: GoType, v: unknown, where = 'value'): bigint {
  switch (t.kind) {
    case 'ptr':
      return hashValue(t.elem, v ?? zeroOf(t.elem), where);
    case 'string':
      return hashString(String(v ?? ''));
    case 'bool':
      return fnv64(new Uint8Array([v === true ? 1 : 0]));
    case 'int32':
      return fnv64(le(toBigInt(v ?? 0, where), 4));
    case 'int64':
      return fnv64(le(toBigInt(v ?? 0, where), 8));
    case 'bytes':
      return fnv64(v as Uint8Array);
    case 'decode':
      return hashValue(t.type, t.decode(v, where), where);
    case 'slice': {
      let h = 0n;
      for (const [i, item] of ((v as unknown[] | undefined) ?? []).entries())
        h ^= hashValue(t.elem, item, `${where}[${i}]`);
      return h;
    }
    case 'map': {
      let h = 0n;
      for (const [k, item] of Object.entries((v as Record<string, unknown> | undefined) ?? {}))
        h ^= ordered(hashValue(t.key, k, where), hashValue(t.value, item, `${where}.${k}`));
      return finish(h);
    }
    case 'struct':
      return hashStruct(t, (v as Record<string, unknown> | undefined) ?? {}, where);
  }
}

function hashStruct(
  t: Extract<GoType, { kind: 'struct' }>,
  obj: Record<string, unknown>,
  where: string,
): bigint {
  let h = hashString(t.name);
  for (const f of t.fields) {
    if (f.tag === 'ignore') continue;
    const value = fieldValue(f, obj);
    if (isZero(f.type, value)) continue;
    const path = `${where}.${f.json ?? f.name}`;
    const vh =
      f.tag === 'string' && f.stringer ? hashString(f.stringer(value)) : hashValue(f.type, value, path);
    h = finish(h ^ ordered(hashString(f.name), vh));
  }
  return h;
}

/** `hashstructure.Hash([]any{...})` with SlicesAsSets: the elements' hashes XOR-ed, as a decimal string. */
export function hashAnySlice(items: { type: GoType; value: unknown }[], where = 'value'): string {
  let h = 0n;
  for (const { type, value } of items) h ^= hashValue(type, value, where);
  return h.toString(10);
}
