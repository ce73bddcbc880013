/**
 * Plain-JSON shapes of the built-in Kubernetes objects capenter reads, as they appear on the wire and in
 * YAML (timestamps are RFC 3339 strings, quantities are strings or numbers). Only the fields capenter uses
 * are typed; everything else is carried through untouched by the index signatures on the object roots.
 * Source: k8s.io/api core/v1, apps/v1, batch/v1, policy/v1 (Kubernetes 1.32).
 */

/** `resource.Quantity` as found in manifests: `"500m"`, `"1Gi"`, or a bare number. */
export type Quantity = string | number;
/** `intstr.IntOrString`: `1` or `"10%"`. */
export type IntOrString = number | string;
/** A resource list as on the wire (`{cpu: "500m", memory: "1Gi"}`). */
export type ResourceList = Record<string, Quantity>;

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  /** RFC 3339 */
  creationTimestamp?: string;
  /** RFC 3339 */
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

/** Any Kubernetes object: `apiVersion`, `kind`, `metadata`, and whatever else it carries. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** A node selector requirement; operators as core/v1 plus Karpenter's `Gte`/`Lte`. */
export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt' | 'Gte' | 'Lte';
  values?: string[];
}
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}
export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}
export interface PreferredSchedulingTerm {
  weight: number;
  preference: NodeSelectorTerm;
}
export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
  preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
}
export interface PodAffinityTerm {
  labelSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  namespaces?: string[];
  topologyKey: string;
  matchLabelKeys?: string[];
  mismatchLabelKeys?: string[];
}
export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}
export interface PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
}
export interface Affinity {
  nodeAffinity?: NodeAffinity;
  podAffinity?: PodAffinity;
  podAntiAffinity?: PodAffinity;
}

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}
export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: TaintEffect | '';
  tolerationSeconds?: number;
}

export interface TopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  labelSelector?: LabelSelector;
  minDomains?: number;
  nodeAffinityPolicy?: 'Honor' | 'Ignore';
  nodeTaintsPolicy?: 'Honor' | 'Ignore';
  matchLabelKeys?: string[];
}

export interface ResourceRequirements {
  requests?: ResourceList;
  limits?: ResourceList;
}
export interface ContainerPort {
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  name?: string;
}
export interface Container {
  name: string;
  image?: string;
  resources?: ResourceRequirements;
  ports?: ContainerPort[];
  /** `Always` on an init container makes it a sidecar (restartable init container). */
  restartPolicy?: 'Always';
  [key: string]: unknown;
}
export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  ephemeral?: { volumeClaimTemplate?: { spec?: PersistentVolumeClaimSpec } };
  [key: string]: unknown;
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  topologySpreadConstraints?: TopologySpreadConstraint[];
  containers: Container[];
  initContainers?: Container[];
  overhead?: ResourceList;
  /**
   * Pod-level resources (k8s 1.32+ `PodLevelResources`): requests/limits for the whole pod; where set (cpu, memory,
   * hugepages-*) they replace the containers' aggregate.
   */
  resources?: ResourceRequirements;
  priority?: number;
  priorityClassName?: string;
  schedulerName?: string;
  terminationGracePeriodSeconds?: number;
  volumes?: Volume[];
  hostNetwork?: boolean;
  [key: string]: unknown;
}
export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}
export interface PodStatus {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  conditions?: PodCondition[];
  nominatedNodeName?: string;
  /** RFC 3339 time the kubelet acknowledged the pod (before pulling images); do-not-disrupt durations count from it. */
  startTime?: string;
  [key: string]: unknown;
}
export interface Pod extends KubeObject {
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}
export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec: PodSpec;
}

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastHeartbeatTime?: string;
}
export interface NodeSpec {
  providerID?: string;
  taints?: Taint[];
  unschedulable?: boolean;
  [key: string]: unknown;
}
export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  conditions?: NodeCondition[];
  [key: string]: unknown;
}
export interface Node extends KubeObject {
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

export interface DeploymentSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  [key: string]: unknown;
}
export interface Deployment extends KubeObject {
  metadata: ObjectMeta;
  spec: DeploymentSpec;
}
export interface ReplicaSet extends KubeObject {
  metadata: ObjectMeta;
  spec: DeploymentSpec;
}
export interface StatefulSetSpec extends DeploymentSpec {
  serviceName?: string;
  volumeClaimTemplates?: PersistentVolumeClaim[];
}
export interface StatefulSet extends KubeObject {
  metadata: ObjectMeta;
  spec: StatefulSetSpec;
}
export interface DaemonSet extends KubeObject {
  metadata: ObjectMeta;
  spec: { selector: LabelSelector; template: PodTemplateSpec; [key: string]: unknown };
}
export interface Job extends KubeObject {
  metadata: ObjectMeta;
  spec: { parallelism?: number; completions?: number; template: PodTemplateSpec; [key: string]: unknown };
}

export interface PodDisruptionBudget extends KubeObject {
  metadata: ObjectMeta;
  spec: {
    selector?: LabelSelector;
    minAvailable?: IntOrString;
    maxUnavailable?: IntOrString;
    unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
  };
  status?: {
    currentHealthy?: number;
    desiredHealthy?: number;
    disruptionsAllowed?: number;
    expectedPods?: number;
    observedGeneration?: number;
    [key: string]: unknown;
  };
}

export interface PersistentVolumeClaimSpec {
  storageClassName?: string;
  volumeName?: string;
  accessModes?: string[];
  resources?: ResourceRequirements;
  [key: string]: unknown;
}
export interface PersistentVolumeClaim extends KubeObject {
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
}

/** A PersistentVolume (the fields volume topology reads). */
export interface PersistentVolume extends KubeObject {
  spec?: {
    storageClassName?: string;
    claimRef?: { namespace?: string; name?: string };
    nodeAffinity?: { required?: { nodeSelectorTerms?: NodeSelectorTerm[] } };
    csi?: { driver?: string; volumeHandle?: string };
    local?: unknown;
    hostPath?: unknown;
    [key: string]: unknown;
  };
}

/** A StorageClass (`storage.k8s.io/v1`), the fields volume topology reads. */
export interface StorageClass extends KubeObject {
  provisioner?: string;
  volumeBindingMode?: 'Immediate' | 'WaitForFirstConsumer';
  allowedTopologies?: Array<{ matchLabelExpressions?: Array<{ key: string; values: string[] }> }>;
}

/** A CSINode (`storage.k8s.io/v1`): per CSI driver, how many volumes the node can attach. */
export interface CSINode extends KubeObject {
  spec?: { drivers?: Array<{ name: string; nodeID?: string; allocatable?: { count?: number } }> };
}
