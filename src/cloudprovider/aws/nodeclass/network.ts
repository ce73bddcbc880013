/**
 * Subnet and security-group resolution of an EC2NodeClass, after aws/karpenter-provider-aws
 * `pkg/providers/subnet/subnet.go`, `pkg/providers/securitygroup/securitygroup.go` and
 * `pkg/controllers/nodeclass/{subnet,securitygroup}.go`: one `Describe*` call (paginated) per filter set,
 * results unioned by ID; subnets ordered by free IPv4 addresses (most first) then ID, security groups by ID.
 */
import {
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  type EC2Client,
  type SecurityGroup,
  type Subnet,
} from '@aws-sdk/client-ec2';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { type Filter, type SelectorTerm, securityGroupFilterSets, subnetFilterSets } from './filters.ts';
import type { SecurityGroupStatus, SubnetStatus } from './types.ts';

/** A resolved subnet with its free IPv4 addresses (`AvailableIpAddressCount`). */
export interface ResolvedSubnet extends SubnetStatus {
  availableIPs: number;
}

/**
 * Subnets selected by the class's `subnetSelectorTerms`, most free IPs first, then by ID. Empty when no term
 * matches (or there are no terms).
 * @throws Error naming the filters when EC2 fails (the controller retries).
 */
export async function resolveSubnets(ec2: EC2Client, nodeClass: EC2NodeClass): Promise<ResolvedSubnet[]> {
  const byID = new Map<string, Subnet>();
  for (const filters of subnetFilterSets(nodeClass.spec.subnetSelectorTerms as SelectorTerm[] | undefined)) {
    let token: string | undefined;
    do {
      const page = await ec2
        .send(
          new DescribeSubnetsCommand({
            Filters: filters,
            MaxResults: 500,
            ...(token ? { NextToken: token } : {}),
          }),
        )
        .catch((err: unknown) => {
          throw new Error(`describing subnets with filters ${fmt(filters)}: ${(err as Error).message}`, {
            cause: err,
          });
        });
      for (const s of page.Subnets ?? []) if (s.SubnetId) byID.set(s.SubnetId, s);
      token = page.NextToken;
    } while (token);
  }
  return [...byID.values()]
    .map((s) => ({
      id: s.SubnetId as string,
      zone: s.AvailabilityZone ?? '',
      ...(s.AvailabilityZoneId ? { zoneID: s.AvailabilityZoneId } : {}),
      availableIPs: s.AvailableIpAddressCount ?? 0,
    }))
    .sort((a, b) => b.availableIPs - a.availableIPs || a.id.localeCompare(b.id));
}

/**
 * Security groups selected by the class's `securityGroupSelectorTerms`, ordered by ID.
 * @throws Error naming the filters when EC2 fails.
 */
export async function resolveSecurityGroups(
  ec2: EC2Client,
  nodeClass: EC2NodeClass,
): Promise<SecurityGroupStatus[]> {
  const byID = new Map<string, SecurityGroup>();
  const sets = securityGroupFilterSets(
    nodeClass.spec.securityGroupSelectorTerms as SelectorTerm[] | undefined,
  );
  for (const filters of sets) {
    let token: string | undefined;
    do {
      const page = await ec2
        .send(
          new DescribeSecurityGroupsCommand({
            Filters: filters,
            MaxResults: 500,
            ...(token ? { NextToken: token } : {}),
          }),
        )
        .catch((err: unknown) => {
          throw new Error(
            `describing security groups with filters ${fmt(filters)}: ${(err as Error).message}`,
            {
              cause: err,
            },
          );
        });
      for (const g of page.SecurityGroups ?? []) if (g.GroupId) byID.set(g.GroupId, g);
      token = page.NextToken;
    } while (token);
  }
  return [...byID.values()]
    .map((g) => ({ id: g.GroupId as string, ...(g.GroupName ? { name: g.GroupName } : {}) }))
    .sort((a, b) => a.id.localeCompare(b.id));
}

function fmt(filters: Filter[]): string {
  return filters.map((f) => `${f.Name}=${f.Values.join('|')}`).join(',');
}
