/**
 * The kube-scheduler stand-in's filter and score plugins, pure and synchronous. They mirror the default
 * kube-scheduler profile (kubernetes/pkg/scheduler/framework/plugins) in the order it runs filters:
 * NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread,
 * InterPodAffinity; the first failing plugin decides a node's reasons (NodeResourcesFit may give several).
 * Every node/pod matching rule (node affinity incl. `matchFields`, taints by effect, selectors with
 * `matchLabelKeys`/`mismatchLabelKeys`, spread node inclusion policies), resource requests and host ports come
 * through the injected {@link SchedulingRules} (`rules.ts`; capenter injects its scheduling core's, so the
 * stand-in and capenter's provisioner agree on what fits); this file keeps what is kube-scheduler's own:
 * per-cycle state, scoring and messages. The per-pod memos below assume one rules implementation per process.
 *
 * Differences from kube-scheduler (documented gaps): volumes (VolumeBinding/VolumeZone/limits) are not
 * checked; a node without a `Ready=True` condition is treated as tainted `node.kubernetes.io/not-ready:NoSchedule`
 * (what the node lifecycle controller does); a node without `allocatable.pods` allows 110 pods; scoring uses
 * NodeResourcesFit (MostAllocated or LeastAllocated), preferred node affinity and PreferNoSchedule taints
 * only (no spread/pod-affinity/balanced-allocation/image scores); ties go to the lowest node name.
 */
import type { LabelSelector, Node, Pod, PodAffinityTerm, Taint } from '../../apis/core.ts';
import { parseResources, type Resources } from '../../apis/quantity.ts';
import type { HostPort, HostPortSet, PodGroup, SchedulingRules, TopologyPod } from './rules.ts';

/** Taint the node lifecycle controller puts on nodes that are not Ready (here: virtual). */
export const TaintNotReady = 'node.kubernetes.io/not-ready';
/** Taint matching `spec.unschedulable` (cordoned nodes). */
export const TaintUnschedulable = 'node.kubernetes.io/unschedulable';
/** `allocatable.pods` assumed when a node does not report it (kubelet's default maxPods). */
export const DefaultMaxPods = 110;

/** kube-scheduler's reason strings (`pkg/scheduler/framework/plugins/*`). */
export const Reasons = {
  unschedulable: 'node(s) were unschedulable',
  nodeAffinity: "node(s) didn't match Pod's node affinity/selector",
  ports: "node(s) didn't have free ports for the requested pod ports",
  tooManyPods: 'Too many pods',
  spreadMissingLabel: "node(s) didn't match pod topology spread constraints (missing required label)",
  spread: "node(s) didn't match pod topology spread constraints",
  existingAntiAffinity: "node(s) didn't satisfy existing pods anti-affinity rules",
  antiAffinity: "node(s) didn't match pod anti-affinity rules",
  affinity: "node(s) didn't match pod affinity rules",
} as const;

/** `Insufficient <resource>` as NodeResourcesFit reports it. */
export function insufficient(resource: string): string {
  return `Insufficient ${resource}`;
}

/** `node(s) had untolerated taint {key: value}` as TaintToleration reports it. */
export function untoleratedTaintReason(t: Taint): string {
  return `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`;
}

/** A node as the scheduler sees it: its pods (non-terminal, bound or assumed) and their totals. */
export interface NodeInfo {
  node: Node;
  name: string;
  labels: Readonly<Record<string, string>>;
  /** Non-terminal pods on the node, including ones being deleted and ones just bound (assumed). */
  pods: Pod[];
  /** The subset of `pods` with required pod anti-affinity terms. */
  antiAffinityPods: Pod[];
  /** Sum of the pods' requests (internal units; `pods` is the pod count). */
  requested: Resources;
  /** Like `requested` but with kube-scheduler's non-zero defaults (100m cpu, 200Mi memory) for scoring. */
  requestedNonZero: Resources;
  /** Allocatable in internal units (`pods` defaulted to {@link DefaultMaxPods}). */
  allocatable: Resources;
  ports: HostPortSet;
  /** NoSchedule/NoExecute/PreferNoSchedule taints, plus the virtual not-ready taint. */
  taints: Taint[];
  ready: boolean;
  /**
   * Per topology group (see {@link CountIndex}): how many of `pods` it selects, computed on first use and kept
   * up to date by {@link addPodToNodeInfo}.
   */
  counts: Map<PodGroup, number>;
}

const NONZERO_CPU = 100;
const NONZERO_MEMORY = 200 * 1024 * 1024;

/** Requests of a pod for scoring: cpu/memory default to 100m/200Mi when unset (schedutil.GetNonzeroRequests). */
export function nonZeroRequests(req: Resources): Resources {
  return { ...req, cpu: req.cpu || NONZERO_CPU, memory: req.memory || NONZERO_MEMORY };
}

/** True when the node has `Ready=True`. */
export function nodeIsReady(node: Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Requests per pod spec object (cached objects are never mutated, so the spec identity is a version). */
const requestsBySpec = new WeakMap<object, Resources>();

/**
 * Requests of a pod, tolerating malformed quantities (they count as zero; the API server validates them).
 * Memoised per `pod.spec` object: treat the result as read-only.
 */
export function safePodRequests(rules: SchedulingRules, pod: Pod): Resources {
  const spec = pod.spec as object | undefined;
  const cached = spec ? requestsBySpec.get(spec) : undefined;
  if (cached) return cached;
  let r: Resources;
  try {
    r = rules.podRequests(pod);
  } catch {
    r = { pods: 1 };
  }
  if (spec) requestsBySpec.set(spec, r);
  return r;
}

/** Builds a {@link NodeInfo} from a node and the (non-terminal) pods on it. */
export function buildNodeInfo(rules: SchedulingRules, node: Node, pods: readonly Pod[]): NodeInfo {
  let allocatable: Resources;
  try {
    allocatable = parseResources(node.status?.allocatable ?? node.status?.capacity);
  } catch {
    allocatable = {};
  }
  if (allocatable.pods === undefined) allocatable.pods = DefaultMaxPods;
  const ready = nodeIsReady(node);
  const taints = [...(node.spec?.taints ?? [])];
  if (!ready && !taints.some((t) => t.key === TaintNotReady && t.effect === 'NoSchedule'))
    taints.push({ key: TaintNotReady, effect: 'NoSchedule' });
  const info: NodeInfo = {
    node,
    name: node.metadata.name ?? '',
    labels: node.metadata.labels ?? {},
    pods: [],
    antiAffinityPods: [],
    requested: {},
    requestedNonZero: {},
    allocatable,
    ports: rules.hostPortSet(),
    taints,
    ready,
    counts: new Map(),
  };
  for (const p of pods) addPodToNodeInfo(rules, info, p);
  return info;
}

/** Accounts `pod` on `info` (used for pods bound by the scheduler before the informer shows them). */
export function addPodToNodeInfo(
  rules: SchedulingRules,
  info: NodeInfo,
  pod: Pod,
  req = safePodRequests(rules, pod),
): void {
  info.pods.push(pod);
  if (pod.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length)
    info.antiAffinityPods.push(pod);
  rules.addInto(info.requested, req);
  rules.addInto(info.requestedNonZero, nonZeroRequests(req));
  info.ports.add(rules.podHostPorts(pod));
  if (info.counts.size > 0) {
    const tp = topologyPod(rules, pod);
    for (const [g, c] of info.counts) if (counts(g, pod, tp)) info.counts.set(g, c + 1);
  }
}

// ---------------------------------------------------------------- indexed topology counts

/** A pod as pod groups select it, memoised per pod object. */
const topologyPods = new WeakMap<Pod, TopologyPod>();

function topologyPod(rules: SchedulingRules, pod: Pod): TopologyPod {
  let tp = topologyPods.get(pod);
  if (!tp) {
    const namespace = pod.metadata.namespace ?? 'default';
    const labels = pod.metadata.labels ?? {};
    tp = { namespace, labels, selectKey: rules.selectKeyOf({ namespace, labels }) };
    topologyPods.set(pod, tp);
  }
  return tp;
}

/** Whether group `g` counts `pod`: spread groups skip pods being deleted (kube-scheduler PodTopologySpread). */
function counts(g: PodGroup, pod: Pod, tp: TopologyPod): boolean {
  if (g.kind === 'spread' && pod.metadata.deletionTimestamp) return false;
  return g.selects(tp);
}

/**
 * The pod groups (selector + namespaces, {@link SchedulingRules.podGroup}, whose selection is memoised per pod
 * label set) that spread constraints and pod (anti-)affinity terms count with. Keep one per
 * scheduler: per-node counts are cached on each {@link NodeInfo} by group, so a pod's PreFilter reads one
 * number per node instead of matching every pod of the cluster.
 */
export class CountIndex {
  private readonly groups = new Map<string, PodGroup>();

  constructor(private readonly rules: SchedulingRules) {}

  /** The group for `kind` over `selector` in `namespaces` (a fresh index past 10,000 groups). */
  group(
    kind: 'spread' | 'affinity',
    selector: LabelSelector | undefined,
    namespaces: ReadonlySet<string>,
  ): PodGroup {
    const id = `${kind}|${this.rules.selectorKey(selector)}|${[...namespaces].sort().join(',')}`;
    let g = this.groups.get(id);
    if (!g) {
      if (this.groups.size >= 10000) this.groups.clear();
      g = this.rules.podGroup(id, kind, selector, namespaces);
      this.groups.set(id, g);
    }
    return g;
  }
}

/** How many pods on node `n` group `g` selects (cached on the node info). */
export function nodeCount(rules: SchedulingRules, n: NodeInfo, g: PodGroup): number {
  let c = n.counts.get(g);
  if (c === undefined) {
    c = 0;
    for (const p of n.pods) if (counts(g, p, topologyPod(rules, p))) c++;
    n.counts.set(g, c);
  }
  return c;
}

// ---------------------------------------------------------------- selectors and terms

/** Looks up a namespace's labels (for `namespaceSelector`); undefined when unknown. */
export type NamespaceLabels = (namespace: string) => Readonly<Record<string, string>> | undefined;

/** A pod affinity term resolved against its owner pod: which pods it selects. */
interface ResolvedTerm {
  topologyKey: string;
  selector: LabelSelector | undefined;
  namespaces: ReadonlySet<string>;
  /** `namespaceSelector` (matched in addition to `namespaces`), `{}` = all namespaces. */
  nsSelector: LabelSelector | undefined;
  /** The indexed group counting the term's pods (terms without `namespaceSelector`). */
  group: PodGroup | undefined;
}

function resolveTerm(
  rules: SchedulingRules,
  term: PodAffinityTerm,
  owner: Pod,
  index?: CountIndex,
): ResolvedTerm {
  const labels = owner.metadata.labels ?? {};
  const namespaces = new Set(term.namespaces ?? []);
  if (namespaces.size === 0 && !term.namespaceSelector) namespaces.add(owner.metadata.namespace ?? 'default');
  const selector = rules.selectorWithLabelKeys(
    term.labelSelector,
    labels,
    term.matchLabelKeys,
    term.mismatchLabelKeys,
  );
  const group = index && !term.namespaceSelector ? index.group('affinity', selector, namespaces) : undefined;
  return { topologyKey: term.topologyKey, selector, namespaces, nsSelector: term.namespaceSelector, group };
}

/** True when some pod on `n` matches the term (indexed count when the term has a group). */
function termMatchesOnNode(
  rules: SchedulingRules,
  t: ResolvedTerm,
  n: NodeInfo,
  nsLabels: NamespaceLabels,
): boolean {
  if (t.group) return nodeCount(rules, n, t.group) > 0;
  return n.pods.some((p) => termMatches(rules, t, p, nsLabels));
}

function termMatches(rules: SchedulingRules, t: ResolvedTerm, pod: Pod, nsLabels: NamespaceLabels): boolean {
  const ns = pod.metadata.namespace ?? 'default';
  let nsOk = t.namespaces.has(ns);
  if (!nsOk && t.nsSelector) nsOk = rules.selectorMatches(t.nsSelector, nsLabels(ns) ?? {});
  return nsOk && rules.selectorMatches(t.selector, pod.metadata.labels ?? {});
}

// ---------------------------------------------------------------- per-pod prepared state

interface SpreadState {
  topologyKey: string;
  maxSkew: number;
  counts: Map<string, number>;
  minMatch: number;
  selfMatch: number;
}

/**
 * What one scheduling attempt precomputes for a pod (the PreFilter step): requests, host ports, topology
 * spread counts and inter-pod (anti-)affinity domains over the current snapshot.
 */
export interface PodSchedulingState {
  pod: Pod;
  requests: Resources;
  ports: HostPort[];
  spread: SpreadState[];
  /** topologyKey → values blocked by existing pods' required anti-affinity matching this pod. */
  existingAnti: Map<string, Set<string>>;
  /** Own required anti-affinity: per term, blocked values of its topologyKey. */
  anti: Array<{ key: string; values: Set<string> }>;
  /** Own required affinity: per term, values with matching pods. */
  affinity: Array<{ key: string; values: Set<string> }>;
  /** True when no pod anywhere matches any affinity term and the pod matches all its own terms. */
  affinityFirstPod: boolean;
}

/**
 * Precomputes the pod's state over `nodes` (PreFilter of NodeResourcesFit, NodePorts, PodTopologySpread,
 * InterPodAffinity).
 */
export function prepare(
  rules: SchedulingRules,
  pod: Pod,
  nodes: readonly NodeInfo[],
  nsLabels: NamespaceLabels = () => undefined,
  index: CountIndex = new CountIndex(rules),
): PodSchedulingState {
  const labels = pod.metadata.labels ?? {};
  const ns = pod.metadata.namespace ?? 'default';
  const state: PodSchedulingState = {
    pod,
    requests: safePodRequests(rules, pod),
    ports: rules.podHostPorts(pod),
    spread: [],
    existingAnti: new Map(),
    anti: [],
    affinity: [],
    affinityFirstPod: false,
  };

  // PodTopologySpread (DoNotSchedule constraints only), counted with the indexed groups
  const constraints = (pod.spec.topologySpreadConstraints ?? []).filter(
    (c) => c.whenUnsatisfiable === 'DoNotSchedule',
  );
  if (constraints.length > 0) {
    const keys = constraints.map((c) => c.topologyKey);
    const own = new Set([ns]);
    const groups = constraints.map((c) =>
      index.group('spread', rules.selectorWithLabelKeys(c.labelSelector, labels, c.matchLabelKeys), own),
    );
    const self = topologyPod(rules, pod);
    const states: SpreadState[] = constraints.map((c, i) => ({
      topologyKey: c.topologyKey,
      maxSkew: c.maxSkew,
      counts: new Map(),
      minMatch: 0,
      selfMatch: groups[i]!.selects(self) ? 1 : 0,
    }));
    for (const n of nodes) {
      if (!keys.every((k) => n.labels[k] !== undefined)) continue;
      constraints.forEach((c, i) => {
        if (!rules.spreadCountsNode(c, pod.spec, n)) return;
        const st = states[i]!;
        const value = n.labels[c.topologyKey]!;
        st.counts.set(value, (st.counts.get(value) ?? 0) + nodeCount(rules, n, groups[i]!));
      });
    }
    constraints.forEach((c, i) => {
      const st = states[i]!;
      const values = [...st.counts.values()];
      st.minMatch = values.length > 0 && values.length >= (c.minDomains ?? 1) ? Math.min(...values) : 0;
    });
    state.spread = states;
  }

  // InterPodAffinity
  const aff = pod.spec.affinity;
  const ownAnti = (aff?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((t) =>
    resolveTerm(rules, t, pod, index),
  );
  const ownAff = (aff?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((t) =>
    resolveTerm(rules, t, pod, index),
  );
  state.anti = ownAnti.map((t) => ({ key: t.topologyKey, values: new Set<string>() }));
  state.affinity = ownAff.map((t) => ({ key: t.topologyKey, values: new Set<string>() }));
  let anyAffinityMatch = false;
  for (const n of nodes) {
    // existing pods' required anti-affinity against the incoming pod
    for (const p of n.antiAffinityPods) {
      for (const term of p.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ??
        []) {
        const v = n.labels[term.topologyKey];
        if (v === undefined) continue;
        if (!termMatches(rules, resolveTerm(rules, term, p), pod, nsLabels)) continue;
        let s = state.existingAnti.get(term.topologyKey);
        if (!s) {
          s = new Set();
          state.existingAnti.set(term.topologyKey, s);
        }
        s.add(v);
      }
    }
    if (ownAnti.length === 0 && ownAff.length === 0) continue;
    ownAnti.forEach((t, i) => {
      const v = n.labels[t.topologyKey];
      if (v !== undefined && termMatchesOnNode(rules, t, n, nsLabels)) state.anti[i]!.values.add(v);
    });
    ownAff.forEach((t, i) => {
      if (!termMatchesOnNode(rules, t, n, nsLabels)) return;
      anyAffinityMatch = true;
      const v = n.labels[t.topologyKey];
      if (v !== undefined) state.affinity[i]!.values.add(v);
    });
  }
  state.affinityFirstPod =
    ownAff.length > 0 && !anyAffinityMatch && ownAff.every((t) => termMatches(rules, t, pod, nsLabels));
  return state;
}

// ---------------------------------------------------------------- filter

/**
 * Runs the filters for one node; returns the failure reasons (empty when the pod fits). Reasons are
 * kube-scheduler's strings, e.g. `Insufficient cpu`, `node(s) had untolerated taint {k: v}`.
 */
export function filterNode(rules: SchedulingRules, state: PodSchedulingState, n: NodeInfo): string[] {
  const pod = state.pod;
  const tolerations = pod.spec.tolerations;
  // NodeUnschedulable
  if (n.node.spec?.unschedulable && !rules.toleratesKey(tolerations, TaintUnschedulable, 'NoSchedule'))
    return [Reasons.unschedulable];
  // TaintToleration
  const taint = rules.firstUntoleratedTaint(tolerations, n.taints);
  if (taint) return [untoleratedTaintReason(taint)];
  // NodeAffinity
  if (!rules.nodeMatchesNodeAffinity(pod.spec, n.name, n.labels)) return [Reasons.nodeAffinity];
  // NodePorts
  if (state.ports.length > 0 && n.ports.conflict(state.ports)) return [Reasons.ports];
  // NodeResourcesFit
  const fit = resourceReasons(state.requests, n);
  if (fit.length > 0) return fit;
  // PodTopologySpread
  for (const s of state.spread) {
    const v = n.labels[s.topologyKey];
    if (v === undefined) return [Reasons.spreadMissingLabel];
  }
  for (const s of state.spread) {
    const v = n.labels[s.topologyKey]!;
    if ((s.counts.get(v) ?? 0) + s.selfMatch - s.minMatch > s.maxSkew) return [Reasons.spread];
  }
  // InterPodAffinity (upstream order: own affinity, own anti-affinity, existing pods' anti-affinity)
  if (state.affinity.length > 0) {
    let podsExist = true;
    for (const a of state.affinity) {
      const v = n.labels[a.key];
      if (v === undefined) return [Reasons.affinity];
      if (!a.values.has(v)) podsExist = false;
    }
    if (!podsExist && !state.affinityFirstPod) return [Reasons.affinity];
  }
  for (const a of state.anti) {
    const v = n.labels[a.key];
    if (v !== undefined && a.values.has(v)) return [Reasons.antiAffinity];
  }
  for (const [key, values] of state.existingAnti) {
    const v = n.labels[key];
    if (v !== undefined && values.has(v)) return [Reasons.existingAntiAffinity];
  }
  return [];
}

/**
 * True when the node of `n` — taken empty: build `n` with no pods — could host `pod` on its own: it is
 * schedulable (or tolerated), its taints are tolerated, it matches the pod's node selector and required node
 * affinity, and the pod's requests fit its allocatable. The node-local part of kube-scheduler's queueing hints
 * for a Node add or update (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit
 * `isSchedulableAfterNodeChange`): a pending pod for which this is false is not moved back to the active queue.
 */
export function nodeCouldHost(rules: SchedulingRules, pod: Pod, n: NodeInfo): boolean {
  const tolerations = pod.spec.tolerations;
  if (n.node.spec?.unschedulable && !rules.toleratesKey(tolerations, TaintUnschedulable, 'NoSchedule'))
    return false;
  if (rules.firstUntoleratedTaint(tolerations, n.taints)) return false;
  if (!rules.nodeMatchesNodeAffinity(pod.spec, n.name, n.labels)) return false;
  return resourceReasons(safePodRequests(rules, pod), n).length === 0;
}

/** NodeResourcesFit: `Too many pods` and `Insufficient <r>` for each requested resource that does not fit. */
export function resourceReasons(req: Resources, n: NodeInfo): string[] {
  const out: string[] = [];
  if ((n.requested.pods ?? 0) + 1 > (n.allocatable.pods ?? 0)) out.push(Reasons.tooManyPods);
  for (const k of Object.keys(req)) {
    if (k === 'pods') continue;
    const need = req[k]!;
    if (need <= 0) continue;
    if (need > (n.allocatable[k] ?? 0) - (n.requested[k] ?? 0)) out.push(insufficient(k));
  }
  return out;
}

// ---------------------------------------------------------------- score

/** How NodeResourcesFit scores: pack nodes (`MostAllocated`, what Karpenter users configure) or spread (`LeastAllocated`, the kube-scheduler default). */
export type ScoringStrategy = 'MostAllocated' | 'LeastAllocated';

/**
 * Scores feasible nodes (higher is better) as the default profile weighs its plugins: NodeResourcesFit
 * (0-100 over cpu and memory, weight 1), NodeAffinity preferred terms (normalised 0-100, weight 2),
 * TaintToleration PreferNoSchedule (normalised, fewer untolerated is better, weight 3).
 * Returns the best node name (ties: lowest name), or undefined for an empty list.
 */
export function pickNode(
  rules: SchedulingRules,
  state: PodSchedulingState,
  feasible: readonly NodeInfo[],
  strategy: ScoringStrategy,
): string | undefined {
  if (feasible.length === 0) return undefined;
  const req = nonZeroRequests(state.requests);
  const preferred =
    state.pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  const soft = new Set(['PreferNoSchedule']);
  const raw = feasible.map((n) => {
    let fit = 0;
    let dims = 0;
    for (const r of ['cpu', 'memory']) {
      const cap = n.allocatable[r] ?? 0;
      dims++;
      if (cap <= 0) continue;
      const used = Math.min(cap, (n.requestedNonZero[r] ?? 0) + (req[r] ?? 0));
      const frac = used / cap;
      fit += (strategy === 'MostAllocated' ? frac : 1 - frac) * 100;
    }
    let aff = 0;
    for (const p of preferred) if (rules.nodeMatchesTerm(p.preference, n.name, n.labels)) aff += p.weight;
    let taints = 0;
    for (const t of n.taints)
      if (soft.has(t.effect) && rules.firstUntoleratedTaint(state.pod.spec.tolerations, [t], soft)) taints++;
    return { n, fit: dims ? fit / dims : 0, aff, taints };
  });
  const maxAff = Math.max(0, ...raw.map((r) => r.aff));
  const maxTaints = Math.max(0, ...raw.map((r) => r.taints));
  let best: { name: string; score: number } | undefined;
  for (const r of raw) {
    const score =
      r.fit +
      (maxAff > 0 ? (r.aff / maxAff) * 100 * 2 : 0) +
      (maxTaints > 0 ? (1 - r.taints / maxTaints) * 100 * 3 : 0);
    if (!best || score > best.score + 1e-9 || (Math.abs(score - best.score) <= 1e-9 && r.n.name < best.name))
      best = { name: r.n.name, score };
  }
  return best?.name;
}

// ---------------------------------------------------------------- messages

/** kube-scheduler's message when there are no nodes at all (`ErrNoNodesAvailable`). */
export const NoNodesAvailableMessage = 'no nodes available to schedule pods';

/**
 * kube-scheduler's FitError message: `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
 * taint {karpenter.sh/unregistered: }.` — reasons counted over nodes, `"<count> <reason>"` strings sorted.
 */
export function fitErrorMessage(numNodes: number, reasons: ReadonlyMap<string, number>): string {
  if (numNodes === 0) return NoNodesAvailableMessage;
  const parts = [...reasons].map(([r, c]) => `${c} ${r}`).sort();
  return `0/${numNodes} nodes are available: ${parts.join(', ')}.`;
}
