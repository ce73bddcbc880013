/**
 * Resource quantities inside built-in objects (Pods and the workloads that template them, Nodes, LimitRanges,
 * PersistentVolumeClaims, PersistentVolumes, ResourceQuotas), checked as the Kubernetes API server checks them
 * (`resource.ParseQuantity` in `ValidateResourceRequirements` and friends): a value that is not a quantity
 * (`cpu: lots`) is an input error naming the field, never a pod that silently stays pending.
 *
 * Pure: used by the manifest loader (`load.ts`), so `capenter simulate` reports such objects with exit code 2.
 */
import type { KubeObject } from './core.ts';
import { parseQuantity } from './quantity.ts';

/** One malformed quantity: the field path (`spec.template.spec.containers[0].resources.requests.cpu`) and value. */
export interface QuantityIssue {
  /** Path segments from the object root, for locating the line. */
  path: Array<string | number>;
  /** Dotted field path with `[i]` indexes. */
  fieldPath: string;
  value: unknown;
  message: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where the pod spec lives for each kind that carries one (`[]` for a Pod). */
const POD_SPEC_PATHS: Readonly<Record<string, ReadonlyArray<string>>> = {
  Pod: ['spec'],
  Deployment: ['spec', 'template', 'spec'],
  ReplicaSet: ['spec', 'template', 'spec'],
  ReplicationController: ['spec', 'template', 'spec'],
  StatefulSet: ['spec', 'template', 'spec'],
  DaemonSet: ['spec', 'template', 'spec'],
  Job: ['spec', 'template', 'spec'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template', 'spec'],
};

function fieldPath(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : p;
  return out;
}

function get(o: unknown, path: ReadonlyArray<string | number>): unknown {
  let cur = o;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

/** Checks every value of a resource list (`{cpu: "500m", memory: "1Gi"}`) at `path`. */
function checkList(obj: unknown, path: Array<string | number>, out: QuantityIssue[]): void {
  const list = get(obj, path);
  if (list === undefined || list === null) return;
  if (!isObj(list)) {
    out.push({
      path,
      fieldPath: fieldPath(path),
      value: list,
      message: `${fieldPath(path)}: must be a map of resource name to quantity`,
    });
    return;
  }
  for (const [name, v] of Object.entries(list)) {
    const p = [...path, name];
    let bad = typeof v !== 'string' && typeof v !== 'number';
    if (!bad) {
      try {
        const q = parseQuantity(v as string | number);
        bad = !Number.isFinite(q);
      } catch {
        bad = true;
      }
    }
    if (bad)
      out.push({
        path: p,
        fieldPath: fieldPath(p),
        value: v,
        message: `${fieldPath(p)}: Invalid value: ${JSON.stringify(v)}: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (for example 500m, 2, 1Gi)`,
      });
  }
}

function checkPodSpec(obj: unknown, spec: Array<string | number>, out: QuantityIssue[]): void {
  for (const field of ['initContainers', 'containers', 'ephemeralContainers']) {
    const list = get(obj, [...spec, field]);
    if (!Array.isArray(list)) continue;
    list.forEach((_, i) => {
      checkList(obj, [...spec, field, i, 'resources', 'requests'], out);
      checkList(obj, [...spec, field, i, 'resources', 'limits'], out);
    });
  }
  checkList(obj, [...spec, 'overhead'], out);
  checkList(obj, [...spec, 'resources', 'requests'], out);
  checkList(obj, [...spec, 'resources', 'limits'], out);
}

/**
 * Every malformed quantity in `obj` (empty when none or the kind has no quantities). Never throws.
 * Fields checked: pod specs (containers, init and ephemeral containers' requests/limits, `overhead`, pod-level
 * `resources`) of Pods and every workload kind that templates one (incl. StatefulSet `volumeClaimTemplates`),
 * Node `status.capacity`/`allocatable`, LimitRange `spec.limits[*]` (`default`, `defaultRequest`, `max`, `min`,
 * `maxLimitRequestRatio`), PersistentVolumeClaim `spec.resources`, PersistentVolume `spec.capacity`,
 * ResourceQuota `spec.hard`.
 */
export function quantityIssues(obj: KubeObject): QuantityIssue[] {
  const out: QuantityIssue[] = [];
  const kind = obj.kind ?? '';
  const spec = POD_SPEC_PATHS[kind];
  if (spec) checkPodSpec(obj, [...spec], out);
  switch (kind) {
    case 'StatefulSet': {
      const vcts = get(obj, ['spec', 'volumeClaimTemplates']);
      if (Array.isArray(vcts))
        vcts.forEach((_, i) => {
          checkList(obj, ['spec', 'volumeClaimTemplates', i, 'spec', 'resources', 'requests'], out);
          checkList(obj, ['spec', 'volumeClaimTemplates', i, 'spec', 'resources', 'limits'], out);
        });
      break;
    }
    case 'Node':
      checkList(obj, ['status', 'capacity'], out);
      checkList(obj, ['status', 'allocatable'], out);
      break;
    case 'LimitRange': {
      const limits = get(obj, ['spec', 'limits']);
      if (Array.isArray(limits))
        limits.forEach((_, i) => {
          for (const f of ['default', 'defaultRequest', 'max', 'min', 'maxLimitRequestRatio'])
            checkList(obj, ['spec', 'limits', i, f], out);
        });
      break;
    }
    case 'PersistentVolumeClaim':
      checkList(obj, ['spec', 'resources', 'requests'], out);
      checkList(obj, ['spec', 'resources', 'limits'], out);
      break;
    case 'PersistentVolume':
      checkList(obj, ['spec', 'capacity'], out);
      break;
    case 'ResourceQuota':
      checkList(obj, ['spec', 'hard'], out);
      break;
    default:
      break;
  }
  return out;
}
