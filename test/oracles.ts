/**
 * Test oracles: the numbers a plan must respect, computed here from the Kubernetes rules WITHOUT the code under
 * test (no `src/scheduling`), so a fit check cannot pass because the scheduler agreed with itself.
 *
 * - {@link podRequestsOracle}: Kubernetes `resourcehelper.PodRequests`.
 * - {@link daemonOverheadOracle}: the requests of the DaemonSet pods that run on every new node of a NodePool
 *   (upstream Karpenter `getDaemonOverhead`): a DaemonSet counts when its pod, with the tolerations the DaemonSet
 *   controller adds, tolerates the NodePool's `NoSchedule`/`NoExecute` taints and its node selector and one of its
 *   required node selector terms can be met by a node of the NodePool (labelled `karpenter.sh/registered=true`,
 *   `karpenter.sh/initialized=true`, `karpenter.sh/nodepool=<name>`; a well-known label the NodePool does not
 *   constrain may take any value). Given an instance type, the node also carries the type's labels and one of the
 *   zones / capacity types of its available offerings (upstream `buildDaemonOverheadGroups`: the overhead of
 *   that type).
 * - {@link minDaemonOverheadOracle}: the component-wise minimum of the per-type overheads over a NodeClaim's
 *   instance type options (upstream `NodeClaim.addDaemonRequests`).
 */
import type {
  Container,
  DaemonSet,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Taint,
  Toleration,
} from '../src/apis/core.ts';
import type { InstanceType } from '../src/apis/instancetype.ts';
import type { NodePool } from '../src/apis/karpenter.ts';
import { parseResources, type Resources } from '../src/apis/quantity.ts';

/**
 * Requests of a pod: max(sum of containers + restartable init (sidecar) containers, each init container + the
 * sidecars started before it) + pod overhead (Kubernetes `resourcehelper.PodRequests`); a missing request is
 * the limit. No `pods` entry.
 */
export function podRequestsOracle(pod: Pick<Pod, 'spec'>): Resources {
  const req = (c: Container) =>
    parseResources({ ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) });
  const add = (a: Resources, b: Resources) => {
    for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  };
  const max = (a: Resources, b: Resources) => {
    for (const [k, v] of Object.entries(b)) a[k] = Math.max(a[k] ?? 0, v);
  };
  const total: Resources = {};
  for (const c of pod.spec.containers) add(total, req(c));
  const sidecars: Resources = {};
  const initMax: Resources = {};
  for (const c of pod.spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      add(sidecars, req(c));
      continue;
    }
    const r = { ...req(c) };
    add(r, sidecars);
    max(initMax, r);
  }
  add(total, sidecars);
  max(total, initMax);
  add(total, parseResources(pod.spec.overhead ?? {}));
  return total;
}

/** Keys a node of any NodePool carries whatever the NodePool says (their value is decided at launch). */
const WELL_KNOWN = new Set([
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'karpenter.sh/capacity-type',
  'kubernetes.io/hostname',
]);

/** The DaemonSet controller's default tolerations (kubernetes `AddOrUpdateDaemonPodTolerations`). */
function defaultTolerations(hostNetwork: boolean): Toleration[] {
  const keys: Array<[string, Taint['effect']]> = [
    ['node.kubernetes.io/not-ready', 'NoExecute'],
    ['node.kubernetes.io/unreachable', 'NoExecute'],
    ['node.kubernetes.io/disk-pressure', 'NoSchedule'],
    ['node.kubernetes.io/memory-pressure', 'NoSchedule'],
    ['node.kubernetes.io/pid-pressure', 'NoSchedule'],
    ['node.kubernetes.io/unschedulable', 'NoSchedule'],
  ];
  if (hostNetwork) keys.push(['node.kubernetes.io/network-unavailable', 'NoSchedule']);
  return keys.map(([key, effect]) => ({ key, operator: 'Exists', effect }));
}

/** True when one of `tolerations` tolerates `taint` (Kubernetes `Toleration.ToleratesTaint`). */
export function tolerated(taint: Taint, tolerations: readonly Toleration[]): boolean {
  return tolerations.some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (!t.key) return t.operator === 'Exists';
    if (t.key !== taint.key) return false;
    return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
  });
}

/** What the NodePool allows for each key it constrains: a finite set, or everything but a set. */
type Allowed = { only: Set<string> } | { except: Set<string> };

function nodePoolAllowed(np: NodePool, it?: InstanceType): Map<string, Allowed> {
  const out = new Map<string, Allowed>();
  const put = (key: string, a: Allowed) => {
    const cur = out.get(key);
    if (!cur) return void out.set(key, a);
    if ('only' in cur && 'only' in a)
      out.set(key, { only: new Set([...cur.only].filter((v) => a.only.has(v))) });
    else if ('only' in cur && 'except' in a)
      out.set(key, { only: new Set([...cur.only].filter((v) => !a.except.has(v))) });
    else if ('except' in cur && 'only' in a)
      out.set(key, { only: new Set([...a.only].filter((v) => !cur.except.has(v))) });
    else if ('except' in cur && 'except' in a)
      out.set(key, { except: new Set([...cur.except, ...a.except]) });
  };
  const labels = {
    ...(np.spec.template.metadata?.labels ?? {}),
    'karpenter.sh/registered': 'true',
    'karpenter.sh/initialized': 'true',
    'karpenter.sh/nodepool': np.metadata.name,
  };
  for (const [k, v] of Object.entries(labels)) put(k, { only: new Set([v]) });
  for (const r of np.spec.template.spec.requirements ?? []) {
    if (r.operator === 'In') put(r.key, { only: new Set(r.values ?? []) });
    else if (r.operator === 'NotIn') put(r.key, { except: new Set(r.values ?? []) });
    else if (r.operator === 'Exists') put(r.key, { except: new Set() });
    else if (r.operator === 'DoesNotExist') put(r.key, { only: new Set() });
  }
  if (it) {
    for (const [k, v] of Object.entries(it.labels)) put(k, { only: new Set([v]) });
    const offered = it.offerings.filter((o) => o.available);
    put('topology.kubernetes.io/zone', { only: new Set(offered.map((o) => o.zone)) });
    put('karpenter.sh/capacity-type', { only: new Set(offered.map((o) => o.capacityType)) });
  }
  return out;
}

/** True when some node of the NodePool can satisfy `e` (In, NotIn, Exists, DoesNotExist; others: true). */
function satisfiable(e: NodeSelectorRequirement, allowed: Map<string, Allowed>): boolean {
  const a = allowed.get(e.key);
  const values = new Set(e.values ?? []);
  const free = !a && WELL_KNOWN.has(e.key); // any value possible
  switch (e.operator) {
    case 'In':
      if (!a) return free;
      return 'only' in a ? [...a.only].some((v) => values.has(v)) : [...values].some((v) => !a.except.has(v));
    case 'NotIn':
      if (!a) return true;
      return 'only' in a ? a.only.size === 0 || [...a.only].some((v) => !values.has(v)) : true;
    case 'Exists':
      if (!a) return free;
      return 'only' in a ? a.only.size > 0 : true;
    case 'DoesNotExist':
      if (!a) return true;
      return 'only' in a && a.only.size === 0;
    default:
      return true;
  }
}

/**
 * The daemon overhead of a new node of `nodePool` (internal units: cpu millicores, memory bytes, `pods` = number
 * of daemon pods), from the rules in the module doc.
 */
export function daemonOverheadOracle(
  nodePool: NodePool,
  daemonSets: readonly DaemonSet[],
  instanceType?: InstanceType,
): Resources {
  const allowed = nodePoolAllowed(nodePool, instanceType);
  const taints = (nodePool.spec.template.spec.taints ?? []).filter((t) => t.effect !== 'PreferNoSchedule');
  const out: Resources = {};
  for (const ds of daemonSets) {
    const spec = ds.spec.template.spec;
    const tolerations = [...(spec.tolerations ?? []), ...defaultTolerations(spec.hostNetwork === true)];
    if (!taints.every((t) => tolerated(t, tolerations))) continue;
    const selector = Object.entries(spec.nodeSelector ?? {}).map(
      ([key, v]): NodeSelectorRequirement => ({ key, operator: 'In', values: [v] }),
    );
    if (!selector.every((e) => satisfiable(e, allowed))) continue;
    const terms: NodeSelectorTerm[] =
      spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    if (
      terms.length > 0 &&
      !terms.some((t) => (t.matchExpressions ?? []).every((e) => satisfiable(e, allowed)))
    )
      continue;
    for (const [k, v] of Object.entries(podRequestsOracle({ spec }))) out[k] = (out[k] ?? 0) + v;
    out.pods = (out.pods ?? 0) + 1;
  }
  return out;
}

/**
 * The component-wise minimum of {@link daemonOverheadOracle} over `types` (upstream `addDaemonRequests`: the daemon
 * part of a NodeClaim's `spec.resources.requests`); `{}` when `types` is empty.
 */
export function minDaemonOverheadOracle(
  nodePool: NodePool,
  daemonSets: readonly DaemonSet[],
  types: readonly InstanceType[],
): Resources {
  let out: Resources | undefined;
  for (const t of types) {
    const o = daemonOverheadOracle(nodePool, daemonSets, t);
    if (!out) out = { ...o };
    else for (const k of Object.keys(out)) out[k] = Math.min(out[k]!, o[k] ?? 0);
  }
  return out ?? {};
}

/** `a` + `b` per resource (a fresh list). */
export function sumOracle(a: Resources, b: Resources): Resources {
  const out: Resources = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}
