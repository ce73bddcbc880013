/**
 * Inputs and outputs of the PURE disruption decision core (`computeDisruption` in `index.ts`).
 * Semantics follow upstream kubernetes-sigs/karpenter `pkg/controllers/disruption` (v1): methods run in the order
 * emptiness, drift, multi-node consolidation, single-node consolidation; the first method that produces a command
 * wins the pass. Expiration (`expireAfter`) is not a budgeted method: expired nodes are reported as `Expired`
 * delete commands ahead of the method's command.
 *
 * Nothing here reads a clock, the network or randomness: `now` is an input (milliseconds since the epoch), so the
 * disruption controller can call `computeDisruption(snapshot)` every 10 s and re-validate a command 15 s later by
 * calling it again with the new snapshot.
 */
import type { DaemonSet, Node, Pod, PodDisruptionBudget } from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import type { Resources } from '../apis/quantity.ts';
import type { PreferencePolicy } from '../scheduling/preferencepolicy.ts';
import type { MinValuesPolicy, NodeClaimPlan } from '../scheduling/types.ts';
import type { VolumeObjects } from '../scheduling/volumetopology.ts';

/** Budget reasons (`spec.disruption.budgets[].reasons`) plus `Expired` (never budgeted). */
export type DisruptionReason = 'Empty' | 'Drifted' | 'Underutilized' | 'Expired';
/** The reasons a disruption budget can name (upstream `DisruptionReason`). */
export type BudgetReason = Exclude<DisruptionReason, 'Expired'>;

/** One Node of the snapshot, with its NodeClaim and the pods bound to it. */
export interface DisruptionNode {
  node: Node;
  /** The NodeClaim behind a managed node (label `karpenter.sh/nodepool`); a managed node without one is never disrupted. */
  nodeClaim?: NodeClaim;
  /** Pods bound to the node (`spec.nodeName`), DaemonSet pods included. */
  pods: Pod[];
  /** True while the node is being disrupted or deleted (tainted `karpenter.sh/disrupted`, deleting, or queued). */
  markedForDeletion?: boolean;
  /** True when provisioning nominated the node for pending pods (upstream: not a candidate while nominated). */
  nominated?: boolean;
  /** Provider drift reason (`CloudProvider.isDrifted`, e.g. `AMIDrift`), when the provider says it drifted. */
  providerDrifted?: string;
}

/** Feature gates the core honours (upstream `--feature-gates`). */
export interface DisruptionFeatureGates {
  /** `SpotToSpotConsolidation` (default false): allow replacing spot nodes with cheaper spot nodes. */
  spotToSpotConsolidation?: boolean;
}

/** Tunables of one pass; defaults mirror upstream where upstream has a number. */
export interface DisruptionOptions {
  /** Candidates multi-node consolidation considers at most (upstream 100). */
  multiNodeMaxCandidates?: number;
  /**
   * Scheduling simulations single-node consolidation may run in one pass before giving up (capenter's cap, beside
   * upstream's 3-minute timeout, see {@link clockMs}). Default 200 (≈ 7 s at 1,000 nodes, see
   * bench/disruption.ts).
   */
  singleNodeMaxSimulations?: number;
  /**
   * Reads the caller's (injected) clock, ms, for upstream's consolidation timeouts: multi-node stops its search
   * {@link MULTI_NODE_CONSOLIDATION_TIMEOUT_MS} after it starts (keeping its best command so far), single-node
   * gives up {@link SINGLE_NODE_CONSOLIDATION_TIMEOUT_MS} after it starts (no command), each reporting
   * `MethodResult.timedOut`. Absent: no timeouts (the simulation caps above still hold).
   */
  clockMs?: () => number;
  /**
   * Keep every instance type cheaper than the candidates in an on-demand replacement (upstream behaviour, the
   * default): an insufficient-capacity error on the cheapest still leaves a launch that saves money. `false`
   * keeps only the cheapest-priced ones (see `consolidation.ts` {@link narrowReplacement}). Default true.
   */
  flexibleOnDemandReplacements?: boolean;
  /**
   * Upstream `--preference-policy`: `Respect` (default) or `Ignore` preferences in the scheduling simulation.
   * With `Respect`, a candidate whose pods fit the remaining nodes once their preferences are ignored is still
   * deleted (preferences never make consolidation keep or launch capacity, see `context.ts`).
   */
  preferencePolicy?: PreferencePolicy;
  /**
   * Upstream `--min-values-policy` (`disruption/helpers.go` `SimulateScheduling` passes it too): `Strict` (default)
   * or `BestEffort`, where a replacement NodeClaim may have its `minValues` lowered (`scheduling/types.ts`).
   */
  minValuesPolicy?: MinValuesPolicy;
}

/** Everything one disruption pass needs (a snapshot of cluster state plus the time). */
export interface DisruptionInput {
  nodes: DisruptionNode[];
  /** Pending pods: consolidation must not take capacity they will need; they may stay pending. */
  pendingPods?: Pod[];
  /**
   * NodePool usage (internal units: millicores, bytes, `nodes`) of in-flight NodeClaims — launched or launching,
   * no Node yet, not being deleted — by NodePool name. Counted against `spec.limits` when sizing replacements, as
   * upstream's cluster state counts every NodeClaim; without it a replacement could take capacity the
   * provisioner has already claimed.
   */
  inFlightUsage?: Record<string, Resources>;
  /** Validated, defaulted NodePools. */
  nodePools: NodePool[];
  /**
   * Instance types by NodePool name (the NodeClass's full list, e.g. from the AWS catalog's `getInstanceTypes`):
   * used to price candidates (offering for the node's zone and capacity type), to detect `InstanceTypeNotFound`
   * drift, and by the scheduling simulation for replacements.
   */
  instanceTypes: Record<string, InstanceType[]>;
  daemonSets: DaemonSet[];
  /** PodDisruptionBudgets; `status.disruptionsAllowed` is used when present, else computed from the pods. */
  pdbs: PodDisruptionBudget[];
  /** Namespace labels by namespace (pod affinity `namespaceSelector`). */
  namespaces?: Record<string, Record<string, string>>;
  /** Claims, PersistentVolumes, StorageClasses: moved pods stay where their volumes can attach. */
  volumes?: VolumeObjects;
  /** Current time, milliseconds since the epoch (never read from a clock inside the core). */
  now: number;
  featureGates?: DisruptionFeatureGates;
  options?: DisruptionOptions;
}

/**
 * A node considered for disruption, with everything the methods need precomputed. Built for every managed node
 * (see `candidates.ts`); `ineligible` says why it cannot be a candidate at all.
 */
export interface Candidate {
  /** Node name. */
  name: string;
  node: Node;
  nodeClaim: NodeClaim;
  nodePool: NodePool;
  /** The node's instance type in its NodePool's catalog, when found. */
  instanceType?: InstanceType;
  zone?: string;
  capacityType?: string;
  /** Current price: the cheapest offering of its type for its zone and capacity type, USD/hour; undefined when unknown. */
  priceUSDPerHour?: number;
  /** Every bound pod. */
  pods: Pod[];
  /** Pods that must move elsewhere (active, not DaemonSet-owned, not static/mirror). */
  reschedulablePods: Pod[];
  /** Upstream disruption cost: Σ eviction cost of reschedulable pods × lifetime remaining (see `cost.ts`). */
  disruptionCost: number;
  /**
   * Upstream `RescheduleDisruptionCost` (Balanced scoring, candidate order): 1 (per-node base) + Σ max(0, eviction
   * cost) of the reschedulable pods (see `balanced.ts`).
   */
  rescheduleDisruptionCost: number;
  /** True when `consolidateAfter` has elapsed since the last pod event (see `candidates.ts`). */
  consolidatable: boolean;
  /** Why consolidation may not touch it yet (consolidateAfter not elapsed / Never), when not consolidatable. */
  notConsolidatableReason?: string;
  /** Drift reason (`NodePoolDrifted`, `RequirementsDrifted`, `InstanceTypeNotFound`, provider reasons), if drifted. */
  driftReason?: string;
  /** Why it cannot be disrupted gracefully at all (node-level), when it cannot. */
  ineligible?: string;
  /**
   * Why its pods block eviction (`karpenter.sh/do-not-disrupt` pod, PDB with 0 allowed, multiple PDBs), if they
   * do. Blocks every method, except drift when the NodeClaim has a `terminationGracePeriod` (upstream eventual
   * disruption class).
   */
  podsBlock?: string;
  /** True when the node is being disrupted or deleted already. */
  markedForDeletion: boolean;
  /** True when the NodeClaim is initialized (condition `Initialized` or label `karpenter.sh/initialized`). */
  initialized: boolean;
}

/** A disruption decision: delete the candidates, or replace them with the planned NodeClaims. */
export interface Command {
  decision: 'delete' | 'replace';
  reason: DisruptionReason;
  /** The method that produced it: `Expiration`, `Emptiness`, `Drift`, `MultiNodeConsolidation`, `SingleNodeConsolidation`. */
  method: string;
  candidates: Candidate[];
  /** NodeClaims to launch (and wait for) before the candidates are deleted; empty for `delete`. */
  replacements: NodeClaimPlan[];
  /** Σ candidate prices − Σ replacement prices (cheapest option), USD/hour; 0 when a price is unknown. */
  savingsUSDPerHour: number;
}

/** A node that no command disrupts, and why (for `capenter simulate --disruption` and events). */
export interface BlockedNode {
  node: string;
  reason: string;
}

/**
 * A candidate consolidation evaluated and found it cannot disrupt, with upstream's `Unconsolidatable` Event
 * message (kubernetes-sigs/karpenter `pkg/controllers/disruption/consolidation.go` `ShouldDisrupt` and
 * `computeConsolidation`, single-candidate case only, as upstream).
 */
export interface UnconsolidatableNode {
  node: string;
  /** Upstream's message, e.g. `Can't replace with a cheaper node`. */
  message: string;
}

/** Result of one pass. */
export interface DisruptionResult {
  /** `Expired` deletes first, then at most one command from the first method that produced one. */
  commands: Command[];
  blocked: BlockedNode[];
  /** Candidates upstream would publish an `Unconsolidatable` Event for this pass (sorted by node; may be absent). */
  unconsolidatable?: UnconsolidatableNode[];
}

/** Disruption classes (upstream): graceful methods respect every block; eventual ones (drift) may bypass pod blocks. */
export type DisruptionClass = 'graceful' | 'eventual';

/** What a method returns: its commands (usually zero or one) and per-node notes explaining non-selection. */
/** Upstream `MultiNodeConsolidationTimeoutDuration` (multinodeconsolidation.go): 1 min, in ms. */
export const MULTI_NODE_CONSOLIDATION_TIMEOUT_MS = 60_000;
/** Upstream `SingleNodeConsolidationTimeoutDuration` (singlenodeconsolidation.go): 3 min, in ms. */
export const SINGLE_NODE_CONSOLIDATION_TIMEOUT_MS = 180_000;

export interface MethodResult {
  /** True when the method stopped at its wall-clock timeout (`DisruptionOptions.clockMs`). */
  timedOut?: boolean;
  commands: Command[];
  /** Node name → why this method did not disrupt it. */
  notes: Map<string, string>;
  /** Consolidation methods: the moves they scored, for upstream's consolidation move/score metrics. */
  moves?: ConsolidationMoveRecord[];
  /** Single-node consolidation: node name → upstream's `Unconsolidatable` message for a candidate it evaluated. */
  unconsolidatable?: Map<string, string>;
}

/**
 * What one evaluated consolidation move adds to upstream's `karpenter_consolidation_moves_total` counter and
 * `karpenter_consolidation_score` histogram (pkg/controllers/disruption/metrics.go, recorded by balanced.go
 * `ApproveCommand` for a single-candidate move and `EmitMultiNodeEvents` for a multi-node one).
 */
export interface ConsolidationMoveRecord {
  /** Label `decision` of the moves counter: the whole move's verdict. */
  decision: 'approved' | 'rejected';
  /** Label `nodepool`. */
  nodePool: string;
  /** Label `policy`: the NodePool's `consolidationPolicy` (`WhenEmptyOrUnderutilized`, `Balanced`, …). */
  policy: string;
  /** Balanced pools only: the score observed in the histogram, with this pool's own verdict as `decision`. */
  score?: { value: number; decision: 'approved' | 'rejected' };
}
