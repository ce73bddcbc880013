import { describe, expect, it } from 'vitest';
import { launchFailureReason } from './metrics.ts';

describe('launchFailureReason (upstream ToReasonMessage)', () => {
  it.each([
    ['InsufficientInstanceCapacity: We currently do not have sufficient m5.large capacity', 'LaunchFailed'],
    ['UnauthorizedOperation: You are not authorized to perform this operation.', 'Unauthorized'],
    ['AuthFailure.ServiceLinkedRoleCreationNotPermitted: no', 'SpotSLRCreationFailed'],
    ['AuthFailure: Not authorized for images: [ami-1]', 'AMIAuthorizationFailure'],
    [
      'InvalidParameter: Security group sg-1 and subnet subnet-1 belong to different networks.',
      'SecurityGroupSubnetVPCMismatch',
    ],
    ['InvalidLaunchTemplateId.NotFound: lt-1', 'LaunchTemplateNotFound'],
    ['InvalidAMIID.NotFound: ami-1', 'AMINotFound'],
    ['MaxSpotInstanceCountExceeded: Max spot instance count exceeded', 'SpotQuotaExceeded'],
    ['VcpuLimitExceeded: You have requested more vCPU capacity', 'VCPULimitExceeded'],
    ['InsufficientFreeAddressesInSubnet: no free addresses', 'InsufficientFreeAddressesInSubnet'],
  ])('%s → %s', (text, reason) => {
    expect(launchFailureReason(text)).toBe(reason);
  });
});
