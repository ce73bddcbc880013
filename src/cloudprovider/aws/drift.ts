/**
 * The EC2NodeClass's dynamic drift rule, written once for the provider (`AwsCloudProvider.isDrifted`, against the
 * class's `status` as the EC2NodeClass controller resolved it) and for `capenter plan` (against a proposed class's
 * selector terms resolved on the spot with the controller's own resolvers, {@link resolveEC2NodeClassSelectors}).
 * After aws/karpenter-provider-aws `pkg/cloudprovider/drift.go`, in upstream's order:
 * - `AMIDrift` (`isAMIDrifted`): the instance's image is not among the class's AMIs that serve its instance type
 *   (`amifamily.MapToInstanceTypes`: an AMI's `requirements` — architecture, GPU/accelerator variant — against the
 *   node's labels);
 * - `SubnetDrift` (`isSubnetDrifted`): the instance's subnet is not among the resolved subnets;
 * - `SecurityGroupDrift` (`areSecurityGroupsDrifted`): the instance's security groups are not exactly the resolved
 *   ones;
 * - `CapacityReservationDrift` (`isCapacityReservationDrifted`, only with the `ReservedCapacity` feature gate): the
 *   instance runs in a capacity reservation that is not among the class's resolved reservations;
 * - `PlacementGroupDrift` (`isPlacementGroupDrifted`, when the resolved placement group is given): the node's
 *   `karpenter.k8s.aws/placement-group-id` label is not the ID of the group `spec.placementGroupSelector` resolves
 *   to now ('' for none: a selector added, removed or pointed at another group).
 * An empty resolved list of AMIs, subnets or security groups is not drift (upstream returns an error and the class
 * is not Ready: nothing launches); an empty list of reservations is (the class selects none any more).
 */
import { DescribeInstancesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import { LabelArch } from '../../apis/labels.ts';
import { Requirements } from '../../scheduling/requirements.ts';
import { type AMIResolution, AMIResolver } from './nodeclass/amis.ts';
import {
  type CapacityReservationSelectorTerm,
  type CapacityReservationStatus,
  resolveCapacityReservations,
} from './nodeclass/capacityreservations.ts';
import { resolveSecurityGroups, resolveSubnets } from './nodeclass/network.ts';
import {
  describePlacementGroup,
  LabelPlacementGroupID,
  placementGroupSelector,
} from './nodeclass/placementgroups.ts';
import type { AMIStatus, SecurityGroupStatus, SubnetStatus } from './nodeclass/types.ts';

/** Drift reasons (upstream `pkg/cloudprovider/drift.go`). */
export const DriftAMI = 'AMIDrift';
export const DriftSubnet = 'SubnetDrift';
export const DriftSecurityGroup = 'SecurityGroupDrift';
export const DriftCapacityReservation = 'CapacityReservationDrift';
export const DriftPlacementGroup = 'PlacementGroupDrift';

/** What the rule needs of a running instance (`ec2:DescribeInstances`). */
export interface InstanceFacts {
  /** `ImageId`, e.g. `ami-0abc`. */
  imageId?: string;
  /** `SubnetId`, e.g. `subnet-0abc`. */
  subnetId?: string;
  /** `SecurityGroups[].GroupId`, any order. */
  securityGroupIds: string[];
  /** `CapacityReservationId` when the instance runs in a capacity reservation, e.g. `cr-0abc`. */
  capacityReservationId?: string;
}

/** The class's resolved selectors (its `status`, or a proposed class's terms resolved by plan). */
export interface ResolvedSelectors {
  amis: readonly AMIStatus[];
  subnets: readonly Pick<SubnetStatus, 'id'>[];
  securityGroups: readonly Pick<SecurityGroupStatus, 'id'>[];
  /**
   * The class's capacity reservations (`status.capacityReservations`); undefined: not compared (the
   * `ReservedCapacity` feature gate is off, or plan could not resolve a term).
   */
  capacityReservations?: readonly Pick<CapacityReservationStatus, 'id'>[];
  /**
   * The ID of the placement group `spec.placementGroupSelector` resolves to, '' without a selector; undefined when
   * not evaluated (placement-group drift is then not judged).
   */
  placementGroupID?: string;
}

/** A dynamic drift: the upstream reason, what the instance has and what the class resolves to now (IDs, sorted). */
export interface SelectorDrift {
  reason:
    | typeof DriftAMI
    | typeof DriftSubnet
    | typeof DriftSecurityGroup
    | typeof DriftCapacityReservation
    | typeof DriftPlacementGroup;
  /** The instance's image, subnet, security groups or capacity reservation, or the node's placement group ID (none: empty). */
  current: string[];
  /** The class's AMIs for the node's instance type, its subnets, its security groups, its reservations or its placement group. */
  resolved: string[];
}

/**
 * The AMIs of `amis` that serve a node with `labels` (upstream `MapToInstanceTypes`): each AMI's requirements
 * must match the labels as a node selector. Without `kubernetes.io/arch` among the labels (not the full label set
 * of the node) every AMI counts.
 */
export function amisForNode(
  amis: readonly AMIStatus[],
  labels: Readonly<Record<string, string>> | undefined,
): AMIStatus[] {
  if (!labels?.[LabelArch]) return [...amis];
  return amis.filter((a) => Requirements.fromNodeSelector(a.requirements).matchesLabels(labels));
}

const sorted = (v: Iterable<string>) => [...new Set(v)].sort();

/**
 * Upstream's AMI, subnet, security-group, capacity-reservation and placement-group drift of an instance against the class's
 * resolved selectors, in that order; `labels` are the node's (or NodeClaim's) labels for the AMI-to-instance-type mapping. Pure.
 * @returns the first drift, or undefined.
 */
export function selectorDrift(
  inst: InstanceFacts,
  resolved: ResolvedSelectors,
  labels?: Readonly<Record<string, string>>,
): SelectorDrift | undefined {
  if (inst.imageId && resolved.amis.length > 0) {
    const serving = amisForNode(resolved.amis, labels).map((a) => a.id);
    if (!serving.includes(inst.imageId))
      return { reason: DriftAMI, current: [inst.imageId], resolved: sorted(serving) };
  }
  const subnets = resolved.subnets.map((s) => s.id);
  if (inst.subnetId && subnets.length > 0 && !subnets.includes(inst.subnetId))
    return { reason: DriftSubnet, current: [inst.subnetId], resolved: sorted(subnets) };
  const want = sorted(resolved.securityGroups.map((g) => g.id));
  const have = sorted(inst.securityGroupIds);
  if (want.length > 0 && want.join(',') !== have.join(','))
    return { reason: DriftSecurityGroup, current: have, resolved: want };
  const cr = inst.capacityReservationId;
  const reservations = resolved.capacityReservations?.map((r) => r.id);
  if (cr && reservations && !reservations.includes(cr))
    return { reason: DriftCapacityReservation, current: [cr], resolved: sorted(reservations) };
  if (resolved.placementGroupID !== undefined) return placementGroupDrift(labels, resolved.placementGroupID);
  return undefined;
}

/**
 * Upstream `isPlacementGroupDrifted` (`pkg/cloudprovider/drift.go`): `PlacementGroupDrift` when the NodeClaim's (or
 * node's) `karpenter.k8s.aws/placement-group-id` label ('' when absent) differs from `resolvedID` (the ID of the
 * class's placement group now, '' without a selector). Pure.
 */
export function placementGroupDrift(
  labels: Readonly<Record<string, string>> | undefined,
  resolvedID: string,
): SelectorDrift | undefined {
  const have = labels?.[LabelPlacementGroupID] ?? '';
  if (have === resolvedID) return undefined;
  return {
    reason: DriftPlacementGroup,
    current: have ? [have] : [],
    resolved: resolvedID ? [resolvedID] : [],
  };
}

/** A class's selector terms resolved now, or why a part could not be (`AMINotFound`, an EC2 error, …). */
export interface SelectorResolution {
  resolved: ResolvedSelectors;
  /** Parts that resolved to nothing (`AMINotFound`, no subnet matches, …), naming the class; those parts are empty. */
  problems: string[];
  /** Parts whose AWS calls failed (credentials, endpoint, throttling), naming the class; those parts are empty. */
  errors: string[];
}

/**
 * Resolves `nodeClass`'s `amiSelectorTerms`, `subnetSelectorTerms`, `securityGroupSelectorTerms` and
 * `capacityReservationSelectorTerms` and `placementGroupSelector` with the EC2NodeClass controller's resolvers
 * (`nodeclass/amis.ts`, `nodeclass/network.ts`, `nodeclass/capacityreservations.ts`, `nodeclass/placementgroups.ts`)
 * for Kubernetes `k8sVersion` (`1.32`; aliases read its SSM parameters; undefined: an alias is a problem, not
 * resolved). Read-only (Describe*, GetParameter). A part that matches nothing is empty with a problem (a reservation
 * term that matches nothing leaves `capacityReservations` undefined, a selector matching no available placement group
 * leaves `placementGroupID` undefined: not compared, the class would not be Ready), one whose calls fail is empty
 * with an error; never throws.
 */
export async function resolveEC2NodeClassSelectors(
  clients: { ec2: EC2Client; ssm: SSMClient },
  nodeClass: EC2NodeClass,
  k8sVersion: string | undefined,
  now: () => number,
): Promise<SelectorResolution> {
  const name = `EC2NodeClass "${nodeClass.metadata.name ?? ''}"`;
  const problems: string[] = [];
  const errors: string[] = [];
  const amiResolver = new AMIResolver({ ec2: clients.ec2, ssm: clients.ssm, now });
  const noVersion: AMIResolution = {
    amis: [],
    reason: 'AMINotFound',
    message:
      "its alias needs the cluster's Kubernetes version, and no Node reports status.nodeInfo.kubeletVersion",
  };
  const aliased = nodeClass.spec.amiSelectorTerms?.some((t) => t.alias) ?? false;
  const selector = placementGroupSelector(nodeClass);
  const [amis, subnets, groups, reservations, pg] = await Promise.allSettled([
    k8sVersion === undefined && aliased ? noVersion : amiResolver.resolve(nodeClass, k8sVersion ?? ''),
    resolveSubnets(clients.ec2, nodeClass),
    resolveSecurityGroups(clients.ec2, nodeClass),
    resolveCapacityReservations(clients.ec2, nodeClass, { now }),
    selector ? describePlacementGroup(clients.ec2, selector) : Promise.resolve(undefined),
  ]);
  const part = <T>(r: PromiseSettledResult<T[]>, what: string): T[] => {
    if (r.status === 'rejected') {
      errors.push(`${name}: ${what}: ${(r.reason as Error).message}`);
      return [];
    }
    if (r.value.length === 0) problems.push(`${name}: ${what} match nothing`);
    return r.value;
  };
  let amiList: AMIStatus[] = [];
  if (amis.status === 'rejected') errors.push(`${name}: amiSelectorTerms: ${(amis.reason as Error).message}`);
  else if ('reason' in amis.value)
    problems.push(`${name}: amiSelectorTerms: ${amis.value.reason}: ${amis.value.message}`);
  else amiList = amis.value.amis;
  let crList: CapacityReservationStatus[] | undefined;
  if (reservations.status === 'rejected')
    errors.push(`${name}: capacityReservationSelectorTerms: ${(reservations.reason as Error).message}`);
  else if (reservations.value.unmatchedTerms.length > 0) {
    const terms = (nodeClass.spec.capacityReservationSelectorTerms ??
      []) as CapacityReservationSelectorTerm[];
    const named = reservations.value.unmatchedTerms.map(
      (i) => `capacityReservationSelectorTerms[${i}] ${JSON.stringify(terms[i])}`,
    );
    problems.push(`${name}: ${named.join(', ')} matched no active capacity reservation`);
  } else crList = reservations.value.reservations;
  let placementGroupID: string | undefined;
  if (pg.status === 'rejected')
    errors.push(`${name}: placementGroupSelector: ${(pg.reason as Error).message}`);
  else if (selector && !pg.value)
    problems.push(`${name}: placementGroupSelector matches no available placement group`);
  else placementGroupID = pg.value?.id ?? '';
  return {
    resolved: {
      amis: amiList,
      subnets: part(subnets, 'subnetSelectorTerms'),
      securityGroups: part(groups, 'securityGroupSelectorTerms'),
      ...(crList ? { capacityReservations: crList } : {}),
      ...(placementGroupID !== undefined ? { placementGroupID } : {}),
    },
    problems,
    errors,
  };
}

/**
 * The image, subnet, security groups and capacity reservation of each instance ID that exists (terminated ones and unknown IDs are
 * absent), with one `DescribeInstances` per 100 IDs. Read-only.
 * @throws Error naming the call when EC2 fails.
 */
export async function describeInstanceFacts(
  ec2: EC2Client,
  instanceIds: readonly string[],
): Promise<Map<string, InstanceFacts>> {
  const out = new Map<string, InstanceFacts>();
  const ids = sorted(instanceIds);
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    let token: string | undefined;
    do {
      const page = await ec2
        .send(
          new DescribeInstancesCommand({
            Filters: [{ Name: 'instance-id', Values: chunk }],
            ...(token ? { NextToken: token } : {}),
          }),
        )
        .catch((err: unknown) => {
          throw new Error(`describing instances ${chunk.join(', ')}: ${(err as Error).message}`, {
            cause: err,
          });
        });
      for (const r of page.Reservations ?? [])
        for (const inst of r.Instances ?? []) {
          if (!inst.InstanceId || inst.State?.Name === 'terminated') continue;
          out.set(inst.InstanceId, {
            ...(inst.ImageId ? { imageId: inst.ImageId } : {}),
            ...(inst.SubnetId ? { subnetId: inst.SubnetId } : {}),
            securityGroupIds: (inst.SecurityGroups ?? []).map((g) => g.GroupId ?? '').filter(Boolean),
            ...(inst.CapacityReservationId ? { capacityReservationId: inst.CapacityReservationId } : {}),
          });
        }
      token = page.NextToken;
    } while (token);
  }
  return out;
}
