/**
 * CRD validation rules (`x-kubernetes-validations`) evaluated the way the apiextensions-apiserver does:
 * every rule of every schema node that holds a value, `self` bound to that value (typed by the schema:
 * `integer` → CEL int, objects → maps, arrays → lists), `oldSelf` to the correlated old value for
 * transition rules (which are skipped on create and where no old value correlates: list items only
 * correlate in `x-kubernetes-list-type: map` lists, by their map keys). Nodes are visited pre-order,
 * properties in name order, like the real server's error list.
 *
 * Functions: CEL's standard library, the `strings` extension (`split`, `lowerAscii`, …) and the
 * Kubernetes regex library (`find`, `findAll`). A rule that fails to compile or evaluate (an extension
 * function the library does not have) is skipped, never turned into a rejection.
 *
 * Messages mirror k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel: `Invalid value: "object":
 * <message>` (`failed rule: <rule>` without a message), the field path plus the rule's `fieldPath`, the
 * cause reason from the rule's `reason` (default FieldValueInvalid).
 */
import {
  type CelInput,
  CelScalar,
  type CelValue,
  celEnv,
  celList,
  celMethod,
  isCelError,
  listType,
  parse,
  plan,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import type { StatusCause } from '../../apis/builtin/errors.ts';
import { asArr, asObj, asStr, type Json, type JsonObject } from '../../apis/builtin/types.ts';

function regex(pattern: string): RegExp {
  return new RegExp(pattern, 'u');
}

/** Kubernetes regex library: `'abc'.find('[a-z]+')`, `findAll(re)`, `findAll(re, n)`. */
const K8S_FUNCS = [
  celMethod('find', CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (re) {
    return regex(re).exec(this)?.[0] ?? '';
  }),
  celMethod('findAll', CelScalar.STRING, [CelScalar.STRING], listType(CelScalar.STRING), function (re) {
    return celList([...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]));
  }),
  celMethod(
    'findAll',
    CelScalar.STRING,
    [CelScalar.STRING, CelScalar.INT],
    listType(CelScalar.STRING),
    function (re, n) {
      const all = [...this.matchAll(new RegExp(re, 'gu'))].map((m) => m[0]);
      return celList(n < 0n ? all : all.slice(0, Number(n)));
    },
  ),
];

const ENV = celEnv({ funcs: [...strings, ...K8S_FUNCS] });

type Program = (vars: Record<string, CelInput>) => CelValue | Error;
/** Compiled programs by rule text (shared by every schema and server in the process); null = unusable. */
const PROGRAMS = new Map<string, Program | null>();

function compile(rule: string): Program | null {
  let p = PROGRAMS.get(rule);
  if (p !== undefined) return p;
  try {
    const run = plan(ENV, parse(rule));
    p = (vars) => run(vars as never) as CelValue | Error;
  } catch {
    p = null;
  }
  PROGRAMS.set(rule, p);
  return p;
}

/** One `x-kubernetes-validations` entry. */
interface Rule {
  rule: string;
  message?: string;
  fieldPath?: string;
  reason?: string;
  transition: boolean;
}

function rulesOf(schema: JsonObject): Rule[] {
  return (asArr(schema['x-kubernetes-validations']) ?? []).flatMap((r) => {
    const o = asObj(r);
    const rule = asStr(o?.rule);
    if (!o || !rule) return [];
    const out: Rule = { rule, transition: /\boldSelf\b/.test(rule) && o.optionalOldSelf !== true };
    const message = asStr(o.message);
    if (message) out.message = message;
    const fieldPath = asStr(o.fieldPath);
    if (fieldPath) out.fieldPath = fieldPath;
    const reason = asStr(o.reason);
    if (reason) out.reason = reason;
    return [out];
  });
}

/** A JSON value as a CEL value typed by its schema (integers → int, objects → maps, arrays → lists). */
export function toCel(v: Json | undefined, schema: JsonObject | undefined): CelInput {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    const t = schema?.type;
    const intLike = t === 'integer' || schema?.['x-kubernetes-int-or-string'] === true || t === undefined;
    return intLike && Number.isInteger(v) ? BigInt(v) : v;
  }
  if (Array.isArray(v)) {
    const items = asObj(schema?.items);
    return v.map((x) => toCel(x, items));
  }
  if (typeof v === 'object') {
    const props = asObj(schema?.properties);
    const addl = asObj(schema?.additionalProperties);
    const m = new Map<string, CelInput>();
    for (const [k, x] of Object.entries(v))
      if (x !== undefined) m.set(k, toCel(x, asObj(props?.[k]) ?? addl));
    return m;
  }
  return v;
}

function typeName(schema: JsonObject, v: Json): string {
  const t = asStr(schema.type);
  if (t) return t;
  return Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
}

function cause(rule: Rule, path: string, type: string): StatusCause {
  const message = rule.message ?? `failed rule: ${rule.rule}`;
  const field = rule.fieldPath
    ? `${path}${rule.fieldPath.startsWith('[') ? '' : '.'}${rule.fieldPath.replace(/^\./, '')}`
    : path;
  switch (rule.reason) {
    case 'FieldValueRequired':
      return { reason: rule.reason, field, message: `Required value: ${message}` };
    case 'FieldValueForbidden':
      return { reason: rule.reason, field, message: `Forbidden: ${message}` };
    case 'FieldValueDuplicate':
      return { reason: rule.reason, field, message: `Duplicate value: "${type}": ${message}` };
    default:
      return { reason: 'FieldValueInvalid', field, message: `Invalid value: "${type}": ${message}` };
  }
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function mapKey(item: Json, keys: string[]): string {
  const o = asObj(item);
  return JSON.stringify(keys.map((k) => o?.[k] ?? null));
}

/** The visitor of {@link validateRules}. */
function walk(
  schema: JsonObject,
  v: Json | undefined,
  old: Json | undefined,
  path: string,
  out: StatusCause[],
): void {
  if (v === undefined || v === null) return;
  const rules = rulesOf(schema);
  if (rules.length > 0) {
    let self: CelInput | undefined;
    let oldSelf: CelInput | undefined;
    for (const rule of rules) {
      if (rule.transition && (old === undefined || old === null)) continue;
      const program = compile(rule.rule);
      if (!program) continue;
      self ??= toCel(v, schema);
      const vars: Record<string, CelInput> = { self };
      if (rule.transition) {
        oldSelf ??= toCel(old, schema);
        vars.oldSelf = oldSelf;
      }
      const r = program(vars);
      if (isCelError(r) || r instanceof Error) continue;
      if (r !== true) out.push(cause(rule, path, typeName(schema, v)));
    }
  }
  walkChildren(schema, v, old, path, out);
}

function walkChildren(
  schema: JsonObject,
  v: Json,
  old: Json | undefined,
  path: string,
  out: StatusCause[],
): void {
  if (Array.isArray(v)) {
    const items = asObj(schema.items);
    if (!items) return;
    const keys = (asArr(schema['x-kubernetes-list-map-keys']) ?? []).map(String);
    const correlate = schema['x-kubernetes-list-type'] === 'map' && keys.length > 0 && Array.isArray(old);
    const olds = correlate ? new Map((old as Json[]).map((o) => [mapKey(o, keys), o])) : undefined;
    v.forEach((x, i) => {
      walk(items, x, olds?.get(mapKey(x, keys)), `${path}[${i}]`, out);
    });
    return;
  }
  const o = asObj(v);
  if (!o) return;
  const oldObj = asObj(old);
  const props = asObj(schema.properties);
  if (props) {
    for (const k of Object.keys(props).sort()) {
      const ps = asObj(props[k]);
      if (ps && o[k] !== undefined) walk(ps, o[k], oldObj?.[k], join(path, k), out);
    }
    return;
  }
  const addl = asObj(schema.additionalProperties);
  if (addl) for (const k of Object.keys(o).sort()) walk(addl, o[k], oldObj?.[k], `${path}[${k}]`, out);
}

/** Whether a schema declares any `x-kubernetes-validations` (so objects of it need the walk at all). */
export function hasRules(schema: Json | undefined): boolean {
  const o = asObj(schema);
  if (!o) return Array.isArray(schema) && schema.some(hasRules);
  if (o['x-kubernetes-validations'] !== undefined) return true;
  return Object.values(o).some((x) => typeof x === 'object' && x !== null && hasRules(x));
}

/**
 * Evaluate every validation rule of `schema` (a CRD version's `openAPIV3Schema`) against `obj`, with
 * `old` (the stored object on update, undefined on create) for transition rules. `metadata` is not
 * visited. Returns the failed rules as 422 causes (empty when all hold).
 */
export function validateRules(
  schema: JsonObject,
  obj: JsonObject,
  old: JsonObject | undefined,
): StatusCause[] {
  const out: StatusCause[] = [];
  const root = { ...schema, properties: { ...(asObj(schema.properties) ?? {}) } };
  delete (root.properties as JsonObject).metadata;
  walk(root, obj, old, '', out);
  return out;
}
