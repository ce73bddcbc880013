/**
 * CustomResourceDefinition support: turns a CRD into served ResourceDefs (one per served version) and
 * processes custom objects the way the apiextensions-apiserver does for structural schemas:
 * drop `null` for non-nullable fields, apply schema `default`s, prune unknown fields (unless
 * `x-kubernetes-preserve-unknown-fields`), then validate against `openAPIV3Schema` with ajv.
 * CEL rules (`x-kubernetes-validations`) are evaluated by `cel.ts`; `format` checks and list-type
 * uniqueness are not enforced (documented in docs/apiserver.md). Source: k8s.io/apiextensions-apiserver pkg/apiserver/schema/{pruning,defaulting}.
 */
import { createHash } from 'node:crypto';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { StatusCause } from '../../apis/builtin/errors.ts';
import {
  asArr,
  asObj,
  asStr,
  clone,
  type Json,
  type JsonObject,
  type KObj,
  type ResourceDef,
} from '../../apis/builtin/types.ts';
import { hasRules, validateRules } from './cel.ts';

/** Errors found in a CRD definition itself (422 causes). */
export function validateCrd(crd: KObj): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = asObj(crd.spec);
  const name = crd.metadata?.name ?? '';
  if (!spec) return [{ reason: 'FieldValueRequired', field: 'spec', message: 'Required value' }];
  const group = asStr(spec.group) ?? '';
  const names = asObj(spec.names) ?? {};
  const plural = asStr(names.plural) ?? '';
  if (!group) causes.push({ reason: 'FieldValueRequired', field: 'spec.group', message: 'Required value' });
  if (!plural)
    causes.push({ reason: 'FieldValueRequired', field: 'spec.names.plural', message: 'Required value' });
  if (!asStr(names.kind))
    causes.push({ reason: 'FieldValueRequired', field: 'spec.names.kind', message: 'Required value' });
  if (plural && group && name !== `${plural}.${group}`)
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: "${name}": must be spec.names.plural+"."+spec.group`,
    });
  const scope = spec.scope;
  if (scope !== 'Namespaced' && scope !== 'Cluster')
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'spec.scope',
      message: `Unsupported value: ${JSON.stringify(scope ?? '')}: supported values: "Cluster", "Namespaced"`,
    });
  const versions = asArr(spec.versions) ?? [];
  if (versions.length === 0)
    causes.push({ reason: 'FieldValueRequired', field: 'spec.versions', message: 'Required value' });
  const storage = versions.filter((v) => asObj(v)?.storage === true);
  if (versions.length > 0 && storage.length !== 1)
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.versions',
      message: `Invalid value: ${JSON.stringify(versions.map((v) => asObj(v)?.name))}: must have exactly one version marked as storage version`,
    });
  versions.forEach((v, i) => {
    const vo = asObj(v) ?? {};
    if (!asStr(vo.name))
      causes.push({
        reason: 'FieldValueRequired',
        field: `spec.versions[${i}].name`,
        message: 'Required value',
      });
    if (vo.served === true && !asObj(asObj(vo.schema)?.openAPIV3Schema))
      causes.push({
        reason: 'FieldValueRequired',
        field: `spec.versions[${i}].schema.openAPIV3Schema`,
        message: 'Required value: schemas are required',
      });
  });
  return causes;
}

/** Served ResourceDefs of a (valid) CRD, one per served version. */
export function crdResources(crd: KObj): ResourceDef[] {
  const spec = asObj(crd.spec) ?? {};
  const group = asStr(spec.group) ?? '';
  const names = asObj(spec.names) ?? {};
  const plural = asStr(names.plural) ?? '';
  const kind = asStr(names.kind) ?? '';
  const versions = (asArr(spec.versions) ?? []).map((v) => asObj(v) ?? {});
  const storageVersion = asStr(versions.find((v) => v.storage === true)?.name) ?? '';
  const out: ResourceDef[] = [];
  for (const v of versions) {
    if (v.served !== true) continue;
    const sub = asObj(v.subresources) ?? {};
    const scale = asObj(sub.scale);
    const def: ResourceDef = {
      group,
      version: asStr(v.name) ?? '',
      plural,
      singular: asStr(names.singular) ?? kind.toLowerCase(),
      kind,
      namespaced: spec.scope === 'Namespaced',
      shortNames: (asArr(names.shortNames) ?? []).map(String),
      categories: (asArr(names.categories) ?? []).map(String),
      verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'],
      storageKey: `${group}/${plural}`,
      storageApiVersion: `${group}/${storageVersion}`,
      hasStatus: sub.status !== undefined && sub.status !== null,
      tracksGeneration: true,
      keepStatusOnCreate: false,
      postSubresources: [],
      crdName: crd.metadata?.name ?? `${plural}.${group}`,
    };
    if (scale) {
      def.scale = {
        specReplicasPath: asStr(scale.specReplicasPath) ?? '.spec.replicas',
        statusReplicasPath: asStr(scale.statusReplicasPath) ?? '.status.replicas',
      };
      const lsp = asStr(scale.labelSelectorPath);
      if (lsp) def.scale.labelSelectorPath = lsp;
    }
    const cols = asArr(v.additionalPrinterColumns);
    if (cols) {
      def.printerColumns = cols.map((c) => {
        const co = asObj(c) ?? {};
        return {
          name: asStr(co.name) ?? '',
          type: asStr(co.type) ?? 'string',
          jsonPath: asStr(co.jsonPath) ?? '',
          ...(asStr(co.format) ? { format: asStr(co.format)! } : {}),
          ...(asStr(co.description) ? { description: asStr(co.description)! } : {}),
          ...(typeof co.priority === 'number' ? { priority: co.priority } : {}),
        };
      });
    }
    out.push(def);
  }
  return out;
}

const COMPILED = new Map<string, ValidateFunction>();

const BLOCKING = new Set(['FieldValueRequired', 'FieldValueTypeInvalid', 'FieldValueNotSupported']);

/** The cause the real server adds when schema errors kept it from evaluating the CEL rules. */
const RULES_NOT_CHECKED: StatusCause = {
  reason: 'FieldValueInvalid',
  field: '<nil>',
  message:
    'Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
};

/** Schema for one version, with a lazily compiled ajv validator. */
export class VersionSchema {
  readonly schema: JsonObject;
  private validator: ValidateFunction | undefined;
  private withRules: boolean | undefined;
  private static ajv: Ajv | undefined;
  constructor(schema: JsonObject) {
    this.schema = schema;
  }

  private static getAjv(): Ajv {
    if (!VersionSchema.ajv)
      VersionSchema.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, logger: false });
    return VersionSchema.ajv;
  }

  /**
   * Compile now (throws with ajv's message when the schema is not usable). Compiled validators are
   * cached per process by schema content, so many servers installing the same CRDs compile once.
   */
  compile(): ValidateFunction {
    if (!this.validator) {
      const key = createHash('sha1').update(JSON.stringify(this.schema)).digest('hex');
      let v = COMPILED.get(key);
      if (!v) {
        v = VersionSchema.getAjv().compile(toAjvSchema(this.schema, true));
        COMPILED.set(key, v);
      }
      this.validator = v;
    }
    return this.validator;
  }

  /**
   * Drop nulls, default, prune and validate `obj` in place (a fresh copy the caller owns).
   * Returns the causes of every schema violation (empty = valid).
   */
  process(obj: JsonObject, pruned: string[] = [], old?: JsonObject): StatusCause[] {
    dropNullsAndDefault(obj, this.schema, true);
    prune(obj, this.schema, true, '', pruned);
    const validate = this.compile();
    this.withRules ??= hasRules(this.schema);
    if (validate(obj)) return this.withRules ? validateRules(this.schema, obj, old) : [];
    const causes = ajvCauses(validate.errors ?? [], obj);
    if (!this.withRules) return causes;
    // like the real server: rules are skipped (and it says so) after a missing required field, a wrong
    // type or an unsupported enum value; after other schema errors (pattern, bounds) they still run
    if (causes.some((c) => BLOCKING.has(c.reason))) causes.push(RULES_NOT_CHECKED);
    else causes.push(...validateRules(this.schema, obj, old));
    return causes;
  }
}

/** Convert a structural schema to something ajv validates like Kubernetes does. */
function toAjvSchema(s: Json | undefined, root: boolean): JsonObject {
  const o = asObj(s);
  if (!o) return {};
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined) continue;
    if (k.startsWith('x-kubernetes-') || k === 'format' || k === 'description' || k === 'example') continue;
    if (k === 'default') continue;
    if (k === 'properties') {
      const props: JsonObject = {};
      for (const [pk, pv] of Object.entries(asObj(v) ?? {})) {
        if (root && pk === 'metadata') {
          props[pk] = { type: 'object' };
          continue;
        }
        props[pk] = toAjvSchema(pv, false);
      }
      out.properties = props;
    } else if (k === 'items' || k === 'additionalProperties' || k === 'not') {
      out[k] = typeof v === 'boolean' ? v : toAjvSchema(v, false);
    } else if (k === 'allOf' || k === 'anyOf' || k === 'oneOf') {
      out[k] = (asArr(v) ?? []).map((x) => toAjvSchema(x, false));
    } else if (k === 'pattern') {
      try {
        new RegExp(String(v), 'u');
        out.pattern = v;
      } catch {
        // Go RE2 pattern not expressible in JS: skipped
      }
    } else out[k] = v;
  }
  if (o['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    if (!out.anyOf) out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (out.nullable === true && typeof out.type !== 'string') delete out.nullable;
  return out;
}

function isPreserve(s: JsonObject): boolean {
  return s['x-kubernetes-preserve-unknown-fields'] === true;
}

/** Drop nulls for non-nullable fields, then apply defaults (apiextensions defaulting order). */
function dropNullsAndDefault(v: Json | undefined, schema: JsonObject, root: boolean): void {
  const o = asObj(v);
  if (o) {
    const props = asObj(schema.properties);
    if (props) {
      for (const [k, ps] of Object.entries(props)) {
        const pso = asObj(ps);
        if (!pso || (root && k === 'metadata')) continue;
        if (o[k] === null && pso.nullable !== true) delete o[k];
        if (o[k] === undefined && pso.default !== undefined) o[k] = clone(pso.default);
        if (o[k] !== undefined && o[k] !== null) dropNullsAndDefault(o[k], pso, false);
      }
    }
    const ap = asObj(schema.additionalProperties);
    if (ap && !props) {
      for (const k of Object.keys(o)) {
        if (o[k] === null && ap.nullable !== true) delete o[k];
        else dropNullsAndDefault(o[k], ap, false);
      }
    }
    return;
  }
  const a = asArr(v);
  const items = asObj(schema.items);
  if (a && items) for (const x of a) dropNullsAndDefault(x, items, false);
}

/** Remove fields the schema does not know (pruning), keeping apiVersion/kind/metadata at the root. */
function prune(v: Json | undefined, schema: JsonObject, root: boolean, path: string, pruned: string[]): void {
  const o = asObj(v);
  if (o) {
    const props = asObj(schema.properties);
    const ap = schema.additionalProperties;
    const embedded = schema['x-kubernetes-embedded-resource'] === true;
    for (const k of Object.keys(o)) {
      if ((root || embedded) && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
      const ps = props ? asObj(props[k]) : undefined;
      const sub = path ? `${path}.${k}` : k;
      if (ps) prune(o[k], ps, false, sub, pruned);
      else if (asObj(ap)) prune(o[k], asObj(ap)!, false, sub, pruned);
      else if (ap === true || isPreserve(schema)) continue;
      else {
        pruned.push(sub);
        delete o[k];
      }
    }
    return;
  }
  const a = asArr(v);
  const items = asObj(schema.items);
  if (a && items) for (let i = 0; i < a.length; i++) prune(a[i], items, false, `${path}[${i}]`, pruned);
}

/** `/spec/template/0/x` → `spec.template[0].x` */
function fieldPath(instancePath: string): string {
  let out = '';
  for (const seg of instancePath.split('/').slice(1)) {
    const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(s)) out += `[${s}]`;
    else out += out ? `.${s}` : s;
  }
  return out;
}

function valueAt(obj: JsonObject, instancePath: string): unknown {
  let cur: unknown = obj;
  for (const seg of instancePath.split('/').slice(1)) {
    const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = cur[Number(s)];
    else cur = asObj(cur)?.[s];
  }
  return cur;
}

function render(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v ?? null);
}

/** Translate ajv errors to Kubernetes-style causes (messages modelled on kube-openapi validate). */
function ajvCauses(errors: ErrorObject[], obj: JsonObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  const concrete = errors.filter(
    (e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'allOf',
  );
  const list = concrete.length > 0 ? concrete : errors;
  for (const e of list) {
    let field = fieldPath(e.instancePath);
    const val = valueAt(obj, e.instancePath);
    let cause: StatusCause;
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') {
      field = field ? `${field}.${String(params.missingProperty)}` : String(params.missingProperty);
      cause = { reason: 'FieldValueRequired', field, message: 'Required value' };
    } else if (e.keyword === 'enum') {
      const allowed = (params.allowedValues as unknown[]).map((x) => render(x)).join(', ');
      cause = {
        reason: 'FieldValueNotSupported',
        field,
        message: `Unsupported value: ${render(val)}: supported values: ${allowed}`,
      };
    } else if (e.keyword === 'type') {
      cause = {
        reason: 'FieldValueTypeInvalid',
        field,
        message: `Invalid value: ${render(val)}: ${field} in body must be of type ${String(params.type)}: ${render(val)}`,
      };
    } else {
      // wording of k8s.io/kube-openapi/pkg/validation/errors
      const lim = params.limit;
      const what: Record<string, string> = {
        maximum: `should be less than or equal to ${String(lim)}`,
        minimum: `should be greater than or equal to ${String(lim)}`,
        exclusiveMaximum: `should be less than ${String(lim)}`,
        exclusiveMinimum: `should be greater than ${String(lim)}`,
        maxLength: `should be at most ${String(lim)} chars long`,
        minLength: `should be at least ${String(lim)} chars long`,
        maxItems: `must have at most ${String(lim)} items`,
        minItems: `should have at least ${String(lim)} items`,
        maxProperties: `must have at most ${String(lim)} properties`,
        minProperties: `should have at least ${String(lim)} properties`,
        pattern: `should match '${String(params.pattern)}'`,
      };
      const reason = e.keyword.startsWith('max') ? 'FieldValueTooLong' : 'FieldValueInvalid';
      cause = {
        reason: e.keyword === 'maxLength' || e.keyword === 'maxItems' ? reason : 'FieldValueInvalid',
        field,
        message: `Invalid value: ${render(val)}: ${field} in body ${what[e.keyword] ?? e.message ?? 'is invalid'}`,
      };
    }
    const key = `${cause.field}|${cause.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    causes.push(cause);
  }
  return causes;
}

/** Version priority order of Kubernetes (`v1` > `v1beta2` > `v1beta1` > `v1alpha1` > others). */
export function compareKubeVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number, string] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0, v];
    const level = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
    return [level, -Number(m[1]), -Number(m[3] ?? 0), v];
  };
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] as number) - (pb[i] as number);
  return pa[3] < pb[3] ? -1 : pa[3] > pb[3] ? 1 : 0;
}
