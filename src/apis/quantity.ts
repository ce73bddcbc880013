/**
 * Kubernetes resource quantities (`resource.Quantity`), parsed to and formatted from plain numbers.
 *
 * Internal units, used everywhere in capenter (see {@link Resources}):
 * - `cpu`: millicores (`"1930m"` → 1930, `"2"` → 2000);
 * - `memory`, `ephemeral-storage`, `hugepages-*`: bytes (`"6903Mi"` → 7238320128);
 * - every other resource (`pods`, `nvidia.com/gpu`, `vpc.amazonaws.com/pod-eni`, ...): a count.
 *
 * Source of the grammar: k8s.io/apimachinery/pkg/api/resource/quantity.go (suffixes `n u m k M G T P E`,
 * `Ki Mi Gi Ti Pi Ei`, and decimal exponents `e3`/`E3`).
 */

/** A resource list in internal units (millicores for `cpu`, bytes for memory/storage, counts otherwise). */
export type Resources = Record<string, number>;

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY_RE = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** Thrown by {@link parseQuantity} for a string that is not a Kubernetes quantity. */
export class QuantityParseError extends Error {
  readonly code = 'InvalidQuantity' as const;
  constructor(readonly value: string) {
    super(`"${value}" is not a valid Kubernetes quantity (expected e.g. "500m", "2", "1Gi", "128974848")`);
  }
}

/** True when `value` is a Kubernetes quantity {@link parseQuantity} accepts (a finite number, or e.g. `"500m"`). */
export function isQuantity(value: string | number): boolean {
  return typeof value === 'number' ? Number.isFinite(value) : QUANTITY_RE.test(value.trim());
}

/**
 * The error {@link parseResources} would throw for `list`, as a value (`undefined` when every entry parses):
 * the first malformed entry, named `<resource>: <value>`.
 */
export function resourceListProblem(
  list: Record<string, string | number> | undefined,
): QuantityParseError | undefined {
  if (!list) return undefined;
  for (const [name, v] of Object.entries(list))
    if (!isQuantity(v)) return new QuantityParseError(`${name}: ${String(v)}`);
  return undefined;
}

/**
 * Parses a quantity to its value in base units (`"100m"` → 0.1, `"1Gi"` → 1073741824).
 * Numbers are accepted as-is (YAML often gives `cpu: 2`).
 * @throws QuantityParseError when the string is not a quantity.
 */
export function parseQuantity(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new QuantityParseError(String(value));
    return value;
  }
  const m = QUANTITY_RE.exec(value.trim());
  if (!m) throw new QuantityParseError(value);
  const num = Number(m[1]);
  if (m[2]) return num * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  const mult = BINARY[suffix] ?? DECIMAL[suffix] ?? 1;
  return num * mult;
}

/** True when `name` is measured in millicores internally (`cpu` only). */
export function isMilliResource(name: string): boolean {
  return name === 'cpu';
}

/**
 * Parses the quantity of resource `name` into internal units (millicores for `cpu`, rounded up as the
 * API server rounds sub-milli CPU; bytes/counts otherwise, rounded up to an integer).
 * @throws QuantityParseError when the string is not a quantity.
 */
export function parseResource(name: string, value: string | number): number {
  const base = parseQuantity(value);
  if (isMilliResource(name)) return Math.ceil(Math.round(base * 1e6) / 1e3);
  return Math.ceil(Math.round(base * 1e3) / 1e3);
}

/**
 * Parses a Kubernetes resource list (`{cpu: "500m", memory: "1Gi"}`) into internal units.
 * @throws QuantityParseError naming the resource when a value is not a quantity.
 */
export function parseResources(list: Record<string, string | number> | undefined): Resources {
  const out: Resources = {};
  if (!list) return out;
  for (const [name, v] of Object.entries(list)) {
    try {
      out[name] = parseResource(name, v);
    } catch (e) {
      if (e instanceof QuantityParseError) {
        throw new QuantityParseError(`${name}: ${String(v)}`);
      }
      throw e;
    }
  }
  return out;
}

/**
 * Formats an internal-unit value of resource `name` the way kubectl prints it:
 * cpu `"1930m"` (or `"2"` for whole cores); memory `"6903Mi"` when a whole number of MiB, else `"Ki"`,
 * else bytes; ephemeral-storage and hugepages as `"17Gi"` when whole GiB, else as memory; counts as integers.
 */
export function formatResource(name: string, value: number): string {
  if (isMilliResource(name)) {
    const v = Math.round(value);
    return v % 1000 === 0 ? String(v / 1000) : `${v}m`;
  }
  if (name === 'memory' || name === 'ephemeral-storage' || name.startsWith('hugepages-')) {
    const v = Math.round(value);
    if (name !== 'memory' && v !== 0 && v % BINARY.Gi! === 0) return `${v / BINARY.Gi!}Gi`;
    if (v !== 0 && v % BINARY.Mi! === 0) return `${v / BINARY.Mi!}Mi`;
    if (v !== 0 && v % BINARY.Ki! === 0) return `${v / BINARY.Ki!}Ki`;
    return String(v);
  }
  return String(Math.round(value));
}

/** Formats a whole resource list with {@link formatResource}, keys sorted. */
export function formatResources(r: Resources): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(r).sort()) out[k] = formatResource(k, r[k]!);
  return out;
}
