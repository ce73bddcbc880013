/**
 * What the Kubernetes API server's admission plugins do to a Pod before anyone (kube-scheduler, Karpenter)
 * sees it, as a pure function: `capenter simulate` applies it to the pods it expands, and the embedded API
 * server to every Pod created through it, so both see the same pod the real cluster would store.
 *
 * Plugins, in the API server's order (`plugin/pkg/admission`):
 * 1. LimitRanger: `Container` items of the namespace's LimitRanges default each container's missing requests
 *    (`defaultRequest`, else `default`, else `max`) and limits (`default`, else `max`).
 * 2. DefaultTolerationSeconds: tolerations `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable`
 *    (`NoExecute`, `tolerationSeconds: 300`) unless the pod already tolerates them.
 * 3. RuntimeClass (`node.k8s.io/v1`): for `spec.runtimeClassName`, `overhead.podFixed` becomes `spec.overhead`
 *    (a pod that sets a different overhead is rejected) and `scheduling.nodeSelector` / `tolerations` are merged
 *    into the pod's (a conflicting nodeSelector value is rejected). A missing RuntimeClass is rejected.
 * 4. Priority (`scheduling.k8s.io/v1`): `spec.priorityClassName` (else the `globalDefault` class) sets
 *    `spec.priority` and `spec.preemptionPolicy` (default `PreemptLowerPriority`); the built-in
 *    `system-node-critical` (2000001000) and `system-cluster-critical` (2000000000) always exist. A missing class
 *    is rejected; no class and no global default gives priority 0.
 *
 * Pure: never mutates its input (returns a copy when something changed).
 */
import type { KubeObject, Pod, Toleration } from './core.ts';

/** A RuntimeClass (`node.k8s.io/v1`), the fields admission reads. */
export interface RuntimeClass extends KubeObject {
  handler?: string;
  overhead?: { podFixed?: Record<string, string | number> };
  scheduling?: { nodeSelector?: Record<string, string>; tolerations?: Toleration[] };
}

/** A PriorityClass (`scheduling.k8s.io/v1`), the fields admission reads. */
export interface PriorityClass extends KubeObject {
  value: number;
  globalDefault?: boolean;
  preemptionPolicy?: 'PreemptLowerPriority' | 'Never';
}

/** One `spec.limits[]` item of a LimitRange. */
export interface LimitRangeItem {
  type?: string;
  default?: Record<string, string | number>;
  defaultRequest?: Record<string, string | number>;
  max?: Record<string, string | number>;
  min?: Record<string, string | number>;
}

/** The cluster objects admission consults (any may be omitted). */
export interface AdmissionObjects {
  runtimeClasses?: readonly RuntimeClass[];
  priorityClasses?: readonly PriorityClass[];
  /** LimitRange objects of any namespace (only the pod's namespace applies). */
  limitRanges?: readonly KubeObject[];
}

/** The admitted pod, or why the API server rejects it (403 Forbidden, message as the API server words it). */
export type AdmissionResult = { pod: Pod } | { rejected: string };

/** Built-in PriorityClasses the API server always has (`pkg/apis/scheduling` SystemPriorityClasses). */
export const SystemPriorityClasses: readonly PriorityClass[] = [
  {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'system-node-critical' },
    value: 2000001000,
  },
  {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'system-cluster-critical' },
    value: 2000000000,
  },
];

/** Seconds of the DefaultTolerationSeconds tolerations (the plugin's default). */
export const DefaultTolerationSeconds = 300;

const nsOf = (o: KubeObject) => o.metadata?.namespace ?? 'default';

/** LimitRanger defaults (see the module doc, step 1). Returns `pod` itself when nothing applies. */
export function applyLimitRangeDefaults(pod: Pod, limitRanges: readonly KubeObject[]): Pod {
  const ns = nsOf(pod);
  const items = limitRanges
    .filter((lr) => nsOf(lr) === ns)
    .flatMap((lr) =>
      ((lr.spec as { limits?: LimitRangeItem[] } | undefined)?.limits ?? []).filter(
        (i) => i.type === 'Container',
      ),
    );
  if (items.length === 0) return pod;
  const out = structuredClone(pod);
  for (const item of items) {
    const limits = { ...(item.max ?? {}), ...(item.default ?? {}) };
    const requests = { ...limits, ...(item.defaultRequest ?? {}) };
    for (const c of [...(out.spec.initContainers ?? []), ...(out.spec.containers ?? [])]) {
      c.resources ??= {};
      const res = c.resources;
      for (const [k, v] of Object.entries(requests)) {
        if (res.requests?.[k] === undefined && res.limits?.[k] === undefined) {
          res.requests ??= {};
          res.requests[k] = v;
        }
      }
      for (const [k, v] of Object.entries(limits)) {
        if (res.limits?.[k] === undefined) {
          res.limits ??= {};
          res.limits[k] = v;
        }
      }
    }
  }
  return out;
}

function tolerates(tols: readonly Toleration[], key: string): boolean {
  return tols.some(
    (t) =>
      (t.key === key || (t.key === undefined && t.operator === 'Exists')) &&
      (t.effect === undefined || t.effect === 'NoExecute'),
  );
}

function sameToleration(a: Toleration, b: Toleration): boolean {
  return (
    a.key === b.key &&
    (a.operator ?? 'Equal') === (b.operator ?? 'Equal') &&
    (a.value ?? '') === (b.value ?? '') &&
    a.effect === b.effect &&
    a.tolerationSeconds === b.tolerationSeconds
  );
}

/**
 * Runs the admission plugins of the module doc on `pod` with the cluster's `objs`. Returns a copy of the pod
 * with the defaults, or the rejection message.
 */
export function admitPod(pod: Pod, objs: AdmissionObjects): AdmissionResult {
  let out = applyLimitRangeDefaults(pod, objs.limitRanges ?? []);
  const spec = { ...out.spec };
  // DefaultTolerationSeconds
  const tols = [...(spec.tolerations ?? [])];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'])
    if (!tolerates(tols, key))
      tols.push({
        key,
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: DefaultTolerationSeconds,
      });
  spec.tolerations = tols;
  // RuntimeClass
  const rcName = spec.runtimeClassName as string | undefined;
  if (rcName) {
    const rc = (objs.runtimeClasses ?? []).find((r) => r.metadata?.name === rcName);
    if (!rc) return { rejected: `pod rejected: RuntimeClass "${rcName}" not found` };
    const fixed = rc.overhead?.podFixed;
    if (fixed) {
      if (spec.overhead && JSON.stringify(spec.overhead) !== JSON.stringify(fixed))
        return { rejected: `pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead` };
      spec.overhead = { ...fixed };
    }
    const sel = rc.scheduling?.nodeSelector;
    if (sel) {
      const merged = { ...(spec.nodeSelector ?? {}) };
      for (const [k, v] of Object.entries(sel)) {
        if (merged[k] !== undefined && merged[k] !== v)
          return {
            rejected: `pod rejected: conflict in nodeSelector: RuntimeClass "${rcName}" sets ${k}=${v}, the pod ${k}=${merged[k]}`,
          };
        merged[k] = v;
      }
      spec.nodeSelector = merged;
    }
    for (const t of rc.scheduling?.tolerations ?? [])
      if (!tols.some((x) => sameToleration(x, t))) tols.push({ ...t });
  }
  // Priority
  const classes = [...SystemPriorityClasses, ...(objs.priorityClasses ?? [])];
  const pcName = spec.priorityClassName;
  // (a pod read back from a cluster already carries its priority: left as it is)
  const pc = pcName
    ? classes.find((c) => c.metadata?.name === pcName)
    : spec.priority !== undefined
      ? undefined
      : (objs.priorityClasses ?? []).filter((c) => c.globalDefault).sort((a, b) => b.value - a.value)[0];
  if (pcName && !pc) return { rejected: `no PriorityClass with name ${pcName} was found` };
  if (pc) {
    if (spec.priority !== undefined && spec.priority !== pc.value && pcName)
      return {
        rejected: `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${pc.value} from the given PriorityClass name`,
      };
    const name = pc.metadata?.name ?? pcName;
    if (name !== undefined) spec.priorityClassName = name;
    spec.priority = pc.value;
    spec.preemptionPolicy = pc.preemptionPolicy ?? 'PreemptLowerPriority';
  } else {
    spec.priority ??= 0;
    spec.preemptionPolicy ??= 'PreemptLowerPriority';
  }
  out = { ...out, spec };
  return { pod: out };
}
