/**
 * Bottlerocket user data written as upstream writes it: go-toml v2 (`toml.Marshal`) of upstream's
 * `BottlerocketConfig` (aws/karpenter-provider-aws `pkg/providers/amifamily/bootstrap/bottlerocketsettings.go`).
 * go-toml's layout: a table's key/values first, then its sub-tables, each sub-table after a blank line (none before
 * the first when the table has no key/values); map keys sorted, struct fields in declaration order; bare keys when
 * they are `[A-Za-z0-9_-]+`, else `'literal'` keys; strings as `'literal'` unless they hold `'` or control
 * characters (then `"basic"`); arrays inline with `, `.
 *
 * Pure. The output carries join credentials (cluster CA) — never log it.
 */

type Table = Record<string, unknown>;

/** `settings.kubernetes` fields in upstream's `BottlerocketKubernetes` declaration order. */
const KUBERNETES_FIELDS = [
  'api-server',
  'cloud-provider',
  'cluster-certificate',
  'cluster-name',
  'cluster-dns-ip',
  'credential-providers',
  'node-labels',
  'node-taints',
  'max-pods',
  'static-pods',
  'eviction-hard',
  'eviction-soft',
  'eviction-soft-grace-period',
  'eviction-max-pod-grace-period',
  'kube-reserved',
  'system-reserved',
  'allowed-unsafe-sysctls',
  'server-tls-bootstrap',
  'registry-qps',
  'registry-burst',
  'event-qps',
  'event-burst',
  'kube-api-qps',
  'kube-api-burst',
  'container-log-max-size',
  'container-log-max-files',
  'cpu-manager-policy',
  'cpu-manager-policy-options',
  'cpu-manager-reconcile-period',
  'memory-manager-policy',
  'memory-manager-reserved-memory',
  'topology-manager-scope',
  'topology-manager-policy',
  'topology-manager-policy-options',
  'image-gc-high-threshold-percent',
  'image-gc-low-threshold-percent',
  'ids-per-pod',
  'cpu-cfs-quota-enforced',
  'shutdown-grace-period',
  'shutdown-grace-period-for-critical-pods',
  'cluster-domain',
  'seccomp-default',
  'pod-pids-limit',
  'device-ownership-from-security-context',
  'single-process-oom-kill',
  'container-log-max-workers',
  'container-log-monitor-interval',
  'hostname-override-source',
  'log-level',
];

/** Field order of the structs nested under `settings` (upstream's struct declarations), by table path. */
function structFields(path: readonly string[]): readonly string[] | undefined {
  const p = path.join('.');
  if (p === 'settings.kubernetes') return KUBERNETES_FIELDS;
  const parent = path.slice(0, -1).join('.');
  if (parent === 'settings.kubernetes.credential-providers') {
    return ['enabled', 'cache-duration', 'image-patterns', 'environment'];
  }
  if (parent === 'settings.kubernetes.static-pods') return ['enabled', 'manifest'];
  if (parent === 'settings.kubernetes.memory-manager-reserved-memory') {
    return ['enabled', 'memory', 'hugepages-2Mi', 'hugepages-1Gi'];
  }
  if (p === 'settings.kubernetes.topology-manager-policy-options') {
    return ['prefer-closest-numa-nodes', 'max-allowable-numa-nodes'];
  }
  if (parent === 'settings.bootstrap-commands') return ['commands', 'mode', 'essential'];
  return undefined;
}

function isTable(v: unknown): v is Table {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** go-toml's `needsQuoting`: a `'`, CR, LF or a control character rules out a literal string. */
function needsQuoting(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x27 || (c < 0x20 && c !== 0x09) || c === 0x7f) return true;
  }
  return false;
}

function basicString(s: string): string {
  return JSON.stringify(s).replaceAll('\x7f', '\\u007f');
}

function encodeString(s: string): string {
  return needsQuoting(s) ? basicString(s) : `'${s}'`;
}

function encodeKey(k: string): string {
  if (k === '') return "''";
  if (/^[A-Za-z0-9_-]+$/.test(k)) return k;
  return k.includes("'") || needsQuoting(k) ? basicString(k) : `'${k}'`;
}

function encodeValue(v: unknown): string {
  if (typeof v === 'string') return encodeString(v);
  if (typeof v === 'boolean' || typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `[${v.map(encodeValue).join(', ')}]`;
  if (isTable(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${encodeKey(k)} = ${encodeValue(v[k])}`)
      .join(', ')}}`;
  }
  return encodeString(String(v));
}

/** The keys of `t` in go-toml's order: struct fields as declared (unknown keys after them, sorted), else sorted. */
function orderedKeys(t: Table, path: readonly string[]): string[] {
  const keys = Object.keys(t).filter((k) => t[k] !== undefined && t[k] !== null);
  const fields = structFields(path);
  if (!fields) return keys.sort();
  const known = fields.filter((f) => keys.includes(f));
  return [...known, ...keys.filter((k) => !fields.includes(k)).sort()];
}

function encodeTable(t: Table, path: readonly string[], out: string[]): void {
  if (path.length > 0) out.push(`[${path.map(encodeKey).join('.')}]\n`);
  const keys = orderedKeys(t, path);
  const kvs = keys.filter((k) => !isTable(t[k]));
  // A struct's map field with `omitempty` (node-labels, node-taints, ...) is left out when empty.
  const tables = keys.filter(
    (k) => isTable(t[k]) && !(structFields(path) && Object.keys(t[k] as Table).length === 0),
  );
  for (const k of kvs) out.push(`${encodeKey(k)} = ${encodeValue(t[k])}\n`);
  tables.forEach((k, i) => {
    if (i > 0 || kvs.length > 0) out.push('\n');
    encodeTable(t[k] as Table, [...path, k], out);
  });
}

/**
 * `{ settings }` as upstream's `BottlerocketConfig.MarshalTOML` writes it (only the `settings` table: upstream's
 * config has no other top-level key).
 */
export function marshalBottlerocketTOML(settings: Table): string {
  const out: string[] = [];
  encodeTable({ settings }, [], out);
  return out.join('');
}
