/**
 * The resolved part of an EC2NodeClass: `status.subnets`, `status.securityGroups`, `status.amis`,
 * `status.instanceProfile` and the readiness conditions, in upstream's shapes (aws/karpenter-provider-aws
 * `pkg/apis/v1/ec2nodeclass_status.go`). The EC2NodeClass controller writes them; the `aws` cloud provider reads
 * them at launch (it never resolves selectors itself), exactly as upstream does.
 */
import type { NodeSelectorRequirement } from '../../../apis/core.ts';
import type { Condition, EC2NodeClass } from '../../../apis/karpenter.ts';
import type { CapacityReservationStatus } from './capacityreservations.ts';

/** One resolved subnet (`status.subnets[]`), ordered by free IPv4 addresses (most first), then ID. */
export interface SubnetStatus {
  /** Subnet ID, e.g. `subnet-0a1b2c`. */
  id: string;
  /** Availability zone name, e.g. `us-east-1a`. */
  zone: string;
  /** Availability zone ID, e.g. `use1-az1` (omitted when EC2 does not report it). */
  zoneID?: string;
}

/** One resolved security group (`status.securityGroups[]`), ordered by ID. */
export interface SecurityGroupStatus {
  /** Group ID, e.g. `sg-0a1b2c`. */
  id: string;
  /** Group name. */
  name?: string;
}

/**
 * One resolved AMI (`status.amis[]`): newest non-deprecated first. `requirements` say which instance types it
 * serves (`kubernetes.io/arch`, and for aliases the variant: GPU / accelerator counts), sorted by key length
 * then key as upstream writes them.
 */
export interface AMIStatus {
  id: string;
  name?: string;
  /** True when the image's DeprecationTime has passed (still usable, chosen last). */
  deprecated?: boolean;
  requirements: NodeSelectorRequirement[];
}

/** `status` of an EC2NodeClass as capenter writes it. */
export interface EC2NodeClassStatus {
  subnets?: SubnetStatus[];
  securityGroups?: SecurityGroupStatus[];
  amis?: AMIStatus[];
  /** Instance profile name the instances are launched with. */
  instanceProfile?: string;
  /** The reservations `capacityReservationSelectorTerms` selected, sorted by ID. */
  capacityReservations?: CapacityReservationStatus[];
  conditions?: Condition[];
  [key: string]: unknown;
}

/** Condition types of an EC2NodeClass (upstream `ConditionType*`). */
export const ConditionSubnetsReady = 'SubnetsReady';
export const ConditionSecurityGroupsReady = 'SecurityGroupsReady';
export const ConditionAMIsReady = 'AMIsReady';
export const ConditionInstanceProfileReady = 'InstanceProfileReady';
export const ConditionValidationSucceeded = 'ValidationSucceeded';
export const ConditionCapacityReservationsReady = 'CapacityReservationsReady';
/** `spec.placementGroupSelector` resolved to an available group, or no selector (upstream v1.14.1). */
export const ConditionPlacementGroupReady = 'PlacementGroupReady';

/** The dependents of the root `Ready` condition that the EC2NodeClass controller owns. */
export const EC2NodeClassResolvedConditions: readonly string[] = [
  ConditionAMIsReady,
  ConditionSubnetsReady,
  ConditionSecurityGroupsReady,
  ConditionInstanceProfileReady,
  ConditionCapacityReservationsReady,
  ConditionPlacementGroupReady,
];

/** Finalizer the EC2NodeClass controller puts on every class (upstream `karpenter.k8s.aws/termination`). */
export const FinalizerEC2NodeClassTermination = 'karpenter.k8s.aws/termination';

/** The class's status, typed (empty object when none). */
export function ec2NodeClassStatus(nodeClass: EC2NodeClass): EC2NodeClassStatus {
  return (nodeClass.status ?? {}) as EC2NodeClassStatus;
}

/**
 * Why the class cannot launch now, or `undefined` when it can: missing/being deleted is the caller's business;
 * here `Ready` must be `True` (a class nobody reconciled yet is not ready either). The message names the
 * failing condition and its message, e.g. `SubnetsReady=False (SubnetsNotFound): SubnetSelector did not match…`.
 */
export function ec2NodeClassNotReadyReason(nodeClass: EC2NodeClass): string | undefined {
  const conds = ec2NodeClassStatus(nodeClass).conditions ?? [];
  const ready = conds.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return undefined;
  const failing =
    conds.find((c) => c.type !== 'Ready' && c.status === 'False') ??
    conds.find((c) => c.type !== 'Ready' && c.status === 'Unknown') ??
    ready;
  if (!failing) return 'Ready condition not set yet (the EC2NodeClass controller has not reconciled it)';
  return `${failing.type}=${failing.status}${failing.reason ? ` (${failing.reason})` : ''}${failing.message ? `: ${failing.message}` : ''}`;
}
