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
  UPSTREAM_FEATURE_GATES_TEXT,
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
      StaticCapacity: false,
      NodeOverlay: false,
      ReservedCapacity: true,
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
    expect(err({ env: { FEATURE_GATES: 'Foo=true' } })).toBe(
      'FEATURE_GATES: "Foo=true" is not valid (unknown feature gate "Foo" (known: SpotToSpotConsolidation, NodeRepair, StaticCapacity, NodeOverlay, ReservedCapacity, CapacityBuffer)); FEATURE_GATES accepts ' +
        CORE_SETTINGS.find((s) => s.env === 'FEATURE_GATES')!.accepts,
    );
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

describe('FEATURE_GATES: upstream v1.14.1 gates (issue 26)', () => {
  const resolve = (env: Record<string, string>) => {
    const warnings: string[] = [];
    const o = resolveOperatorOptions({ env, warn: (m) => warnings.push(m) });
    return { gates: o.featureGates, warnings };
  };
  const error = (env: Record<string, string>): string => {
    try {
      resolveOperatorOptions({ env });
    } catch (e) {
      return (e as Error).message;
    }
    return 'no error';
  };

  it("upstream's exact default string loads: every gate as given, no warning (ReservedCapacity is implemented)", () => {
    expect(UPSTREAM_FEATURE_GATES_TEXT).toBe(
      'NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false',
    );
    const { gates, warnings } = resolve({ FEATURE_GATES: UPSTREAM_FEATURE_GATES_TEXT });
    expect(gates).toEqual({
      SpotToSpotConsolidation: false,
      NodeRepair: false,
      StaticCapacity: false,
      NodeOverlay: false,
      ReservedCapacity: true,
    });
    expect(warnings).toEqual([]);
    expect(DEFAULT_FEATURE_GATES.ReservedCapacity).toBe(true);
    // the upstream chart's order, with the implemented gates on and ReservedCapacity off
    const chart = resolve({
      FEATURE_GATES:
        'ReservedCapacity=false,SpotToSpotConsolidation=true,NodeRepair=true,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false',
    });
    expect(chart).toEqual({
      gates: {
        SpotToSpotConsolidation: true,
        NodeRepair: true,
        StaticCapacity: false,
        NodeOverlay: false,
        ReservedCapacity: false,
      },
      warnings: [],
    });
  });

  it('a gate capenter does not implement is refused when true, naming it', () => {
    expect(error({ FEATURE_GATES: 'CapacityBuffer=true' })).toMatch(
      /^FEATURE_GATES: "CapacityBuffer=true" is not valid \(feature gate CapacityBuffer is not implemented in capenter; set CapacityBuffer=false or leave it out\); /,
    );
    // StaticCapacity and NodeOverlay are implemented: both values work
    expect(error({ FEATURE_GATES: 'StaticCapacity=true,NodeOverlay=true' })).toBe('no error');
    expect(error({ FEATURE_GATES: 'NodeRepair=true,CapacityBuffer=true' })).toMatch(
      /\(feature gate CapacityBuffer is not implemented in capenter; set CapacityBuffer=false or leave it out\)/,
    );
  });

  it('a misspelled gate names the closest known gate', () => {
    expect(error({ FEATURE_GATES: 'SpotToSpotConsolidaton=true' })).toMatch(
      /^FEATURE_GATES: "SpotToSpotConsolidaton=true" is not valid \(unknown feature gate "SpotToSpotConsolidaton"; did you mean SpotToSpotConsolidation\?\)/,
    );
    expect(error({ FEATURE_GATES: 'nodeRepair=true' })).toMatch(
      /unknown feature gate "nodeRepair"; did you mean NodeRepair\?/,
    );
  });
});

describe('upstream settings without effect in capenter (issue 26)', () => {
  it('upstream-only settings warn once each when they would change upstream behaviour; defaults are quiet', () => {
    const warnings: string[] = [];
    resolveOperatorOptions({
      env: {
        KARPENTER_SERVICE: 'karpenter',
        ENABLE_PROFILING: 'true',
        DISABLE_CONTROLLER_WARMUP: 'true',
        MEMORY_LIMIT: '1073741824',
        CPU_REQUESTS: '1000',
        LOG_OUTPUT_PATHS: 'stdout',
        IGNORE_DRA_REQUESTS: 'true',
        DISABLE_CLUSTER_STATE_OBSERVABILITY: 'false',
      },
      flags: { logErrorOutputPaths: '/var/log/err' },
      warn: (m) => warnings.push(m),
    });
    expect(warnings).toEqual([
      'KARPENTER_SERVICE=karpenter: has no effect in capenter (capenter serves no webhooks)',
      'ENABLE_PROFILING=true: has no effect in capenter (no pprof endpoints; profile with node --inspect or --cpu-prof)',
      'MEMORY_LIMIT=1073741824: has no effect in capenter (a Go runtime setting; size the Node.js heap with NODE_OPTIONS)',
      "--log-error-output-paths=/var/log/err: has no effect in capenter (capenter's logger reports its own errors on stderr)",
    ]);
  });

  it('a value needing behaviour capenter lacks is refused, naming the setting', () => {
    const err = (env: Record<string, string>): string => {
      try {
        resolveOperatorOptions({ env });
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err({ DISABLE_CLUSTER_STATE_OBSERVABILITY: 'true' })).toBe(
      'DISABLE_CLUSTER_STATE_OBSERVABILITY: "true" is not valid (not implemented in capenter (cluster-state metrics and events cannot be turned off)); DISABLE_CLUSTER_STATE_OBSERVABILITY accepts false (true is refused: not implemented)',
    );
    expect(err({ IGNORE_DRA_REQUESTS: 'false' })).toBe(
      `IGNORE_DRA_REQUESTS: "false" is not valid (not implemented in capenter (pods' DRA resource claims are always ignored in scheduling)); IGNORE_DRA_REQUESTS accepts true (false is refused: not implemented)`,
    );
    expect(err({ MEMORY_LIMIT: 'lots' })).toMatch(/^MEMORY_LIMIT: "lots" is not valid \(not an integer\)/);
  });
});

describe('LOG_OUTPUT_PATHS (issue 26)', () => {
  it('is a comma-separated list of stdout, stderr or files; capenter defaults to stderr', async () => {
    expect(defaultOptions().logOutputPaths).toEqual(['stderr']);
    expect(
      resolveOperatorOptions({ env: { LOG_OUTPUT_PATHS: 'stdout, /tmp/x.log' } }).logOutputPaths,
    ).toEqual(['stdout', '/tmp/x.log']);
    expect(() => resolveOperatorOptions({ flags: { logOutputPaths: ' , ' } })).toThrow(
      '--log-output-paths: " , " is not valid (no path); LOG_OUTPUT_PATHS accepts comma-separated stdout, stderr or file paths',
    );
  });

  it('the controller logger writes every line to each file path', async () => {
    const { mkdtempSync, readFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { createLogger } = await import('../kube/logger.ts');
    const dir = mkdtempSync(join(tmpdir(), 'capenter-logs-'));
    const [a, b] = [join(dir, 'a.log'), join(dir, 'sub', 'b.log')];
    const logger = createLogger({ level: 'info', outputPaths: [a, b] });
    logger.info({ controller: 'x' }, 'hello');
    logger.debug('dropped');
    for (const f of [a, b]) {
      const lines = readFileSync(f, 'utf8').trim().split('\n');
      expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
        { level: 'INFO', logger: 'controller', controller: 'x', message: 'hello' },
      ]);
    }
  });
});
