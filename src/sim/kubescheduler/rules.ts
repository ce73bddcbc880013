/**
 * The one declared face through which the simulator's kube-scheduler and DaemonSet stand-ins use scheduling
 * rules (which node a pod fits: taints, node affinity, selectors, spread node inclusion, requests, host ports,
 * volume topology). sim does not implement them and imports no product code: whoever assembles the simulated
 * cluster injects an implementation (`SimulatedClusterOptions.rules`). capenter's is `src/embedded/rules.ts`,
 * which hands over the scheduling core's own predicates (`src/scheduling/{predicates,resources,hostports,
 * topology,volumetopology}.ts`), so the stand-in and capenter's provisioner agree on what fits by construction.
 *
 * The consequence (DESIGN.md, docs/architecture.md): a predicate of the core that differs from kube-scheduler's
 * differs the same way here, so the embedded ring cannot catch it; the real kube-scheduler of
 * `npm run test:cluster` is the independent check. Types come from `apis/` only.
 */
import type {
  LabelSelector,
  NodeSelectorTerm,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PodSpec,
  StorageClass,
  Taint,
  Toleration,
  TopologySpreadConstraint,
} from '../../apis/core.ts';
import type { Resources } from '../../apis/quantity.ts';

/** One host port a pod binds: IP (`0.0.0.0` when unset), protocol (default TCP), port. */
export interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/** The host ports in use on one node (kube-scheduler NodePorts). */
export interface HostPortSet {
  /** A message naming the conflicting port, or `undefined` when `ports` can be added. */
  conflict(ports: readonly HostPort[]): string | undefined;
  add(ports: readonly HostPort[]): void;
}

/** A pod as pod groups select it. */
export interface TopologyPod {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  /** Optional precomputed {@link SchedulingRules.selectKeyOf} (groups memoise their answer by it). */
  selectKey?: string;
}

/** The pods a spread constraint or pod (anti-)affinity term counts: a selector over some namespaces. */
export interface PodGroup {
  readonly kind: string;
  /** True when `pod` is counted by this group. */
  selects(pod: TopologyPod): boolean;
}

/** A node as the predicates see it: its name (for `matchFields`), labels and taints. */
export interface NodeView {
  name: string;
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
}

/** Whether a DaemonSet should have a pod on a node (`shouldRun`) and whether an existing one may stay. */
export interface DaemonNodeFit {
  shouldRun: boolean;
  shouldContinue: boolean;
}

/** The storage objects volume topology reads. */
export interface StorageObjects {
  persistentVolumeClaims: readonly PersistentVolumeClaim[];
  persistentVolumes: readonly PersistentVolume[];
  storageClasses: readonly StorageClass[];
}

/** A pod with its volumes' topology added to its required node affinity, or why it cannot be scheduled. */
export type VolumeTopologyResult = { pod: Pod } | { problem: string };

/**
 * The scheduling rules the stand-ins evaluate. Every function is pure and synchronous; each mirrors the
 * kube-scheduler (or kube-controller-manager) rule named on it. Implementations must not throw except where
 * noted.
 */
export interface SchedulingRules {
  /** A pod's effective requests (internal units, `pods: 1`), init containers and overhead included; throws on a malformed quantity. */
  podRequests(pod: Pod): Resources;
  /** Adds `b` into `a` (mutates and returns `a`). */
  addInto(a: Resources, b: Resources): Resources;
  /** The host ports a pod binds (containers and init containers; `hostNetwork` binds container ports). */
  podHostPorts(pod: Pod): HostPort[];
  /** An empty {@link HostPortSet}. */
  hostPortSet(): HostPortSet;
  /** Cache key of a pod for "which groups select it": namespace + sorted labels. */
  selectKeyOf(pod: TopologyPod): string;
  /** The group `id` of `kind` selecting pods matching `selector` in `namespaces`. */
  podGroup(
    id: string,
    kind: 'spread' | 'affinity',
    selector: LabelSelector | undefined,
    namespaces: ReadonlySet<string>,
  ): PodGroup;
  /** The first taint with an effect in `effects` (default NoSchedule, NoExecute) not tolerated (TaintToleration). */
  firstUntoleratedTaint(
    tolerations: readonly Toleration[] | undefined,
    taints: readonly Taint[] | undefined,
    effects?: ReadonlySet<string>,
  ): Taint | undefined;
  /** NodeAffinity: every `nodeSelector` entry and any required node selector term. */
  nodeMatchesNodeAffinity(
    spec: Pick<PodSpec, 'nodeSelector' | 'affinity'>,
    name: string,
    labels: Readonly<Record<string, string>>,
  ): boolean;
  /** One node selector term (`matchExpressions` and `matchFields`); an empty term matches nothing. */
  nodeMatchesTerm(term: NodeSelectorTerm, name: string, labels: Readonly<Record<string, string>>): boolean;
  /** A canonical string of a label selector (`nil` for none). */
  selectorKey(selector: LabelSelector | undefined): string;
  /** True when `labels` match `selector` (a nil selector matches nothing, `{}` everything). */
  selectorMatches(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean;
  /** A selector widened by the owner pod's `matchLabelKeys` (In) and `mismatchLabelKeys` (NotIn) values. */
  selectorWithLabelKeys(
    selector: LabelSelector | undefined,
    podLabels: Readonly<Record<string, string>>,
    matchLabelKeys: readonly string[] | undefined,
    mismatchLabelKeys?: readonly string[],
  ): LabelSelector | undefined;
  /** PodTopologySpread node inclusion policies (`nodeAffinityPolicy`, `nodeTaintsPolicy`) for one node. */
  spreadCountsNode(
    c: Pick<TopologySpreadConstraint, 'nodeAffinityPolicy' | 'nodeTaintsPolicy'>,
    spec: Pick<PodSpec, 'nodeSelector' | 'affinity' | 'tolerations'>,
    node: NodeView,
  ): boolean;
  /** True when the tolerations tolerate the taint `key:effect` (no value). */
  toleratesKey(tolerations: readonly Toleration[] | undefined, key: string, effect: Taint['effect']): boolean;
  /** kube-controller-manager `daemon.NodeShouldRunDaemonPod` for a pod template on a node. */
  daemonSetNodeFit(
    template: Pick<PodSpec, 'nodeSelector' | 'affinity' | 'tolerations' | 'hostNetwork'>,
    node: NodeView,
  ): DaemonNodeFit;
  /** A DaemonSet's pod tolerations: the template's plus the DaemonSet controller's defaults (a fresh array). */
  daemonSetPodTolerations(template: Pick<PodSpec, 'tolerations' | 'hostNetwork'>): Toleration[];
  /** True when the pod has `persistentVolumeClaim` or `ephemeral` volumes. */
  hasClaimVolumes(pod: Pod): boolean;
  /**
   * VolumeBinding / VolumeZone over `objects` (indexed once): a function adding a pod's volume topology to its
   * required node affinity, or naming the missing claim, volume or class.
   */
  volumeTopology(objects: StorageObjects): (pod: Pod) => VolumeTopologyResult;
}
