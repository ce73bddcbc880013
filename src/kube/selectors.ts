/**
 * Label and field selectors: the string syntax of the Kubernetes API (`?labelSelector=`, `?fieldSelector=`),
 * conversion from `metav1.LabelSelector`, parsing and local matching (used by informer caches).
 * Semantics follow k8s.io/apimachinery `pkg/labels/selector.go` and `pkg/fields/selector.go`.
 */
import type { LabelSelector } from '../apis/core.ts';

/** Operators of a parsed label requirement (`apimachinery/pkg/selection`). */
export type LabelOperator = 'in' | 'notin' | 'exists' | '!' | '=' | '!=' | 'gt' | 'lt';

/** One parsed label selector requirement. `values` is empty for `exists` / `!`. */
export interface LabelRequirement {
  key: string;
  op: LabelOperator;
  values: string[];
}

/** Anything accepted where a label selector is expected: the API string, a `LabelSelector`, or a label map. */
export type LabelSelectorInput = string | LabelSelector | Record<string, string>;

function isLabelSelectorObject(s: LabelSelector | Record<string, string>): s is LabelSelector {
  const keys = Object.keys(s);
  return (
    keys.length > 0 &&
    keys.every((k) => k === 'matchLabels' || k === 'matchExpressions') &&
    Object.values(s).every((v) => typeof v === 'object')
  );
}

/**
 * Formats a label selector as the API query string (`a=b,c in (x,y),!d`). A `LabelSelector` with neither
 * field selects everything (`''`). Throws on an unknown `matchExpressions` operator, naming it.
 */
export function formatLabelSelector(sel: LabelSelectorInput): string {
  if (typeof sel === 'string') return sel;
  if (!isLabelSelectorObject(sel)) {
    if (Object.keys(sel).length === 0) return '';
    return Object.entries(sel as Record<string, string>)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
  }
  const parts: string[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) parts.push(`${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const vals = [...(e.values ?? [])].sort();
    switch (e.operator) {
      case 'In':
        parts.push(`${e.key} in (${vals.join(',')})`);
        break;
      case 'NotIn':
        parts.push(`${e.key} notin (${vals.join(',')})`);
        break;
      case 'Exists':
        parts.push(e.key);
        break;
      case 'DoesNotExist':
        parts.push(`!${e.key}`);
        break;
      default:
        throw new Error(
          `label selector: matchExpressions operator "${String((e as { operator: unknown }).operator)}" for key "${e.key}" is not one of In, NotIn, Exists, DoesNotExist`,
        );
    }
  }
  return parts.join(',');
}

/** Converts a `LabelSelector` to requirements (no string round trip). */
export function labelSelectorRequirements(sel: LabelSelectorInput): LabelRequirement[] {
  if (typeof sel === 'string') return parseLabelSelector(sel);
  if (!isLabelSelectorObject(sel)) {
    return Object.entries(sel as Record<string, string>).map(([key, v]) => ({ key, op: '=', values: [v] }));
  }
  const reqs: LabelRequirement[] = [];
  for (const [key, v] of Object.entries(sel.matchLabels ?? {})) reqs.push({ key, op: '=', values: [v] });
  for (const e of sel.matchExpressions ?? []) {
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        reqs.push({ key: e.key, op: 'in', values });
        break;
      case 'NotIn':
        reqs.push({ key: e.key, op: 'notin', values });
        break;
      case 'Exists':
        reqs.push({ key: e.key, op: 'exists', values: [] });
        break;
      case 'DoesNotExist':
        reqs.push({ key: e.key, op: '!', values: [] });
        break;
      default:
        throw new Error(`label selector: unknown operator for key "${e.key}"`);
    }
  }
  return reqs;
}

const KEY_RE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Parses the API label selector syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
 * `k>1`, `k<1`, comma-separated (all must hold). Throws `Error` with the offending fragment on bad syntax.
 */
export function parseLabelSelector(s: string): LabelRequirement[] {
  const out: LabelRequirement[] = [];
  const src = s.trim();
  if (src === '') return out;
  let i = 0;
  const fail = (msg: string): never => {
    throw new Error(`label selector "${s}": ${msg} at position ${i}`);
  };
  const skipWs = (): void => {
    while (i < src.length && /\s/.test(src[i] as string)) i++;
  };
  const readIdent = (): string => {
    skipWs();
    const start = i;
    while (i < src.length && /[^\s,=!()<>]/.test(src[i] as string)) i++;
    return src.slice(start, i);
  };
  while (i < src.length) {
    skipWs();
    let req: LabelRequirement;
    if (src[i] === '!') {
      i++;
      const key = readIdent();
      if (!KEY_RE.test(key)) fail(`invalid key "${key}"`);
      req = { key, op: '!', values: [] };
    } else {
      const key = readIdent();
      if (!KEY_RE.test(key)) fail(`invalid key "${key}"`);
      skipWs();
      const rest = src.slice(i);
      if (i >= src.length || src[i] === ',') {
        req = { key, op: 'exists', values: [] };
      } else if (rest.startsWith('==') || rest.startsWith('!=') || rest.startsWith('=')) {
        const op: LabelOperator = rest.startsWith('!=') ? '!=' : '=';
        i += rest.startsWith('=') && !rest.startsWith('==') ? 1 : 2;
        const v = readIdent();
        req = { key, op, values: [v] };
      } else if (rest.startsWith('>') || rest.startsWith('<')) {
        const op: LabelOperator = rest.startsWith('>') ? 'gt' : 'lt';
        i++;
        const v = readIdent();
        if (!/^-?\d+$/.test(v)) fail(`"${v}" is not an integer`);
        req = { key, op, values: [v] };
      } else {
        const word = readIdent();
        if (word !== 'in' && word !== 'notin') fail(`expected an operator after "${key}", found "${word}"`);
        skipWs();
        if (src[i] !== '(') fail(`expected "(" after "${word}"`);
        i++;
        const values: string[] = [];
        for (;;) {
          const v = readIdent();
          skipWs();
          if (v !== '') values.push(v);
          if (src[i] === ',') {
            i++;
            continue;
          }
          if (src[i] === ')') {
            i++;
            break;
          }
          fail('expected "," or ")" in value set');
        }
        req = { key, op: word as LabelOperator, values };
      }
    }
    out.push(req);
    skipWs();
    if (i < src.length) {
      if (src[i] !== ',') fail('expected ","');
      i++;
    }
  }
  return out;
}

/** True when `labels` satisfy one requirement (apimachinery `Requirement.Matches`). */
export function matchesRequirement(r: LabelRequirement, labels: Record<string, string> | undefined): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, r.key);
  const v = has ? (labels as Record<string, string>)[r.key] : undefined;
  switch (r.op) {
    case '=':
    case 'in':
      return has && r.values.includes(v as string);
    case '!=':
    case 'notin':
      return !has || !r.values.includes(v as string);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(v as string)) return false;
      const n = Number(v);
      const ref = Number(r.values[0]);
      return r.op === 'gt' ? n > ref : n < ref;
    }
  }
}

/** A compiled label selector; `matches(labels)` is true when every requirement holds. */
export interface LabelMatcher {
  readonly requirements: readonly LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
}

/** Compiles any selector input into a {@link LabelMatcher}. Empty selectors match everything. */
export function labelMatcher(sel: LabelSelectorInput): LabelMatcher {
  const requirements = labelSelectorRequirements(sel);
  return {
    requirements,
    matches: (labels) => requirements.every((r) => matchesRequirement(r, labels)),
  };
}

/** True when `labels` match `sel` (string, `LabelSelector` or label map). */
export function matchesLabels(sel: LabelSelectorInput, labels: Record<string, string> | undefined): boolean {
  return labelMatcher(sel).matches(labels);
}

/** One field selector requirement: `path` is a dotted object path (`spec.nodeName`). */
export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

/** Anything accepted as a field selector: the API string or a `{field: value}` equality map. */
export type FieldSelectorInput = string | Record<string, string>;

/** Formats a field selector (`spec.nodeName=n1,status.phase!=Failed`); maps become equalities. */
export function formatFieldSelector(sel: FieldSelectorInput): string {
  if (typeof sel === 'string') return sel;
  return Object.entries(sel)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** Parses a field selector (`=`, `==`, `!=`; `\,` `\=` `\\` escapes). Throws on a term without an operator. */
export function parseFieldSelector(sel: FieldSelectorInput): FieldRequirement[] {
  if (typeof sel !== 'string')
    return Object.entries(sel).map(([field, value]) => ({ field, op: '=', value }));
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < sel.length; i++) {
    const c = sel[i] as string;
    if (c === '\\' && i + 1 < sel.length) {
      cur += c + (sel[i + 1] as string);
      i++;
    } else if (c === ',') {
      terms.push(cur);
      cur = '';
    } else cur += c;
  }
  if (cur !== '' || terms.length > 0) terms.push(cur);
  const unescapeValue = (s: string): string => s.replace(/\\(.)/g, '$1');
  return terms
    .filter((t) => t.trim() !== '')
    .map((t) => {
      const m = /^(.*?)(!=|==|=)(.*)$/.exec(t);
      if (!m) throw new Error(`field selector "${sel}": term "${t}" has no operator (use =, == or !=)`);
      return {
        field: (m[1] as string).trim(),
        op: m[2] === '!=' ? '!=' : '=',
        value: unescapeValue((m[3] as string).trim()),
      };
    });
}

/** Reads a dotted path from an object; non-string leaves are stringified, missing ones are `''`. */
export function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'string' ? cur : String(cur);
}

/** True when `obj` satisfies every requirement of the field selector (missing fields read as `''`). */
export function matchesFields(sel: FieldSelectorInput, obj: unknown): boolean {
  return parseFieldSelector(sel).every((r) => (fieldValue(obj, r.field) === r.value) === (r.op === '='));
}
