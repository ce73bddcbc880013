/**
 * Operator options: the settings upstream Karpenter takes as flags / environment variables
 * (kubernetes-sigs/karpenter `pkg/operator/options/options.go`), as one plain object. Only the CLI layer
 * reads flags and `process.env` (see {@link optionsFromEnv}); library code receives an {@link OperatorOptions}.
 */
import { PreferencePolicies, type PreferencePolicy } from '../scheduling/preferencepolicy.ts';

/** Everything the operator is configured with. Durations in seconds, ports as TCP port numbers. */
export interface OperatorOptions {
  /** `BATCH_IDLE_DURATION`: seconds without a new pending pod that close a batch window (upstream 1 s). */
  batchIdleSeconds: number;
  /** `BATCH_MAX_DURATION`: maximum seconds a batch window stays open (upstream 10 s). */
  batchMaxSeconds: number;
  /** `METRICS_PORT`: port of `/metrics` (upstream 8080; 0 = a random free port, the embedded default). */
  metricsPort: number;
  /** `HEALTH_PROBE_PORT`: port of `/healthz` and `/readyz` (upstream 8081; 0 = random; may equal metricsPort). */
  healthProbePort: number;
  /** Address the metrics/health servers bind to (default `0.0.0.0`; the embedded mode uses `127.0.0.1`). */
  bindAddress: string;
  /** `LOG_LEVEL`: `debug`, `info`, `warn`, `error` (upstream default `info`). */
  logLevel: string;
  /** `CLUSTER_NAME`: name of the cluster (tags, discovery; default `cluster-1` in embedded mode). */
  clusterName: string;
  /** `LEADER_ELECT`: run controllers only while holding the leader Lease (upstream true). */
  leaderElect: boolean;
  /** Lease name (upstream `karpenter-leader-election`). */
  leaderElectionName: string;
  /** Lease namespace (upstream: the pod's namespace, `kube-system` in a standard install). */
  leaderElectionNamespace: string;
  /** Leader election timings in seconds (client-go / upstream: 15 / 10 / 2). */
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
  /** `FEATURE_GATES`: parsed `Name=true,Other=false` (upstream gates: SpotToSpotConsolidation, NodeRepair, ...). */
  featureGates: Record<string, boolean>;
  /** AWS region whose catalog the kwok provider simulates (`AWS_REGION`; default `us-east-1`). */
  region: string;
  /** Seconds the garbage collection waits between passes (upstream 120). */
  gcPeriodSeconds: number;
  /** Seconds between metrics-controller passes (upstream 5 s for node metrics). */
  metricsPeriodSeconds: number;
  /** `PREFERENCE_POLICY` / `--preference-policy`: `Respect` (upstream default) or `Ignore` preferences. */
  preferencePolicy?: PreferencePolicy;
}

/** Upstream feature gates and their defaults (v1.x). */
export const DEFAULT_FEATURE_GATES: Readonly<Record<string, boolean>> = {
  SpotToSpotConsolidation: false,
  NodeRepair: false,
  ReservedCapacity: false,
  StaticCapacity: false,
};

/** Upstream defaults (metrics on 8080, health on 8081, batch 1 s / 10 s, leader election on). */
export function defaultOptions(): OperatorOptions {
  return {
    batchIdleSeconds: 1,
    batchMaxSeconds: 10,
    metricsPort: 8080,
    healthProbePort: 8081,
    bindAddress: '0.0.0.0',
    logLevel: 'info',
    clusterName: 'cluster-1',
    leaderElect: true,
    leaderElectionName: 'karpenter-leader-election',
    leaderElectionNamespace: 'kube-system',
    leaseDurationSeconds: 15,
    renewDeadlineSeconds: 10,
    retryPeriodSeconds: 2,
    featureGates: { ...DEFAULT_FEATURE_GATES },
    region: 'us-east-1',
    gcPeriodSeconds: 120,
    metricsPeriodSeconds: 5,
  };
}

/** Embedded-mode defaults: like {@link defaultOptions} but random loopback ports. */
export function embeddedOptions(): OperatorOptions {
  return { ...defaultOptions(), metricsPort: 0, healthProbePort: 0, bindAddress: '127.0.0.1' };
}

/**
 * Parses a Go-style duration or a number of seconds (`1s`, `100ms`, `1m30s`, `2.5`) into seconds.
 * @throws Error naming `what` and the accepted forms.
 */
export function parseSeconds(text: string, what: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const m of t.matchAll(re)) {
    const v = Number(m[1]);
    total += m[2] === 'ms' ? v / 1000 : m[2] === 's' ? v : m[2] === 'm' ? v * 60 : v * 3600;
    consumed += m[0].length;
  }
  if (consumed === 0 || consumed !== t.length)
    throw new Error(
      `${what}: "${text}" is not a duration; use e.g. "1s", "100ms", "1m30s" or a number of seconds`,
    );
  return total;
}

/**
 * Parses `FEATURE_GATES` (`A=true,B=false`) over the defaults.
 * @throws Error naming the malformed entry.
 */
export function parseFeatureGates(
  text: string,
  base: Record<string, boolean> = DEFAULT_FEATURE_GATES,
): Record<string, boolean> {
  const out = { ...base };
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z0-9]+)=(true|false)$/.exec(part);
    if (!m)
      throw new Error(
        `FEATURE_GATES: "${part}" is not Name=true|false (e.g. "SpotToSpotConsolidation=true")`,
      );
    out[m[1]!] = m[2] === 'true';
  }
  return out;
}

function parsePort(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${what}: "${text}" is not a port (an integer 0–65535; 0 picks a free port)`);
  return n;
}

function parseBool(text: string, what: string): boolean {
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  throw new Error(`${what}: "${text}" is not a boolean (true or false)`);
}

const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error', 'silent']);

/**
 * Overlays the upstream environment variables present in `env` (`BATCH_IDLE_DURATION`, `BATCH_MAX_DURATION`,
 * `METRICS_PORT`, `HEALTH_PROBE_PORT`, `LOG_LEVEL`, `CLUSTER_NAME`, `LEADER_ELECT`, `FEATURE_GATES`,
 * `AWS_REGION`) on `base`. Called by the CLI with `process.env`; flags are applied afterwards and win.
 * @throws Error naming the variable and the accepted values.
 */
export function optionsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  base: OperatorOptions,
): OperatorOptions {
  const o: OperatorOptions = { ...base, featureGates: { ...base.featureGates } };
  const v = (k: string): string | undefined => {
    const x = env[k];
    return x === undefined || x === '' ? undefined : x;
  };
  const s = (k: string, f: (x: string) => void): void => {
    const x = v(k);
    if (x !== undefined) f(x);
  };
  s('BATCH_IDLE_DURATION', (x) => (o.batchIdleSeconds = parseSeconds(x, 'BATCH_IDLE_DURATION')));
  s('BATCH_MAX_DURATION', (x) => (o.batchMaxSeconds = parseSeconds(x, 'BATCH_MAX_DURATION')));
  s('METRICS_PORT', (x) => (o.metricsPort = parsePort(x, 'METRICS_PORT')));
  s('HEALTH_PROBE_PORT', (x) => (o.healthProbePort = parsePort(x, 'HEALTH_PROBE_PORT')));
  s('LOG_LEVEL', (x) => (o.logLevel = checkLogLevel(x, 'LOG_LEVEL')));
  s('CLUSTER_NAME', (x) => (o.clusterName = x));
  s('LEADER_ELECT', (x) => (o.leaderElect = parseBool(x, 'LEADER_ELECT')));
  s('FEATURE_GATES', (x) => (o.featureGates = parseFeatureGates(x, o.featureGates)));
  s('AWS_REGION', (x) => (o.region = x));
  s('PREFERENCE_POLICY', (x) => (o.preferencePolicy = parsePreferencePolicy(x, 'PREFERENCE_POLICY')));
  return validateOptions(o);
}

/** @throws Error when `level` is not a log level. */
export function checkLogLevel(level: string, what = '--log-level'): string {
  const l = level.toLowerCase();
  if (!LOG_LEVELS.has(l))
    throw new Error(`${what}: "${level}" is not one of debug, info, warn, error, silent`);
  return l;
}

/**
 * Checks cross-field rules (batch idle ≤ max, both > 0; ports valid); returns the options unchanged.
 * @throws Error naming the field and the fix.
 */
export function validateOptions(o: OperatorOptions): OperatorOptions {
  if (!(o.batchIdleSeconds > 0))
    throw new Error(`BATCH_IDLE_DURATION must be > 0 (got ${o.batchIdleSeconds}s)`);
  if (!(o.batchMaxSeconds > 0)) throw new Error(`BATCH_MAX_DURATION must be > 0 (got ${o.batchMaxSeconds}s)`);
  if (o.batchIdleSeconds > o.batchMaxSeconds)
    throw new Error(
      `BATCH_IDLE_DURATION (${o.batchIdleSeconds}s) must not exceed BATCH_MAX_DURATION (${o.batchMaxSeconds}s)`,
    );
  parsePort(String(o.metricsPort), 'METRICS_PORT');
  parsePort(String(o.healthProbePort), 'HEALTH_PROBE_PORT');
  if (!o.region) throw new Error('region must not be empty (e.g. us-east-1)');
  return o;
}

/**
 * Parses a preference policy (`Respect` or `Ignore`, upstream `--preference-policy`).
 * @throws Error naming `what` and the accepted values.
 */
export function parsePreferencePolicy(v: string, what: string): PreferencePolicy {
  if ((PreferencePolicies as readonly string[]).includes(v)) return v as PreferencePolicy;
  throw new Error(`${what} must be one of ${PreferencePolicies.join(', ')} (got "${v}")`);
}
