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
 * Speed: bound pods that can matter to no pending pod's topology (no affinity/anti-affinity/spread terms select
 * them, they have no required anti-affinity and no host ports) are folded into their node's allocatable once per
 * pass, so each simulation only rebuilds a few pods per node.
 */
import type { LabelSelector, Node, Pod } from '../apis/core.ts';
import { formatResources, type Resources } from '../apis/quantity.ts';
import { LabelNodePool } from '../apis/labels.ts';
import { parseResources } from '../apis/quantity.ts';
import { podRequests } from '../scheduling/resources.ts';
import { solve } from '../scheduling/scheduler.ts';
import { selectorMatches } from '../scheduling/labelselector.ts';
import type { ExistingNode, NodeClaimPlan, SchedulingInput } from '../scheduling/types.ts';
import { type ClusterView, nodeMarkedForDeletion, podActive, podName, podReschedulable } from './candidates.ts';
import type { Candidate, DisruptionInput, DisruptionNode } from './types.ts';

/** Options with defaults applied. */
export interface ResolvedOptions {
  multiNodeMaxCandidates: number;
  singleNodeMaxSimulations: number;
  flexibleOnDemandReplacements: boolean;
  spotToSpotConsolidation: boolean;
}

/** Outcome of one scheduling simulation. */
export type SimulationOutcome =
  | { ok: true; newNodeClaims: NodeClaimPlan[] }
  | { ok: false; reason: string };

/** See the module doc. Build once per pass; {@link simulate} may be called many times. */
export class Simulator {
  /** Simulations run so far (for budgets and benchmarks). */
  simulations = 0;
  private readonly base: { name: string; en: ExistingNode; uninitialized: boolean }[] = [];
  private readonly deletingPods: Pod[] = [];
  private readonly pending: Pod[];
  private readonly unboundCache = new Map<Pod, Pod>();
  private readonly usage: Record<string, Resources> = {};
  private readonly capacityByNode = new Map<string, { pool: string; capacity: Resources }>();

  constructor(
    private readonly input: DisruptionInput,
    view: ClusterView,
    excluded: ReadonlySet<string>,
  ) {
    this.pending = input.pendingPods ?? [];
    const relevant = topologyRelevance(input);
    for (const dn of input.nodes) {
      const name = dn.node.metadata.name ?? '?';
      const deleting = nodeMarkedForDeletion(dn) || excluded.has(name);
      if (deleting) {
        for (const p of dn.pods) if (podReschedulable(p)) this.deletingPods.push(this.unbound(p));
        continue;
      }
      const pool = dn.node.metadata.labels?.[LabelNodePool];
      if (pool) {
        let capacity: Resources = {};
        try {
          capacity = parseResources(dn.node.status?.capacity ?? dn.node.status?.allocatable);
        } catch {
          // malformed capacity: the node does not count towards limits
        }
        this.capacityByNode.set(name, { pool, capacity });
        const u = (this.usage[pool] ??= {});
        for (const [k, v] of Object.entries(capacity)) u[k] = (u[k] ?? 0) + v;
      }
      const c = view.candidates.get(name);
      this.base.push({
        name,
        en: compactNode(dn, relevant),
        uninitialized: pool !== undefined && c !== undefined && !c.initialized,
      });
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

  /** Simulates removing `cands` (see the module doc). */
  simulate(cands: readonly Candidate[]): SimulationOutcome {
    this.simulations++;
    const names = new Set(cands.map((c) => c.name));
    const existingNodes: ExistingNode[] = [];
    const uninitialized = new Set<string>();
    for (const b of this.base) {
      if (names.has(b.name)) continue;
      existingNodes.push(b.en);
      if (b.uninitialized) uninitialized.add(b.name);
    }
    const moving: Pod[] = [];
    for (const c of cands) for (const p of c.reschedulablePods) moving.push(this.unbound(p));
    const nonPending = new Set<Pod>([...moving, ...this.deletingPods]);
    const usage: Record<string, Resources> = {};
    for (const [k, v] of Object.entries(this.usage)) usage[k] = { ...v };
    for (const n of names) {
      const cap = this.capacityByNode.get(n);
      if (!cap) continue;
      const u = usage[cap.pool];
      if (u) for (const [k, v] of Object.entries(cap.capacity)) u[k] = (u[k] ?? 0) - v;
    }
    const schedInput: SchedulingInput = {
      pods: [...moving, ...this.deletingPods, ...this.pending],
      existingNodes,
      nodePools: this.input.nodePools,
      instanceTypes: this.input.instanceTypes,
      daemonSets: this.input.daemonSets,
      nodePoolUsage: usage,
      ...(this.input.namespaces ? { namespaces: this.input.namespaces } : {}),
    };
    const res = solve(schedInput);
    for (const u of res.unschedulable) {
      if (nonPending.has(u.pod)) return { ok: false, reason: `pod ${podName(u.pod)} would not schedule: ${u.message}` };
    }
    for (const p of res.placements) {
      if (p.target.kind === 'existing' && uninitialized.has(p.target.node) && nonPending.has(p.pod))
        return {
          ok: false,
          reason: `pod ${podName(p.pod)} would schedule against uninitialized node ${p.target.node}`,
        };
    }
    const newNodeClaims = res.newNodeClaims.filter((nc) => nc.pods.some((p) => nonPending.has(p)));
    return { ok: true, newNodeClaims };
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
      singleNodeMaxSimulations: o.singleNodeMaxSimulations ?? 500,
      flexibleOnDemandReplacements: o.flexibleOnDemandReplacements ?? false,
      spotToSpotConsolidation: input.featureGates?.spotToSpotConsolidation ?? false,
    };
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

interface Relevance {
  selectors: { selector: LabelSelector; namespaces?: readonly string[] }[];
}

/** Every label selector a pod's affinity, anti-affinity or topology spread uses (any pod may become pending). */
function topologyRelevance(input: DisruptionInput): Relevance {
  const selectors: Relevance['selectors'] = [];
  const seen = new Set<string>();
  const add = (s: LabelSelector | undefined) => {
    if (!s) return;
    const k = JSON.stringify(s);
    if (seen.has(k)) return;
    seen.add(k);
    selectors.push({ selector: s });
  };
  const visit = (p: Pod) => {
    const spec = p.spec;
    for (const t of spec.topologySpreadConstraints ?? []) add(t.labelSelector);
    const aff = spec.affinity;
    for (const group of [aff?.podAffinity, aff?.podAntiAffinity]) {
      if (!group) continue;
      for (const t of group.requiredDuringSchedulingIgnoredDuringExecution ?? []) add(t.labelSelector);
      for (const w of group.preferredDuringSchedulingIgnoredDuringExecution ?? [])
        add(w.podAffinityTerm?.labelSelector);
    }
  };
  for (const p of input.pendingPods ?? []) visit(p);
  for (const dn of input.nodes) for (const p of dn.pods) visit(p);
  return { selectors };
}

/** True when a bound pod must stay visible to the scheduler (topology, anti-affinity, host ports, daemons). */
function mustKeep(p: Pod, rel: Relevance): boolean {
  if ((p.metadata.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet')) return true;
  const aff = p.spec.affinity;
  if (aff?.podAntiAffinity || aff?.podAffinity) return true;
  for (const c of [...(p.spec.containers ?? []), ...(p.spec.initContainers ?? [])])
    if ((c.ports ?? []).some((port) => port.hostPort)) return true;
  const labels = p.metadata.labels ?? {};
  for (const s of rel.selectors) if (selectorMatches(s.selector, labels)) return true;
  return false;
}

/**
 * The node as the scheduler needs it: pods that cannot matter to topology are removed and their requests taken
 * off `status.allocatable` (so the free capacity is unchanged).
 */
function compactNode(dn: DisruptionNode, rel: Relevance): ExistingNode {
  const keep: Pod[] = [];
  const folded: Resources = {};
  let any = false;
  for (const p of dn.pods) {
    if (!podActive(p)) continue;
    if (mustKeep(p, rel)) {
      keep.push(p);
      continue;
    }
    try {
      for (const [k, v] of Object.entries(podRequests(p))) folded[k] = (folded[k] ?? 0) + v;
      any = true;
    } catch {
      keep.push(p); // let the scheduler report the malformed pod
    }
  }
  const en: ExistingNode = { node: dn.node, pods: keep };
  if (dn.nodeClaim) en.nodeClaim = dn.nodeClaim;
  if (!any) return en;
  let alloc: Resources;
  try {
    alloc = parseResources(dn.node.status?.allocatable);
  } catch {
    return { ...en, pods: dn.pods };
  }
  for (const [k, v] of Object.entries(folded)) alloc[k] = (alloc[k] ?? 0) - v;
  const node: Node = { ...dn.node, status: { ...(dn.node.status ?? {}), allocatable: formatResources(alloc) } };
  en.node = node;
  return en;
}
