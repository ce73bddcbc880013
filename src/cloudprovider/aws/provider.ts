/**
 * The `aws` CloudProvider: a NodeClaim becomes an EC2 instance launched with `CreateFleet` (type `instant`).
 *
 * Launch (upstream aws/karpenter-provider-aws `pkg/providers/instance/instance.go`, `pkg/cloudprovider/cloudprovider.go`):
 * 1. The EC2NodeClass must be Ready; its `status.subnets`, `status.securityGroups`, `status.amis`,
 *    `status.instanceProfile` (written by the EC2NodeClass controller) are what the launch uses.
 * 2. Instance types: those named by the NodeClaim whose labels and offerings satisfy its requirements and have an
 *    available offering; capacity type spot when allowed and offered, else on-demand; exotic types (metal, GPU,
 *    accelerators) dropped unless nothing else fits or they are asked for; spot offerings priced above the cheapest
 *    on-demand one dropped; ordered by price; at most 60 types.
 * 3. Each type goes to the newest AMI whose requirements it satisfies; types are grouped per AMI × max pods, and
 *    each group gets a launch template (user data of the AMI family merged with `spec.userData`).
 * 4. CreateFleet: one launch template config per group, overrides = its types × one subnet per zone (the class's
 *    subnet with the most free addresses in that zone, limited to the requirement's zones), allocation strategy
 *    `price-capacity-optimized` (spot) / `lowest-price` (on-demand) — for a NodeClaim annotated
 *    `karpenter.sh/price-overlay-applied` (NodeOverlay) `capacity-optimized-prioritized` / `prioritized` with each
 *    override's `Priority` = its offering's price (upstream `CreateFleetInputBuilder.WithOverlay`, `getOverrides`);
 *    a type without a price (a preview type) has offerings only at the price a validated NodeOverlay gives it
 *    (`unpricedTypeOverlayPrices`, upstream v1.14 `GetOverlayPrice`, see `./instancetypes.ts`),
 *    tags `kubernetes.io/cluster/<name>=owned`,
 *    `karpenter.sh/nodepool`, `karpenter.sh/nodeclaim`, `karpenter.k8s.aws/ec2nodeclass`, `eks:eks-cluster-name`
 *    plus the class's tags.
 * 5. Fleet `Errors[]` with capacity codes (upstream `unfulfillableCapacityErrorCodes`, `MaxFleetCountExceeded`
 *    included) mark those offerings unavailable (3 minutes); `InsufficientFreeAddressesInSubnet` also marks its subnet,
 *    which launches then take last in its zone for 3 minutes, a zone with all its subnets marked being skipped
 *    (upstream `MarkSubnetUnavailable`, `UpdateICEdSubnet`, `IsUnavailable`);
 *    when no instance came back the launch is retried without them (e.g. spot → on-demand), and
 *    `InsufficientCapacityError` when none is left.
 * 6. Capacity reservations (`ReservedCapacity` gate, upstream default on): `reserved` offerings (one per
 *    `status.capacityReservations[]` entry, priced on-demand / 10,000,000) come first. A reserved launch keeps one
 *    reservation per type × zone (the one with the most room, upstream `ReservedOfferingFilter`) of one reservation
 *    kind (ODCR, then capacity block, then interruptible ODCR: `CapacityReservationTypeFilter`), and gives each
 *    reservation its own launch template (`capacity-reservations-only` targeting it; market type `capacity-block` /
 *    `interruptible-capacity-reservation`), fleet target `on-demand` (`capacity-block` for blocks). A launch counts
 *    against the reservation's free instances; `ReservationCapacityExceeded` empties it until the next describe,
 *    and the launch falls back to spot/on-demand. The NodeClaim carries `karpenter.k8s.aws/capacity-reservation-id`,
 *    `-type` and `-interruptible`.
 *
 * 7. Tenancy (upstream `getTenancyType`, `buildPlacement`): a NodeClaim whose `karpenter.k8s.aws/instance-tenancy`
 *    requirement allows only `dedicated` launches from launch templates with `Placement.Tenancy: dedicated`; the
 *    NodeClaim carries the tenancy label. Offerings carry `topology.k8s.aws/zone-id` (the class subnets' zone IDs);
 *    a requirement on either label that an offering lacks is never satisfied ({@link launchSatisfies}).
 *
 * 8. Placement groups (upstream `pkg/providers/placementgroup`): the group `spec.placementGroupSelector` resolves to
 *    ({@link PlacementGroups}, shared with the EC2NodeClass controller's `PlacementGroupReady`) gives every instance
 *    type the label `karpenter.k8s.aws/placement-group-id` and, for a `partition` group, one offering per partition
 *    labelled `karpenter.k8s.aws/placement-group-partition`; the launch template carries `Placement.GroupId` and the
 *    lowest partition the NodeClaim's requirement allows as `Placement.PartitionNumber` (none: EC2 picks it and the
 *    label is read back from the instance). The NodeClaim carries both labels. A class whose selector resolves to no
 *    group launches nothing (NodeClassNotReadyError).
 *
 * Get/List/Delete go through batched DescribeInstances/TerminateInstances; instances that are shutting down or
 * terminated count as gone. Drift: `AMIDrift`, `SubnetDrift`, `SecurityGroupDrift`, `CapacityReservationDrift`,
 * `PlacementGroupDrift`, `NodeClassDrift` (static hash).
 */

import type {
  _InstanceType,
  CreateFleetCommandInput,
  CreateFleetError,
  FleetLaunchTemplateConfigRequest,
  FleetLaunchTemplateOverridesRequest,
  Instance,
  InstanceNetworkInterfaceSpecification,
  RunInstancesCommandInput,
} from '@aws-sdk/client-ec2';
import { Registry } from 'prom-client';
import type { NodeSelectorRequirement, Taint } from '../../apis/core.ts';
import type { EC2NodeClass, NodeClaim, NodePool } from '../../apis/karpenter.ts';
import {
  AnnotationNodeClaimMinValuesRelaxed,
  AnnotationPriceOverlayApplied,
  LabelCapacityReservationID,
  LabelCapacityReservationInterruptible,
  LabelCapacityReservationType,
  LabelCapacityType,
  LabelEC2NodeClass,
  LabelInstanceTenancy,
  LabelInstanceType,
  LabelNodePool,
  LabelTopologyRegion,
  LabelTopologyZone,
  LabelTopologyZoneID,
  TaintUnregistered,
  WellKnownLabels,
} from '../../apis/labels.ts';
import { formatResources, parseResource, type Resources } from '../../apis/quantity.ts';
import { minValuesShortfall } from '../../scheduling/instancetypes.ts';
import { Requirements } from '../../scheduling/requirements.ts';
import {
  describeOfferings,
  labelsSatisfy,
  type NowClock,
  offeringLabels,
  UNAVAILABLE_OFFERINGS_TTL_SECONDS,
  UnavailableOfferings,
} from '../offerings.ts';
import {
  type CapacityType,
  type CloudProvider,
  CreateError,
  type InstanceType,
  InsufficientCapacityError,
  NodeClaimNotFoundError,
  type NodeClassKind,
  NodeClassNotReadyError,
  type Offering,
  type OfferingRef,
  type RepairPolicy,
} from '../types.ts';
import { ResourceEFA } from './catalog/allocatable.ts';
import { resolveAMIFamily } from './catalog/index.ts';
import type { AwsClients } from './clients.ts';
import { type ClusterInfo, discoverCluster, resolveClusterCIDR } from './cluster.ts';
import { placementGroupDrift, selectorDrift } from './drift.ts';
import { Instances } from './instances.ts';
import { AwsInstanceTypes, type InstanceTypeInventory, subnetZoneIDs } from './instancetypes.ts';
import {
  blockDeviceMappings,
  connectionTracking,
  cpuOptions,
  type LaunchTemplateOptions,
  LaunchTemplates,
  metadataOptions,
} from './launchtemplates.ts';
import { type InstanceMetrics, instanceMetrics, launchFailureReason } from './metrics.ts';
import {
  CapacityReservationAvailability,
  type CapacityReservationStatus,
} from './nodeclass/capacityreservations.ts';
import {
  describePlacementGroupSelector,
  LabelPlacementGroupID,
  LabelPlacementGroupPartition,
  type PlacementGroup,
  PlacementGroups,
  placementGroupSelector,
  requestedPartition,
  withPlacementGroup,
} from './nodeclass/placementgroups.ts';
import {
  type AMIStatus,
  ec2NodeClassNotReadyReason,
  ec2NodeClassStatus,
  type SubnetStatus,
} from './nodeclass/types.ts';
import { EC2NodeClassHashVersion, ec2NodeClassHash } from './nodeclass-hash.ts';
import { AwsPricing } from './pricing.ts';
import { CAPACITY_ERROR_CODES } from './retry.ts';
import type { AwsSettings } from './settings.ts';
import { kubeletLabels, renderUserData } from './userdata.ts';

/**
 * The aws provider's node repair policies, as aws/karpenter-provider-aws v1.14.1 `pkg/cloudprovider/cloudprovider.go`
 * `RepairPolicies`: the kubelet's `Ready` False or Unknown for 30 min, and the EKS Node Monitoring Agent's
 * conditions False: `AcceleratedHardwareReady` 10 min, `StorageReady`, `NetworkingReady`, `KernelReady`,
 * `ContainerRuntimeReady` 30 min each. Read by the `node.health` controller when `NodeRepair` is on.
 */
export const AwsRepairPolicies: readonly Readonly<RepairPolicy>[] = [
  { conditionType: 'Ready', conditionStatus: 'False', tolerationDurationSeconds: 30 * 60 },
  { conditionType: 'Ready', conditionStatus: 'Unknown', tolerationDurationSeconds: 30 * 60 },
  { conditionType: 'AcceleratedHardwareReady', conditionStatus: 'False', tolerationDurationSeconds: 10 * 60 },
  { conditionType: 'StorageReady', conditionStatus: 'False', tolerationDurationSeconds: 30 * 60 },
  { conditionType: 'NetworkingReady', conditionStatus: 'False', tolerationDurationSeconds: 30 * 60 },
  { conditionType: 'KernelReady', conditionStatus: 'False', tolerationDurationSeconds: 30 * 60 },
  { conditionType: 'ContainerRuntimeReady', conditionStatus: 'False', tolerationDurationSeconds: 30 * 60 },
];

/** The requests {@link AwsCloudProvider.validationLaunch} gives the EC2NodeClass validation (`DryRun` set). */
export interface ValidationLaunch {
  /** The launch template both requests launch from (ensured). */
  launchTemplate: string;
  /** The instance type both requests ask for. */
  instanceType: string;
  createFleet: CreateFleetCommandInput;
  /** One per subnet of the class, in `status.subnets` order. */
  runInstances: RunInstancesCommandInput[];
}

/** API group of the EC2NodeClass. */
export const AwsGroup = 'karpenter.k8s.aws';
/** Kind of the aws NodeClass. */
export const EC2NodeClassKind = 'EC2NodeClass';
/** Provider-ID prefix: `aws:///<zone>/<instance-id>`. */
export const AwsProviderIDPrefix = 'aws:///';
/** NodeClaim annotation: the EC2NodeClass static hash at launch (upstream `karpenter.k8s.aws/ec2nodeclass-hash`). */
export const AnnotationEC2NodeClassHash = 'karpenter.k8s.aws/ec2nodeclass-hash';
/**
 * NodeClaim annotation: the instance profile its instance was launched with (upstream `v1.AnnotationInstanceProfile`,
 * set by `cloudprovider.go` Create); `instanceprofile.garbagecollection` keeps the profiles it names.
 */
export const AnnotationInstanceProfile = 'karpenter.k8s.aws/instance-profile-name';
/** NodeClaim annotation: version of the hashing scheme (upstream `karpenter.k8s.aws/ec2nodeclass-hash-version`). */
export const AnnotationEC2NodeClassHashVersion = 'karpenter.k8s.aws/ec2nodeclass-hash-version';
/** Current {@link AnnotationEC2NodeClassHashVersion} (upstream v1.12 to v1.14: `v5`); the hash: `nodeclass-hash.ts`. */
export { EC2NodeClassHashVersion, ec2NodeClassHash } from './nodeclass-hash.ts';
/** Instance tag naming the NodeClaim. */
export const TagNodeClaim = 'karpenter.sh/nodeclaim';
/** Instance tag with the EKS cluster name (upstream `eks:eks-cluster-name`). */
export const TagEKSClusterName = 'eks:eks-cluster-name';
/**
 * Upstream aws `maxInstanceTypes` (`pkg/providers/instance/instance.go`): a launch keeps the 60 cheapest of the
 * NodeClaim's instance types (by their cheapest available compatible offering; the NodeClaim itself lists up to
 * the core's 600, `src/scheduling/nodeclaim.ts`), and fails with insufficient capacity when those 60 cannot meet
 * the NodeClaim's `minValues` (unless `MIN_VALUES_POLICY=BestEffort`).
 */
export const MAX_INSTANCE_TYPES = 60;
/**
 * Drift reasons (upstream `pkg/cloudprovider/drift.go`); the AMI, subnet, security-group, capacity-reservation and
 * placement-group rule: `./drift.ts`.
 */
export {
  DriftAMI,
  DriftCapacityReservation,
  DriftPlacementGroup,
  DriftSecurityGroup,
  DriftSubnet,
} from './drift.ts';
export const DriftNodeClass = 'NodeClassDrift';

/** Constructor dependencies of {@link AwsCloudProvider}. */
export interface AwsCloudProviderDeps {
  clients: Pick<AwsClients, 'ec2' | 'pricing' | 'eks'>;
  settings: AwsSettings;
  /** The region (defaults to `settings.region`; required one way or the other). */
  region?: string;
  clock: NowClock;
  /** EC2NodeClass lookup by name (an informer cache in the operator). */
  nodeClass: (name: string) => EC2NodeClass | undefined;
  /** The ICE cache; default a private one with upstream's 3-minute TTL. */
  unavailableOfferings?: UnavailableOfferings;
  /** Service CIDR of the cluster for AL2023 user data; default from EKS DescribeCluster when reachable. */
  clusterCIDR?: string;
  /** Base64 PEM CA of the controller's kubeconfig: user data's CA when `CLUSTER_CA_BUNDLE` is empty (upstream). */
  kubeconfigCABundle?: string;
  /**
   * ClusterIP of the `kube-system/kube-dns` Service: the nodes' cluster DNS when `spec.kubelet.clusterDNS` is unset
   * (upstream `operator.KubeDNSIP`); Windows `-DNSClusterIP`, AL2 `--dns-cluster-ip`, Bottlerocket `cluster-dns-ip`.
   */
  kubeDNSIP?: string;
  /** Called for problems the provider works around (never with user data or credentials). */
  onError?: (err: unknown, context: string) => void;
  /**
   * Registry of `karpenter_cloudprovider_instance_{launch,termination}_failures_total` (`./metrics.ts`); without
   * it they are kept in a private one.
   */
  registry?: Registry;
  /** The `ReservedCapacity` feature gate (default true, as upstream): list and launch `reserved` offerings. */
  reservedCapacity?: boolean;
  /**
   * `MIN_VALUES_POLICY` (default `Strict`): under `Strict` a launch whose 60 cheapest types cannot meet the
   * NodeClaim's `minValues` fails with insufficient capacity (upstream `InstanceTypes.Truncate`).
   */
  minValuesPolicy?: 'Strict' | 'BestEffort';
  /**
   * Price tables and instance-type inventory already fetched for this region (tests and benchmarks share them
   * between providers; they do not depend on the account's resources).
   */
  shared?: { pricing?: AwsPricing; inventory?: InstanceTypeInventory };
  /**
   * With the `NodeOverlay` gate: instance type name → USD/hour for offerings without a price (preview types;
   * the nodeoverlay store's `unpricedTypePrices`, upstream aws `GetOverlayPrice`). Absent: such offerings are left out.
   */
  unpricedTypeOverlayPrices?: () => ReadonlyMap<string, number>;
}

/**
 * The AMI version a launch's user data is rendered for (it picks Bottlerocket's ephemeral-storage bind, see
 * `userdata.ts` `bottlerocketSupportsDefaultBind`), or undefined. Upstream aws v1.14.1
 * `pkg/providers/amifamily/bottlerocket.go` `resolveAMIVersion`, in its order: the `alias` term's version
 * (`bottlerocket@v1.46.0` → `v1.46.0`, `bottlerocket@latest` → `latest`); else the version in a `name` term
 * (`bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a` → `v1.46.0`: the first `-`-separated part that starts with
 * `v` and holds a `.`); else the name of the resolved AMI (`status.amis`) an `id` term names, when it is a
 * Bottlerocket name; else the first resolved Bottlerocket AMI name that holds a version (a `tags` term).
 */
export function resolveAMIVersion(nodeClass: EC2NodeClass): string | undefined {
  const terms = nodeClass.spec.amiSelectorTerms ?? [];
  for (const t of terms) {
    const parts = typeof t.alias === 'string' && t.alias !== '' ? t.alias.split('@') : [];
    if (parts.length === 2) return parts[1];
  }
  for (const t of terms) {
    const v = typeof t.name === 'string' ? versionInAMIName(t.name) : undefined;
    if (v) return v;
  }
  const amis = ec2NodeClassStatus(nodeClass).amis ?? [];
  const bottlerocket = (name: string | undefined): name is string => !!name?.includes('bottlerocket');
  for (const t of terms) {
    if (typeof t.id !== 'string' || t.id === '') continue;
    const ami = amis.find((a) => a.id === t.id && bottlerocket(a.name));
    const v = ami ? versionInAMIName(ami.name!) : undefined;
    if (v) return v;
  }
  for (const a of amis) {
    const v = bottlerocket(a.name) ? versionInAMIName(a.name) : undefined;
    if (v) return v;
  }
  return undefined;
}

/** Upstream `extractVersionFromName`: the first `-`-separated part of `name` starting with `v` and holding a `.`. */
function versionInAMIName(name: string): string | undefined {
  return name.split('-').find((p) => p.startsWith('v') && p.includes('.'));
}

/** `aws:///<zone>/<id>` → parts, or undefined. */
export function parseAwsProviderID(providerID: string): { zone: string; instanceId: string } | undefined {
  const m = /^aws:\/\/\/([^/]+)\/(i-[0-9a-zA-Z]+)$/.exec(providerID);
  return m ? { zone: m[1]!, instanceId: m[2]! } : undefined;
}

/**
 * Upstream `areStaticFieldsDrifted` (`pkg/cloudprovider/drift.go`): the hash annotation of the EC2NodeClass (stamped
 * by the EC2NodeClass controller's hash step) differs from the NodeClaim's, when both carry a hash and the same hash
 * version. A missing annotation, or versions that differ (a NodeClaim of another Karpenter version not yet
 * re-stamped), is not drift.
 */
export function staticFieldsDrifted(nodeClaim: NodeClaim, nodeClass: EC2NodeClass): boolean {
  const claim = nodeClaim.metadata.annotations ?? {};
  const cls = nodeClass.metadata.annotations ?? {};
  const [claimHash, claimVersion] = [
    claim[AnnotationEC2NodeClassHash],
    claim[AnnotationEC2NodeClassHashVersion],
  ];
  const [classHash, classVersion] = [cls[AnnotationEC2NodeClassHash], cls[AnnotationEC2NodeClassHashVersion]];
  if (
    claimHash === undefined ||
    claimVersion === undefined ||
    classHash === undefined ||
    classVersion === undefined
  )
    return false;
  return claimVersion === classVersion && claimHash !== classHash;
}

/** Instance types that need asking for: bare metal, GPUs, accelerators (upstream `filterExoticInstanceTypes`). */
function isExotic(it: InstanceType): boolean {
  const l = it.labels;
  return (
    l['karpenter.k8s.aws/instance-size']?.includes('metal') === true ||
    l['karpenter.k8s.aws/instance-gpu-count'] !== undefined ||
    l['karpenter.k8s.aws/instance-accelerator-count'] !== undefined
  );
}

/** A launch candidate: one instance type with its offerings of the chosen capacity type. */
export interface Candidate {
  it: InstanceType;
  /** Available compatible offerings of the chosen capacity type. */
  offerings: Offering[];
  price: number;
}

/** What {@link Instances.createFleet} returns. */
type FleetResult = Awaited<ReturnType<Instances['createFleet']>>;

/** The candidates launched with one AMI, one max-pods value and one EFA count (one launch template). */
interface AMIGroup {
  ami: string;
  maxPods: number;
  /** EFA interfaces of the template: the types' `vpc.amazonaws.com/efa` when the NodeClaim requests it, else 0. */
  efaCount: number;
  candidates: Candidate[];
}

/** True when the NodeClaim's `spec.resources.requests` has `vpc.amazonaws.com/efa` (upstream checks the key). */
function requestsEFA(nodeClaim: NodeClaim): boolean {
  return nodeClaim.spec.resources?.requests?.[ResourceEFA] !== undefined;
}

/**
 * The NodeClaim's `vpc.amazonaws.com/efa` request (0 without one, or when it is not a quantity). A type with less
 * allocatable EFA is not launched for it: the EFA part of upstream's `CompatibleAvailableFilter` (requests must fit).
 */
function requestedEFA(nodeClaim: NodeClaim): number {
  const q = nodeClaim.spec.resources?.requests?.[ResourceEFA];
  if (q === undefined) return 0;
  try {
    return parseResource(ResourceEFA, String(q));
  } catch {
    return 0;
  }
}

/**
 * EFA interfaces an instance of `it` launches with for `nodeClaim` (upstream `getEFACountForInstance`): the type's
 * `vpc.amazonaws.com/efa` capacity when the NodeClaim requests EFA or the class sets `spec.networkInterfaces`, else 0.
 */
function launchEFACount(nodeClaim: NodeClaim, nodeClass: EC2NodeClass, it: InstanceType): number {
  if (!requestsEFA(nodeClaim) && nodeClass.spec.networkInterfaces === undefined) return 0;
  return it.capacity[ResourceEFA] ?? 0;
}

/**
 * `resources` without `vpc.amazonaws.com/efa` when the instance has no EFA interface (upstream `instanceToNodeClaim`
 * `resourceFilter`: a node advertises EFA only when its launch template gave it EFA interfaces).
 */
function withoutUnlaunchedEFA(resources: Resources, efaCount: number): Resources {
  if (efaCount > 0 || resources[ResourceEFA] === undefined) return resources;
  const { [ResourceEFA]: _efa, ...rest } = resources;
  return rest;
}

/**
 * The NodeClaim's name once it may be launched by this provider.
 * @throws CreateError `InvalidNodeClaim` without a name, `NodeClassNotSupported` when its nodeClassRef is not an
 *   EC2NodeClass.
 */
function launchableName(nodeClaim: NodeClaim): string {
  const name = nodeClaim.metadata.name;
  if (!name) {
    throw new CreateError(
      'NodeClaim has no metadata.name; it must be named before launching',
      'InvalidNodeClaim',
    );
  }
  const ref = nodeClaim.spec.nodeClassRef;
  if (ref.group !== AwsGroup || ref.kind !== EC2NodeClassKind) {
    throw new CreateError(
      `NodeClaim "${name}" spec.nodeClassRef is ${ref.group}/${ref.kind} "${ref.name}", but the aws provider launches ` +
        `only ${AwsGroup}/${EC2NodeClassKind}; point the NodePool at an EC2NodeClass`,
      'NodeClassNotSupported',
    );
  }
  return name;
}

/**
 * The resolved subnets, AMIs and security group IDs of a Ready EC2NodeClass.
 * @throws NodeClassNotReadyError naming the lists that are empty.
 */
function launchStatus(nodeClass: EC2NodeClass): {
  subnets: SubnetStatus[];
  amis: AMIStatus[];
  sgs: string[];
} {
  const status = ec2NodeClassStatus(nodeClass);
  const subnets = status.subnets ?? [];
  const amis = status.amis ?? [];
  const sgs = (status.securityGroups ?? []).map((g) => g.id);
  if (subnets.length === 0 || amis.length === 0 || sgs.length === 0) {
    throw new NodeClassNotReadyError(
      `${EC2NodeClassKind}/${nodeClass.metadata.name} has no resolved ${[
        subnets.length === 0 ? 'status.subnets' : '',
        amis.length === 0 ? 'status.amis' : '',
        sgs.length === 0 ? 'status.securityGroups' : '',
      ]
        .filter(Boolean)
        .join(', ')}`,
      { nodeClass: `${EC2NodeClassKind}/${nodeClass.metadata.name}` },
    );
  }
  return { subnets, amis, sgs };
}

/** The NodeClaim's requirements. @throws CreateError `InvalidRequirements` when they are malformed. */
function claimRequirements(nodeClaim: NodeClaim, name: string): Requirements {
  try {
    return Requirements.fromNodeSelector(nodeClaim.spec.requirements ?? []);
  } catch (err) {
    throw new CreateError(
      `NodeClaim "${name}" spec.requirements are malformed: ${(err as Error).message}`,
      'InvalidRequirements',
      undefined,
      { cause: err },
    );
  }
}

/** Instance tenancy of a launch: `default` (shared hardware) or `dedicated` (upstream `ec2types.Tenancy`). */
export type Tenancy = 'default' | 'dedicated';

/**
 * The tenancy a NodeClaim launches with (upstream aws/karpenter-provider-aws v1.14.1
 * `pkg/providers/instance/instance.go` `getTenancyType`): `default` without a `karpenter.k8s.aws/instance-tenancy`
 * requirement or when it allows `default`, else `dedicated` when it allows that, else `default` (a requirement
 * allowing neither leaves no offering: see {@link launchSatisfies}).
 */
export function tenancyOf(reqs: Requirements): Tenancy {
  const r = reqs.get(LabelInstanceTenancy);
  if (!r || r.has('default')) return 'default';
  return r.has('dedicated') ? 'dedicated' : 'default';
}

/** Where a launch goes in its class's placement group: the group's ID and the partition asked for, if any. */
export interface LaunchPlacement {
  id: string;
  /** 1-based partition of a `partition` group; absent: EC2 picks one. */
  partition?: number;
}

/**
 * The placement of a launch into `pg` (upstream `launchtemplate.go`): its ID, and for a `partition` group the lowest
 * partition the NodeClaim's `karpenter.k8s.aws/placement-group-partition` requirement allows ({@link requestedPartition}).
 */
export function placementOf(pg: PlacementGroup, reqs: Requirements): LaunchPlacement {
  const partition = pg.strategy === 'partition' ? requestedPartition(reqs) : undefined;
  return { id: pg.id, ...(partition !== undefined ? { partition } : {}) };
}

/**
 * Labels the aws provider computes per offering; a requirement on one that an offering does not carry must allow
 * the label's absence (a requirement `topology.k8s.aws/zone-id In [usw2-az1]` never launches in a zone whose subnet
 * has no zone ID, and the label is never written onto a node that does not have it). The
 * `karpenter.k8s.aws/capacity-reservation-*` labels are carried by reserved offerings only (upstream aws
 * `offering/base_resolver.go` gives every other offering `DoesNotExist` on them), so a NodeClaim requiring
 * `capacity-reservation-id In [cr-…]` launches only into that reservation.
 */
const OfferingComputedLabels = [
  LabelTopologyZoneID,
  LabelInstanceTenancy,
  LabelCapacityReservationID,
  LabelCapacityReservationType,
  LabelCapacityReservationInterruptible,
] as const;

/**
 * Whether a launch with `labels` (an offering's {@link offeringLabels} plus the tenancy) satisfies the NodeClaim's
 * requirements: {@link labelsSatisfy}, and for {@link OfferingComputedLabels} the label must be there unless the
 * requirement allows absence (upstream: these keys are requirements of every instance type or offering, so an
 * offering without one is incompatible with a requirement on it).
 */
export function launchSatisfies(reqs: Requirements, labels: Readonly<Record<string, string>>): boolean {
  if (!labelsSatisfy(reqs, labels)) return false;
  for (const key of OfferingComputedLabels) {
    const r = reqs.get(key);
    if (r && labels[key] === undefined && !r.allowsAbsent()) return false;
  }
  return true;
}

/**
 * Groups the candidates by AMI (the first, newest, of `amis` whose requirements each type's labels satisfy; types
 * with none are left out), max pods (default 110) and, when `efa` (the NodeClaim requests `vpc.amazonaws.com/efa`),
 * the type's EFA count (upstream `Resolve`'s `launchTemplateParams`), with the AMI of each type.
 * @throws CreateError `NoCompatibleAMI` when no candidate has an AMI.
 */
function amiGroups(
  nodeClass: EC2NodeClass,
  candidates: readonly Candidate[],
  amis: readonly AMIStatus[],
  efa: boolean,
): { groups: AMIGroup[]; amiFor: Map<string, string> } {
  const groups = new Map<string, AMIGroup>();
  const amiFor = new Map<string, string>();
  for (const c of candidates) {
    const ami = amis.find((a) =>
      labelsSatisfy(Requirements.fromNodeSelector(a.requirements as NodeSelectorRequirement[]), c.it.labels),
    );
    if (!ami) continue;
    amiFor.set(c.it.name, ami.id);
    const maxPods = c.it.capacity.pods ?? 110;
    const efaCount = efa ? (c.it.capacity[ResourceEFA] ?? 0) : 0;
    const key = `${ami.id}/${maxPods}/${efaCount}`;
    const g = groups.get(key) ?? { ami: ami.id, maxPods, efaCount, candidates: [] };
    g.candidates.push(c);
    groups.set(key, g);
  }
  if (groups.size === 0) {
    throw new CreateError(
      `no AMI of ${EC2NodeClassKind}/${nodeClass.metadata.name} (status.amis) fits the instance types ` +
        `${candidates
          .slice(0, 5)
          .map((c) => c.it.name)
          .join(
            ', ',
          )}${candidates.length > 5 ? ', ...' : ''}; check amiSelectorTerms (architecture, GPU variant)`,
      'NoCompatibleAMI',
    );
  }
  return { groups: [...groups.values()], amiFor };
}

/** The taints the kubelet registers with: the NodeClaim's taints and startup taints, then `karpenter.sh/unregistered`, each key and effect once. */
function kubeletTaints(nodeClaim: NodeClaim): Taint[] {
  const taints: Taint[] = [];
  for (const t of [
    ...(nodeClaim.spec.taints ?? []),
    ...(nodeClaim.spec.startupTaints ?? []),
    { key: TaintUnregistered.key, effect: TaintUnregistered.effect } as Taint,
  ]) {
    if (!taints.some((x) => x.key === t.key && x.effect === t.effect)) taints.push({ ...t });
  }
  return taints;
}

/**
 * Zones all of whose subnets (`subnets`, the class's) are marked out of free addresses (`iced`): their offerings are
 * unavailable for launches (upstream `UnavailableOfferings.IsUnavailable`: a zone whose subnets are all in the subnet
 * cache).
 */
function exhaustedZones(subnets: readonly SubnetStatus[], iced: readonly string[]): Set<string> {
  const marked = new Set(iced);
  const out = new Set<string>();
  for (const s of subnets) out.add(s.zone);
  for (const s of subnets) if (!marked.has(s.id)) out.delete(s.zone);
  return out;
}

/**
 * The fleet overrides of one launch template: each candidate offering in its zone's subnet, cheapest first;
 * `withPriority` (NodeOverlay) sets `Priority` to the offering's USD/hour price, as upstream `getOverrides`.
 */
function fleetOverrides(
  candidates: readonly Candidate[],
  subnetByZone: ReadonlyMap<string, string>,
  withPriority = false,
): FleetLaunchTemplateOverridesRequest[] {
  const overrides: Array<FleetLaunchTemplateOverridesRequest & { price: number }> = [];
  const seen = new Set<string>();
  for (const c of candidates) {
    for (const o of c.offerings) {
      const subnet = subnetByZone.get(o.zone);
      // one override per type and subnet (a partition group's offerings repeat per partition)
      if (!subnet || seen.has(`${c.it.name}/${subnet}`)) continue;
      seen.add(`${c.it.name}/${subnet}`);
      overrides.push({
        InstanceType: c.it.name as _InstanceType,
        SubnetId: subnet,
        ...(withPriority ? { Priority: o.priceUSDPerHour } : {}),
        price: o.priceUSDPerHour,
      });
    }
  }
  overrides.sort((a, b) => a.price - b.price);
  return overrides.map(({ price: _p, ...o }) => o);
}

/**
 * The CreateFleet `Context` of a launch: the class's `spec.context`, except for a NodeClaim whose minValues were
 * relaxed (`karpenter.sh/nodeclaim-min-values-relaxed: "true"`), which launches without it (upstream
 * `pkg/providers/instance/instance.go` `launchInstance`: `WithContextID` only when not relaxed).
 */
export function fleetContext(nodeClaim: NodeClaim, nodeClass: EC2NodeClass): string | undefined {
  const context = nodeClass.spec.context;
  if (context === undefined) return undefined;
  return nodeClaim.metadata.annotations?.[AnnotationNodeClaimMinValuesRelaxed] === 'true'
    ? undefined
    : context;
}

/**
 * An instant fleet of one instance of `capacityType` (spot: price-capacity-optimized; else on-demand,
 * lowest-price; reserved in a capacity block (`capacityBlock`): target capacity type `capacity-block`; with `overlay`, a NodeOverlay-priced NodeClaim: capacity-optimized-prioritized / prioritized, as
 * upstream `WithOverlay`) over `configs`, with `tags` on the instance, its volumes and the fleet.
 */
function fleetRequest(
  capacityType: CapacityType,
  configs: FleetLaunchTemplateConfigRequest[],
  tags: Record<string, string>,
  overlay = false,
  capacityBlock = false,
): CreateFleetCommandInput {
  const tagList = Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
  return {
    Type: 'instant',
    TargetCapacitySpecification: {
      TotalTargetCapacity: 1,
      DefaultTargetCapacityType:
        capacityType === 'spot'
          ? 'spot'
          : capacityType === 'reserved' && capacityBlock
            ? 'capacity-block'
            : 'on-demand',
    },
    ...(capacityType === 'spot'
      ? {
          SpotOptions: {
            AllocationStrategy: overlay ? 'capacity-optimized-prioritized' : 'price-capacity-optimized',
          },
        }
      : { OnDemandOptions: { AllocationStrategy: overlay ? 'prioritized' : 'lowest-price' } }),
    LaunchTemplateConfigs: configs,
    TagSpecifications: [
      { ResourceType: 'instance', Tags: tagList },
      { ResourceType: 'volume', Tags: tagList },
      { ResourceType: 'fleet', Tags: tagList },
    ],
  };
}

/**
 * The `karpenter.k8s.aws/capacity-reservation-*` labels of an instance in reservation `id`: its type and
 * interruptibility from the class's `status.capacityReservations` entry, else from the instance's lifecycle.
 */
function reservationLabels(
  id: string,
  inst: Instance,
  nodeClass: EC2NodeClass | undefined,
): Record<string, string> {
  const cr = ((nodeClass ? ec2NodeClassStatus(nodeClass).capacityReservations : undefined) ?? []).find(
    (r: CapacityReservationStatus) => r.id === id,
  );
  const lifecycle = inst.InstanceLifecycle as string | undefined;
  return {
    [LabelCapacityReservationID]: id,
    [LabelCapacityReservationType]:
      cr?.reservationType ?? (lifecycle === 'capacity-block' ? 'capacity-block' : 'default'),
    [LabelCapacityReservationInterruptible]: String(
      cr?.interruptible ?? lifecycle === 'interruptible-capacity-reservation',
    ),
  };
}

/**
 * Drops the spot candidates whose cheapest spot offering (USD/hour) costs more than the cheapest compatible
 * on-demand offering: such spot is not worth its interruptions (upstream `filterUnwantedSpot`,
 * pkg/providers/instance/instance.go). With no on-demand candidates, or when every spot candidate would be
 * dropped, the spot candidates are returned unchanged.
 */
export function filterUnwantedSpot(spot: readonly Candidate[], onDemand: readonly Candidate[]): Candidate[] {
  if (onDemand.length === 0) return [...spot];
  const cheapestOD = Math.min(...onDemand.map((c) => c.price));
  const kept = spot.filter((c) => c.price <= cheapestOD);
  return kept.length > 0 ? kept : [...spot];
}

/** Order of the reservation kinds when their cheapest offerings cost the same (upstream `CapacityReservationTypeFilter`). */
function reservationKind(o: Offering): { key: string; rank: number } {
  const type = o.labels?.[LabelCapacityReservationType] ?? 'default';
  const interruptible = o.labels?.[LabelCapacityReservationInterruptible] === 'true';
  const key = `${type}/${interruptible}`;
  return { key, rank: type === 'capacity-block' ? 1 : interruptible ? 2 : 0 };
}

/**
 * The reserved candidates one CreateFleet can take (upstream `CapacityReservationTypeFilter` then
 * `ReservedOfferingFilter`): the offerings of one reservation kind (the one with the cheapest offering; ties: ODCR,
 * capacity block, interruptible ODCR), and per instance type and zone the reservation with the most room.
 */
function reservedCandidates(candidates: readonly Candidate[]): Candidate[] {
  let best: { key: string; rank: number; price: number } | undefined;
  for (const c of candidates) {
    for (const o of c.offerings) {
      const k = reservationKind(o);
      if (!best || o.priceUSDPerHour < best.price || (o.priceUSDPerHour === best.price && k.rank < best.rank))
        best = { ...k, price: o.priceUSDPerHour };
    }
  }
  const out: Candidate[] = [];
  for (const c of candidates) {
    const perZone = new Map<string, Offering>();
    for (const o of c.offerings) {
      if (reservationKind(o).key !== best?.key) continue;
      const cur = perZone.get(o.zone);
      if (!cur || (o.reservationCapacity ?? 0) > (cur.reservationCapacity ?? 0)) perZone.set(o.zone, o);
    }
    if (perZone.size === 0) continue;
    const offerings = [...perZone.values()];
    out.push({ it: c.it, offerings, price: Math.min(...offerings.map((o) => o.priceUSDPerHour)) });
  }
  return out;
}

/** The aws CloudProvider. Extra hooks: {@link markUnavailable}, {@link deleteLaunchTemplates}, {@link garbageCollectLaunchTemplates}. */
export class AwsCloudProvider implements CloudProvider {
  readonly name = 'aws';
  readonly region: string;
  readonly instances: Instances;
  readonly launchTemplates: LaunchTemplates;
  readonly pricing: AwsPricing;
  readonly instanceTypeProvider: AwsInstanceTypes;
  /** Free instances per capacity reservation (synced by the EC2NodeClass controller, spent by launches). */
  readonly capacityReservations = new CapacityReservationAvailability();
  /** The `ReservedCapacity` feature gate. */
  readonly reservedCapacity: boolean;
  /** The placement groups of the classes' `spec.placementGroupSelector` (shared with the EC2NodeClass controller). */
  readonly placementGroups: PlacementGroups;
  private readonly ice: UnavailableOfferings;
  /** ICE entries scoped to a placement group (`<group ID>`) or one of its partitions (`<group ID>:<n>`). */
  private readonly groupICE = new Map<string, UnavailableOfferings>();
  /**
   * Subnets that answered `InsufficientFreeAddressesInSubnet` → when that stops counting (ms): launches take them
   * last in their zone (upstream `MarkSubnetUnavailable` + `UpdateICEdSubnet`, TTL `UnavailableOfferingsTTL`).
   */
  private readonly icedSubnets = new Map<string, number>();
  private readonly metrics: InstanceMetrics;
  private clusterInfo: Promise<ClusterInfo> | undefined;
  /** The service CIDR once known (configured, or resolved by {@link resolveClusterCIDR}); upstream `ClusterCIDR`. */
  private knownClusterCIDR: string | undefined;

  /** @throws Error when no region is given, or `settings.clusterName` is empty. */
  /** The cluster CA bundle the EC2NodeClass hash includes (upstream `GetCABundle`: the setting, else the kubeconfig's). */
  get caBundle(): string {
    return this.deps.settings.clusterCABundle || this.deps.kubeconfigCABundle || '';
  }

  constructor(private readonly deps: AwsCloudProviderDeps) {
    const region = deps.region ?? deps.settings.region;
    if (!region) throw new Error('aws cloud provider: the region is required (AWS_REGION or --aws-region)');
    if (!deps.settings.clusterName) {
      throw new Error('aws cloud provider: the cluster name is required (CLUSTER_NAME or --cluster-name)');
    }
    this.region = region;
    this.knownClusterCIDR = deps.clusterCIDR || undefined;
    this.reservedCapacity = deps.reservedCapacity !== false;
    this.ice = deps.unavailableOfferings ?? new UnavailableOfferings({ clock: deps.clock });
    this.metrics = instanceMetrics(deps.registry ?? new Registry());
    this.instances = new Instances(deps.clients.ec2, deps.registry);
    this.placementGroups = new PlacementGroups({ ec2: deps.clients.ec2, now: () => deps.clock.now() });
    this.launchTemplates = new LaunchTemplates({
      ec2: deps.clients.ec2,
      clusterName: deps.settings.clusterName,
      clock: deps.clock,
      ...(deps.registry ? { registry: deps.registry } : {}),
    });
    const onError = deps.onError;
    this.pricing =
      deps.shared?.pricing ??
      new AwsPricing({
        ec2: deps.clients.ec2,
        pricing: deps.clients.pricing,
        region,
        clock: deps.clock,
        isolatedVPC: deps.settings.isolatedVPC,
        ...(onError ? { onError } : {}),
      });
    this.instanceTypeProvider = new AwsInstanceTypes({
      ec2: deps.clients.ec2,
      region,
      clock: deps.clock,
      pricing: this.pricing,
      unavailable: this.ice,
      vmMemoryOverheadPercent: deps.settings.vmMemoryOverheadPercent,
      reservedENIs: deps.settings.reservedENIs,
      ...(this.reservedCapacity ? { reservations: this.capacityReservations } : {}),
      ...(deps.unpricedTypeOverlayPrices ? { overlayPrices: deps.unpricedTypeOverlayPrices } : {}),
      ...(onError ? { onError } : {}),
    });
    if (deps.shared?.inventory) this.instanceTypeProvider.seed(deps.shared.inventory);
  }

  /** The ICE cache this provider consults. */
  get unavailableOfferings(): UnavailableOfferings {
    return this.ice;
  }

  supportedNodeClasses(): NodeClassKind[] {
    return [{ group: AwsGroup, kind: EC2NodeClassKind }];
  }

  /** Upstream's node repair policies ({@link AwsRepairPolicies}), a fresh copy per call. */
  repairPolicies(): RepairPolicy[] {
    return AwsRepairPolicies.map((p) => ({ ...p }));
  }

  /** Marks a subnet out of free addresses for {@link UNAVAILABLE_OFFERINGS_TTL_SECONDS} (upstream `MarkSubnetUnavailable`). */
  markSubnetUnavailable(subnetID: string): void {
    this.icedSubnets.set(subnetID, this.deps.clock.now() + UNAVAILABLE_OFFERINGS_TTL_SECONDS * 1000);
  }

  /** The subnets currently marked out of free addresses, sorted. */
  unavailableSubnets(): string[] {
    const now = this.deps.clock.now();
    for (const [id, until] of this.icedSubnets) if (until <= now) this.icedSubnets.delete(id);
    return [...this.icedSubnets.keys()].sort();
  }

  /** Marks an offering unavailable (interruption: a spot warning marks its spot offering). */
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType, reason?: string): void {
    this.ice.markUnavailable(instanceType, zone, capacityType, reason);
  }

  /** Deletes the launch templates of a deleted EC2NodeClass. Returns their names. */
  deleteLaunchTemplates(nodeClassName: string): Promise<string[]> {
    return this.launchTemplates.deleteForNodeClass(nodeClassName);
  }

  /** Deletes this cluster's launch templates no launch used lately. Returns their names. */
  garbageCollectLaunchTemplates(): Promise<string[]> {
    return this.launchTemplates.garbageCollect();
  }

  async instanceTypes(nodePool: NodePool): Promise<InstanceType[]> {
    const ref = nodePool.spec.template.spec.nodeClassRef;
    if (ref.group !== AwsGroup || ref.kind !== EC2NodeClassKind) return [];
    const nodeClass = this.readyNodeClass(ref.name);
    const pg = await this.placementGroupOf(nodeClass);
    return this.withGroupUnavailable(
      withPlacementGroup(await this.instanceTypeProvider.list(nodeClass), pg),
      pg,
    );
  }

  /** The ICE cache of one placement-group scope (`<group ID>` or `<group ID>:<partition>`), created on first use. */
  private groupIce(scope: string): UnavailableOfferings {
    let c = this.groupICE.get(scope);
    if (!c) {
      c = new UnavailableOfferings({ clock: this.deps.clock });
      this.groupICE.set(scope, c);
    }
    return c;
  }

  /**
   * Whether an offering is out of capacity in placement group `pgID` (upstream `WithPlacementGroup`,
   * `WithPlacementGroupPartition`): marked for the group, or for the offering's partition.
   */
  private groupUnavailable(pgID: string, instanceType: string, o: Offering): boolean {
    const part = o.labels?.[LabelPlacementGroupPartition];
    return (
      this.groupICE.get(pgID)?.isUnavailable(instanceType, o.zone, o.capacityType) === true ||
      (part !== undefined &&
        this.groupICE.get(`${pgID}:${part}`)?.isUnavailable(instanceType, o.zone, o.capacityType) === true)
    );
  }

  /** `types` with the offerings out of capacity in `pg` (see {@link groupUnavailable}) unavailable. */
  private withGroupUnavailable(types: InstanceType[], pg: PlacementGroup | undefined): InstanceType[] {
    if (!pg || this.groupICE.size === 0) return types;
    return types.map((it) =>
      it.offerings.some((o) => o.available && this.groupUnavailable(pg.id, it.name, o))
        ? {
            ...it,
            offerings: it.offerings.map((o) =>
              o.available && this.groupUnavailable(pg.id, it.name, o) ? { ...o, available: false } : o,
            ),
          }
        : it,
    );
  }

  /**
   * The class's placement group (undefined without `spec.placementGroupSelector`): the cached one, the last one
   * found while EC2 fails (upstream's availability cache).
   * @throws NodeClassNotReadyError when the selector resolves to no available group, or EC2 fails with none known
   *   (upstream would launch outside the group; capenter launches nothing, as the class is not Ready then).
   */
  private async placementGroupOf(nodeClass: EC2NodeClass): Promise<PlacementGroup | undefined> {
    const selector = placementGroupSelector(nodeClass);
    if (!selector) return undefined;
    const id = `${EC2NodeClassKind}/${nodeClass.metadata.name}`;
    let pg: PlacementGroup | undefined;
    try {
      pg = await this.placementGroups.get(nodeClass);
    } catch (err) {
      pg = this.placementGroups.lastKnown(nodeClass);
      if (!pg)
        throw new NodeClassNotReadyError(`${id}: resolving placement group: ${(err as Error).message}`, {
          nodeClass: id,
        });
    }
    if (!pg) {
      throw new NodeClassNotReadyError(
        `${id}: PlacementGroupReady=False (PlacementGroupNotFound): ${describePlacementGroupSelector(selector)} ` +
          'matches no available placement group; create it or fix spec.placementGroupSelector',
        { nodeClass: id },
      );
    }
    return pg;
  }

  private readyNodeClass(name: string): EC2NodeClass {
    const id = `${EC2NodeClassKind}/${name}`;
    const nc = this.deps.nodeClass(name);
    if (!nc) {
      throw new NodeClassNotReadyError(
        `${id} not found; create it or fix spec.template.spec.nodeClassRef.name`,
        {
          nodeClass: id,
        },
      );
    }
    if (nc.metadata.deletionTimestamp)
      throw new NodeClassNotReadyError(`${id} is being deleted`, { nodeClass: id });
    const why = ec2NodeClassNotReadyReason(nc);
    if (why) throw new NodeClassNotReadyError(`${id}: ${why}`, { nodeClass: id });
    return nc;
  }

  private async cluster(): Promise<ClusterInfo> {
    const s = this.deps.settings;
    this.clusterInfo ??= discoverCluster({
      settings: s,
      eks: this.deps.clients.eks,
      ...(this.deps.clusterCIDR !== undefined ? { clusterCIDR: this.deps.clusterCIDR } : {}),
      ...(this.deps.kubeconfigCABundle ? { kubeconfigCABundle: this.deps.kubeconfigCABundle } : {}),
      ...(this.deps.onError ? { onError: this.deps.onError } : {}),
    });
    const found = await this.clusterInfo;
    this.knownClusterCIDR ??= found.cidr;
    const info = this.knownClusterCIDR ? { ...found, cidr: this.knownClusterCIDR } : found;
    if (!info.endpoint) {
      this.clusterInfo = undefined;
      throw new CreateError(
        `the API server endpoint of cluster "${s.clusterName}" is unknown; set --cluster-endpoint (CLUSTER_ENDPOINT)`,
        'ClusterEndpointUnknown',
      );
    }
    return info;
  }

  /**
   * Makes the cluster's service CIDR known (AL2023 user data's `spec.cluster.cidr`): the configured one, one found
   * before, else EKS DescribeCluster's (stored for every later launch). Upstream
   * `launchtemplate.DefaultProvider.ResolveClusterCIDR`, run by the EC2NodeClass validation of AL2023 classes.
   * @throws what {@link resolveClusterCIDR} throws (a DescribeCluster error, no CIDR in its answer,
   *   `EKS_CONTROL_PLANE=false`); nothing is stored then and the next call asks again.
   */
  async resolveClusterCIDR(): Promise<string> {
    if (this.knownClusterCIDR) return this.knownClusterCIDR;
    const cidr = await resolveClusterCIDR({ settings: this.deps.settings, eks: this.deps.clients.eks });
    this.knownClusterCIDR = cidr;
    return cidr;
  }

  /**
   * What the EC2NodeClass validation checks EC2 authorization with (upstream `pkg/controllers/nodeclass/validation.go`
   * `validateCreateLaunchTemplateAuthorization`, `getFleetLaunchTemplateConfig`, `getRunInstancesInput`): the class's
   * on-demand, default-tenancy launch template for one instance type, ensured now (a real CreateLaunchTemplate when
   * it is not cached, as upstream's `EnsureAll(..., instanceTypes[:1], ...)`; a NodeClaim without name or NodePool),
   * and on it the `DryRun` CreateFleet request (that type in every subnet of `status.subnets`) and one `DryRun`
   * RunInstances request per subnet, with the instance tags. The type: the first of upstream's fallbacks m5.large
   * (amd64) and m6g.large (arm64) an AMI of `status.amis` serves, else the first of the class's types one serves
   * (upstream `getPrioritizedInstanceTypes` first tries the types the class's NodePools allow; capenter does not).
   * @throws NodeClassNotReadyError without resolved subnets, AMIs or security groups; CreateError `NoCompatibleAMI`,
   *   `InvalidNodeClass`, `ClusterEndpointUnknown`; the EC2 error of CreateLaunchTemplate (e.g. `UnauthorizedOperation`).
   */
  async validationLaunch(nodeClass: EC2NodeClass): Promise<ValidationLaunch> {
    const { subnets, amis, sgs } = launchStatus(nodeClass);
    const cluster = await this.cluster();
    const types = await this.nodeClassInstanceTypes(nodeClass);
    const served = (t: InstanceType): boolean =>
      amis.some((a) =>
        labelsSatisfy(Requirements.fromNodeSelector(a.requirements as NodeSelectorRequirement[]), t.labels),
      );
    const it =
      ['m5.large', 'm6g.large'].map((n) => types.find((t) => t.name === n && served(t))).find((t) => t) ??
      types.find(served) ??
      types[0];
    if (!it) {
      throw new CreateError(
        `${EC2NodeClassKind}/${nodeClass.metadata.name} has no instance types to validate a launch with`,
        'InvalidNodeClass',
      );
    }
    const zones = [...new Set(subnets.map((s) => s.zone))];
    const candidate: Candidate = {
      it,
      offerings: zones.map((zone) => ({
        zone,
        capacityType: 'on-demand',
        priceUSDPerHour: 0,
        available: true,
        priceSource: 'provider',
      })),
      price: 0,
    };
    const claim: NodeClaim = {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: '' },
      spec: {
        nodeClassRef: { group: AwsGroup, kind: EC2NodeClassKind, name: nodeClass.metadata.name },
        requirements: [],
      },
    };
    const { request } = await this.fleetInput(
      claim,
      nodeClass,
      cluster,
      { capacityType: 'on-demand', tenancy: 'default' },
      [candidate],
      subnets,
      amis,
      sgs,
    );
    const launchTemplate =
      request.LaunchTemplateConfigs?.[0]?.LaunchTemplateSpecification?.LaunchTemplateName;
    if (!launchTemplate) {
      throw new CreateError(
        `${EC2NodeClassKind}/${nodeClass.metadata.name}: no launch template for ${it.name}`,
        'NoCompatibleAMI',
      );
    }
    const spec = { LaunchTemplateName: launchTemplate, Version: '$Latest' };
    request.LaunchTemplateConfigs = [
      {
        LaunchTemplateSpecification: spec,
        Overrides: subnets.map((s) => ({ InstanceType: it.name as _InstanceType, SubnetId: s.id })),
      },
    ];
    request.DryRun = true;
    const tags = request.TagSpecifications?.[0]?.Tags ?? [];
    const nis = nodeClass.spec.networkInterfaces;
    const runInstances = subnets.map(
      (s): RunInstancesCommandInput => ({
        DryRun: true,
        MinCount: 1,
        MaxCount: 1,
        LaunchTemplate: spec,
        InstanceType: it.name as _InstanceType,
        NetworkInterfaces:
          nis && nis.length > 0
            ? nis.map(
                (ni): InstanceNetworkInterfaceSpecification => ({
                  NetworkCardIndex: ni.networkCardIndex,
                  DeviceIndex: ni.deviceIndex,
                  InterfaceType: ni.interfaceType,
                  SubnetId: s.id,
                }),
              )
            : [{ DeviceIndex: 0, SubnetId: s.id }],
        TagSpecifications: (['instance', 'volume', 'network-interface'] as const).map((ResourceType) => ({
          ResourceType,
          Tags: tags,
        })),
      }),
    );
    return { launchTemplate, instanceType: it.name, createFleet: request, runInstances };
  }

  /**
   * Launches one instance for the NodeClaim; see the module doc and {@link CloudProvider.create}.
   * @throws CreateError `InvalidNodeClaim`, `NodeClassNotSupported`, `InvalidRequirements`, `InvalidNodeClass`,
   *   `ClusterEndpointUnknown`, `LaunchFailed`.
   * @throws NodeClassNotReadyError when the EC2NodeClass is missing, deleting or not Ready.
   * @throws InsufficientCapacityError when no compatible offering is (or stays) available.
   */
  async create(nodeClaim: NodeClaim): Promise<NodeClaim> {
    const name = launchableName(nodeClaim);
    const ref = nodeClaim.spec.nodeClassRef;
    const nodeClass = this.readyNodeClass(ref.name);
    const { subnets, amis, sgs } = launchStatus(nodeClass);
    const reqs = claimRequirements(nodeClaim, name);
    const cluster = await this.cluster();
    const pg = await this.placementGroupOf(nodeClass);
    const placement = pg ? placementOf(pg, reqs) : undefined;
    let types = withPlacementGroup(await this.nodeClassInstanceTypes(nodeClass), pg);
    const tried: OfferingRef[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const plan = this.plan(
        nodeClaim,
        reqs,
        types,
        exhaustedZones(subnets, this.unavailableSubnets()),
        pg?.id,
      );
      if (!plan) break;
      const { capacityType, candidates } = plan;
      const input = await this.fleetInput(
        nodeClaim,
        nodeClass,
        cluster,
        { capacityType, tenancy: tenancyOf(reqs), ...(placement ? { placementGroup: placement } : {}) },
        candidates,
        subnets,
        amis,
        sgs,
      );
      const result = await this.runFleet(input.request, name);
      this.countLaunchFailures(result.errors, capacityType, subnets);
      const iced = this.markFleetErrors(result.errors, capacityType, subnets, candidates, placement);
      tried.push(...iced);
      if (result.instance) {
        const inst = result.instance;
        const zone =
          inst.zone ?? subnets.find((s) => s.id === inst.subnetId)?.zone ?? candidates[0]!.offerings[0]!.zone;
        const reserved =
          capacityType === 'reserved'
            ? candidates.find((c) => c.it.name === inst.instanceType)?.offerings.find((o) => o.zone === zone)
            : undefined;
        if (reserved?.reservationID) this.capacityReservations.markLaunched(reserved.reservationID);
        const launched = this.launchedFleetInstance(
          nodeClaim,
          nodeClass,
          types,
          inst,
          zone,
          input.amiFor,
          reserved,
        );
        if (pg && placement) await this.labelPlacement(launched, pg, placement, inst.instanceId);
        return launched;
      }
      if (iced.length === 0) {
        const codes = [...new Set(result.errors.map((e) => `${e.ErrorCode}: ${e.ErrorMessage}`))].join('; ');
        throw new CreateError(
          `CreateFleet launched nothing for NodeClaim "${name}"${codes ? `: ${codes}` : ''}`,
          'LaunchFailed',
        );
      }
      types = this.ice.apply(types);
    }
    throw new InsufficientCapacityError(
      tried.length > 0
        ? `NodeClaim "${name}": every compatible offering failed or is unavailable: ${describeOfferings(tried)}`
        : `NodeClaim "${name}": no available offering in ${this.region} satisfies its requirements` +
            (requestedEFA(nodeClaim) > 0
              ? ` and its ${ResourceEFA} request ${requestedEFA(nodeClaim)} (only types with that many EFA interfaces)`
              : ''),
      tried.length > 0 ? tried : this.unavailableCompatible(nodeClaim, reqs, types),
    );
  }

  /** The instance types of `nodeClass`. @throws CreateError `InvalidNodeClass` when they cannot be listed. */
  private async nodeClassInstanceTypes(nodeClass: EC2NodeClass): Promise<InstanceType[]> {
    try {
      return await this.instanceTypeProvider.list(nodeClass);
    } catch (err) {
      throw new CreateError(
        `${EC2NodeClassKind}/${nodeClass.metadata.name}: ${(err as Error).message}`,
        'InvalidNodeClass',
        undefined,
        {
          cause: err,
        },
      );
    }
  }

  /** Sends the CreateFleet request. @throws CreateError `LaunchFailed` when the call fails. */
  private async runFleet(request: CreateFleetCommandInput, name: string): Promise<FleetResult> {
    try {
      return await this.instances.createFleet(request);
    } catch (err) {
      throw new CreateError(
        `CreateFleet for NodeClaim "${name}" failed: ${(err as Error).message}`,
        'LaunchFailed',
        undefined,
        { cause: err },
      );
    }
  }

  /**
   * The launched NodeClaim for the instance CreateFleet returned, in `zone`, with the offering of its type, zone
   * and lifecycle (a zero-priced one when the type does not list it; `reserved`: the reservation's offering it was
   * launched into) and the AMI chosen for its type.
   * @throws CreateError `LaunchFailed` when the type is not among `types`.
   */
  private launchedFleetInstance(
    nodeClaim: NodeClaim,
    nodeClass: EC2NodeClass,
    types: readonly InstanceType[],
    inst: NonNullable<FleetResult['instance']>,
    zone: string,
    amiFor: ReadonlyMap<string, string>,
    reserved?: Offering,
  ): NodeClaim {
    const it = types.find((t) => t.name === inst.instanceType);
    if (!it) {
      throw new CreateError(
        `CreateFleet launched ${inst.instanceType}, which is not among the instance types offered`,
        'LaunchFailed',
      );
    }
    const ct: CapacityType = inst.lifecycle === 'spot' ? 'spot' : 'on-demand';
    const offering = reserved ??
      it.offerings.find((o) => o.zone === zone && o.capacityType === ct) ?? {
        zone,
        capacityType: ct,
        priceUSDPerHour: 0,
        available: true,
        priceSource: 'provider' as const,
      };
    return this.launched(nodeClaim, nodeClass, it, offering, inst.instanceId, amiFor.get(it.name));
  }

  private unavailableCompatible(
    nodeClaim: NodeClaim,
    reqs: Requirements,
    types: InstanceType[],
  ): OfferingRef[] {
    const named = this.namedTypes(nodeClaim);
    const tenancy = tenancyOf(reqs);
    const out: OfferingRef[] = [];
    for (const it of types) {
      if (named && !named.has(it.name)) continue;
      for (const o of it.offerings) {
        if (!launchSatisfies(reqs, { ...offeringLabels(it, o), [LabelInstanceTenancy]: tenancy })) continue;
        out.push({
          instanceType: it.name,
          zone: o.zone,
          capacityType: o.capacityType,
          priceUSDPerHour: o.priceUSDPerHour,
        });
      }
    }
    return out;
  }

  private namedTypes(nodeClaim: NodeClaim): Set<string> | undefined {
    const r = (nodeClaim.spec.requirements ?? []).filter(
      (x) => x.key === LabelInstanceType && x.operator === 'In',
    );
    return r.length > 0 ? new Set(r.flatMap((x) => x.values ?? [])) : undefined;
  }

  /**
   * The capacity type and the instance types to put in the fleet, cheapest first (see the module doc, step 2), or
   * undefined when nothing compatible is available.
   */
  private plan(
    nodeClaim: NodeClaim,
    reqs: Requirements,
    types: InstanceType[],
    exhausted: ReadonlySet<string>,
    pgID?: string,
  ): { capacityType: CapacityType; candidates: Candidate[] } | undefined {
    const named = this.namedTypes(nodeClaim);
    const tenancy = tenancyOf(reqs);
    const efa = requestedEFA(nodeClaim);
    let usable: Array<{ it: InstanceType; perCT: Map<CapacityType, Offering[]>; price: number }> = [];
    for (const it of types) {
      if (named && !named.has(it.name)) continue;
      if (efa > 0 && (it.allocatable[ResourceEFA] ?? 0) < efa) continue;
      const perCT = new Map<CapacityType, Offering[]>();
      let price = Number.POSITIVE_INFINITY;
      for (const o of it.offerings) {
        if (!o.available || exhausted.has(o.zone) || this.ice.isUnavailable(it.name, o.zone, o.capacityType))
          continue;
        if (pgID && this.groupUnavailable(pgID, it.name, o)) continue;
        if (o.reservationID !== undefined && this.capacityReservations.available(o.reservationID) <= 0)
          continue;
        if (!launchSatisfies(reqs, { ...offeringLabels(it, o), [LabelInstanceTenancy]: tenancy })) continue;
        const list = perCT.get(o.capacityType) ?? [];
        list.push(o);
        perCT.set(o.capacityType, list);
        price = Math.min(price, o.priceUSDPerHour);
      }
      if (perCT.size > 0) usable.push({ it, perCT, price });
    }
    // Upstream ExoticInstanceTypeFilter, then InstanceTypes.Truncate (instance.go filterInstanceTypes): the
    // MAX_INSTANCE_TYPES types cheapest by their cheapest available compatible offering of any capacity type.
    const plain = usable.filter((u) => !isExotic(u.it));
    if (plain.length > 0 && plain.length < usable.length && !named) usable = plain;
    usable.sort((a, b) => a.price - b.price || (a.it.name < b.it.name ? -1 : 1));
    usable = usable.slice(0, MAX_INSTANCE_TYPES);
    this.checkTruncatedMinValues(
      nodeClaim,
      reqs,
      usable.map((u) => u.it),
    );
    const byCT = new Map<CapacityType, Candidate[]>();
    for (const { it, perCT } of usable)
      for (const [ct, offs] of perCT) {
        const list = byCT.get(ct) ?? [];
        list.push({ it, offerings: offs, price: Math.min(...offs.map((o) => o.priceUSDPerHour)) });
        byCT.set(ct, list);
      }
    // Upstream order: reserved, then spot when allowed and offered, else on-demand.
    const capacityType: CapacityType | undefined = byCT.has('reserved')
      ? 'reserved'
      : byCT.has('spot')
        ? 'spot'
        : byCT.has('on-demand')
          ? 'on-demand'
          : undefined;
    if (!capacityType) return undefined;
    let candidates = byCT.get(capacityType)!;
    if (capacityType === 'reserved') candidates = reservedCandidates(candidates);
    if (capacityType === 'spot') candidates = filterUnwantedSpot(candidates, byCT.get('on-demand') ?? []);
    candidates.sort((a, b) => a.price - b.price || (a.it.name < b.it.name ? -1 : 1));
    return { capacityType, candidates };
  }

  /**
   * Upstream `InstanceTypes.Truncate` under `MIN_VALUES_POLICY=Strict`: the kept (truncated) types must still meet
   * the NodeClaim's `minValues`.
   * @throws InsufficientCapacityError naming the first key that falls short.
   */
  private checkTruncatedMinValues(
    nodeClaim: NodeClaim,
    reqs: Requirements,
    kept: readonly InstanceType[],
  ): void {
    if (kept.length === 0 || this.deps.minValuesPolicy === 'BestEffort') return;
    const short = minValuesShortfall(kept, reqs);
    if (short)
      throw new InsufficientCapacityError(
        `NodeClaim "${launchableName(nodeClaim)}": truncating instance types based on the passed-in requirements, validating minValues, ${short}`,
      );
  }

  /**
   * Counts each CreateFleet error entry in `karpenter_cloudprovider_instance_launch_failures_total` (upstream
   * `updateUnavailableOfferingsCache`): its zone (else its subnet's), the zone ID of that zone's subnet (`""` when
   * unknown), the requested capacity type and upstream's reason for `"<code>: <message>"`.
   */
  private countLaunchFailures(
    errors: CreateFleetError[],
    capacityType: CapacityType,
    subnets: SubnetStatus[],
  ): void {
    for (const e of errors) {
      const ov = e.LaunchTemplateAndOverrides?.Overrides;
      const zone = ov?.AvailabilityZone ?? subnets.find((s) => s.id === ov?.SubnetId)?.zone ?? '';
      this.metrics.launchFailures.inc({
        zone,
        zone_id: subnets.find((s) => s.zone === zone && s.zoneID)?.zoneID ?? '',
        capacity_type: capacityType,
        reason: launchFailureReason(`${e.ErrorCode ?? ''}: ${e.ErrorMessage ?? ''}`),
      });
    }
  }

  /**
   * Marks the offerings of capacity errors unavailable (a reserved launch: their reservations, until the next
   * describe, as upstream's `MarkUnavailable`; the ICE cache is left alone; a launch into a placement group: for that
   * group only, {@link markGroupErrors}); returns them.
   */
  private markFleetErrors(
    errors: CreateFleetError[],
    capacityType: CapacityType,
    subnets: SubnetStatus[],
    candidates: readonly Candidate[],
    placement?: LaunchPlacement,
  ): OfferingRef[] {
    const out: OfferingRef[] = [];
    for (const e of errors) {
      if (!e.ErrorCode || !CAPACITY_ERROR_CODES.has(e.ErrorCode)) continue;
      const ov = e.LaunchTemplateAndOverrides?.Overrides;
      if (e.ErrorCode === 'InsufficientFreeAddressesInSubnet' && ov?.SubnetId)
        this.markSubnetUnavailable(ov.SubnetId);
      const type = ov?.InstanceType;
      const zone = ov?.AvailabilityZone ?? subnets.find((s) => s.id === ov?.SubnetId)?.zone;
      if (!type || !zone) continue;
      if (capacityType === 'reserved') {
        const o = candidates.find((c) => c.it.name === type)?.offerings.find((x) => x.zone === zone);
        if (o?.reservationID) this.capacityReservations.markUnavailable(o.reservationID);
        out.push({ instanceType: type, zone, capacityType });
        continue;
      }
      const ct = (e.Lifecycle as CapacityType | undefined) ?? capacityType;
      if (placement) {
        out.push(...this.markGroupErrors(e, placement, type, zone, ct, candidates));
        continue;
      }
      this.ice.markUnavailable(type, zone, ct, e.ErrorCode);
      out.push({ instanceType: type, zone, capacityType: ct });
    }
    return out;
  }

  /**
   * A capacity error of a launch into a placement group, scoped to it as upstream `updateUnavailableOfferingsCache`:
   * a spread group's seven-per-zone limit (EC2's message "…limit of instances in this spread placement group…")
   * marks every candidate type in that zone for the group; any other error marks the offering for the group, or for
   * the partition the launch targeted. Launches outside the group are not affected. Returns the offerings marked.
   */
  private markGroupErrors(
    e: CreateFleetError,
    placement: LaunchPlacement,
    type: string,
    zone: string,
    ct: CapacityType,
    candidates: readonly Candidate[],
  ): OfferingRef[] {
    const code = e.ErrorCode ?? 'InsufficientInstanceCapacity';
    if (e.ErrorMessage?.includes('limit of instances in this spread placement group')) {
      const ice = this.groupIce(placement.id);
      return candidates.map((c) => {
        ice.markUnavailable(c.it.name, zone, ct, code);
        return { instanceType: c.it.name, zone, capacityType: ct };
      });
    }
    const scope = placement.partition !== undefined ? `${placement.id}:${placement.partition}` : placement.id;
    this.groupIce(scope).markUnavailable(type, zone, ct, code);
    return [{ instanceType: type, zone, capacityType: ct }];
  }

  /**
   * The CreateFleet request for one attempt (one launch template per AMI and max-pods group, ensured now; its
   * overrides: the group's types in the first subnet of each zone, cheapest first) and the AMI of each type.
   * @throws CreateError `NoCompatibleAMI`, `InvalidNodeClass` (block devices or user data).
   */
  private async fleetInput(
    nodeClaim: NodeClaim,
    nodeClass: EC2NodeClass,
    cluster: { endpoint: string; caBundle: string; cidr?: string },
    launch: { capacityType: CapacityType; tenancy: Tenancy; placementGroup?: LaunchPlacement },
    candidates: Candidate[],
    subnets: SubnetStatus[],
    amis: AMIStatus[],
    securityGroups: string[],
  ): Promise<{ request: CreateFleetCommandInput; amiFor: Map<string, string> }> {
    const { capacityType } = launch;
    // upstream's cluster IP family (of the kube-dns address); capenter knows the service CIDR
    const ltLaunch = {
      tenancy: launch.tenancy,
      ipv6: cluster.cidr?.includes(':') ?? false,
      efaCount: 0,
      ...(launch.placementGroup ? { placementGroup: launch.placementGroup } : {}),
    };
    const family = resolveAMIFamily(nodeClass);
    // One subnet per zone: the first in status order (the controller orders them by free addresses), subnets out of
    // free addresses last (upstream `UpdateICEdSubnet` sorts them last).
    const iced = new Set(this.unavailableSubnets());
    const subnetByZone = new Map<string, string>();
    for (const s of [...subnets.filter((x) => !iced.has(x.id)), ...subnets.filter((x) => iced.has(x.id))])
      if (!subnetByZone.has(s.zone)) subnetByZone.set(s.zone, s.id);
    const { groups, amiFor } = amiGroups(nodeClass, candidates, amis, requestsEFA(nodeClaim));
    const labels = kubeletLabels({
      ...(nodeClaim.metadata.labels ?? {}),
      [LabelCapacityType]: capacityType,
      [LabelEC2NodeClass]: nodeClass.metadata.name,
    });
    const taints = kubeletTaints(nodeClaim);
    const tags = this.instanceTags(nodeClaim, nodeClass);
    const overlay = nodeClaim.metadata.annotations?.[AnnotationPriceOverlayApplied] !== undefined;
    let bdms: ReturnType<typeof blockDeviceMappings>;
    try {
      bdms = blockDeviceMappings(nodeClass, family);
    } catch (err) {
      throw new CreateError((err as Error).message, 'InvalidNodeClass', undefined, { cause: err });
    }
    const amiVersion = resolveAMIVersion(nodeClass);
    const configs: FleetLaunchTemplateConfigRequest[] = [];
    for (const g of groups) {
      let userData: string;
      try {
        userData = renderUserData(family, {
          clusterName: this.deps.settings.clusterName,
          clusterEndpoint: cluster.endpoint,
          caBundle: cluster.caBundle,
          ...(cluster.cidr ? { clusterCIDR: cluster.cidr } : {}),
          ...(nodeClass.spec.kubelet ? { kubelet: nodeClass.spec.kubelet } : {}),
          maxPods: g.maxPods,
          labels,
          taints,
          ...(nodeClass.spec.instanceStorePolicy
            ? { instanceStorePolicy: nodeClass.spec.instanceStorePolicy }
            : {}),
          ...(nodeClass.spec.userData ? { customUserData: nodeClass.spec.userData } : {}),
          ...(this.deps.kubeDNSIP ? { kubeDNSIP: this.deps.kubeDNSIP } : {}),
          ...(amiVersion ? { amiVersion } : {}),
        });
      } catch (err) {
        throw new CreateError((err as Error).message, 'InvalidNodeClass', undefined, { cause: err });
      }
      if (capacityType === 'reserved') {
        // one launch template per reservation, one override each (upstream: a template per capacity reservation)
        for (const c of g.candidates) {
          for (const o of c.offerings) {
            const subnet = subnetByZone.get(o.zone);
            if (!subnet || !o.reservationID) continue;
            const lt = await this.ensureLaunchTemplate(
              nodeClass,
              g.ami,
              userData,
              securityGroups,
              bdms,
              { ...ltLaunch, efaCount: g.efaCount },
              {
                id: o.reservationID,
                type:
                  o.labels?.[LabelCapacityReservationType] === 'capacity-block'
                    ? 'capacity-block'
                    : 'default',
                interruptible: o.labels?.[LabelCapacityReservationInterruptible] === 'true',
              },
            );
            configs.push({
              LaunchTemplateSpecification: { LaunchTemplateName: lt.name, Version: '$Latest' },
              Overrides: [{ InstanceType: c.it.name as _InstanceType, SubnetId: subnet }],
            });
          }
        }
        continue;
      }
      const lt = await this.ensureLaunchTemplate(nodeClass, g.ami, userData, securityGroups, bdms, {
        ...ltLaunch,
        efaCount: g.efaCount,
      });
      const overrides = fleetOverrides(g.candidates, subnetByZone, overlay);
      if (overrides.length === 0) continue;
      configs.push({
        LaunchTemplateSpecification: { LaunchTemplateName: lt.name, Version: '$Latest' },
        Overrides: overrides,
      });
    }
    const block = candidates.some((c) =>
      c.offerings.some((o) => o.labels?.[LabelCapacityReservationType] === 'capacity-block'),
    );
    const request = fleetRequest(capacityType, configs, tags, overlay, block);
    const context = fleetContext(nodeClaim, nodeClass);
    if (context !== undefined) request.Context = context;
    return { request, amiFor };
  }

  /**
   * Ensures the launch template of `nodeClass` for one AMI and user data, its tenancy (`dedicated`: a template with
   * `Placement.Tenancy` dedicated, upstream `CreateLaunchTemplateInputBuilder.buildPlacement`), and for a reserved
   * launch one capacity reservation (see {@link LaunchTemplates.ensure}). The class's `metadataOptions`,
   * `detailedMonitoring`, `cpuOptions`, `associatePublicIPAddress`, `ipPrefixCount` (IPv6 prefixes when `ipv6`),
   * `connectionTracking` and `networkInterfaces` (else `efaCount` EFA interfaces) go into the template as upstream
   * `pkg/providers/launchtemplate/launchtemplate.go`; the placement group (`Placement.GroupId`, `PartitionNumber`) as
   * upstream `buildPlacement`.
   */
  private ensureLaunchTemplate(
    nodeClass: EC2NodeClass,
    amiID: string,
    userData: string,
    securityGroupIDs: string[],
    bdms: ReturnType<typeof blockDeviceMappings>,
    launch: { tenancy: Tenancy; ipv6: boolean; efaCount: number; placementGroup?: LaunchPlacement },
    capacityReservation?: LaunchTemplateOptions['capacityReservation'],
  ): ReturnType<LaunchTemplates['ensure']> {
    const status = ec2NodeClassStatus(nodeClass);
    const nis = nodeClass.spec.networkInterfaces;
    const { tenancy } = launch;
    const cpu = cpuOptions(nodeClass);
    const ct = connectionTracking(nodeClass);
    const prefixes = nodeClass.spec.ipPrefixCount;
    return this.launchTemplates.ensure({
      clusterName: this.deps.settings.clusterName,
      nodeClassName: nodeClass.metadata.name,
      amiID,
      userData,
      securityGroupIDs,
      ...(status.instanceProfile ? { instanceProfile: status.instanceProfile } : {}),
      blockDeviceMappings: bdms,
      metadataOptions: metadataOptions(nodeClass),
      ...(nodeClass.spec.associatePublicIPAddress !== undefined
        ? { associatePublicIPAddress: nodeClass.spec.associatePublicIPAddress }
        : {}),
      ...(typeof nodeClass.spec.detailedMonitoring === 'boolean'
        ? { detailedMonitoring: nodeClass.spec.detailedMonitoring }
        : {}),
      ...(cpu ? { cpuOptions: cpu } : {}),
      ...(typeof prefixes === 'number' ? { ipPrefixCount: { count: prefixes, ipv6: launch.ipv6 } } : {}),
      ...(ct ? { connectionTracking: ct } : {}),
      ...(nis && nis.length > 0 ? { networkInterfaces: nis } : {}),
      ...(launch.efaCount > 0 ? { efaCount: launch.efaCount } : {}),
      ...(launch.ipv6 ? { ipv6: true } : {}),
      tags: { ...(nodeClass.spec.tags ?? {}), [LabelEC2NodeClass]: nodeClass.metadata.name },
      ...(capacityReservation ? { capacityReservation } : {}),
      ...(tenancy === 'dedicated' ? { tenancy } : {}),
      ...(launch.placementGroup ? { placementGroup: launch.placementGroup } : {}),
    });
  }

  /**
   * Puts the placement-group labels on a launched NodeClaim (upstream `instanceToNodeClaim`): the group's ID, and for
   * a `partition` group the partition asked for, else the one EC2 assigned (read with DescribeInstances, as
   * upstream's `PlacementGroupRegistrationHook` does before the node registers), else '' (not reported yet).
   */
  private async labelPlacement(
    nodeClaim: NodeClaim,
    pg: PlacementGroup,
    placement: LaunchPlacement,
    instanceId: string,
  ): Promise<void> {
    nodeClaim.metadata.labels ??= {};
    const labels = nodeClaim.metadata.labels;
    labels[LabelPlacementGroupID] = pg.id;
    if (pg.strategy !== 'partition') {
      delete labels[LabelPlacementGroupPartition];
      return;
    }
    let partition = placement.partition;
    if (partition === undefined) {
      const inst = await this.instances.get(instanceId).catch((err: unknown) => {
        this.deps.onError?.(err, `reading the placement-group partition of instance ${instanceId}`);
        return undefined;
      });
      partition = inst?.Placement?.PartitionNumber;
    }
    labels[LabelPlacementGroupPartition] = partition !== undefined ? String(partition) : '';
  }

  /** Upstream's instance tags: the class's tags, then the cluster/nodepool/nodeclaim/nodeclass/EKS tags. */
  private instanceTags(nodeClaim: NodeClaim, nodeClass: EC2NodeClass): Record<string, string> {
    const cluster = this.deps.settings.clusterName;
    return {
      ...(nodeClass.spec.tags ?? {}),
      [`kubernetes.io/cluster/${cluster}`]: 'owned',
      [LabelNodePool]: nodeClaim.metadata.labels?.[LabelNodePool] ?? '',
      [TagNodeClaim]: nodeClaim.metadata.name ?? '',
      [LabelEC2NodeClass]: nodeClass.metadata.name,
      [TagEKSClusterName]: cluster,
    };
  }

  private launched(
    nodeClaim: NodeClaim,
    nodeClass: EC2NodeClass,
    it: InstanceType,
    offering: Offering,
    instanceId: string,
    imageID: string | undefined,
  ): NodeClaim {
    // Well-known labels come from the launch, never from a requirement (upstream core
    // `NodeClaimTemplate.resolveCustomLabelsFromRequirements` skips `WellKnownLabels`).
    const requirementLabels: Record<string, string> = {};
    for (const r of nodeClaim.spec.requirements ?? []) {
      if (r.operator === 'In' && r.values?.length === 1 && !WellKnownLabels.has(r.key))
        requirementLabels[r.key] = r.values[0]!;
    }
    const zoneID = subnetZoneIDs(ec2NodeClassStatus(nodeClass).subnets ?? []).get(offering.zone);
    const efa = launchEFACount(nodeClaim, nodeClass, it);
    const out: NodeClaim = structuredClone(nodeClaim);
    out.metadata.labels = {
      ...requirementLabels,
      ...(nodeClaim.metadata.labels ?? {}),
      ...(zoneID ? { [LabelTopologyZoneID]: zoneID } : {}),
      ...offeringLabels(it, offering),
      [LabelTopologyRegion]: this.region,
      [LabelEC2NodeClass]: nodeClass.metadata.name,
      [LabelInstanceTenancy]: tenancyOf(Requirements.fromNodeSelector(nodeClaim.spec.requirements ?? [])),
    };
    out.metadata.annotations = {
      ...(out.metadata.annotations ?? {}),
      [AnnotationEC2NodeClassHash]: ec2NodeClassHash(nodeClass, this.caBundle),
      [AnnotationEC2NodeClassHashVersion]: EC2NodeClassHashVersion,
      ...(ec2NodeClassStatus(nodeClass).instanceProfile
        ? { [AnnotationInstanceProfile]: `${ec2NodeClassStatus(nodeClass).instanceProfile}` }
        : {}),
    };
    out.status = {
      ...(out.status ?? {}),
      providerID: `${AwsProviderIDPrefix}${offering.zone}/${instanceId}`,
      capacity: formatResources(withoutUnlaunchedEFA(it.capacity, efa)),
      allocatable: formatResources(withoutUnlaunchedEFA(it.allocatable, efa)),
      ...(imageID ? { imageID } : {}),
    };
    return out;
  }

  /** The instance as a NodeClaim (labels and resources of its type under its class). */
  private async toNodeClaim(inst: Instance): Promise<NodeClaim> {
    const tags = Object.fromEntries((inst.Tags ?? []).map((t) => [t.Key ?? '', t.Value ?? '']));
    const className = tags[LabelEC2NodeClass];
    const nodeClass = className ? this.deps.nodeClass(className) : undefined;
    const types = await this.instanceTypeProvider.list(nodeClass);
    const it = types.find((t) => t.name === inst.InstanceType);
    const zone = inst.Placement?.AvailabilityZone ?? '';
    const crID = this.reservedCapacity ? inst.CapacityReservationId : undefined;
    const ct: CapacityType = crID ? 'reserved' : inst.InstanceLifecycle === 'spot' ? 'spot' : 'on-demand';
    // upstream `instanceToNodeClaim`: the zone ID of the class's subnet in the instance's zone, and the tenancy
    const zoneID = nodeClass
      ? subnetZoneIDs(ec2NodeClassStatus(nodeClass).subnets ?? []).get(zone)
      : undefined;
    const labels: Record<string, string> = {
      ...(it ? it.labels : {}),
      [LabelInstanceType]: inst.InstanceType ?? '',
      [LabelTopologyZone]: zone,
      ...(zoneID ? { [LabelTopologyZoneID]: zoneID } : {}),
      [LabelTopologyRegion]: this.region,
      [LabelCapacityType]: ct,
      [LabelInstanceTenancy]: inst.Placement?.Tenancy === 'dedicated' ? 'dedicated' : 'default',
      ...(crID ? reservationLabels(crID, inst, nodeClass) : {}),
      // the instance's placement group and partition (upstream labels the class's group)
      ...(inst.Placement?.GroupId ? { [LabelPlacementGroupID]: inst.Placement.GroupId } : {}),
      ...(inst.Placement?.GroupId && inst.Placement.PartitionNumber !== undefined
        ? { [LabelPlacementGroupPartition]: String(inst.Placement.PartitionNumber) }
        : {}),
    };
    if (tags[LabelNodePool]) labels[LabelNodePool] = tags[LabelNodePool];
    if (className) labels[LabelEC2NodeClass] = className;
    // upstream `NewInstance` `EFACount`: the instance's `efa` / `efa-only` interfaces
    const efa = (inst.NetworkInterfaces ?? []).filter(
      (n) => n.InterfaceType === 'efa' || n.InterfaceType === 'efa-only',
    ).length;
    const nc: NodeClaim = {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: {
        name: tags[TagNodeClaim] ?? inst.InstanceId ?? '',
        labels,
        ...(inst.LaunchTime ? { creationTimestamp: inst.LaunchTime.toISOString() } : {}),
      },
      spec: {
        nodeClassRef: { group: AwsGroup, kind: EC2NodeClassKind, name: className ?? '' },
        requirements: [],
      },
      status: {
        providerID: `${AwsProviderIDPrefix}${zone}/${inst.InstanceId}`,
        ...(inst.ImageId ? { imageID: inst.ImageId } : {}),
        ...(it
          ? {
              capacity: formatResources(withoutUnlaunchedEFA(it.capacity, efa)),
              allocatable: formatResources(withoutUnlaunchedEFA(it.allocatable, efa)),
            }
          : {}),
      },
    };
    return nc;
  }

  /** @throws NodeClaimNotFoundError when `providerID` is not a live instance. */
  async get(providerID: string): Promise<NodeClaim> {
    const inst = await this.instance(providerID);
    return this.toNodeClaim(inst);
  }

  private async instance(providerID: string): Promise<Instance> {
    const parsed = parseAwsProviderID(providerID);
    if (!parsed) {
      throw new NodeClaimNotFoundError(
        `${providerID} is not an aws provider ID (aws:///<zone>/<instance-id>)`,
        {
          providerID,
        },
      );
    }
    const inst = await this.instances.get(parsed.instanceId);
    if (!inst)
      throw new NodeClaimNotFoundError(`instance ${parsed.instanceId} does not exist or is terminating`, {
        providerID,
      });
    return inst;
  }

  /** Every live instance of this cluster launched by Karpenter (tagged with a NodePool), as NodeClaims. */
  async list(): Promise<NodeClaim[]> {
    const instances = await this.instances.list([
      { Name: `tag:kubernetes.io/cluster/${this.deps.settings.clusterName}`, Values: ['owned'] },
      { Name: 'tag-key', Values: [LabelNodePool] },
    ]);
    const out: NodeClaim[] = [];
    for (const inst of instances) out.push(await this.toNodeClaim(inst));
    return out.sort((a, b) => (a.status!.providerID! < b.status!.providerID! ? -1 : 1));
  }

  /**
   * Terminates the instance (found by `status.providerID`).
   * @throws NodeClaimNotFoundError when it is already gone (or terminating), or the NodeClaim has no provider ID.
   */
  async delete(nodeClaim: NodeClaim): Promise<void> {
    const providerID = nodeClaim.status?.providerID;
    if (!providerID) {
      throw new NodeClaimNotFoundError(
        `NodeClaim ${nodeClaim.metadata.name ?? '<unnamed>'} has no status.providerID`,
      );
    }
    const inst = await this.instance(providerID);
    try {
      await this.instances.terminate(inst.InstanceId!);
    } catch (err) {
      // upstream counts every failed TerminateInstances of an instance it found (zone ID: the instance's
      // placement, else the NodeClaim's zone-id label when EC2 or its emulator leaves the placement's out)
      this.metrics.terminationFailures.inc({
        zone: inst.Placement?.AvailabilityZone ?? '',
        zone_id: inst.Placement?.AvailabilityZoneId ?? nodeClaim.metadata.labels?.[LabelTopologyZoneID] ?? '',
      });
      if ((err as { name?: string }).name?.includes('NotFound')) {
        throw new NodeClaimNotFoundError(`instance ${inst.InstanceId} does not exist`, {
          providerID,
          cause: err,
        });
      }
      throw err;
    }
  }

  /**
   * `NodeClassDrift` (static hash changed), `AMIDrift` (the instance's image is not among the class's resolved AMIs),
   * `SubnetDrift` (its subnet is not among the resolved subnets), `SecurityGroupDrift` (its security groups differ
   * from the resolved ones), `CapacityReservationDrift` (it runs in a capacity reservation that is no longer in
   * `status.capacityReservations`), `PlacementGroupDrift` (its placement-group label is not the class's group now);
   * undefined otherwise, and when the class is missing or not Ready (not drift).
   */
  async isDrifted(nodeClaim: NodeClaim): Promise<string | undefined> {
    const ref = nodeClaim.spec.nodeClassRef;
    if (ref.group !== AwsGroup || ref.kind !== EC2NodeClassKind) return undefined;
    const nodeClass = this.deps.nodeClass(ref.name);
    if (!nodeClass || ec2NodeClassNotReadyReason(nodeClass)) return undefined;
    if (staticFieldsDrifted(nodeClaim, nodeClass)) return DriftNodeClass;
    const providerID = nodeClaim.status?.providerID;
    if (!providerID) return undefined;
    const inst = await this.instance(providerID);
    const status = ec2NodeClassStatus(nodeClass);
    // upstream isCapacityReservationDrifted (with the ReservedCapacity gate) is the rule's last step
    const dynamic = selectorDrift(
      {
        ...(inst.ImageId ? { imageId: inst.ImageId } : {}),
        ...(inst.SubnetId ? { subnetId: inst.SubnetId } : {}),
        securityGroupIds: (inst.SecurityGroups ?? []).map((g) => g.GroupId ?? ''),
        ...(inst.CapacityReservationId ? { capacityReservationId: inst.CapacityReservationId } : {}),
      },
      {
        amis: status.amis ?? [],
        subnets: status.subnets ?? [],
        securityGroups: status.securityGroups ?? [],
        ...(this.reservedCapacity ? { capacityReservations: status.capacityReservations ?? [] } : {}),
      },
      nodeClaim.metadata.labels,
    );
    if (dynamic) return dynamic.reason;
    return (await this.placementGroupDrifted(nodeClaim, nodeClass))?.reason;
  }

  /**
   * Upstream `isPlacementGroupDrifted`: the NodeClaim's `karpenter.k8s.aws/placement-group-id` against the class's
   * group now ('' without a selector). While EC2 fails the last group found counts; with none known it is not judged.
   */
  private async placementGroupDrifted(nodeClaim: NodeClaim, nodeClass: EC2NodeClass) {
    let pg: PlacementGroup | undefined;
    try {
      pg = await this.placementGroups.get(nodeClass);
    } catch {
      pg = this.placementGroups.lastKnown(nodeClass);
      if (!pg) return undefined;
    }
    return placementGroupDrift(nodeClaim.metadata.labels, pg?.id ?? '');
  }
}
