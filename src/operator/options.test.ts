import { describe, expect, it } from 'vitest';
import {
  defaultOptions,
  embeddedOptions,
  optionsFromEnv,
  parseFeatureGates,
  parseSeconds,
} from './options.ts';

describe('operator options', () => {
  it('has upstream defaults', () => {
    const o = defaultOptions();
    expect([o.batchIdleSeconds, o.batchMaxSeconds, o.metricsPort, o.healthProbePort]).toEqual([
      1, 10, 8080, 8081,
    ]);
    expect([o.leaderElectionName, o.leaderElectionNamespace]).toEqual([
      'karpenter-leader-election',
      'kube-system',
    ]);
    expect([o.leaseDurationSeconds, o.renewDeadlineSeconds, o.retryPeriodSeconds]).toEqual([15, 10, 2]);
    expect(embeddedOptions().metricsPort).toBe(0);
  });

  it('reads upstream environment variables', () => {
    const o = optionsFromEnv(
      {
        BATCH_IDLE_DURATION: '100ms',
        BATCH_MAX_DURATION: '1m30s',
        METRICS_PORT: '9090',
        HEALTH_PROBE_PORT: '0',
        LOG_LEVEL: 'DEBUG',
        CLUSTER_NAME: 'prod',
        LEADER_ELECT: 'false',
        FEATURE_GATES: 'SpotToSpotConsolidation=true,NodeRepair=false',
        AWS_REGION: 'eu-west-1',
      },
      defaultOptions(),
    );
    expect(o.batchIdleSeconds).toBeCloseTo(0.1);
    expect(o.batchMaxSeconds).toBe(90);
    expect([o.metricsPort, o.healthProbePort, o.logLevel, o.clusterName, o.leaderElect, o.region]).toEqual([
      9090,
      0,
      'debug',
      'prod',
      false,
      'eu-west-1',
    ]);
    expect(o.featureGates.SpotToSpotConsolidation).toBe(true);
    expect(o.featureGates.NodeRepair).toBe(false);
  });

  it('rejects bad values with the variable name and the fix', () => {
    expect(() => optionsFromEnv({ METRICS_PORT: '70000' }, defaultOptions())).toThrow(
      /METRICS_PORT: "70000" is not a port/,
    );
    expect(() => optionsFromEnv({ BATCH_IDLE_DURATION: 'soon' }, defaultOptions())).toThrow(
      /BATCH_IDLE_DURATION: "soon" is not a duration/,
    );
    expect(() => optionsFromEnv({ BATCH_IDLE_DURATION: '20s' }, defaultOptions())).toThrow(
      /must not exceed BATCH_MAX_DURATION/,
    );
    expect(() => optionsFromEnv({ LEADER_ELECT: 'maybe' }, defaultOptions())).toThrow(
      /LEADER_ELECT: "maybe" is not a boolean/,
    );
    expect(() => optionsFromEnv({ LOG_LEVEL: 'loud' }, defaultOptions())).toThrow(/LOG_LEVEL/);
    expect(() => parseFeatureGates('Foo')).toThrow(/"Foo" is not Name=true\|false/);
  });

  it('parses durations', () => {
    expect(parseSeconds('2.5', 'x')).toBe(2.5);
    expect(parseSeconds('1h2m3s', 'x')).toBe(3723);
    expect(() => parseSeconds('1s garbage', 'x')).toThrow(/x: "1s garbage"/);
  });
});

describe('--preference-policy', () => {
  it('PREFERENCE_POLICY and the controller flag take Respect or Ignore; anything else names the values', async () => {
    expect(optionsFromEnv({ PREFERENCE_POLICY: 'Ignore' }, defaultOptions()).preferencePolicy).toBe('Ignore');
    expect(defaultOptions().preferencePolicy).toBeUndefined();
    expect(() => optionsFromEnv({ PREFERENCE_POLICY: 'ignore' }, defaultOptions())).toThrow(
      'PREFERENCE_POLICY must be one of Respect, Ignore (got "ignore")',
    );
    const { controllerOptions } = await import('../cli/controller.ts');
    expect(
      controllerOptions({ preferencePolicy: 'Respect' }, { PREFERENCE_POLICY: 'Ignore' }).preferencePolicy,
    ).toBe('Respect');
  });
});
