import { describe, expect, it } from 'vitest';
import { SettingError } from '../../config/settings.ts';
import { AWS_SETTINGS, resolveAwsSettings, validateAwsSettings } from './settings.ts';

describe('aws settings', () => {
  it('has upstream names and defaults', () => {
    expect(AWS_SETTINGS.map((s) => [s.env, s.flag])).toEqual([
      ['CLUSTER_NAME', 'cluster-name'],
      ['CLUSTER_ENDPOINT', 'cluster-endpoint'],
      ['CLUSTER_CA_BUNDLE', 'cluster-ca-bundle'],
      ['INTERRUPTION_QUEUE', 'interruption-queue'],
      ['ISOLATED_VPC', 'isolated-vpc'],
      ['VM_MEMORY_OVERHEAD_PERCENT', 'vm-memory-overhead-percent'],
      ['RESERVED_ENIS', 'reserved-enis'],
      ['AWS_REGION', 'aws-region'],
      ['EKS_CONTROL_PLANE', 'eks-control-plane'],
    ]);
    expect(resolveAwsSettings({})).toEqual({
      clusterName: '',
      clusterEndpoint: '',
      clusterCABundle: '',
      interruptionQueue: '',
      isolatedVPC: false,
      vmMemoryOverheadPercent: 0.075,
      reservedENIs: 0,
      region: '',
      eksControlPlane: undefined,
    });
  });

  it('flags win over the environment; empty variables count as unset', () => {
    const s = resolveAwsSettings({
      flags: { clusterName: 'from-flag', isolatedVpc: true },
      env: {
        CLUSTER_NAME: 'from-env',
        AWS_REGION: 'us-west-2',
        RESERVED_ENIS: '1',
        VM_MEMORY_OVERHEAD_PERCENT: '',
      },
    });
    expect(s).toMatchObject({
      clusterName: 'from-flag',
      isolatedVPC: true,
      region: 'us-west-2',
      reservedENIs: 1,
      vmMemoryOverheadPercent: 0.075,
    });
  });

  it('a bad value names the setting, the value and what it accepts', () => {
    expect(() => resolveAwsSettings({ env: { VM_MEMORY_OVERHEAD_PERCENT: '7.5' } })).toThrow(
      'VM_MEMORY_OVERHEAD_PERCENT: "7.5" is not valid (must be at least 0 and less than 1); VM_MEMORY_OVERHEAD_PERCENT accepts a number from 0 up to (not including) 1, e.g. 0.075',
    );
    expect(() => resolveAwsSettings({ flags: { clusterEndpoint: 'ftp://x' } })).toThrow(
      /--cluster-endpoint: "ftp:\/\/x" is not valid/,
    );
    expect(() => resolveAwsSettings({ env: { RESERVED_ENIS: '-1' } })).toThrow(SettingError);
    expect(() => resolveAwsSettings({ env: { AWS_REGION: 'mars' } })).toThrow(
      /AWS_REGION accepts an AWS region name/,
    );
    expect(() => validateAwsSettings(resolveAwsSettings({}))).toThrow(
      /--cluster-name: "" is not valid \(required with --cloud-provider aws\)/,
    );
  });
});
