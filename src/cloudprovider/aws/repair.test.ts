import { describe, expect, it } from 'vitest';
import { AwsCloudProvider, AwsRepairPolicies } from './provider.ts';

describe('aws repair policies', () => {
  it('are upstream v1.14.1 RepairPolicies: kubelet Ready and the Node Monitoring Agent conditions', () => {
    const list = AwsCloudProvider.prototype.repairPolicies.call(undefined);
    expect(list.map((p) => [p.conditionType, p.conditionStatus, p.tolerationDurationSeconds / 60])).toEqual([
      ['Ready', 'False', 30],
      ['Ready', 'Unknown', 30],
      ['AcceleratedHardwareReady', 'False', 10],
      ['StorageReady', 'False', 30],
      ['NetworkingReady', 'False', 30],
      ['KernelReady', 'False', 30],
      ['ContainerRuntimeReady', 'False', 30],
    ]);
    // each call returns a fresh copy: a caller cannot change the provider's policies
    list[0]!.tolerationDurationSeconds = 1;
    expect(AwsRepairPolicies[0]?.tolerationDurationSeconds).toBe(1800);
  });
});
