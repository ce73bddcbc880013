/**
 * `meta.k8s.io/v1` Table rendering for `kubectl get` (server-side printing): built-in columns for pods,
 * nodes, deployments and statefulsets mirroring pkg/printers/internalversion, `additionalPrinterColumns`
 * for custom resources (simple JSONPath subset), NAME and AGE for everything else.
 */
import {
  asArr,
  asObj,
  asStr,
  type Json,
  type JsonObject,
  type ResourceDef,
  type StoredObj,
} from '../../apis/builtin/types.ts';

/** `kubectl`'s short human duration (k8s.io/apimachinery/pkg/util/duration.HumanDuration). */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return h % 24 === 0 ? `${Math.floor(h / 24)}d` : `${Math.floor(h / 24)}d${h % 24}h`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24)}d`;
  const y = Math.floor(h / 24 / 365);
  if (y < 8) return `${y}y${Math.floor(h / 24) % 365}d`;
  return `${y}y`;
}

/**
 * Evaluate a kubectl-style JSONPath (`.status.phase`, `.spec.containers[0].image`,
 * `.status.conditions[?(@.type=="Ready")].status`, `.items[*].x`) returning all matches.
 */
export function jsonPath(obj: unknown, path: string): unknown[] {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1);
  const tokens: string[] = [];
  // A field name may contain escaped dots (`.metadata.labels.node\.kubernetes\.io/instance-type`).
  const re = /\.((?:\\\.|[A-Za-z0-9_\-/])+)|\[([^\]]*)\]/g;
  let m: RegExpExecArray | null = re.exec(p);
  while (m !== null) {
    tokens.push(m[1] !== undefined ? `.${m[1].replaceAll('\\.', '.')}` : `[${m[2]}]`);
    m = re.exec(p);
  }
  let cur: unknown[] = [obj];
  for (const t of tokens) {
    const next: unknown[] = [];
    for (const c of cur) {
      if (t.startsWith('.')) {
        const o = asObj(c);
        if (o && o[t.slice(1)] !== undefined) next.push(o[t.slice(1)]);
        continue;
      }
      const inner = t.slice(1, -1);
      const arr = asArr(c);
      if (!arr) continue;
      if (inner === '*') next.push(...arr);
      else if (/^-?\d+$/.test(inner)) {
        const i = Number(inner);
        const v = arr[i < 0 ? arr.length + i : i];
        if (v !== undefined) next.push(v);
      } else {
        const f = /^\?\(@\.([A-Za-z0-9_.]+)\s*==\s*["']?([^"']*)["']?\)$/.exec(inner);
        if (f) {
          for (const el of arr) {
            let v: unknown = el;
            for (const part of f[1]!.split('.')) v = asObj(v)?.[part];
            if (v !== undefined && String(v) === f[2]) next.push(el);
          }
        }
      }
    }
    cur = next;
  }
  return cur;
}

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
  cell: (o: StoredObj, now: number) => Json;
}

function age(o: StoredObj, now: number): string {
  return humanDuration(now - Date.parse(o.metadata.creationTimestamp));
}

const NAME: Column = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  priority: 0,
  cell: (o) => o.metadata.name,
};
const AGE: Column = {
  name: 'Age',
  type: 'string',
  format: '',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  priority: 0,
  cell: age,
};

function col(name: string, cell: (o: StoredObj, now: number) => Json, priority = 0, type = 'string'): Column {
  return { name, type, format: '', description: name, priority, cell };
}

function podStatus(o: StoredObj): string {
  const st = asObj(o.status) ?? {};
  let reason = asStr(st.reason) ?? asStr(st.phase) ?? 'Pending';
  for (const cs of asArr(st.containerStatuses) ?? []) {
    const w = asObj(asObj(asObj(cs)?.state)?.waiting);
    if (w && asStr(w.reason)) reason = asStr(w.reason)!;
  }
  if (o.metadata.deletionTimestamp) reason = 'Terminating';
  return reason;
}

function nodeStatus(o: StoredObj): string {
  const conds = (asArr(asObj(o.status)?.conditions) ?? []).map((c) => asObj(c) ?? {});
  const ready = conds.find((c) => c.type === 'Ready');
  let s = ready
    ? ready.status === 'True'
      ? 'Ready'
      : ready.status === 'False'
        ? 'NotReady'
        : 'Unknown'
    : 'Unknown';
  if (asObj(o.spec)?.unschedulable === true) s += ',SchedulingDisabled';
  return s;
}

function nodeRoles(o: StoredObj): string {
  const roles: string[] = [];
  for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) roles.push(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && v) roles.push(v);
  }
  return roles.length ? roles.sort().join(',') : '<none>';
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function columnsFor(def: ResourceDef): Column[] {
  const key = `${def.group}/${def.kind}`;
  switch (key) {
    case '/Pod':
      return [
        NAME,
        col('Ready', (o) => {
          const spec = asObj(o.spec) ?? {};
          const total = (asArr(spec.containers) ?? []).length;
          const ready = (asArr(asObj(o.status)?.containerStatuses) ?? []).filter(
            (c) => asObj(c)?.ready === true,
          ).length;
          return `${ready}/${total}`;
        }),
        col('Status', podStatus),
        col(
          'Restarts',
          (o) =>
            (asArr(asObj(o.status)?.containerStatuses) ?? []).reduce<number>(
              (a, c) => a + num(asObj(c)?.restartCount),
              0,
            ),
          0,
          'string',
        ),
        AGE,
        col('IP', (o) => asStr(asObj(o.status)?.podIP) ?? '<none>', 1),
        col('Node', (o) => asStr(asObj(o.spec)?.nodeName) ?? '<none>', 1),
        col('Nominated Node', (o) => asStr(asObj(o.status)?.nominatedNodeName) ?? '<none>', 1),
        col('Readiness Gates', () => '<none>', 1),
      ];
    case '/Node':
      return [
        NAME,
        col('Status', nodeStatus),
        col('Roles', nodeRoles),
        AGE,
        col('Version', (o) => asStr(asObj(asObj(o.status)?.nodeInfo)?.kubeletVersion) ?? ''),
        col('Internal-IP', (o) => addr(o, 'InternalIP'), 1),
        col('External-IP', (o) => addr(o, 'ExternalIP'), 1),
        col('OS-Image', (o) => asStr(asObj(asObj(o.status)?.nodeInfo)?.osImage) ?? '<unknown>', 1),
      ];
    case 'apps/Deployment':
      return [
        NAME,
        col('Ready', (o) => `${num(asObj(o.status)?.readyReplicas)}/${num(asObj(o.spec)?.replicas)}`),
        col('Up-to-date', (o) => num(asObj(o.status)?.updatedReplicas), 0, 'integer'),
        col('Available', (o) => num(asObj(o.status)?.availableReplicas), 0, 'integer'),
        AGE,
      ];
    case 'apps/StatefulSet':
      return [
        NAME,
        col('Ready', (o) => `${num(asObj(o.status)?.readyReplicas)}/${num(asObj(o.spec)?.replicas)}`),
        AGE,
      ];
    default: {
      const cols: Column[] = [NAME];
      let hasAge = false;
      for (const pc of def.printerColumns ?? []) {
        if (pc.jsonPath === '.metadata.creationTimestamp' && def.kind !== 'CustomResourceDefinition') {
          hasAge = true;
          cols.push({
            ...AGE,
            name: pc.name === 'Created At' ? 'Created At' : pc.name,
            priority: pc.priority ?? 0,
          });
          continue;
        }
        cols.push({
          name: pc.name,
          type: pc.type,
          format: pc.format ?? '',
          description: pc.description ?? pc.name,
          priority: pc.priority ?? 0,
          cell: (o, now) => {
            const v = jsonPath(o, pc.jsonPath)[0];
            if (v === undefined || v === null)
              return pc.type === 'integer' || pc.type === 'number' ? null : '';
            if (pc.type === 'date' && typeof v === 'string')
              return def.kind === 'CustomResourceDefinition' ? v : humanDuration(now - Date.parse(v));
            if (typeof v === 'object') return JSON.stringify(v);
            return v as Json;
          },
        });
      }
      if (!hasAge) cols.push(AGE);
      return cols;
    }
  }
}

function addr(o: StoredObj, type: string): string {
  const a = (asArr(asObj(o.status)?.addresses) ?? []).map((x) => asObj(x) ?? {}).find((x) => x.type === type);
  return asStr(a?.address) ?? '<none>';
}

/** How rows carry their object (`includeObject` query parameter). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Render objects as a `meta.k8s.io/v1` Table. */
export function toTable(
  def: ResourceDef,
  items: StoredObj[],
  opts: {
    includeObject: IncludeObject;
    resourceVersion: string;
    now: number;
    apiVersion: string;
    noHeaders?: boolean;
  },
): JsonObject {
  const cols = columnsFor(def);
  const rows = items.map((o) => {
    const row: JsonObject = { cells: cols.map((c) => c.cell(o, opts.now)) };
    if (opts.includeObject === 'Object') row.object = { ...o, apiVersion: opts.apiVersion };
    else if (opts.includeObject === 'Metadata')
      row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
    return row;
  });
  const t: JsonObject = {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: opts.resourceVersion },
    columnDefinitions: opts.noHeaders
      ? []
      : cols.map((c) => ({
          name: c.name,
          type: c.type,
          format: c.format,
          description: c.description,
          priority: c.priority,
        })),
    rows,
  };
  return t;
}
