/**
 * EC2 instance health from `DescribeInstanceStatus`, after aws/karpenter-provider-aws v1.14.1
 * `pkg/providers/instancestatus/instancestatus.go` (`DefaultProvider.List`):
 * - three describes (paginated), one per filter set, because EC2 ANDs different filter names and the provider needs
 *   an OR: `instance-status.status=impaired`, `system-status.status=impaired`, and `event.code` in
 *   `instance-reboot|system-reboot|system-maintenance|instance-retirement|instance-stop`; an instance in several
 *   answers counts once (its first answer);
 * - each answer becomes details by category: `InstanceStatus` and `SystemStatus` (the status check details),
 *   `EBSStatus` (attached EBS status details; never acted on: ignored until the node's volumes can be told from the
 *   pods'), `EventStatus` (each scheduled event, always `failed`, impaired since now);
 * - only `failed` details are kept; an instance or system check must have been impaired for at least
 *   {@link UnhealthyThresholdSeconds} (a missing `ImpairedSince` counts as the epoch); a scheduled event counts at once
 *   (its time is usually in the future; upstream treats any as a degraded host, as it does EventBridge's);
 * - an instance with no detail left is healthy and not returned; `impairedSince` is its earliest detail's.
 */
import {
  DescribeInstanceStatusCommand,
  type DescribeInstanceStatusCommandOutput,
  type EC2Client,
  type InstanceStatus as EC2InstanceStatus,
  type Filter,
} from '@aws-sdk/client-ec2';
import type { Clock } from '../../kube/clock.ts';

/** Status check categories (upstream `instancestatus.Category`; the metric's `category` label values). */
export type HealthCategory = 'InstanceStatus' | 'SystemStatus' | 'EventStatus' | 'EBSStatus';

/** Seconds an instance or system status check must have been impaired before it counts (upstream 120 s). */
export const UnhealthyThresholdSeconds = 120;

/** Scheduled event codes that count as unhealthy (upstream's `event.code` filter). */
export const UnhealthyEventCodes = [
  'instance-reboot',
  'system-reboot',
  'system-maintenance',
  'instance-retirement',
  'instance-stop',
] as const;

/** The three filter sets (upstream `instanceStatusFilters`), ORed by describing once per set. */
export const InstanceStatusFilters: readonly Filter[][] = [
  [{ Name: 'instance-status.status', Values: ['impaired'] }],
  [{ Name: 'system-status.status', Values: ['impaired'] }],
  [{ Name: 'event.code', Values: [...UnhealthyEventCodes] }],
];

/** One failed check or scheduled event of an instance. */
export interface HealthDetail {
  category: HealthCategory;
  /** Check name (`reachability`) or event code (`instance-retirement`). */
  name: string;
  /** `passed`, `failed`, `insufficient-data`, `initializing` (an event is always `failed`). */
  status: string;
  /** ms since the epoch (0 when EC2 gave none). */
  impairedSince: number;
}

/** An unhealthy instance (upstream `HealthStatus`). */
export interface HealthStatus {
  instanceID: string;
  /** The earliest `impairedSince` of its details, ms since the epoch. */
  impairedSince: number;
  /** Its failed details (never empty). */
  details: HealthDetail[];
}

/**
 * The unhealthy instances of the account and region (see the module comment).
 * @throws the SDK's error (e.g. `UnauthorizedOperation` without `ec2:DescribeInstanceStatus`), prefixed
 * "failed describing ec2 instance status checks".
 */
export async function listUnhealthyInstances(ec2: EC2Client, clock: Clock): Promise<HealthStatus[]> {
  const seen = new Set<string>();
  const statuses: EC2InstanceStatus[] = [];
  for (const filters of InstanceStatusFilters) {
    let token: string | undefined;
    do {
      let page: DescribeInstanceStatusCommandOutput;
      try {
        page = await ec2.send(
          new DescribeInstanceStatusCommand({ Filters: filters, ...(token ? { NextToken: token } : {}) }),
        );
      } catch (err) {
        const e = err as Error;
        e.message = `failed describing ec2 instance status checks, ${e.message}`;
        throw e;
      }
      for (const s of page.InstanceStatuses ?? []) {
        if (!s.InstanceId || seen.has(s.InstanceId)) continue;
        seen.add(s.InstanceId);
        statuses.push(s);
      }
      token = page.NextToken;
    } while (token);
  }
  const now = clock.now();
  const out: HealthStatus[] = [];
  for (const s of statuses) {
    const details = healthDetails(s, now).filter(
      (d) =>
        d.status === 'failed' &&
        (d.category === 'EventStatus' || now - d.impairedSince >= UnhealthyThresholdSeconds * 1000),
    );
    if (details.length === 0) continue;
    out.push({
      instanceID: s.InstanceId as string,
      impairedSince: Math.min(...details.map((d) => d.impairedSince)),
      details,
    });
  }
  return out;
}

/** Every detail of one answer (upstream `newHealthStatus`); `now` is a scheduled event's `impairedSince`. */
export function healthDetails(s: EC2InstanceStatus, now: number): HealthDetail[] {
  const since = (d: Date | undefined): number => d?.getTime() ?? 0;
  const checks = (
    category: HealthCategory,
    list:
      | ReadonlyArray<{
          Name?: string | undefined;
          Status?: string | undefined;
          ImpairedSince?: Date | undefined;
        }>
      | undefined,
  ): HealthDetail[] =>
    (list ?? []).map((d) => ({
      category,
      name: d.Name ?? '',
      status: d.Status ?? '',
      impairedSince: since(d.ImpairedSince),
    }));
  return [
    ...checks('InstanceStatus', s.InstanceStatus?.Details),
    ...checks('SystemStatus', s.SystemStatus?.Details),
    ...checks('EBSStatus', s.AttachedEbsStatus?.Details),
    ...(s.Events ?? []).map((e) => ({
      category: 'EventStatus' as const,
      name: e.Code ?? '',
      status: 'failed',
      impairedSince: now,
    })),
  ];
}
