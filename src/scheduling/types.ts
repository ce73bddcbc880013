/**
 * Inputs and outputs of the scheduling simulation (`scheduling/scheduler.ts`). The core is pure: the
 * controller, `capenter simulate`, the disruption simulation and the benchmarks build a
 * {@link SchedulingInput} and get the same {@link SchedulingResult} for the same input.
 * Semantics follow upstream kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling`.
 */
import type {
  CSINode,
  DaemonSet,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '../apis/core.ts';
import type { InstanceType, Offering } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool, NodeSelectorRequirementWithMinValues } from '../apis/karpenter.ts';
import type { Resources } from '../apis/quantity.ts';

/** `Respect` (default): preferences steer scheduling until relaxed; `Ignore`: they are dropped. */
export type PreferencePolicy = 'Respect' | 'Ignore';
/**
 * Upstream `MIN_VALUES_POLICY` (`pkg/operator/options/options.go` `MinValuesPolicy`): `Strict` (default) — a
 * NodeClaim whose instance types cannot meet a requirement's `minValues` is not planned and its pod stays
 * unschedulable; `BestEffort` — the NodeClaim is planned with that `minValues` lowered to what its instance types
 * offer and {@link NodeClaimPlan.minValuesRelaxed} set.
 */
export type MinValuesPolicy = 'Strict' | 'BestEffort';

/** The storage objects of a cluster (or a `simulate` input) volume topology needs. */
export interface VolumeObjects {
  persistentVolumeClaims?: readonly PersistentVolumeClaim[];
  persistentVolumes?: readonly PersistentVolume[];
  storageClasses?: readonly StorageClass[];
  /** Attach limits of existing nodes (by node name); see `volumetopology.ts` `withVolumeTopology`. */
  csiNodes?: readonly CSINode[];
}

/** Existing capacity: a Node (managed or not) with the pods bound to it (daemon pods included). */
export interface ExistingNode {
  node: Node;
  /** Pods bound to the node (`spec.nodeName`), including DaemonSet pods. */
  pods: Pod[];
  /** The NodeClaim behind a managed node, when known. */
  nodeClaim?: NodeClaim;
  /** True when the node is being deleted/disrupted: it takes no new pods. */
  markedForDeletion?: boolean;
  /**
   * True when `pods` already lists every DaemonSet pod the node will run. When false/absent (upstream
   * behaviour), room is kept for each compatible DaemonSet that has no pod on the node yet.
   */
  daemonSetPodsIncluded?: boolean;
}

/**
 * A NodeClaim that was created but whose Node has not registered yet (in-flight capacity).
 * Pods may be packed onto it as long as they fit every instance type it still allows.
 */
export interface InFlightNodeClaim {
  nodeClaim: NodeClaim;
  nodePool: string;
  instanceTypeOptions: InstanceType[];
  /** Requests already promised to it (pods + daemon overhead), internal units. */
  requests: Resources;
}

/** Everything the simulation needs; nothing here is read from a clock or the network. */
export interface SchedulingInput {
  /** Pods to place (pending, provisionable). Order does not matter: the scheduler sorts them. */
  pods: Pod[];
  existingNodes: ExistingNode[];
  inFlight?: InFlightNodeClaim[];
  /** Validated, defaulted NodePools. */
  nodePools: NodePool[];
  /** Instance types each NodePool can launch (resolved from its NodeClass), by NodePool name. */
  instanceTypes: Record<string, InstanceType[]>;
  daemonSets: DaemonSet[];
  /** Resources already used by each NodePool's existing nodes (capacity), for `spec.limits`. */
  nodePoolUsage?: Record<string, Resources>;
  /** Namespace labels by namespace name, for pod affinity `namespaceSelector`. */
  namespaces?: Record<string, Record<string, string>>;
  /**
   * Claims, PersistentVolumes and StorageClasses: pods with claim volumes are restricted to where their volumes
   * can attach (`volumetopology.ts`). Without it, a pod with a claim volume is `VolumeUnresolved`.
   */
  volumes?: VolumeObjects;
  /** Upstream `--preference-policy` (`preferencepolicy.ts`): `Respect` (default) or `Ignore` preferences. */
  preferencePolicy?: PreferencePolicy;
  /**
   * Consolidation simulations only (upstream v1.14 `IsConsolidationSimulation` / `ExistingNode.isUnderConsolidateAfter`):
   * the pods with these keys (`namespace/name`, pods moving off consolidation candidates) are never placed on the
   * existing nodes named in `nodes` (nodes whose NodePool `consolidateAfter` has not elapsed since their last pod
   * event). Pending pods and pods of deleting nodes are not listed, so they may still land there.
   */
  consolidateAfterDestinations?: { nodes: ReadonlySet<string>; podKeys: ReadonlySet<string> };
  /** Upstream `--min-values-policy` ({@link MinValuesPolicy}): `Strict` (default) or `BestEffort`. */
  minValuesPolicy?: MinValuesPolicy;
  /** Record per-pod explanations (`--explain`); costs some speed. */
  explain?: boolean;
}

/** A NodeClaim the scheduler wants created. */
export interface NodeClaimPlan {
  nodePool: string;
  /** Requirements of the NodeClaim: NodePool requirements ∩ pod requirements (incl. instance types). */
  requirements: NodeSelectorRequirementWithMinValues[];
  /**
   * Types that fit pods + THEIR OWN daemon overhead (the DaemonSets that run on that type, `daemonoverhead.ts`
   * `daemonOverheadGroups`) and satisfy the requirements, sorted by cheapest price (USD/hour).
   */
  instanceTypeOptions: InstanceType[];
  pods: Pod[];
  /** Pods' requests + {@link daemonOverhead} (internal units), as upstream's `spec.resources.requests`. */
  requests: Resources;
  /**
   * The smallest daemon overhead over the options, per resource (upstream `NodeClaim.addDaemonRequests`); internal
   * units, `pods` = daemon pods.
   */
  daemonOverhead: Resources;
  /**
   * The cheapest available offering among the options that the requirements allow, and the daemon overhead of
   * that instance type (internal units; absent when the plan was narrowed outside the scheduler, e.g. by
   * disruption's `withOptions`: then {@link daemonOverhead} is the known lower bound).
   */
  cheapest: { instanceType: InstanceType; offering: Offering; daemonOverhead?: Resources };
  /**
   * True when `MIN_VALUES_POLICY=BestEffort` lowered some requirement's `minValues` for this NodeClaim (the
   * lowered value is in {@link requirements}); upstream annotates the NodeClaim
   * `karpenter.sh/nodeclaim-min-values-relaxed: "true"` (`scheduler.go` `addToNewNodeClaim`). Absent otherwise.
   */
  minValuesRelaxed?: boolean;
}

/** Where a pod went: an existing node (by name), an in-flight NodeClaim (by name) or a new plan (by index). */
export type PlacementTarget =
  | { kind: 'existing'; node: string }
  | { kind: 'inflight'; nodeClaim: string }
  | { kind: 'new'; index: number };

export interface Placement {
  pod: Pod;
  target: PlacementTarget;
}

/** Why a pod could not be placed; `code` is stable, `message` has the numbers. */
export interface Unschedulable {
  pod: Pod;
  code:
    | 'IncompatibleRequirements'
    | 'NoInstanceTypeFits'
    | 'Untolerated'
    | 'TopologyUnsatisfiable'
    | 'AffinityUnsatisfiable'
    | 'NodePoolLimitsExceeded'
    | 'NoNodePool'
    | 'InvalidPod'
    | 'VolumeUnresolved';
  message: string;
}

/** One line of the `--explain` trace for a pod. */
export interface Explanation {
  pod: string;
  decision: string;
  details: string[];
}

/**
 * A NodePool whose template requirements leave none of its instance types (upstream `NewScheduler` pre-filter with
 * `filterInstanceTypesByRequirements` on an empty pod: requirements, an available compatible offering, room for the
 * daemon overhead, then `minValues` under `MIN_VALUES_POLICY=Strict`). The provisioner publishes upstream's
 * `NoCompatibleInstanceTypes` Warning Event on the NodePool for it.
 */
export interface NoCompatibleInstanceTypes {
  nodePool: string;
  /** True when types remained but could not meet the template's `minValues` (upstream `minValuesIncompatibleErr`). */
  minValues: boolean;
}

/** The outcome of {@link SchedulingInput} solved: NodeClaims to create, placements, failures, explanations. */
export interface SchedulingResult {
  newNodeClaims: NodeClaimPlan[];
  placements: Placement[];
  unschedulable: Unschedulable[];
  explanations: Explanation[];
  /** NodePools left with no compatible instance type, by weight desc then name; absent when there is none. */
  noCompatibleInstanceTypes?: NoCompatibleInstanceTypes[];
  /**
   * The run's pods by effective zone before any was placed (upstream `computeEffectiveZoneFromPod`): a zone name,
   * `flexible` (more than one zone possible) or `none` (no zone possible); see `effectiveZone` in `scheduler.ts`.
   */
  pendingPodsByEffectiveZone?: Record<string, number>;
}
