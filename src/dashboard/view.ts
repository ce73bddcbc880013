/**
 * The dashboard's view model: a PURE function from what the controller knows (cluster state's snapshot, the
 * instance types and prices the last disruption pass priced nodes with, the last pass's blocked reasons and
 * commands, the provisioner's last unschedulable reasons) to plain JSON the page renders. No clock, no I/O:
 * `now` comes in. Only chosen fields leave: names, labels the page shows, quantities, reasons. Never user data,
 * NodeClass specs, annotations, env or tokens (test/dashboard/view.test.ts holds it to that).
 *
 * Units: cpu millicores, memory bytes (the internal units of `apis/quantity.ts`), prices USD/hour, ages seconds.
 * Upstream has no dashboard; the lifecycle names follow the NodeClaim conditions of kubernetes-sigs/karpenter
 * `pkg/apis/v1/nodeclaim_status.go` (Launched, Registered, Initialized, Drifted) and the disruption taint.
 */
import type { KarpenterMachinePool } from '../apis/capi.ts';
import type { KubeObject, Pod } from '../apis/core.ts';
import { tryParseDuration } from '../apis/duration.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelTopologyZone, TaintDisrupted } from '../apis/labels.ts';
import { parseResources, type Resources } from '../apis/quantity.ts';
import { budgetMapping, type PoolCounts, UNLIMITED } from '../disruption/budgets.ts';
import type { BudgetReason, DisruptionResult } from '../disruption/types.ts';
import { type ClusterSnapshot, conditionOf, type StateNode } from '../state/cluster.ts';

/** A node's lifecycle state as the dashboard shows it (the first that holds, in this order of precedence). */
export type LifecycleState =
  | 'disrupting'
  | 'expiring'
  | 'drifted'
  | 'launching'
  | 'registered'
  | 'initialized';

/** Requested vs allocatable of one resource (internal units: millicores or bytes). */
export interface Usage {
  requested: number;
  allocatable: number;
}

/** One node row. */
export interface NodeView {
  /** Node name, else NodeClaim name (launching). */
  name: string;
  nodeClaim?: string;
  /** NodePool name; `''` for a Node Karpenter does not manage. */
  nodePool: string;
  instanceType: string;
  zone: string;
  capacityType: string;
  /** The offering's price for its zone and capacity type, USD/hour; null when unknown. */
  priceUSDPerHour: number | null;
  cpu: Usage;
  memory: Usage;
  /** Non-terminal pods bound to the node (DaemonSet pods included). */
  pods: number;
  ageSeconds: number;
  state: LifecycleState;
  /** True when the last disruption pass put it in a command. */
  candidate: boolean;
  /** Why it is (the command) or is not (the core's blocked reason) a disruption candidate. */
  candidateReason: string;
}

/** One pending pod. */
export interface PendingPodView {
  /** `namespace/name`. */
  pod: string;
  /** The scheduler's reason (PodScheduled=False message), else the provisioner's, else `pending`. */
  reason: string;
  /** The NodeClaim (or Node) it is nominated to, if any. */
  waitingFor?: string;
}

/** One NodePool row. */
export interface NodePoolView {
  name: string;
  weight: number;
  /** Resource → { used, limit } in internal units; only the limited resources. */
  limits: Record<string, { used: number; limit: number }>;
  /** Disruptions allowed now by reason (Empty, Drifted, Underutilized); null = unlimited. */
  budgets: Record<BudgetReason, number | null>;
  nodes: number;
  costUSDPerHour: number;
}

/** A KarpenterMachinePool (CAPI) row. */
export interface MachinePoolView {
  name: string;
  namespace: string;
  machinePool: string;
  replicas: number;
  providerIDs: string[];
}

/** Cluster totals: one point of the charts. */
export interface Totals {
  /** ms since epoch. */
  at: number;
  costUSDPerHour: number;
  nodes: number;
  pendingPods: number;
}

/** What the page renders (the SSE `snapshot` event's data, minus the log and the history). */
export interface DashboardView {
  /** ms since epoch (cluster clock). */
  at: number;
  nodePools: NodePoolView[];
  /** Sorted by NodePool, then name. */
  nodes: NodeView[];
  pendingPods: PendingPodView[];
  machinePools: MachinePoolView[];
  totals: Totals;
  /** Set when the controller cannot read the cluster (e.g. credentials refused): the page says so. */
  error?: string;
}

/** Inputs of {@link buildDashboardView}. */
export interface DashboardInput {
  snapshot: ClusterSnapshot;
  /** Instance types by NodePool (the last disruption pass's input; prices come from their offerings). */
  instanceTypes: Readonly<Record<string, readonly InstanceType[]>>;
  /** The last disruption pass's result (candidate reasons); absent before the first pass. */
  disruption?: DisruptionResult;
  /** NodeClaim/Node names a disruption command is executing on. */
  disrupting?: ReadonlySet<string>;
  /** Pod key → the provisioner's last unschedulable message. */
  unschedulable?: ReadonlyMap<string, string>;
  /** NodePool usage (internal units) by name, for `spec.limits`. */
  usage?: Readonly<Record<string, Resources>>;
  machinePools?: MachinePoolView[];
  error?: string;
}

/**
 * CAPI: each KarpenterMachinePool with its MachinePool (the owner reference of kind `MachinePool`, else the
 * MachinePool whose `spec.template.spec.infrastructureRef` names it), its `status.replicas` and
 * `spec.providerIDList`. Sorted by namespace and name.
 */
export function machinePoolViews(
  kmps: readonly KarpenterMachinePool[],
  machinePools: readonly KubeObject[],
): MachinePoolView[] {
  return kmps
    .map((k) => {
      const ns = k.metadata.namespace ?? 'default';
      const owner = (k.metadata.ownerReferences ?? []).find((o) => o.kind === 'MachinePool')?.name;
      const byRef = machinePools.find((mp) => {
        const ref = (
          mp as { spec?: { template?: { spec?: { infrastructureRef?: { kind?: string; name?: string } } } } }
        ).spec?.template?.spec?.infrastructureRef;
        return (
          (mp.metadata?.namespace ?? 'default') === ns &&
          ref?.kind === k.kind &&
          ref?.name === k.metadata.name
        );
      });
      return {
        name: k.metadata.name ?? '',
        namespace: ns,
        machinePool: owner ?? byRef?.metadata?.name ?? '',
        replicas: k.status?.replicas ?? 0,
        providerIDs: [...(k.spec?.providerIDList ?? [])],
      };
    })
    .sort((a, b) => (a.namespace + a.name < b.namespace + b.name ? -1 : 1));
}

/** The offering price of `type` in `zone`/`capacityType`, USD/hour, or null. */
export function offeringPrice(
  types: readonly InstanceType[] | undefined,
  type: string,
  zone: string,
  capacityType: string,
): number | null {
  const it = types?.find((t) => t.name === type);
  const o = it?.offerings.find((x) => x.zone === zone && x.capacityType === capacityType);
  return o ? o.priceUSDPerHour : null;
}

function labelOf(sn: StateNode, key: string): string {
  return sn.nodeClaim?.metadata.labels?.[key] ?? sn.node?.metadata.labels?.[key] ?? '';
}

/** The node's lifecycle state at `now` (see {@link LifecycleState}). */
export function lifecycleState(sn: StateNode, now: number, disrupting?: ReadonlySet<string>): LifecycleState {
  const tainted = (sn.node?.spec?.taints ?? []).some(
    (t) => t.key === TaintDisrupted.key && t.effect === TaintDisrupted.effect,
  );
  const ncName = sn.nodeClaim?.metadata.name ?? '';
  if (sn.markedForDeletion || tainted || disrupting?.has(sn.name) || disrupting?.has(ncName))
    return 'disrupting';
  const expireAfter = sn.nodeClaim?.spec.expireAfter;
  const created = Date.parse(sn.nodeClaim?.metadata.creationTimestamp ?? '');
  if (expireAfter && expireAfter !== 'Never' && Number.isFinite(created)) {
    const d = tryParseDuration(expireAfter);
    if (d.ok && now >= created + d.seconds * 1000) return 'expiring';
  }
  if (conditionOf(sn.nodeClaim, 'Drifted')?.status === 'True') return 'drifted';
  if (sn.inFlight || !sn.node) return 'launching';
  if (!sn.initialized) return 'registered';
  return 'initialized';
}

function allocatableOf(sn: StateNode, it: InstanceType | undefined): Resources {
  const st = sn.node?.status?.allocatable ?? sn.nodeClaim?.status?.allocatable;
  if (st) return parseResources(st as Record<string, string>);
  return it?.allocatable ?? {};
}

/** Per-node candidate explanation from the last pass (commands first, then the blocked reason). */
function candidateReasons(
  d: DisruptionResult | undefined,
): Map<string, { candidate: boolean; reason: string }> {
  const out = new Map<string, { candidate: boolean; reason: string }>();
  for (const c of d?.commands ?? []) {
    const how = c.decision === 'replace' ? `replace with ${c.replacements.length} NodeClaim(s)` : 'delete';
    const savings = c.savingsUSDPerHour > 0 ? `, saves $${c.savingsUSDPerHour.toFixed(4)}/h` : '';
    for (const x of c.candidates)
      out.set(x.name, { candidate: true, reason: `${c.method}: ${how}${savings}` });
  }
  for (const b of d?.blocked ?? [])
    if (!out.has(b.node)) out.set(b.node, { candidate: false, reason: b.reason });
  return out;
}

function nodeView(
  sn: StateNode,
  input: DashboardInput,
  reasons: ReturnType<typeof candidateReasons>,
): NodeView {
  const now = input.snapshot.takenAt;
  const nodePool = sn.nodePool ?? '';
  const instanceType = labelOf(sn, LabelInstanceType);
  const zone = labelOf(sn, LabelTopologyZone);
  const capacityType = labelOf(sn, LabelCapacityType);
  const types = input.instanceTypes[nodePool];
  const it = types?.find((t) => t.name === instanceType);
  const alloc = allocatableOf(sn, it);
  const created = Date.parse(
    sn.node?.metadata.creationTimestamp ?? sn.nodeClaim?.metadata.creationTimestamp ?? '',
  );
  const why = reasons.get(sn.name) ?? {
    candidate: false,
    reason: input.disruption ? 'not considered by the last pass' : 'no disruption pass yet',
  };
  const view: NodeView = {
    name: sn.name,
    nodePool,
    instanceType,
    zone,
    capacityType,
    priceUSDPerHour: offeringPrice(types, instanceType, zone, capacityType),
    cpu: { requested: sn.podRequests.cpu ?? 0, allocatable: alloc.cpu ?? 0 },
    memory: { requested: sn.podRequests.memory ?? 0, allocatable: alloc.memory ?? 0 },
    pods: sn.pods.length,
    ageSeconds: Number.isFinite(created) ? Math.max(0, Math.floor((now - created) / 1000)) : 0,
    state: lifecycleState(sn, now, input.disrupting),
    candidate: why.candidate,
    candidateReason: why.reason,
  };
  if (sn.nodeClaim?.metadata.name) view.nodeClaim = sn.nodeClaim.metadata.name;
  return view;
}

/** The PodScheduled=False message the scheduler wrote, if any. */
function schedulerReason(pod: Pod): string | undefined {
  const c = (pod.status?.conditions ?? []).find((x) => x.type === 'PodScheduled' && x.status === 'False');
  if (!c) return undefined;
  return c.message || c.reason || undefined;
}

function pendingPods(input: DashboardInput): PendingPodView[] {
  const out: PendingPodView[] = [];
  for (const pod of input.snapshot.pods) {
    if (pod.spec?.nodeName) continue;
    const key = `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? ''}`;
    const v: PendingPodView = {
      pod: key,
      reason: schedulerReason(pod) ?? input.unschedulable?.get(key) ?? 'pending',
    };
    const nom = input.snapshot.nominations.get(key);
    if (nom) v.waitingFor = `${nom.target.kind}/${nom.target.name}`;
    out.push(v);
  }
  return out.sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
}

function poolCounts(nodes: readonly StateNode[]): Map<string, PoolCounts> {
  const counts = new Map<string, PoolCounts>();
  for (const sn of nodes) {
    if (!sn.managed || !sn.nodePool || !sn.initialized) continue;
    const c = counts.get(sn.nodePool) ?? { nodes: 0, disrupting: 0 };
    c.nodes++;
    if (sn.markedForDeletion) c.disrupting++;
    counts.set(sn.nodePool, c);
  }
  return counts;
}

function nodePoolViews(input: DashboardInput, nodes: readonly NodeView[]): NodePoolView[] {
  const pools: readonly NodePool[] = input.snapshot.nodePools;
  const counts = poolCounts(input.snapshot.stateNodes);
  const reasons: BudgetReason[] = ['Empty', 'Drifted', 'Underutilized'];
  const budgets = reasons.map((r) => [r, budgetMapping(pools, counts, r, input.snapshot.takenAt)] as const);
  return pools
    .map((np) => {
      const name = np.metadata.name ?? '';
      const limits: NodePoolView['limits'] = {};
      const limit = parseResources(np.spec.limits as Record<string, string> | undefined);
      for (const [k, v] of Object.entries(limit))
        limits[k] = { used: input.usage?.[name]?.[k] ?? 0, limit: v };
      const b = {} as NodePoolView['budgets'];
      for (const [r, m] of budgets) {
        const n = m.get(name) ?? 0;
        b[r] = n >= UNLIMITED - 1_000_000 ? null : n;
      }
      const mine = nodes.filter((n) => n.nodePool === name);
      const cost = mine.reduce((s, n) => s + (n.priceUSDPerHour ?? 0), 0);
      return {
        name,
        weight: np.spec.weight ?? 0,
        limits,
        budgets: b,
        nodes: mine.length,
        costUSDPerHour: cost,
      };
    })
    .sort((a, b) => b.weight - a.weight || (a.name < b.name ? -1 : 1));
}

/**
 * The view of `input` (see the module doc). Pure and total: malformed objects give empty fields, never a throw.
 * Nodes are sorted by NodePool then name; pending pods by key; NodePools by weight (highest first) then name.
 */
export function buildDashboardView(input: DashboardInput): DashboardView {
  const reasons = candidateReasons(input.disruption);
  const nodes = input.snapshot.stateNodes
    .map((sn) => nodeView(sn, input, reasons))
    .sort((a, b) =>
      a.nodePool !== b.nodePool
        ? a.nodePool < b.nodePool
          ? -1
          : 1
        : a.name < b.name
          ? -1
          : a.name > b.name
            ? 1
            : 0,
    );
  const pending = pendingPods(input);
  const view: DashboardView = {
    at: input.snapshot.takenAt,
    nodePools: nodePoolViews(input, nodes),
    nodes,
    pendingPods: pending,
    machinePools: input.machinePools ?? [],
    totals: {
      at: input.snapshot.takenAt,
      costUSDPerHour: nodes.reduce((s, n) => s + (n.priceUSDPerHour ?? 0), 0),
      nodes: nodes.length,
      pendingPods: pending.length,
    },
  };
  if (input.error) view.error = input.error;
  return view;
}
