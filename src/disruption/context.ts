/**
 * The per-pass context shared by the methods: the input, the {@link ClusterView}, resolved options and a lazily
 * built {@link Simulator} that proves where a candidate's pods would go, with the SAME scheduling core
 * (`scheduling/scheduler.ts` `solve()`) provisioning uses (upstream `SimulateScheduling` in
 * kubernetes-sigs/karpenter `pkg/controllers/disruption/helpers.go`).
 *
 * Simulation of removing candidates C:
 * - existing capacity = every node except C and except nodes being deleted (they take no pods);
 * - pods to place = C's reschedulable pods + reschedulable pods of nodes being deleted + pending pods;
 * - success when every pod that is not pending finds a place, and none of them lands on an uninitialized node
 *   (upstream: it would not really start there yet); pending pods may stay pending;
 * - new NodeClaims that hold only pending pods are not the command's (provisioning launches them anyway).
 *
 * Speed: a bound pod only matters to a simulation when a moving pod's topology spread or (anti-)affinity selector
 * may select it, or when it has required anti-affinity, host ports or is a DaemonSet pod. All others are folded
 * into their node's allocatable (free capacity unchanged), and node labels no moving pod, DaemonSet or the
 * scheduler reads are dropped; the node lists are cached per (selectors, label keys) signature, so a simulation of
 * plain pods sees small nodes with almost no pods.
 */
import type { LabelSelector, Pod } from '../apis/core.ts';
import { isDoNotDisruptActive } from '../apis/donotdisrupt.ts';
import { LabelNodePool } from '../apis/labels.ts';
import { isActive, isOwnedByDaemonSet, isReschedulable } from '../apis/pod.ts';
import { formatResources, parseResources, type Resources } from '../apis/quantity.ts';
import { selectorMatches } from '../scheduling/labelselector.ts';
import { addUsage, copyUsage, limitCapacity, nodeLimitCapacity } from '../scheduling/limits.ts';
import { podKey } from '../scheduling/podinfo.ts';
import { hasPreferences } from '../scheduling/preferencepolicy.ts';
import { podRequests } from '../scheduling/resources.ts';
import { solve } from '../scheduling/scheduler.ts';
import type {
  ExistingNode,
  NodeClaimPlan,
  Placement,
  SchedulingInput,
  SchedulingResult,
} from '../scheduling/types.ts';
import { type NodePoolTotals, nodePoolTotals } from './balanced.ts';
import { type ClusterView, nodeMarkedForDeletion, podName, underConsolidateAfter } from './candidates.ts';
import type { Candidate, DisruptionInput, DisruptionNode } from './types.ts';

/** Options with defaults applied. */
export interface ResolvedOptions {
  multiNodeMaxCandidates: number;
  singleNodeMaxSimulations: number;
  flexibleOnDemandReplacements: boolean;
  spotToSpotConsolidation: boolean;
  /** `DisruptionOptions.clockMs`: absent means no consolidation timeouts. */
  clockMs?: () => number;
}

/** Outcome of one scheduling simulation. */
export type SimulationOutcome =
  | {
      ok: true;
      /** NodeClaims holding at least one moving pod. */
      newNodeClaims: NodeClaimPlan[];
      /** Where each moving pod went. */
      placements: Placement[];
    }
  | { ok: false; reason: string };

/** A node prepared once per pass: pods that can matter to no simulation folded into its allocatable. */
interface PreparedNode {
  name: string;
  dn: DisruptionNode;
  /** Pods always shown to the scheduler (DaemonSet, required anti-affinity, host ports, malformed). */
  keep: Pod[];
  /** The other active pods, shown only when a moving pod's selector may select them. */
  selectable: { pod: Pod; requests: Resources }[];
  /** Allocatable minus the requests of every `selectable` pod; undefined when allocatable is malformed. */
  folded: Resources | undefined;
  uninitialized: boolean;
}

/** See the module doc. Build once per pass; {@link simulate} may be called many times. */
export class Simulator {
  /** Simulations run so far (for budgets and benchmarks). */
  simulations = 0;
  private readonly base: PreparedNode[] = [];
  private readonly deletingPods: Pod[] = [];
  private readonly pending: Pod[];
  private readonly unboundCache = new Map<Pod, Pod>();
  private readonly usage: Record<string, Resources> = {};
  private readonly capacityByNode = new Map<string, { pool: string; capacity: Resources }>();
  /** Existing-node lists by the signature of the selectors and label keys in play (see {@link nodesFor}). */
  private readonly nodeCache = new Map<string, ExistingNode[]>();
  /** Nodes with only their always-kept pods, by label-key signature (reused by every selector set). */
  private readonly plainCache = new Map<string, ExistingNode[]>();
  /** Existing nodes under `consolidateAfter` (see {@link underConsolidateAfter}): no destination for moved pods. */
  private readonly underConsolidateAfter = new Set<string>();

  constructor(
    readonly input: DisruptionInput,
    view: ClusterView,
    excluded: ReadonlySet<string>,
  ) {
    this.pending = input.pendingPods ?? [];
    for (const [pool, u] of Object.entries(input.inFlightUsage ?? {})) addUsage(this.usage, pool, u);
    for (const dn of input.nodes) {
      const name = dn.node.metadata.name ?? '?';
      const deleting = nodeMarkedForDeletion(dn) || excluded.has(name);
      if (deleting) {
        // upstream IsCurrentlyReschedulable: pods protected by do-not-disrupt stay where they are
        for (const p of dn.pods)
          if (isReschedulable(p) && !isDoNotDisruptActive(p, input.now))
            this.deletingPods.push(this.unbound(p));
        continue;
      }
      const pool = dn.node.metadata.labels?.[LabelNodePool];
      if (pool) {
        let capacity = limitCapacity({});
        try {
          capacity = nodeLimitCapacity(dn.node);
        } catch {
          // malformed capacity: the node counts as one node, with no capacity
        }
        this.capacityByNode.set(name, { pool, capacity });
        addUsage(this.usage, pool, capacity);
      }
      const c = view.candidates.get(name);
      if (c && underConsolidateAfter(c.nodeClaim, c.nodePool, input.now))
        this.underConsolidateAfter.add(name);
      this.base.push(prepare(dn, name, pool !== undefined && c !== undefined && !c.initialized));
    }
  }

  /** A copy of a bound pod without `spec.nodeName` (what the scheduler places), cached. */
  unbound(p: Pod): Pod {
    let u = this.unboundCache.get(p);
    if (!u) {
      const { nodeName: _drop, ...spec } = p.spec;
      u = { ...p, spec, status: { ...(p.status ?? {}), phase: 'Pending' } };
      this.unboundCache.set(p, u);
    }
    return u;
  }

  /** Per selector (JSON): base node index → indices of its `selectable` pods the selector matches. */
  private readonly matchCache = new Map<string, Map<number, number[]>>();
  /** Label keys every simulation needs (fixed set, DaemonSets, always-kept pods' anti-affinity). */
  private baseKeys: Set<string> | undefined;

  private matches(key: string, sel: LabelSelector): Map<number, number[]> {
    let m = this.matchCache.get(key);
    if (m) return m;
    m = new Map();
    for (let i = 0; i < this.base.length; i++) {
      const sel2 = this.base[i]!.selectable;
      let hits: number[] | undefined;
      for (let j = 0; j < sel2.length; j++) {
        if (!selectorMatches(sel, sel2[j]!.pod.metadata.labels ?? {})) continue;
        if (!hits) hits = [];
        hits.push(j);
      }
      if (hits) m.set(i, hits);
    }
    this.matchCache.set(key, m);
    return m;
  }

  private fixedKeys(): Set<string> {
    if (this.baseKeys) return this.baseKeys;
    const keys = new Set(ALWAYS_LABELS);
    for (const ds of this.input.daemonSets) addPodSpecKeys(ds.spec?.template?.spec, keys);
    for (const b of this.base) for (const p of b.keep) addPodSpecKeys(p.spec, keys);
    this.baseKeys = keys;
    return keys;
  }

  /**
   * The existing nodes as the scheduler sees them for the moving `pods`: each node's `keep` pods plus the
   * `selectable` pods some moving pod's selector may select (namespaces ignored: a superset is safe), the rest
   * folded into allocatable; node labels cut down to the keys any of these pods, the DaemonSets or the scheduler
   * look at (a pod's requirements can only be decided by the keys it names). Cached per signature.
   */
  private nodesFor(pods: readonly Pod[]): ExistingNode[] {
    const selectors = selectorsOf(pods);
    const keys = new Set(this.fixedKeys());
    for (const p of pods) addPodSpecKeys(p.spec, keys);
    const selKeys = selectors.map((x) => JSON.stringify(x)).sort();
    const sig = `${[...keys].sort().join(',')}#${selKeys.join('|')}`;
    let hit = this.nodeCache.get(sig);
    if (hit) return hit;
    const maps = selectors.map((sel) => this.matches(JSON.stringify(sel), sel));
    const keySig = [...keys].sort().join(',');
    let plain = this.plainCache.get(keySig);
    if (!plain) {
      plain = this.base.map((b) => this.build(b, keys, b.keep, b.folded ?? undefined));
      this.plainCache.set(keySig, plain);
    }
    hit = this.base.map((b, i) => {
      if (b.folded === undefined)
        return this.build(b, keys, [...b.keep, ...b.selectable.map((x) => x.pod)], undefined);
      const picked = new Set<number>();
      for (const m of maps) for (const j of m.get(i) ?? []) picked.add(j);
      if (picked.size === 0) return plain[i]!;
      const alloc = { ...b.folded };
      const shown = [...b.keep];
      for (const j of [...picked].sort((x, y) => x - y)) {
        const sp = b.selectable[j]!;
        shown.push(sp.pod);
        for (const [k, v] of Object.entries(sp.requests)) alloc[k] = (alloc[k] ?? 0) + v;
      }
      return this.build(b, keys, shown, alloc);
    });
    if (this.nodeCache.size >= 32) this.nodeCache.delete(this.nodeCache.keys().next().value!);
    this.nodeCache.set(sig, hit);
    return hit;
  }

  /** One existing node for the scheduler: `pods` shown, labels cut to `keys`, allocatable `alloc` when given. */
  private build(
    b: PreparedNode,
    keys: ReadonlySet<string>,
    pods: Pod[],
    alloc: Resources | undefined,
  ): ExistingNode {
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(b.dn.node.metadata.labels ?? {})) if (keys.has(k)) labels[k] = v;
    const status = { ...(b.dn.node.status ?? {}) };
    if (alloc !== undefined && b.selectable.length > 0) status.allocatable = formatResources(alloc);
    const en: ExistingNode = {
      node: { ...b.dn.node, metadata: { ...b.dn.node.metadata, labels }, status },
      pods,
    };
    if (b.dn.nodeClaim) en.nodeClaim = b.dn.nodeClaim;
    return en;
  }

  /**
   * Simulates removing `cands` (see the module doc). With `consolidation` (upstream v1.14
   * `IsConsolidationSimulation`), the candidates' pods may not land on existing nodes under `consolidateAfter`.
   */
  simulate(cands: readonly Candidate[], consolidation = false): SimulationOutcome {
    this.simulations++;
    const names = new Set(cands.map((c) => c.name));
    const moving: Pod[] = [];
    for (const c of cands) for (const p of c.reschedulablePods) moving.push(this.unbound(p));
    const pods = [...moving, ...this.deletingPods, ...this.pending];
    const all = this.nodesFor(pods);
    const existingNodes: ExistingNode[] = [];
    const uninitialized = new Set<string>();
    for (let i = 0; i < this.base.length; i++) {
      const b = this.base[i]!;
      if (names.has(b.name)) continue;
      existingNodes.push(all[i]!);
      if (b.uninitialized) uninitialized.add(b.name);
    }
    const nonPending = new Set<Pod>([...moving, ...this.deletingPods]);
    const usage = copyUsage(this.usage);
    for (const n of names) {
      const cap = this.capacityByNode.get(n);
      if (cap) addUsage(usage, cap.pool, cap.capacity, -1);
    }
    const schedInput: SchedulingInput = {
      pods,
      existingNodes,
      nodePools: this.input.nodePools,
      instanceTypes: this.input.instanceTypes,
      daemonSets: this.input.daemonSets,
      nodePoolUsage: usage,
      ...(this.input.namespaces ? { namespaces: this.input.namespaces } : {}),
      ...(this.input.volumes ? { volumes: this.input.volumes } : {}),
      ...(this.input.options?.preferencePolicy === 'Ignore' ? { preferencePolicy: 'Ignore' as const } : {}),
      ...(this.input.options?.minValuesPolicy === 'BestEffort'
        ? { minValuesPolicy: 'BestEffort' as const }
        : {}),
    };
    if (consolidation && this.underConsolidateAfter.size > 0)
      schedInput.consolidateAfterDestinations = {
        nodes: this.underConsolidateAfter,
        podKeys: new Set(moving.map(podKey)),
      };
    const res = preferenceFreeIfCheaper(solve(schedInput), schedInput, moving, nonPending);
    for (const u of res.unschedulable) {
      if (nonPending.has(u.pod))
        return { ok: false, reason: `pod ${podName(u.pod)} would not schedule: ${u.message}` };
    }
    for (const p of res.placements) {
      if (p.target.kind === 'existing' && uninitialized.has(p.target.node) && nonPending.has(p.pod))
        return {
          ok: false,
          reason: `pod ${podName(p.pod)} would schedule against uninitialized node ${p.target.node}`,
        };
    }
    const newNodeClaims = res.newNodeClaims.filter((nc) => nc.pods.some((p) => nonPending.has(p)));
    return { ok: true, newNodeClaims, placements: res.placements.filter((p) => nonPending.has(p.pod)) };
  }
}

/** The per-pass context (see the module doc). */
export class PassContext {
  readonly now: number;
  readonly options: ResolvedOptions;
  private sim: Simulator | undefined;

  constructor(
    readonly input: DisruptionInput,
    readonly view: ClusterView,
    /** Nodes deleted in this pass already (expired): they take no pods and are not candidates. */
    readonly excluded: ReadonlySet<string>,
  ) {
    this.now = input.now;
    const o = input.options ?? {};
    this.options = {
      multiNodeMaxCandidates: o.multiNodeMaxCandidates ?? 100,
      singleNodeMaxSimulations: o.singleNodeMaxSimulations ?? 200,
      flexibleOnDemandReplacements: o.flexibleOnDemandReplacements ?? true,
      spotToSpotConsolidation: input.featureGates?.spotToSpotConsolidation ?? false,
      ...(o.clockMs ? { clockMs: o.clockMs } : {}),
    };
  }

  private totals: Map<string, NodePoolTotals> | undefined;

  /** Balanced scoring denominators by NodePool (`balanced.ts` {@link nodePoolTotals}), built on first use. */
  nodePoolTotals(): ReadonlyMap<string, NodePoolTotals> {
    this.totals ??= nodePoolTotals(this.input, this.view);
    return this.totals;
  }

  /** The shared simulator, built on first use. */
  simulator(): Simulator {
    this.sim ??= new Simulator(this.input, this.view, this.excluded);
    return this.sim;
  }

  /** Simulations run in this pass so far. */
  get simulations(): number {
    return this.sim?.simulations ?? 0;
  }
}

/** Node labels the scheduler itself reads on existing nodes. */
const ALWAYS_LABELS = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'karpenter.sh/nodepool',
  'karpenter.sh/initialized',
  'karpenter.sh/registered',
  'karpenter.sh/capacity-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/arch',
  'kubernetes.io/os',
];

/** Adds every node label key a pod spec can look at (node selector, node affinity, topology keys). */
function addPodSpecKeys(spec: Pod['spec'] | undefined, keys: Set<string>): void {
  if (!spec) return;
  for (const k of Object.keys(spec.nodeSelector ?? {})) keys.add(k);
  const na = spec.affinity?.nodeAffinity;
  for (const t of na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [])
    for (const e of t.matchExpressions ?? []) keys.add(e.key);
  for (const w of na?.preferredDuringSchedulingIgnoredDuringExecution ?? [])
    for (const e of w.preference?.matchExpressions ?? []) keys.add(e.key);
  for (const t of spec.topologySpreadConstraints ?? []) keys.add(t.topologyKey);
  for (const group of [spec.affinity?.podAffinity, spec.affinity?.podAntiAffinity]) {
    for (const t of group?.requiredDuringSchedulingIgnoredDuringExecution ?? []) keys.add(t.topologyKey);
    for (const w of group?.preferredDuringSchedulingIgnoredDuringExecution ?? [])
      keys.add(w.podAffinityTerm.topologyKey);
  }
}

/** Every label selector the pods' topology spread, pod affinity and anti-affinity terms use. */
function selectorsOf(pods: readonly Pod[]): LabelSelector[] {
  const out: LabelSelector[] = [];
  const seen = new Set<string>();
  const add = (s: LabelSelector | undefined) => {
    if (!s) return;
    const k = JSON.stringify(s);
    if (seen.has(k)) return;
    seen.add(k);
    out.push(s);
  };
  for (const p of pods) {
    const spec = p.spec;
    for (const t of spec.topologySpreadConstraints ?? []) add(t.labelSelector);
    const aff = spec.affinity;
    for (const group of [aff?.podAffinity, aff?.podAntiAffinity]) {
      if (!group) continue;
      for (const t of group.requiredDuringSchedulingIgnoredDuringExecution ?? []) add(t.labelSelector);
      for (const w of group.preferredDuringSchedulingIgnoredDuringExecution ?? [])
        add(w.podAffinityTerm?.labelSelector);
    }
  }
  return out;
}

/**
 * True when a bound pod must always be visible to the scheduler: DaemonSet pods (daemon overhead bookkeeping),
 * pods with required anti-affinity (they repel incoming pods) and pods with host ports.
 */
function alwaysKeep(p: Pod): boolean {
  if (isOwnedByDaemonSet(p)) return true;
  if (p.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length) return true;
  for (const c of [...(p.spec.containers ?? []), ...(p.spec.initContainers ?? [])])
    if ((c.ports ?? []).some((port) => port.hostPort)) return true;
  return false;
}

/** Splits a node's pods into always-shown and selectable ones and folds the latter into allocatable. */
function prepare(dn: DisruptionNode, name: string, uninitialized: boolean): PreparedNode {
  const keep: Pod[] = [];
  const selectable: PreparedNode['selectable'] = [];
  for (const p of dn.pods) {
    if (!isActive(p)) continue;
    if (alwaysKeep(p)) {
      keep.push(p);
      continue;
    }
    try {
      selectable.push({ pod: p, requests: podRequests(p) });
    } catch {
      keep.push(p); // let the scheduler report the malformed pod
    }
  }
  let folded: Resources | undefined;
  try {
    folded = parseResources(dn.node.status?.allocatable);
    for (const s of selectable)
      for (const [k, v] of Object.entries(s.requests)) folded[k] = (folded[k] ?? 0) - v;
  } catch {
    folded = undefined;
  }
  return { name, dn, keep, selectable, folded, uninitialized };
}

/**
 * Preferences must not cost money (issue 11): when the moved pods need new capacity (or do not fit) with their
 * preferences (preferred affinity, ScheduleAnyway spread) but need less with them ignored — the remaining nodes,
 * or cheaper new NodeClaims — the preference-free answer wins: the real kube-scheduler would place them there
 * rather than leave them pending, so keeping a node (or launching a pricier one) would be paid for nothing.
 * `Ignore` runs are returned as they are.
 */
function preferenceFreeIfCheaper(
  res: SchedulingResult,
  input: SchedulingInput,
  moving: readonly Pod[],
  nonPending: ReadonlySet<Pod>,
): SchedulingResult {
  if (input.preferencePolicy === 'Ignore') return res;
  const needsCapacity =
    res.unschedulable.some((u) => nonPending.has(u.pod)) ||
    res.newNodeClaims.some((nc) => nc.pods.some((p) => nonPending.has(p)));
  if (!needsCapacity || !moving.some(hasPreferences)) return res;
  const relaxed = solve({ ...input, preferencePolicy: 'Ignore' });
  if (relaxed.unschedulable.some((u) => nonPending.has(u.pod))) return res;
  if (res.unschedulable.some((u) => nonPending.has(u.pod))) return relaxed;
  const cost = (r: SchedulingResult) =>
    r.newNodeClaims
      .filter((nc) => nc.pods.some((p) => nonPending.has(p)))
      .reduce((sum, nc) => sum + nc.cheapest.offering.priceUSDPerHour, 0);
  return cost(relaxed) < cost(res) ? relaxed : res;
}
