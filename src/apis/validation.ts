/**
 * Validation of Kubernetes objects against capenter's CRD schemas (schemas.ts), with failures as values
 * and messages in the style of the Kubernetes API server:
 *
 *   NodePool "general": spec.template.spec.requirements[0].operator: Unsupported value "Foo": must be one of
 *   In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte
 *
 * Karpenter kinds (NodePool, NodeClaim, EC2NodeClass, KWOKNodeClass, and the NodeClass kinds provider modules
 * registered, `provider-kinds.ts`) are checked and defaulted; a Karpenter
 * API group with an unknown version or kind is an error (e.g. `karpenter.sh/v1beta1`); every other kind
 * passes unchanged. Unknown fields in Karpenter kinds are errors, like `kubectl apply --validate=strict`.
 */
import type { z } from 'zod';
import type { KubeObject } from './core.ts';
import type { EC2NodeClass, KWOKNodeClass, NodeClaim, NodePool } from './karpenter.ts';
import { providerKind, providerKindsOf } from './provider-kinds.ts';
import { type IssueCode, KarpenterKinds, type RuleIssueParams } from './schemas.ts';

/** One validation failure. `message` is complete: kind, name, field path and what is wrong. */
export interface ValidationIssue {
  /** Kubernetes field error type (`FieldValueRequired`, `FieldValueNotSupported`, `FieldValueInvalid`, ...). */
  code: IssueCode;
  kind: string;
  name: string;
  /** Field path in Kubernetes notation: `spec.template.spec.requirements[0].key`, `metadata.labels[app]`. */
  fieldPath: string;
  /** Path segments of `fieldPath` (object keys and array indices). */
  path: Array<string | number>;
  /** The rule broken: a CEL rule from the CRD, `enum`, `required`, `pattern: ...`, `minimum: 1`, ... */
  rule: string;
  message: string;
}

/** Result of {@link validateObject}: the (defaulted) object, or every issue found. */
export type ValidationResult<T extends KubeObject = KubeObject> =
  | { ok: true; object: T }
  | { ok: false; issues: ValidationIssue[] };

/** API groups whose kinds capenter validates. */
export const KarpenterGroups: readonly string[] = ['karpenter.sh', 'karpenter.k8s.aws', 'karpenter.kwok.sh'];

/** The `group` part of an apiVersion (`""` for the core group `v1`). */
export function apiGroup(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

/** Formats path segments as a Kubernetes field path: `spec.requirements[0].key`, `labels[kubernetes.io/os]`. */
export function formatFieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg))
      out += out === '' ? seg : `.${seg}`;
    else out += `[${String(seg)}]`;
  }
  return out;
}

/** The display name of an object for messages: `metadata.name`, `generateName*`, or `<unnamed>`. */
export function objectName(obj: unknown): string {
  const meta = isObj(obj) && isObj(obj.metadata) ? obj.metadata : undefined;
  if (meta && typeof meta.name === 'string') return meta.name;
  if (meta && typeof meta.generateName === 'string') return `${meta.generateName}*`;
  return '<unnamed>';
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const PREFIX: Record<IssueCode, string> = {
  FieldValueRequired: 'Required value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueInvalid: 'Invalid value',
  FieldValueTypeInvalid: 'Invalid type',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueDuplicate: 'Duplicate value',
};

/** Renders a value for a message: JSON for scalars and short lists, nothing for large structures. */
function show(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null)
    return JSON.stringify(v);
  const s = JSON.stringify(v);
  return s !== undefined && s.length <= 80 ? s : undefined;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

const EXPECTED: Record<string, string> = {
  int: 'integer',
  record: 'object',
  object: 'object',
  map: 'object',
};

interface Converted {
  code: IssueCode;
  path: Array<string | number>;
  rule: string;
  detail: string;
}

function detail(code: IssueCode, value: string | undefined, text: string | undefined): string {
  let d = PREFIX[code];
  if (value !== undefined) d += ` ${value}`;
  if (text) d += `: ${text}`;
  return d;
}

/** A `custom` issue: a capenter rule's own code and rule name (see `RuleIssueParams`), else `FieldValueInvalid`. */
function convertCustom(issue: z.core.$ZodIssueCustom, path: Array<string | number>): Converted[] {
  const p = issue.params as RuleIssueParams | undefined;
  if (p?.capenter) {
    const val =
      p.hasValue &&
      (p.code === 'FieldValueInvalid' ||
        p.code === 'FieldValueNotSupported' ||
        p.code === 'FieldValueDuplicate')
        ? show(p.value)
        : undefined;
    return [{ code: p.code, path, rule: p.rule, detail: detail(p.code, val, issue.message) }];
  }
  return [
    {
      code: 'FieldValueInvalid',
      path,
      rule: 'custom',
      detail: detail('FieldValueInvalid', undefined, issue.message),
    },
  ];
}

/** A `too_small` issue: `minItems` (Required), `minLength` or `minimum` (Invalid), as the API server words them. */
function convertTooSmall(
  issue: z.core.$ZodIssueTooSmall,
  path: Array<string | number>,
  input: unknown,
): Converted[] {
  const min = Number(issue.minimum);
  if (issue.origin === 'array') {
    return [
      {
        code: 'FieldValueRequired',
        path,
        rule: `minItems: ${min}`,
        detail: detail(
          'FieldValueRequired',
          undefined,
          `must have at least ${min} item${min === 1 ? '' : 's'}`,
        ),
      },
    ];
  }
  if (issue.origin === 'string') {
    return [
      {
        code: 'FieldValueInvalid',
        path,
        rule: `minLength: ${min}`,
        detail: detail(
          'FieldValueInvalid',
          show(input),
          `must be at least ${min} character${min === 1 ? '' : 's'} long`,
        ),
      },
    ];
  }
  return [
    {
      code: 'FieldValueInvalid',
      path,
      rule: `minimum: ${min}`,
      detail: detail(
        'FieldValueInvalid',
        show(input),
        `must be greater than ${issue.inclusive ? 'or equal to ' : ''}${min}`,
      ),
    },
  ];
}

/** A `too_big` issue: `maxItems` (TooMany), `maxLength` (TooLong) or `maximum` (Invalid), as the API server words them. */
function convertTooBig(
  issue: z.core.$ZodIssueTooBig,
  path: Array<string | number>,
  input: unknown,
): Converted[] {
  const max = Number(issue.maximum);
  if (issue.origin === 'array') {
    const n = Array.isArray(input) ? input.length : undefined;
    return [
      {
        code: 'FieldValueTooMany',
        path,
        rule: `maxItems: ${max}`,
        detail: detail(
          'FieldValueTooMany',
          n !== undefined ? String(n) : undefined,
          `must have at most ${max} items`,
        ),
      },
    ];
  }
  if (issue.origin === 'string') {
    return [
      {
        code: 'FieldValueTooLong',
        path,
        rule: `maxLength: ${max}`,
        detail: detail('FieldValueTooLong', undefined, `may not be more than ${max} characters`),
      },
    ];
  }
  return [
    {
      code: 'FieldValueInvalid',
      path,
      rule: `maximum: ${max}`,
      detail: detail(
        'FieldValueInvalid',
        show(input),
        `must be less than ${issue.inclusive ? 'or equal to ' : ''}${max}`,
      ),
    },
  ];
}

/** Converts one zod issue into zero or more capenter issues. */
function convertIssue(issue: z.core.$ZodIssue): Converted[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case 'custom':
      return convertCustom(issue, path);
    case 'invalid_type': {
      if (input === undefined)
        return [{ code: 'FieldValueRequired', path, rule: 'required', detail: 'Required value' }];
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      const v = show(input);
      return [
        {
          code: 'FieldValueTypeInvalid',
          path,
          rule: `type: ${expected}`,
          detail: `Invalid type: expected ${expected}, got ${typeName(input)}${v !== undefined ? ` ${v}` : ''}`,
        },
      ];
    }
    case 'invalid_value': {
      const values = issue.values.map((x) => String(x));
      return [
        {
          code: 'FieldValueNotSupported',
          path,
          rule: values.length === 1 ? 'const' : 'enum',
          detail: detail(
            'FieldValueNotSupported',
            show(input),
            `must be ${values.length === 1 ? '' : 'one of '}${values.join(', ')}`,
          ),
        },
      ];
    }
    case 'too_small':
      return convertTooSmall(issue, path, input);
    case 'too_big':
      return convertTooBig(issue, path, input);
    case 'invalid_format': {
      const rule =
        issue.format === 'regex' && issue.pattern
          ? `pattern: ${issue.pattern.replace(/^\/(.*)\/[a-z]*$/s, '$1')}`
          : `format: ${issue.format === 'datetime' ? 'date-time' : issue.format}`;
      return [
        {
          code: 'FieldValueInvalid',
          path,
          rule,
          detail: detail('FieldValueInvalid', show(input), issue.message),
        },
      ];
    }
    case 'unrecognized_keys':
      return issue.keys.map((k) => ({
        code: 'FieldValueForbidden' as const,
        path: [...path, k],
        rule: 'unknown field',
        detail: `Forbidden: unknown field "${k}"`,
      }));
    case 'invalid_union':
      return [
        {
          code: 'FieldValueInvalid',
          path,
          rule: 'x-kubernetes-int-or-string',
          detail: detail('FieldValueInvalid', show(input), issue.message),
        },
      ];
    default:
      return [
        {
          code: 'FieldValueInvalid',
          path,
          rule: issue.code,
          detail: detail('FieldValueInvalid', show(input), issue.message),
        },
      ];
  }
}

function makeIssue(kind: string, name: string, c: Converted): ValidationIssue {
  const fieldPath = formatFieldPath(c.path);
  return {
    code: c.code,
    kind,
    name,
    fieldPath,
    path: c.path,
    rule: c.rule,
    message: `${kind} "${name}": ${fieldPath === '' ? '' : `${fieldPath}: `}${c.detail}`,
  };
}

/**
 * Validates an object. Karpenter kinds are parsed with their schema (every issue reported, not just the
 * first) and returned with upstream's defaults applied; other kinds are returned unchanged (same reference)
 * once `apiVersion` and `kind` are present. Never throws.
 */
export function validateObject(obj: KubeObject): ValidationResult {
  const kind = isObj(obj) && typeof obj.kind === 'string' ? obj.kind : '<unknown kind>';
  const name = objectName(obj);
  const fail = (...cs: Converted[]): ValidationResult => ({
    ok: false,
    issues: cs.map((c) => makeIssue(kind, name, c)),
  });
  if (!isObj(obj)) {
    return fail({
      code: 'FieldValueTypeInvalid',
      path: [],
      rule: 'type: object',
      detail: `Invalid type: expected an object, got ${typeName(obj)}`,
    });
  }
  const missing: Converted[] = [];
  for (const f of ['apiVersion', 'kind'] as const) {
    if (typeof obj[f] !== 'string' || obj[f] === '') {
      missing.push({
        code: 'FieldValueRequired',
        path: [f],
        rule: 'required',
        detail: `Required value: every object needs ${f}`,
      });
    }
  }
  if (missing.length > 0) return fail(...missing);
  const apiVersion = obj.apiVersion as string;
  const info = KarpenterKinds[`${apiVersion}/${kind}`] ?? providerKind(apiVersion, kind);
  if (!info) {
    const group = apiGroup(apiVersion);
    const ofProvider = providerKindsOf(group);
    if (!KarpenterGroups.includes(group) && ofProvider.length === 0) return { ok: true, object: obj };
    const served = [...Object.values(KarpenterKinds).filter((k) => k.group === group), ...ofProvider];
    const sameKind = served.find((k) => k.kind === kind);
    if (sameKind) {
      return fail({
        code: 'FieldValueNotSupported',
        path: ['apiVersion'],
        rule: 'served versions',
        detail: detail(
          'FieldValueNotSupported',
          JSON.stringify(apiVersion),
          `${kind} is served as ${sameKind.group}/${sameKind.version}; convert the manifest to ${sameKind.group}/${sameKind.version} (see the Karpenter v1 migration guide)`,
        ),
      });
    }
    return fail({
      code: 'FieldValueNotSupported',
      path: ['kind'],
      rule: 'served kinds',
      detail: detail(
        'FieldValueNotSupported',
        JSON.stringify(kind),
        `must be one of ${served.map((k) => k.kind).join(', ')} in API group ${group}`,
      ),
    });
  }
  const r = info.schema.safeParse(obj, { reportInput: true });
  if (r.success) return { ok: true, object: r.data as KubeObject };
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const zi of r.error.issues) {
    for (const c of convertIssue(zi)) {
      const issue = makeIssue(kind, name, c);
      if (seen.has(issue.message)) continue;
      seen.add(issue.message);
      issues.push(issue);
    }
  }
  return { ok: false, issues };
}

/** Thrown by {@link assertValid}; carries every issue. */
export class ValidationError extends Error {
  readonly code = 'ValidationFailed' as const;
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((i) => i.message).join('\n'));
  }
}

/**
 * Validates and defaults an object, for edges that prefer exceptions (CLI flags, tests).
 * @throws ValidationError listing every issue.
 */
export function assertValid<T extends KubeObject = KubeObject>(obj: KubeObject): T {
  const r = validateObject(obj);
  if (!r.ok) throw new ValidationError(r.issues);
  return r.object as T;
}

/** True for a `karpenter.sh/v1` NodePool (by apiVersion and kind only). */
export function isNodePool(o: KubeObject): o is NodePool {
  return o.apiVersion === 'karpenter.sh/v1' && o.kind === 'NodePool';
}
/** True for a `karpenter.sh/v1` NodeClaim (by apiVersion and kind only). */
export function isNodeClaim(o: KubeObject): o is NodeClaim {
  return o.apiVersion === 'karpenter.sh/v1' && o.kind === 'NodeClaim';
}
/** True for a `karpenter.k8s.aws/v1` EC2NodeClass (by apiVersion and kind only). */
export function isEC2NodeClass(o: KubeObject): o is EC2NodeClass {
  return o.apiVersion === 'karpenter.k8s.aws/v1' && o.kind === 'EC2NodeClass';
}
/** True for a `karpenter.kwok.sh/v1alpha1` KWOKNodeClass (by apiVersion and kind only). */
export function isKWOKNodeClass(o: KubeObject): o is KWOKNodeClass {
  return o.apiVersion === 'karpenter.kwok.sh/v1alpha1' && o.kind === 'KWOKNodeClass';
}
