/**
 * Types of capenter's custom resources, with upstream Karpenter v1 field names:
 * `karpenter.sh/v1` NodePool and NodeClaim, `karpenter.k8s.aws/v1` EC2NodeClass,
 * `karpenter.kwok.sh/v1alpha1` KWOKNodeClass.
 * Sources: kubernetes-sigs/karpenter `pkg/apis/v1/*.go`, aws/karpenter-provider-aws `pkg/apis/v1/*.go`,
 * and the CRDs under `shared/data/crds/`.
 *
 * These are the shapes after defaulting (see `apis/defaults.ts`); the zod schemas in `apis/schemas.ts`
 * validate raw input into them.
 */
import type { KubeObject, NodeSelectorRequirement, ObjectMeta, ResourceList, Taint } from './core.ts';

/** A NodeSelectorRequirement with Karpenter's `minValues` (1–50): at least that many distinct values must stay possible. */
export interface NodeSelectorRequirementWithMinValues extends NodeSelectorRequirement {
  minValues?: number;
}

/** Reference from a NodePool/NodeClaim to its NodeClass. */
export interface NodeClassReference {
  group: string;
  kind: string;
  name: string;
}

/** The NodeClaim template inside a NodePool (`spec.template`). */
export interface NodeClaimTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: NodeClaimTemplateSpec;
}
export interface NodeClaimTemplateSpec {
  nodeClassRef: NodeClassReference;
  requirements: NodeSelectorRequirementWithMinValues[];
  taints?: Taint[];
  startupTaints?: Taint[];
  /** Duration string (`"720h"`) or `"Never"`. Default `720h`. */
  expireAfter?: string;
  /** Duration string; unset means wait forever for PDBs. */
  terminationGracePeriod?: string;
}

/** Disruption budget (`spec.disruption.budgets[]`). */
export interface Budget {
  /** Count (`"5"`) or percent (`"10%"`) of the NodePool's nodes. */
  nodes: string;
  /** Cron schedule in UTC; requires `duration`. */
  schedule?: string;
  /** Duration string, e.g. `"8h"`. */
  duration?: string;
  reasons?: Array<'Underutilized' | 'Empty' | 'Drifted'>;
}
export interface Disruption {
  /** `Balanced` (Karpenter v1.14+, `disruption/balanced.ts`) weighs savings against disruption; default `WhenEmptyOrUnderutilized`. */
  consolidationPolicy: 'WhenEmpty' | 'WhenEmptyOrUnderutilized' | 'Balanced';
  /** Duration string (`"0s"`, `"30s"`) or `"Never"`. */
  consolidateAfter: string;
  budgets: Budget[];
}

export interface NodePoolSpec {
  template: NodeClaimTemplate;
  disruption: Disruption;
  /** Resource limits over all nodes of the NodePool (quantities). */
  limits?: ResourceList;
  /** 1–100; higher is tried first. */
  weight?: number;
  replicas?: number;
}
export interface NodePool extends KubeObject {
  apiVersion: 'karpenter.sh/v1';
  kind: 'NodePool';
  metadata: ObjectMeta & { name: string };
  spec: NodePoolSpec;
  status?: {
    resources?: ResourceList;
    nodes?: number;
    conditions?: Condition[];
    nodeClassObservedGeneration?: number;
  };
}

/** A status condition (metav1.Condition). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface NodeClaimSpec extends NodeClaimTemplateSpec {
  resources?: { requests?: ResourceList };
}
export interface NodeClaim extends KubeObject {
  apiVersion: 'karpenter.sh/v1';
  kind: 'NodeClaim';
  metadata: ObjectMeta;
  spec: NodeClaimSpec;
  status?: {
    providerID?: string;
    nodeName?: string;
    imageID?: string;
    capacity?: ResourceList;
    allocatable?: ResourceList;
    conditions?: Condition[];
    lastPodEventTime?: string;
  };
}

/** EC2NodeClass `spec.kubelet` (the fields that change allocatable and scheduling). */
export interface KubeletConfiguration {
  maxPods?: number;
  podsPerCore?: number;
  kubeReserved?: Record<string, string>;
  systemReserved?: Record<string, string>;
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  [key: string]: unknown;
}
export interface BlockDeviceMapping {
  deviceName?: string;
  rootVolume?: boolean;
  ebs?: { volumeSize?: string; volumeType?: string; [key: string]: unknown };
}
/**
 * One EC2NodeClass `spec.networkInterfaces[]` entry (upstream aws `v1.NetworkInterface`): the network card, the
 * device index on it, and `interface` (ENA) or `efa-only` (an EFA device without IP networking).
 */
export interface EC2NetworkInterface {
  networkCardIndex: number;
  deviceIndex: number;
  interfaceType: 'interface' | 'efa-only';
}
export interface EC2NodeClass extends KubeObject {
  apiVersion: 'karpenter.k8s.aws/v1';
  kind: 'EC2NodeClass';
  metadata: ObjectMeta & { name: string };
  spec: {
    amiFamily?: string;
    amiSelectorTerms?: Array<{
      alias?: string;
      id?: string;
      name?: string;
      owner?: string;
      tags?: Record<string, string>;
      ssmParameter?: string;
    }>;
    role?: string;
    instanceProfile?: string;
    subnetSelectorTerms?: Array<Record<string, unknown>>;
    securityGroupSelectorTerms?: Array<Record<string, unknown>>;
    kubelet?: KubeletConfiguration;
    blockDeviceMappings?: BlockDeviceMapping[];
    instanceStorePolicy?: 'RAID0';
    userData?: string;
    tags?: Record<string, string>;
    /** IMDS options; defaulted to `{httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}`. */
    metadataOptions?: {
      httpEndpoint?: 'enabled' | 'disabled';
      httpProtocolIPv6?: 'enabled' | 'disabled';
      httpPutResponseHopLimit?: number;
      httpTokens?: 'required' | 'optional';
    };
    associatePublicIPAddress?: boolean;
    /** CloudWatch detailed monitoring of the instances (launch template `Monitoring.Enabled`). */
    detailedMonitoring?: boolean;
    /** CreateFleet `Context` (reserved for AWS internal use; upstream passes it through). */
    context?: string;
    /** Launch template `CpuOptions`. */
    cpuOptions?: { nestedVirtualization?: 'enabled' | 'disabled' };
    /** Primary network interface `ConnectionTrackingSpecification`, in seconds. */
    connectionTracking?: { tcpEstablishedTimeout?: number; udpStreamTimeout?: number; udpTimeout?: number };
    /** Prefixes (IPv4 /28 or IPv6 /80) assigned to the primary network interface. */
    ipPrefixCount?: number;
    /** The instances' network interfaces (launch template `NetworkInterfaces`), e.g. EFA-only ones per card. */
    networkInterfaces?: EC2NetworkInterface[];
    [key: string]: unknown;
  };
  status?: Record<string, unknown>;
}

/** KWOKNodeClass (`karpenter.kwok.sh/v1alpha1`): nodes are Node objects only. */
export interface KWOKNodeClass extends KubeObject {
  apiVersion: 'karpenter.kwok.sh/v1alpha1';
  kind: 'KWOKNodeClass';
  metadata: ObjectMeta & { name: string };
  spec?: {
    /** Duration string; how long a simulated node takes to register. */
    nodeRegistrationDelay?: string;
    [key: string]: unknown;
  };
}

/**
 * ClusterAPINodeClass (`karpenter.cluster.x-k8s.io/v1alpha1`, cluster-scoped, upstream
 * kubernetes-sigs/karpenter-provider-cluster-api): NodeClaims become Machines of the MachineDeployments that
 * `spec.scalableResourceSelector` selects (ANDed with the label `node.cluster.x-k8s.io/karpenter-member`).
 */
export interface ClusterAPINodeClass extends KubeObject {
  apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1';
  kind: 'ClusterAPINodeClass';
  metadata: ObjectMeta & { name: string };
  spec?: {
    scalableResourceSelector?: {
      matchLabels?: Record<string, string>;
      matchExpressions?: Array<{
        key: string;
        operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
        values?: string[];
      }>;
    };
  };
  status?: { conditions?: Condition[] };
}

/** Any NodeClass kind capenter knows. */
export type NodeClass = EC2NodeClass | KWOKNodeClass | ClusterAPINodeClass;

/**
 * One NodeOverlay requirement (upstream v1alpha1 `NodeSelectorRequirement`): `key`, an operator of
 * In/NotIn/Exists/DoesNotExist/Gt/Lt/Gte/Lte, and `values` (Gt/Lt/Gte/Lte: one non-negative integer).
 */
export type NodeOverlayRequirement = NodeSelectorRequirement;

/** `karpenter.sh/v1alpha1` NodeOverlay `spec` (upstream `pkg/apis/v1alpha1/nodeoverlay.go`, v1.14.1). */
export interface NodeOverlaySpec {
  /** Which instance types / offerings the overlay applies to (instance-type labels, zone, capacity type, NodePool, template labels). */
  requirements: NodeOverlayRequirement[];
  /**
   * Price change for matching offerings: a signed absolute amount in USD/hour (`"+0.1"`, `"-0.05"`) or a
   * signed percentage (`"+10%"`, `"-15%"`, `-100%` at most). Exclusive with `price`.
   */
  priceAdjustment?: string;
  /** Price override in USD/hour (`"0.05"`). Exclusive with `priceAdjustment`. */
  price?: string;
  /** Extended resources added to (or replacing same-named ones in) the instance type's capacity; never cpu/memory/ephemeral-storage/pods. */
  capacity?: Record<string, string>;
  /** 1–10000; unset counts as 0. Higher weights win; equal weights that touch the same offering or resource conflict. */
  weight?: number;
}

/** A `karpenter.sh/v1alpha1` NodeOverlay (alpha; honoured only with the `NodeOverlay` feature gate). */
export interface NodeOverlay extends KubeObject {
  apiVersion: 'karpenter.sh/v1alpha1';
  kind: 'NodeOverlay';
  metadata: ObjectMeta & { name: string };
  spec: NodeOverlaySpec;
  /** Conditions `ValidationSucceeded` and `Ready` (set by the nodeoverlay controller). */
  status?: { conditions?: Condition[] };
}
