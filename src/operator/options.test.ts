import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addSettingFlags, checkSettingList, parseDuration, SettingError } from '../config/settings.ts';
import {
  CORE_SETTINGS,
  DEFAULT_FEATURE_GATES,
  defaultOptions,
  embeddedOptions,
  parseFeatureGates,
  resolveOperatorOptions,
  SETTINGS,
} from './options.ts';

describe('operator options (the settings registry)', () => {
  it('has upstream defaults', () => {
    const o = defaultOptions();
    expect([o.batchIdleSeconds, o.batchMaxSeconds, o.metricsPort, o.healthProbePort]).toEqual([
      1, 10, 8080, 8081,
    ]);
    expect([o.leaderElect, o.leaderElectionName, o.leaderElectionNamespace]).toEqual([
      true,
      'karpenter-leader-election',
      'kube-system',
    ]);
    expect([o.leaseDurationSeconds, o.renewDeadlineSeconds, o.retryPeriodSeconds]).toEqual([15, 10, 2]);
    expect([o.preferencePolicy, o.minValuesPolicy, o.kubeClientQPS, o.kubeClientBurst]).toEqual([
      'Respect',
      'Strict',
      200,
      300,
    ]);
    expect(embeddedOptions().metricsPort).toBe(0);
  });

  it('reads upstream environment variables', () => {
    const o = resolveOperatorOptions({
      env: {
        BATCH_IDLE_DURATION: '100ms',
        BATCH_MAX_DURATION: '1m30s',
        METRICS_PORT: '9090',
        HEALTH_PROBE_PORT: '0',
        LOG_LEVEL: 'DEBUG',
        CLUSTER_NAME: 'prod',
        DISABLE_LEADER_ELECTION: 'true',
        LEADER_ELECTION_NAMESPACE: 'karpenter',
        FEATURE_GATES: 'SpotToSpotConsolidation=true,NodeRepair=false',
        PREFERENCE_POLICY: 'Ignore',
        MIN_VALUES_POLICY: 'BestEffort',
        KUBE_CLIENT_QPS: '50',
        KUBE_CLIENT_BURST: '75',
        AWS_REGION: 'eu-west-1',
      },
    });
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
    expect(o.leaderElectionNamespace).toBe('karpenter');
    expect(o.featureGates).toEqual({
      SpotToSpotConsolidation: true,
      NodeRepair: false,
      ReservedCapacity: false,
      StaticCapacity: false,
      NodeOverlay: false,
    });
    expect([o.preferencePolicy, o.minValuesPolicy, o.kubeClientQPS, o.kubeClientBurst]).toEqual([
      'Ignore',
      'BestEffort',
      50,
      75,
    ]);
  });

  it('flags win over environment variables; an empty variable is unset', () => {
    const o = resolveOperatorOptions({
      flags: { metricsPort: '0', region: 'us-west-2', disableLeaderElection: true, batchIdleDuration: '2s' },
      env: { METRICS_PORT: '9000', AWS_REGION: 'eu-west-1', BATCH_IDLE_DURATION: '', LOG_LEVEL: '' },
    });
    expect([o.metricsPort, o.region, o.leaderElect, o.batchIdleSeconds, o.logLevel]).toEqual([
      0,
      'us-west-2',
      false,
      2,
      'info',
    ]);
    expect(resolveOperatorOptions({ flags: { disableLeaderElection: 'false' } }).leaderElect).toBe(true);
  });

  it('rejects bad values naming the setting, the value and what it accepts', () => {
    const err = (src: Parameters<typeof resolveOperatorOptions>[0]): string => {
      try {
        resolveOperatorOptions(src);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err({ env: { METRICS_PORT: '70000' } })).toBe(
      'METRICS_PORT: "70000" is not valid (not a port); METRICS_PORT accepts a port number 0–65535 (0 picks a free port)',
    );
    expect(err({ flags: { batchIdleDuration: 'soon' } })).toBe(
      '--batch-idle-duration: "soon" is not valid (not a duration); BATCH_IDLE_DURATION accepts a duration such as "1s", "100ms", "1m30s", or a number of seconds',
    );
    expect(err({ env: { BATCH_IDLE_DURATION: '20s' } })).toMatch(/must not exceed BATCH_MAX_DURATION/);
    expect(err({ env: { DISABLE_LEADER_ELECTION: 'maybe' } })).toMatch(
      /DISABLE_LEADER_ELECTION: "maybe" is not valid \(not a boolean\); DISABLE_LEADER_ELECTION accepts true or false/,
    );
    expect(err({ env: { LOG_LEVEL: 'loud' } })).toMatch(/accepts debug, info, warn, error, silent/);
    expect(err({ env: { PREFERENCE_POLICY: 'Maybe' } })).toMatch(/PREFERENCE_POLICY accepts Respect, Ignore/);
    expect(err({ env: { MIN_VALUES_POLICY: 'Loose' } })).toMatch(
      /MIN_VALUES_POLICY accepts Strict, BestEffort/,
    );
    expect(err({ env: { KUBE_CLIENT_BURST: '1.5' } })).toMatch(
      /KUBE_CLIENT_BURST: "1.5" is not valid \(not an integer\)/,
    );
    expect(err({ env: { FEATURE_GATES: 'Foo=true' } })).toMatch(/unknown feature gate "Foo"/);
    // NodeOverlay is a known gate (upstream v1.14.1 default false), no longer refused as unknown
    expect(parseFeatureGates('NodeOverlay=true').NodeOverlay).toBe(true);
    expect(DEFAULT_FEATURE_GATES.NodeOverlay).toBe(false);
    expect(() => parseFeatureGates('Foo')).toThrow(/"Foo" is not Name=true\|false/);
    expect(() => resolveOperatorOptions({ env: { KUBE_CLIENT_QPS: '0' } })).toThrow(SettingError);
  });

  it('parses durations', () => {
    expect(parseDuration('2.5')).toBe(2.5);
    expect(parseDuration('1h2m3s')).toBe(3723);
    expect(() => parseDuration('1s garbage')).toThrow(/not a duration/);
  });

  it('has one owner per env name, flag and key, and every setting is a flag of the command', () => {
    expect(() => checkSettingList(SETTINGS)).not.toThrow();
    expect(() => checkSettingList([...CORE_SETTINGS, CORE_SETTINGS[0]])).toThrow(
      /env "BATCH_IDLE_DURATION" is declared twice/,
    );
    const cmd = addSettingFlags(new Command('x'), SETTINGS);
    expect(cmd.options.map((o) => o.long)).toEqual(SETTINGS.map((s) => `--${s.flag}`));
    cmd.exitOverride().parse(['--disable-leader-election', '--metrics-port', '9', '--kube-client-qps=5'], {
      from: 'user',
    });
    expect(resolveOperatorOptions({ flags: cmd.opts(), env: {} })).toMatchObject({
      leaderElect: false,
      metricsPort: 9,
      kubeClientQPS: 5,
    });
  });
});

describe('--preference-policy', () => {
  it('PREFERENCE_POLICY and the controller flag take Respect or Ignore; anything else names the values', async () => {
    expect(resolveOperatorOptions({ env: { PREFERENCE_POLICY: 'Ignore' } }).preferencePolicy).toBe('Ignore');
    expect(defaultOptions().preferencePolicy).toBe('Respect');
    expect(() => resolveOperatorOptions({ env: { PREFERENCE_POLICY: 'Sometimes' } })).toThrow(
      /PREFERENCE_POLICY: "Sometimes" is not valid.*Respect.*Ignore/,
    );
    const { controllerOptions } = await import('../cli/controller.ts');
    expect(
      controllerOptions({ preferencePolicy: 'Respect' }, { PREFERENCE_POLICY: 'Ignore' }).preferencePolicy,
    ).toBe('Respect');
  });
});
