/**
 * Pod resource requests and fit checks, in internal units (see `apis/quantity.ts`: cpu millicores,
 * memory/storage bytes, other resources counts).
 * Source: Kubernetes `k8s.io/component-helpers/resource` (PodRequests, sidecar rules) and upstream Karpenter
 * `pkg/utils/resources`.
 */
import type { Container, Pod } from '../apis/core.ts';
import { formatResource, parseResources, type Resources } from '../apis/quantity.ts';

function containerRequests(c: Container): Resources {
  // The API server defaults a missing request to the limit.
  const limits = parseResources(c.resources?.limits);
  const requests = parseResources(c.resources?.requests);
  return { ...limits, ...requests };
}

/** Adds `b` into `a` (mutates and returns `a`). */
export function addInto(a: Resources, b: Resources): Resources {
  for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  return a;
}

/** `a + b` as a new object. */
export function sumResources(...lists: Resources[]): Resources {
  const out: Resources = {};
  for (const l of lists) addInto(out, l);
  return out;
}

/** `a − b` as a new object (keys of `a` and `b`; may go negative). */
export function subtractResources(a: Resources, b: Resources): Resources {
  const out: Resources = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) - v;
  return out;
}

/** Per-key maximum as a new object. */
export function maxResources(...lists: Resources[]): Resources {
  const out: Resources = {};
  for (const l of lists) for (const [k, v] of Object.entries(l)) out[k] = Math.max(out[k] ?? v, v);
  return out;
}

/** True for the resources a pod-level `spec.resources` may set (k8s `IsSupportedPodLevelResource`). */
export function isPodLevelResource(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

/**
 * The requests of a pod as kube-scheduler accounts them: max(sum of app containers + all sidecars,
 * max over init containers of (that init container + sidecars started before it, or the sidecars so far
 * for a sidecar)); then the pod-level `spec.resources` requests (k8s 1.32+ PodLevelResources; a missing pod-level
 * request defaults to its pod-level limit, as the API server does) replace that aggregate for cpu, memory and
 * hugepages-*; then + `spec.overhead`, plus `pods: 1`. A missing container request defaults to the limit.
 * Mirrors `k8s.io/component-helpers/resource` `PodRequests` as upstream's `resources.Ceiling` calls it.
 * @throws QuantityParseError when a quantity is malformed.
 */
export function podRequests(pod: Pod): Resources {
  const app: Resources = {};
  for (const c of pod.spec.containers ?? []) addInto(app, containerRequests(c));
  const sidecars: Resources = {};
  let initMax: Resources = {};
  for (const c of pod.spec.initContainers ?? []) {
    const r = containerRequests(c);
    if (c.restartPolicy === 'Always') {
      addInto(sidecars, r);
      initMax = maxResources(initMax, sidecars);
    } else {
      initMax = maxResources(initMax, sumResources(r, sidecars));
    }
  }
  const out = maxResources(addInto(app, sidecars), initMax);
  if (pod.spec.resources)
    for (const [k, v] of Object.entries(containerRequests({ name: 'pod', resources: pod.spec.resources })))
      if (isPodLevelResource(k)) out[k] = v;
  addInto(out, parseResources(pod.spec.overhead));
  out.pods = (out.pods ?? 0) + 1;
  for (const k of Object.keys(out)) if (out[k] === 0 && k !== 'pods') delete out[k];
  return out;
}

/** Sum of {@link podRequests} over pods. */
export function podsRequests(pods: readonly Pod[]): Resources {
  const out: Resources = {};
  for (const p of pods) addInto(out, podRequests(p));
  return out;
}

/**
 * Returns `undefined` when `requests` fit in `available` for every resource requested (> 0), else a message
 * listing each short resource with what is needed, what is available and the shortfall, e.g.
 * `cpu: need 2200m, have 1930m (short 270m); memory: ...`.
 */
export function fits(requests: Resources, available: Resources): string | undefined {
  const short: string[] = [];
  for (const k of Object.keys(requests).sort()) {
    const need = requests[k]!;
    if (need <= 0) continue;
    const have = available[k] ?? 0;
    if (need > have) {
      short.push(
        `${k}: need ${formatResource(k, need)}, have ${formatResource(k, Math.max(0, have))} (short ${formatResource(k, need - Math.max(0, have))})`,
      );
    }
  }
  return short.length ? short.join('; ') : undefined;
}

/** `cpu 1600m, memory 3000Mi, pods 1` — keys sorted with cpu/memory first. */
export function formatRequests(r: Resources): string {
  const order = (k: string) => (k === 'cpu' ? 0 : k === 'memory' ? 1 : 2);
  return Object.keys(r)
    .filter((k) => r[k] !== 0)
    .sort((a, b) => order(a) - order(b) || a.localeCompare(b))
    .map((k) => `${k} ${formatResource(k, r[k]!)}`)
    .join(', ');
}
