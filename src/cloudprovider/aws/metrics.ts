/**
 * The AWS provider's instance metrics (aws/karpenter-provider-aws `pkg/providers/instance/metrics.go`):
 * - `karpenter_cloudprovider_instance_launch_failures_total{zone, zone_id, capacity_type, reason}`: one per
 *   CreateFleet error entry (per offering, not per NodeClaim), `reason` as upstream's `ToReasonMessage`;
 * - `karpenter_cloudprovider_instance_termination_failures_total{zone, zone_id}`: one per failed
 *   TerminateInstances of an instance.
 * Both are created once per registry.
 */
import type { Counter, Registry } from 'prom-client';
import { registeredCounter } from '../../kube/metrics.ts';

export const METRIC_LAUNCH_FAILURES = 'karpenter_cloudprovider_instance_launch_failures_total';
export const METRIC_TERMINATION_FAILURES = 'karpenter_cloudprovider_instance_termination_failures_total';

/** The two counters; see the module doc. */
export interface InstanceMetrics {
  launchFailures: Counter<'zone' | 'zone_id' | 'capacity_type' | 'reason'>;
  terminationFailures: Counter<'zone' | 'zone_id'>;
}

const counter = registeredCounter;

/** The instance metrics in `registry` (registered on first use). */
export function instanceMetrics(registry: Registry): InstanceMetrics {
  return {
    launchFailures: counter(
      registry,
      METRIC_LAUNCH_FAILURES,
      'Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, zone ID, capacity type, and launch failure reason.',
      ['zone', 'zone_id', 'capacity_type', 'reason'],
    ),
    terminationFailures: counter(
      registry,
      METRIC_TERMINATION_FAILURES,
      'Number of instance termination (TerminateInstances) failures, dimensioned by availability zone and zone ID.',
      ['zone', 'zone_id'],
    ),
  };
}

/** Upstream's ordered `ToReasonMessage` rules (`pkg/errors/errors.go`): every fragment must occur in the error text. */
const REASONS: ReadonlyArray<[reason: string, fragments: string[]]> = [
  ['SpotSLRCreationFailed', ['AuthFailure.ServiceLinkedRoleCreationNotPermitted']],
];
const LATER_REASONS: ReadonlyArray<[reason: string, fragments: string[]]> = [
  ['SecurityGroupSubnetVPCMismatch', ['InvalidParameter', 'belong to different networks']],
  ['InstanceProfileNameInvalid', ['iamInstanceProfile.name is invalid']],
  ['LaunchTemplateNotFound', ['InvalidLaunchTemplateId.NotFound']],
  ['UserDataSizeLimitExceeded', ['User data is limited to']],
  ['InvalidAMIID', ['InvalidAMIID.Malformed']],
  ['AMINotFound', ['InvalidAMIID.NotFound']],
  ['RequestLimitExceeded', ['RequestLimitExceeded']],
  ['InternalError', ['InternalError']],
  ['FreeTierIneligible', ['not eligible for Free Tier']],
  ['FleetQuotaExceeded', ['MaxFleetCountExceeded']],
  ['AccountPendingVerification', ['PendingVerification']],
  ['SpotQuotaExceeded', ['MaxSpotInstanceCountExceeded']],
  ['VCPULimitExceeded', ['VcpuLimitExceeded']],
  ['InsufficientFreeAddressesInSubnet', ['InsufficientFreeAddressesInSubnet']],
];

/**
 * The `reason` label of a launch error text (`"<ErrorCode>: <ErrorMessage>"`), as upstream's `ToReasonMessage`;
 * `LaunchFailed` when no rule matches (upstream's fallback, which also covers capacity errors such as
 * `InsufficientInstanceCapacity`).
 */
export function launchFailureReason(text: string): string {
  const match = (rules: ReadonlyArray<[string, string[]]>) =>
    rules.find(([, f]) => f.every((x) => text.includes(x)))?.[0];
  const first = match(REASONS);
  if (first) return first;
  if (['UnauthorizedOperation', 'AccessDenied', 'AuthFailure'].some((x) => text.includes(x))) {
    if (text.includes('Not authorized for images')) return 'AMIAuthorizationFailure';
    return 'Unauthorized';
  }
  return match(LATER_REASONS) ?? 'LaunchFailed';
}
