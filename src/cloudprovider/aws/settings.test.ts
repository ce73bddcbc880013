import { describe, expect, it } from 'vitest';
import { SettingError } from '../../config/settings.ts';
import { AWS_SETTINGS, awsSettings, resolveAwsSettings, validateAwsSettings } from './settings.ts';
import { nodeClassPeriodSeconds } from './setup.ts';

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
      ['DISABLE_DRY_RUN', 'disable-dry-run'],
      ['AMI_REFRESH_INTERVAL', 'ami-refresh-interval'],
      ['SUBNET_REFRESH_INTERVAL', 'subnet-refresh-interval'],
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
      disableDryRun: false,
      amiRefreshSeconds: 60,
      subnetRefreshSeconds: 60,
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

  it('AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL (at least 1m) set the EC2NodeClass re-resolution period', () => {
    const s = resolveAwsSettings({ env: { AMI_REFRESH_INTERVAL: '10m', SUBNET_REFRESH_INTERVAL: '5m' } });
    expect([s.amiRefreshSeconds, s.subnetRefreshSeconds]).toEqual([600, 300]);
    expect(nodeClassPeriodSeconds({ settings: s })).toBe(300);
    expect(nodeClassPeriodSeconds({ settings: awsSettings() })).toBe(60);
    expect(nodeClassPeriodSeconds({ settings: s, nodeClassPeriodSeconds: 5 })).toBe(5);
    expect(() => resolveAwsSettings({ flags: { amiRefreshInterval: '59s' } })).toThrow(
      '--ami-refresh-interval: "59s" is not valid (must be at least 1m); AMI_REFRESH_INTERVAL accepts a duration of at least 1m, e.g. "5m"',
    );
  });

  it('DISABLE_DRY_RUN (default false) turns off the EC2NodeClass dry runs without a warning; ENABLE_ZONAL_SHIFT=true is refused', () => {
    const warnings: string[] = [];
    const s = resolveAwsSettings({
      env: { DISABLE_DRY_RUN: 'true', ENABLE_ZONAL_SHIFT: 'false' },
      warn: (m) => warnings.push(m),
    });
    expect([s.disableDryRun, awsSettings().disableDryRun]).toEqual([true, false]);
    expect(resolveAwsSettings({ flags: { disableDryRun: true } }).disableDryRun).toBe(true);
    expect(warnings).toEqual([]);
    expect(() => resolveAwsSettings({ flags: { enableZonalShift: true } })).toThrow(
      '--enable-zonal-shift: "true" is not valid (not implemented in capenter (zonal shift is not supported)); ENABLE_ZONAL_SHIFT accepts false (true is refused: not implemented)',
    );
  });

  it('EKS_CONTROL_PLANE=false requires CLUSTER_ENDPOINT', () => {
    const s = resolveAwsSettings({ env: { CLUSTER_NAME: 'capa', EKS_CONTROL_PLANE: 'false' } });
    expect(s.eksControlPlane).toBe(false);
    expect(() => validateAwsSettings(s)).toThrow(
      /^CLUSTER_ENDPOINT: "" is not valid \(required with EKS_CONTROL_PLANE=false/,
    );
    expect(validateAwsSettings({ ...s, clusterEndpoint: 'https://capa:6443' }).eksControlPlane).toBe(false);
  });
});
