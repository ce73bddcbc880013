/**
 * Requirement algebra over label keys, as upstream Karpenter `pkg/scheduling/requirement(s).go`.
 *
 * A {@link Requirement} is the set of values a label key may take: either an explicit set (`In`, and
 * `DoesNotExist` as the empty set) or the complement of a set (`NotIn`, and `Exists` as the complement of
 * the empty set), optionally bounded by integer bounds (`Gt`/`Lt`, and Karpenter's `Gte`/`Lte`).
 * {@link Requirements} maps keys to requirements; adding a requirement for a key intersects it with the
 * one already there. Failures are returned as strings (reasons), never thrown, except for malformed input
 * ({@link RequirementError}).
 */
import type { NodeSelectorRequirement } from '../apis/core.ts';
import type { NodeSelectorRequirementWithMinValues } from '../apis/karpenter.ts';
import { NormalizedLabels } from '../apis/labels.ts';

/** Thrown by the constructors for a malformed requirement (unknown operator, non-integer `Gt` value...). */
export class RequirementError extends Error {
  readonly code = 'InvalidRequirement' as const;
}

const OPERATORS: ReadonlySet<string> = new Set([
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
  'Gt',
  'Lt',
  'Gte',
  'Lte',
]);

/**
 * Why {@link Requirement.from} would reject `r`, as a value (`undefined` when it is well formed): an unknown
 * operator, or a `Gt`/`Lt`/`Gte`/`Lte` without exactly one integer value. Same messages as the thrown errors.
 */
export function requirementProblem(r: NodeSelectorRequirement): string | undefined {
  if (!OPERATORS.has(r.operator)) {
    return `requirement on key "${r.key}": unknown operator "${String(r.operator)}" (expected In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)`;
  }
  if (
    r.operator === 'In' ||
    r.operator === 'NotIn' ||
    r.operator === 'Exists' ||
    r.operator === 'DoesNotExist'
  )
    return undefined;
  const values = r.values ?? [];
  if (values.length === 1 && parseIntStrict(values[0]!) !== undefined) return undefined;
  return `requirement on key "${r.key}": operator ${r.operator} needs exactly one integer value, got ${formatValues(values)}`;
}

const EMPTY: ReadonlySet<string> = new Set();

/**
 * The key a requirement is stored under: deprecated keys map to their well-known equivalents
 * (`beta.kubernetes.io/os` → `kubernetes.io/os`, ...; upstream `v1.NormalizedLabels`, applied by upstream
 * `scheduling.NewRequirement` to every requirement it builds). Other keys are returned unchanged.
 */
export function normalizeLabelKey(key: string): string {
  return Object.hasOwn(NormalizedLabels, key) ? NormalizedLabels[key]! : key;
}

/** Formats values for messages: sorted, at most 8 shown (`[a, b, c and 4 more]`). */
export function formatValues(values: Iterable<string>): string {
  const sorted = [...values].sort();
  if (sorted.length <= 8) return `[${sorted.join(', ')}]`;
  return `[${sorted.slice(0, 8).join(', ')} and ${sorted.length - 8} more]`;
}

function parseIntStrict(v: string): number | undefined {
  if (!/^-?\d+$/.test(v)) return undefined;
  return Number(v);
}

/**
 * The allowed values of one label key. Immutable.
 * - `complement=false`: the value must be in `values` (empty set = the label must not exist);
 * - `complement=true`: the label must exist and its value must not be in `values`;
 * - `greaterThan`/`lessThan`: exclusive integer bounds (value must parse as an integer).
 * - `minValues`: Karpenter's minimum number of distinct values the NodeClaim's instance types must offer.
 */
export class Requirement {
  constructor(
    readonly key: string,
    readonly complement: boolean,
    readonly values: ReadonlySet<string>,
    readonly greaterThan?: number,
    readonly lessThan?: number,
    readonly minValues?: number,
  ) {}

  /** `key In values` (deprecated keys normalized, see {@link normalizeLabelKey}; so for every factory below). */
  static in(key: string, values: Iterable<string>, minValues?: number): Requirement {
    return new Requirement(normalizeLabelKey(key), false, new Set(values), undefined, undefined, minValues);
  }
  /** `key NotIn values`. */
  static notIn(key: string, values: Iterable<string>): Requirement {
    return new Requirement(normalizeLabelKey(key), true, new Set(values));
  }
  /** `key Exists`. */
  static exists(key: string): Requirement {
    return new Requirement(normalizeLabelKey(key), true, EMPTY);
  }
  /** `key DoesNotExist`. */
  static doesNotExist(key: string): Requirement {
    return new Requirement(normalizeLabelKey(key), false, EMPTY);
  }

  /**
   * Builds a requirement from a NodeSelectorRequirement (operators In, NotIn, Exists, DoesNotExist, Gt, Lt,
   * Gte, Lte; `Gte n` is `Gt n-1`, `Lte n` is `Lt n+1`). Deprecated keys are normalized ({@link normalizeLabelKey}).
   * @throws RequirementError naming the key when the operator is unknown or a bound is not one integer.
   */
  static from(r: NodeSelectorRequirement | NodeSelectorRequirementWithMinValues): Requirement {
    const minValues = (r as NodeSelectorRequirementWithMinValues).minValues;
    const values = r.values ?? [];
    const key = normalizeLabelKey(r.key);
    const bound = (): number => {
      const n = values.length === 1 ? parseIntStrict(values[0]!) : undefined;
      if (n === undefined) {
        throw new RequirementError(
          `requirement on key "${r.key}": operator ${r.operator} needs exactly one integer value, got ${formatValues(values)}`,
        );
      }
      return n;
    };
    switch (r.operator) {
      case 'In':
        return new Requirement(key, false, new Set(values), undefined, undefined, minValues);
      case 'NotIn':
        return new Requirement(key, true, new Set(values), undefined, undefined, minValues);
      case 'Exists':
        return new Requirement(key, true, EMPTY, undefined, undefined, minValues);
      case 'DoesNotExist':
        return new Requirement(key, false, EMPTY, undefined, undefined, minValues);
      case 'Gt':
        return new Requirement(key, true, EMPTY, bound(), undefined, minValues);
      case 'Gte':
        return new Requirement(key, true, EMPTY, bound() - 1, undefined, minValues);
      case 'Lt':
        return new Requirement(key, true, EMPTY, undefined, bound(), minValues);
      case 'Lte':
        return new Requirement(key, true, EMPTY, undefined, bound() + 1, minValues);
      default:
        throw new RequirementError(
          `requirement on key "${r.key}": unknown operator "${String(r.operator)}" (expected In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)`,
        );
    }
  }

  private withinBounds(value: string): boolean {
    if (this.greaterThan === undefined && this.lessThan === undefined) return true;
    const n = parseIntStrict(value);
    if (n === undefined) return false;
    if (this.greaterThan !== undefined && !(n > this.greaterThan)) return false;
    if (this.lessThan !== undefined && !(n < this.lessThan)) return false;
    return true;
  }

  /** True when a node whose label `key` equals `value` satisfies this requirement. */
  has(value: string): boolean {
    if (this.complement) return !this.values.has(value) && this.withinBounds(value);
    return this.values.has(value) && this.withinBounds(value);
  }

  /** True when a node WITHOUT label `key` satisfies this requirement (`NotIn`, `DoesNotExist`). */
  allowsAbsent(): boolean {
    const op = this.operator();
    return op === 'NotIn' || op === 'DoesNotExist';
  }

  /** Number of allowed values; `Infinity` for complements (NotIn/Exists/Gt/Lt). */
  len(): number {
    return this.complement ? Number.POSITIVE_INFINITY : this.values.size;
  }

  /** The equivalent core operator: complement with values → NotIn, complement → Exists, set → In, empty → DoesNotExist. */
  operator(): 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' {
    if (this.complement) return this.values.size > 0 ? 'NotIn' : 'Exists';
    return this.values.size > 0 ? 'In' : 'DoesNotExist';
  }

  /** The intersection with another requirement on the same key (upstream `Requirement.Intersection`). */
  intersection(other: Requirement): Requirement {
    const gt = maxDefined(this.greaterThan, other.greaterThan);
    const lt = minDefined(this.lessThan, other.lessThan);
    const minValues = maxDefined(this.minValues, other.minValues);
    if (gt !== undefined && lt !== undefined && lt - gt <= 1) {
      return new Requirement(this.key, false, EMPTY, undefined, undefined, minValues);
    }
    if (this.complement && other.complement) {
      let values: ReadonlySet<string>;
      if (this.values.size === 0) values = other.values;
      else if (other.values.size === 0) values = this.values;
      else values = new Set([...this.values, ...other.values]);
      return new Requirement(this.key, true, values, gt, lt, minValues);
    }
    const [set, filter] = this.complement ? [other, this] : [this, other];
    const out = new Set<string>();
    for (const v of set.values) {
      if (filter.has(v) && withinBoundsOf(v, gt, lt)) out.add(v);
    }
    return new Requirement(this.key, false, out, gt, lt, minValues);
  }

  /** True when every value allowed by this requirement is allowed by `other` (this ⊆ other), label absence included. */
  subsetOf(other: Requirement): boolean {
    if (!this.complement) {
      if (this.values.size === 0)
        return other.allowsAbsent() || (!other.complement && other.values.size === 0);
      if (other.greaterThan !== undefined || other.lessThan !== undefined) {
        for (const v of this.values) if (!other.has(v) || !this.has(v)) return false;
        return true;
      }
      for (const v of this.values) if (this.has(v) && !other.has(v)) return false;
      return true;
    }
    if (!other.complement) return false;
    if (
      other.greaterThan !== undefined &&
      (this.greaterThan === undefined || this.greaterThan < other.greaterThan)
    )
      return false;
    if (other.lessThan !== undefined && (this.lessThan === undefined || this.lessThan > other.lessThan))
      return false;
    for (const v of other.values) if (!this.values.has(v) && this.withinBounds(v)) return false;
    return true;
  }

  /** One value this requirement allows, for labelling a node (smallest sorted value); undefined for complements or empty sets. */
  any(): string | undefined {
    if (this.complement) return undefined;
    let best: string | undefined;
    for (const v of this.values) if (this.has(v) && (best === undefined || v < best)) best = v;
    return best;
  }

  /** Converts back to NodeSelectorRequirements (bounds become separate `Gt`/`Lt` entries, as upstream). */
  toNodeSelector(): NodeSelectorRequirementWithMinValues[] {
    const out: NodeSelectorRequirementWithMinValues[] = [];
    const op = this.operator();
    const hasBounds = this.greaterThan !== undefined || this.lessThan !== undefined;
    const withMin = (r: NodeSelectorRequirementWithMinValues): NodeSelectorRequirementWithMinValues =>
      this.minValues !== undefined ? { ...r, minValues: this.minValues } : r;
    if (op === 'In') {
      out.push(
        withMin({
          key: this.key,
          operator: 'In',
          values: (hasBounds ? [...this.values].filter((v) => this.has(v)) : [...this.values]).sort(),
        }),
      );
      return out;
    }
    if (op === 'DoesNotExist') return [withMin({ key: this.key, operator: 'DoesNotExist' })];
    if (op === 'NotIn')
      out.push(withMin({ key: this.key, operator: 'NotIn', values: [...this.values].sort() }));
    if (this.greaterThan !== undefined)
      out.push(withMin({ key: this.key, operator: 'Gt', values: [String(this.greaterThan)] }));
    if (this.lessThan !== undefined)
      out.push(withMin({ key: this.key, operator: 'Lt', values: [String(this.lessThan)] }));
    if (op === 'Exists' && !hasBounds) out.push(withMin({ key: this.key, operator: 'Exists' }));
    return out;
  }

  /** Human form: `In [a, b]`, `NotIn [x]`, `Exists`, `DoesNotExist`, `Exists >4 <9`. */
  toString(): string {
    const op = this.operator();
    let s = op === 'In' || op === 'NotIn' ? `${op} ${formatValues(this.values)}` : op;
    if (this.greaterThan !== undefined) s += ` >${this.greaterThan}`;
    if (this.lessThan !== undefined) s += ` <${this.lessThan}`;
    return s;
  }
}

function withinBoundsOf(v: string, gt: number | undefined, lt: number | undefined): boolean {
  if (gt === undefined && lt === undefined) return true;
  const n = parseIntStrict(v);
  if (n === undefined) return false;
  return (gt === undefined || n > gt) && (lt === undefined || n < lt);
}
function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}
function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/** Explains why `incoming` (what a pod needs) and `existing` (what a node/NodeClaim allows) do not intersect. */
export function incompatibilityMessage(existing: Requirement, incoming: Requirement): string {
  if (existing.operator() === 'In' && incoming.operator() === 'In') {
    return `key "${existing.key}" values ${formatValues(incoming.values)} not in ${formatValues(existing.values)}`;
  }
  return `key "${existing.key}" requires ${incoming.toString()} but only ${existing.toString()} is possible`;
}

/**
 * A set of requirements, one per label key (upstream `scheduling.Requirements`). Mutable through
 * {@link Requirements.add}; use {@link Requirements.clone} before narrowing a shared instance.
 */
export class Requirements {
  private readonly map: Map<string, Requirement>;
  private sig: string | undefined;

  constructor(reqs: Iterable<Requirement> = []) {
    this.map = new Map();
    for (const r of reqs) this.add(r);
  }

  /**
   * From NodeSelectorRequirements (NodePool `spec.template.spec.requirements`, one node selector term...).
   * @throws RequirementError for a malformed entry.
   */
  static fromNodeSelector(
    reqs: readonly (NodeSelectorRequirement | NodeSelectorRequirementWithMinValues)[] = [],
  ) {
    return new Requirements(reqs.map((r) => Requirement.from(r)));
  }

  /** From labels: each label becomes `key In [value]`. */
  static fromLabels(labels: Readonly<Record<string, string>> | undefined): Requirements {
    const out = new Requirements();
    if (labels) for (const [k, v] of Object.entries(labels)) out.add(Requirement.in(k, [v]));
    return out;
  }

  /** Intersects each requirement into the set (per key). Returns `this`. */
  add(...reqs: Requirement[]): this {
    for (const r of reqs) {
      const cur = this.map.get(r.key);
      this.map.set(r.key, cur ? cur.intersection(r) : r);
    }
    if (reqs.length) this.sig = undefined;
    return this;
  }

  /**
   * Sets the requirement of `r.key` to `r` as it is (no intersection with the current one), e.g. to lower its
   * `minValues` (`instancetypes.ts` `relaxMinValues`). Returns `this`.
   */
  replace(r: Requirement): this {
    this.map.set(r.key, r);
    this.sig = undefined;
    return this;
  }

  /** Intersects every requirement of `other` into this set. Returns `this`. */
  addAll(other: Requirements): this {
    for (const r of other.map.values()) this.add(r);
    this.sig = undefined;
    return this;
  }

  get(key: string): Requirement | undefined {
    return this.map.get(key);
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  keys(): IterableIterator<string> {
    return this.map.keys();
  }
  values(): IterableIterator<Requirement> {
    return this.map.values();
  }
  get size(): number {
    return this.map.size;
  }
  clone(): Requirements {
    const r = new Requirements();
    for (const [k, v] of this.map) r.map.set(k, v);
    r.sig = this.sig;
    return r;
  }
  /** Removes a key (e.g. the placeholder hostname before handing the NodeClaim out). */
  delete(key: string): void {
    this.map.delete(key);
    this.sig = undefined;
  }

  /**
   * Upstream `Requirements.Compatible`: every key of `incoming` must be defined here unless it is in
   * `allowUndefined` or the incoming operator is NotIn/DoesNotExist; keys defined on both sides must
   * intersect (or both allow absence). Returns `undefined` when compatible, else the first reason.
   */
  compatible(incoming: Requirements, allowUndefined?: ReadonlySet<string>): string | undefined {
    for (const inc of incoming.map.values()) {
      const ex = this.map.get(inc.key);
      if (!ex) {
        if (allowUndefined?.has(inc.key) || inc.allowsAbsent()) continue;
        return `label "${inc.key}" does not have known values (required ${inc.toString()})`;
      }
      const msg = intersectsOne(ex, inc);
      if (msg) return msg;
    }
    return undefined;
  }

  /** Upstream `Requirements.Intersects`: only keys defined on both sides are checked. */
  intersects(incoming: Requirements): string | undefined {
    for (const inc of incoming.map.values()) {
      const ex = this.map.get(inc.key);
      if (!ex) continue;
      const msg = intersectsOne(ex, inc);
      if (msg) return msg;
    }
    return undefined;
  }

  /** True when a node with exactly these labels satisfies every requirement here (missing label → must allow absence). */
  matchesLabels(labels: Readonly<Record<string, string>>): boolean {
    for (const r of this.map.values()) {
      const v = labels[r.key];
      if (v === undefined ? !r.allowsAbsent() : !r.has(v)) return false;
    }
    return true;
  }

  /** Single-valued `In` requirements as labels (what a node launched from these requirements will carry). */
  labels(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const r of this.map.values()) {
      if (!r.complement && r.values.size === 1) {
        const v = r.any();
        if (v !== undefined) out[r.key] = v;
      }
    }
    return out;
  }

  /**
   * Converts to NodeSelectorRequirementWithMinValues[], keys sorted (stable output for NodeClaims). `override`, when
   * given, stands for whatever these requirements hold on its key (the caller has already intersected it): the
   * scheduler passes a NodeClaim's instance-type list this way, sorted without building and sorting a 600-value set
   * per NodeClaim.
   */
  toNodeSelector(override?: NodeSelectorRequirementWithMinValues): NodeSelectorRequirementWithMinValues[] {
    const out: NodeSelectorRequirementWithMinValues[] = [];
    const keys = [...this.map.keys()];
    if (override && !this.map.has(override.key)) keys.push(override.key);
    for (const k of keys.sort()) {
      if (override && k === override.key) out.push(override);
      else out.push(...this.map.get(k)!.toNodeSelector());
    }
    return out;
  }

  /** A canonical string (keys sorted), usable as a cache key. */
  signature(): string {
    this.sig ??= [...this.map.keys()]
      .sort()
      .map((k) => {
        const r = this.map.get(k)!;
        return `${k}:${r.complement ? '!' : ''}${[...r.values].sort().join(',')}:${r.greaterThan ?? ''}:${r.lessThan ?? ''}:${r.minValues ?? ''}`;
      })
      .join(';');
    return this.sig;
  }

  toString(): string {
    return [...this.map.keys()]
      .sort()
      .map((k) => `${k} ${this.map.get(k)!.toString()}`)
      .join(', ');
  }
}

function intersectsOne(existing: Requirement, incoming: Requirement): string | undefined {
  const inter = existing.intersection(incoming);
  if (inter.len() > 0) return undefined;
  if (incoming.allowsAbsent() && existing.allowsAbsent()) return undefined;
  return incompatibilityMessage(existing, incoming);
}
