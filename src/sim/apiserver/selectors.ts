/**
 * Label and field selectors in their query-string form (k8s.io/apimachinery/pkg/labels and
 * pkg/fields): `a=b,c!=d,e in (x,y),f notin (z),g,!h` and `metadata.name=x,spec.nodeName!=`.
 * Also `metav1.LabelSelector` objects (matchLabels/matchExpressions) as used by PDBs.
 */
import { badRequest } from '../../apis/builtin/errors.ts';
import { asArr, asObj, asStr, getPath, type KObj } from '../../apis/builtin/types.ts';

/** One parsed label requirement. */
export interface LabelRequirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists' | '=' | '!=';
  values: string[];
}

/** Parse a label selector string; throws a 400 ApiError on syntax errors. Empty string matches all. */
export function parseLabelSelector(sel: string): LabelRequirement[] {
  const reqs: LabelRequirement[] = [];
  const s = sel.trim();
  if (s === '') return reqs;
  // split on commas not inside parentheses
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  const keyRe = /^([a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?\/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$/;
  const checkKey = (k: string): string => {
    if (!keyRe.test(k)) throw badRequest(`unable to parse requirement: invalid label key "${k}"`);
    return k;
  };
  for (const raw of parts) {
    const p = raw.trim();
    if (p === '') throw badRequest(`found '', expected: identifier in label selector "${sel}"`);
    let m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(p);
    if (m) {
      const values = m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      reqs.push({ key: checkKey(m[1]!), op: m[2] as 'in' | 'notin', values });
      continue;
    }
    m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(p);
    if (m) {
      reqs.push({ key: checkKey(m[1]!), op: m[2] === '!=' ? '!=' : '=', values: [m[3]!] });
      continue;
    }
    m = /^!\s*(\S+)$/.exec(p);
    if (m) {
      reqs.push({ key: checkKey(m[1]!), op: '!exists', values: [] });
      continue;
    }
    if (/^\S+$/.test(p)) {
      reqs.push({ key: checkKey(p), op: 'exists', values: [] });
      continue;
    }
    throw badRequest(`unable to parse requirement: "${p}" in label selector "${sel}"`);
  }
  return reqs;
}

/** Whether a label map satisfies all requirements. */
export function matchLabels(reqs: LabelRequirement[], labels: Record<string, string> | undefined): boolean {
  for (const r of reqs) {
    const has = labels !== undefined && Object.hasOwn(labels, r.key);
    const v = has ? labels![r.key] : undefined;
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case '!=':
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
    }
  }
  return true;
}

/** One parsed field requirement (`path=value` or `path!=value`). */
export interface FieldRequirement {
  path: string;
  neg: boolean;
  value: string;
}

/** Parse a field selector string; throws 400 on syntax errors. */
export function parseFieldSelector(sel: string): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  if (sel.trim() === '') return out;
  for (const raw of sel.split(',')) {
    const p = raw.trim();
    const m = /^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$/.exec(p);
    if (!m) throw badRequest(`invalid selector: '${sel}'; can't understand '${p}'`);
    out.push({ path: m[1]!, neg: m[2] === '!=', value: m[3]!.trim() });
  }
  return out;
}

/** Field value as the field selector sees it: strings as-is, booleans/numbers stringified, missing = "". */
function fieldValue(obj: KObj, path: string): string {
  const v = getPath(obj, path);
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Whether an object satisfies all field requirements. */
export function matchFields(reqs: FieldRequirement[], obj: KObj): boolean {
  for (const r of reqs) {
    const v = fieldValue(obj, r.path);
    if (r.neg ? v === r.value : v !== r.value) return false;
  }
  return true;
}

/**
 * Match a `metav1.LabelSelector` object against labels. An empty selector (`{}`) matches everything;
 * a missing selector (undefined/null) matches nothing (policy/v1 PDB semantics).
 */
export function matchLabelSelectorObject(sel: unknown, labels: Record<string, string> | undefined): boolean {
  const s = asObj(sel);
  if (!s) return false;
  const ml = asObj(s.matchLabels) ?? {};
  for (const [k, v] of Object.entries(ml)) if (labels?.[k] !== v) return false;
  for (const e of asArr(s.matchExpressions) ?? []) {
    const eo = asObj(e);
    if (!eo) return false;
    const key = asStr(eo.key) ?? '';
    const op = asStr(eo.operator) ?? '';
    const values = (asArr(eo.values) ?? []).map((x) => String(x));
    const has = labels !== undefined && Object.hasOwn(labels, key);
    const v = has ? labels![key]! : '';
    if (op === 'In' && !(has && values.includes(v))) return false;
    if (op === 'NotIn' && has && values.includes(v)) return false;
    if (op === 'Exists' && !has) return false;
    if (op === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** Render a LabelSelector object as a selector string (for Scale `status.selector`). */
export function labelSelectorToString(sel: unknown): string {
  const s = asObj(sel);
  if (!s) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(asObj(s.matchLabels) ?? {})) parts.push(`${k}=${String(v)}`);
  for (const e of asArr(s.matchExpressions) ?? []) {
    const eo = asObj(e) ?? {};
    const key = asStr(eo.key) ?? '';
    const values = (asArr(eo.values) ?? []).map((x) => String(x)).sort();
    switch (eo.operator) {
      case 'In':
        parts.push(`${key} in (${values.join(',')})`);
        break;
      case 'NotIn':
        parts.push(`${key} notin (${values.join(',')})`);
        break;
      case 'Exists':
        parts.push(key);
        break;
      case 'DoesNotExist':
        parts.push(`!${key}`);
        break;
    }
  }
  return parts.sort().join(',');
}
