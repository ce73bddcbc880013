/**
 * Operator options: the settings upstream Karpenter takes as flags / environment variables
 * (kubernetes-sigs/karpenter `pkg/operator/options/options.go`, aws/karpenter-provider-aws
 * `pkg/operator/options/options.go`), declared once in {@link CORE_SETTINGS} and resolved into one plain
 * {@link OperatorOptions} object. Only the CLI layer reads flags and `process.env` (see
 * {@link resolveOperatorOptions}); library code receives an {@link OperatorOptions}. The full table, with the
 * settings of providers, is {@link SETTINGS}; `docs/settings.md` is generated from it.
 */
import {
  checkSettingList,
  closestName,
  defineSetting,
  oneOf,
  parseBoolean,
  parseDuration,
  parseNonEmpty,
  parsePortNumber,
  parsePositiveInteger,
  parsePositiveNumber,
  resolveSettings,
  type Setting,
  type SettingSources,
} from '../config/settings.ts';
import { UPSTREAM_ONLY_SETTINGS } from './upstream-settings.ts';

/** How the scheduler treats preferred affinities and `ScheduleAnyway` spreads (upstream `PREFERENCE_POLICY`). */
export type PreferencePolicy = 'Respect' | 'Ignore';
/** How the scheduler treats `minValues` it cannot satisfy (upstream `MIN_VALUES_POLICY`). */
export type MinValuesPolicy = 'Strict' | 'BestEffort';

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
  /** `LOG_LEVEL`: `debug`, `info`, `warn`, `error`, `silent` (upstream default `info`). */
  logLevel: string;
  /** `LOG_OUTPUT_PATHS`: where JSON logs go, `stdout`, `stderr` or files (capenter default `stderr`; upstream `stdout`). */
  logOutputPaths: string[];
  /** `CLUSTER_NAME`: name of the cluster (tags, discovery; default `cluster-1` in embedded mode). */
  clusterName: string;
  /** Run controllers only while holding the leader Lease (`DISABLE_LEADER_ELECTION=true` turns it off). */
  leaderElect: boolean;
  /** `LEADER_ELECTION_NAME`: Lease name (upstream `karpenter-leader-election`). */
  leaderElectionName: string;
  /** `LEADER_ELECTION_NAMESPACE`: Lease namespace (upstream: the pod's namespace; `kube-system` here). */
  leaderElectionNamespace: string;
  /** Leader election timings in seconds (client-go / upstream: 15 / 10 / 2). */
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
  /** `FEATURE_GATES`: parsed `Name=true,Other=false` over {@link DEFAULT_FEATURE_GATES}. */
  featureGates: Record<string, boolean>;
  /** `PREFERENCE_POLICY`: `Respect` (default) or `Ignore` preferred scheduling terms. */
  preferencePolicy: PreferencePolicy;
  /** `MIN_VALUES_POLICY`: `Strict` (default) or `BestEffort` relaxation of `minValues`. */
  minValuesPolicy: MinValuesPolicy;
  /** `KUBE_CLIENT_QPS`: sustained requests per second to the API server (upstream 200). */
  kubeClientQPS: number;
  /** `KUBE_CLIENT_BURST`: requests allowed above the QPS in a burst (upstream 300). */
  kubeClientBurst: number;
  /** AWS region whose catalog the kwok provider simulates (`AWS_REGION`; default `us-east-1`). */
  region: string;
  /** Seconds the garbage collection waits between passes (upstream 120). */
  gcPeriodSeconds: number;
  /** Seconds between metrics-controller passes (upstream 5 s for node metrics). */
  metricsPeriodSeconds: number;
}

/** The feature gates capenter implements, with upstream's defaults (the rest: {@link UPSTREAM_FEATURE_GATES}). */
export const DEFAULT_FEATURE_GATES: Readonly<Record<string, boolean>> = {
  SpotToSpotConsolidation: false,
  NodeRepair: false,
  StaticCapacity: false,
  /** Alpha: apply `karpenter.sh/v1alpha1` NodeOverlays to instance types (upstream default off). */
  NodeOverlay: false,
  /**
   * Beta: capacity reservations (aws `capacityReservationSelectorTerms`, `reserved` offerings and launches;
   * upstream default on).
   */
  ReservedCapacity: true,
};

const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/**
 * Upstream v1.14.1's feature gates and their defaults, in the order of its default `FEATURE_GATES` string
 * (kubernetes-sigs/karpenter `pkg/operator/options/options.go`, `DefaultFeatureGates`). Capenter implements the
 * gates of {@link DEFAULT_FEATURE_GATES}; {@link parseFeatureGates} accepts the others as false, or at upstream's
 * default true with a warning.
 */
export const UPSTREAM_FEATURE_GATES: Readonly<Record<string, boolean>> = {
  NodeRepair: false,
  ReservedCapacity: true,
  SpotToSpotConsolidation: false,
  NodeOverlay: false,
  StaticCapacity: false,
  CapacityBuffer: false,
};

/** Upstream's default `FEATURE_GATES` string, exactly as its options.go defaults it. */
export const UPSTREAM_FEATURE_GATES_TEXT =
  'NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false';

/**
 * Parses `FEATURE_GATES` (`A=true,B=false`) over `base`. A gate of {@link DEFAULT_FEATURE_GATES} (implemented) takes
 * either value. An upstream gate capenter does not implement ({@link UPSTREAM_FEATURE_GATES} only) is left out of the
 * result: `false` is accepted, `true` only when it is upstream's default (with a `warn`ing that capenter runs as
 * false; no such gate is left since `ReservedCapacity` is implemented) and refused otherwise.
 * @throws Error naming the malformed entry, the gate that is not implemented, or the unknown gate and the closest
 * known name.
 */
export function parseFeatureGates(
  text: string,
  base: Readonly<Record<string, boolean>> = DEFAULT_FEATURE_GATES,
  warn: (message: string) => void = () => {},
): Record<string, boolean> {
  const out = { ...base };
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z0-9]+)=(true|false)$/i.exec(part);
    if (!m) throw new Error(`"${part}" is not Name=true|false`);
    const [name, value] = [m[1]!, m[2]!.toLowerCase() === 'true'];
    if (name in DEFAULT_FEATURE_GATES) out[name] = value;
    else if (name in UPSTREAM_FEATURE_GATES) checkUnimplementedGate(name, value, warn);
    else throw new Error(unknownGateMessage(name));
  }
  return out;
}

/**
 * An upstream gate capenter does not implement: `false` is what capenter does and is accepted; `true` is accepted
 * with a warning when it is upstream's default, so upstream's default string loads.
 * @throws Error for `true` otherwise.
 */
function checkUnimplementedGate(name: string, value: boolean, warn: (message: string) => void): void {
  if (!value) return;
  if (!UPSTREAM_FEATURE_GATES[name])
    throw new Error(`feature gate ${name} is not implemented in capenter; set ${name}=false or leave it out`);
  warn(`feature gate ${name}=true has no effect in capenter (it runs as ${name}=false)`);
}

/** `unknown feature gate "X"; did you mean Y?` (or the list of known gates when none is close). */
function unknownGateMessage(name: string): string {
  const known = [...new Set([...Object.keys(DEFAULT_FEATURE_GATES), ...Object.keys(UPSTREAM_FEATURE_GATES)])];
  const near = closestName(name, known);
  return near
    ? `unknown feature gate "${name}"; did you mean ${near}?`
    : `unknown feature gate "${name}" (known: ${known.join(', ')})`;
}

/** `a,b` → `['a', 'b']` (trimmed, empty entries dropped). @throws Error when no path is left. */
function parsePathList(text: string): string[] {
  const paths = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (paths.length === 0) throw new Error('no path');
  return paths;
}

const DURATION = 'a duration such as "1s", "100ms", "1m30s", or a number of seconds';
const PORT = 'a port number 0–65535 (0 picks a free port)';

/**
 * The core settings, as upstream names them. Each writes the {@link OperatorOptions} field named by `key`.
 */
export const CORE_SETTINGS = [
  defineSetting({
    env: 'BATCH_IDLE_DURATION',
    flag: 'batch-idle-duration',
    key: 'batchIdleSeconds',
    description: 'seconds without a new pending pod that close a provisioning batch',
    default: 1,
    defaultText: '1s',
    accepts: DURATION,
    parse: parseDuration,
  }),
  defineSetting({
    env: 'BATCH_MAX_DURATION',
    flag: 'batch-max-duration',
    key: 'batchMaxSeconds',
    description: 'longest a provisioning batch stays open',
    default: 10,
    defaultText: '10s',
    accepts: DURATION,
    parse: parseDuration,
  }),
  defineSetting({
    env: 'LOG_LEVEL',
    flag: 'log-level',
    key: 'logLevel',
    description: 'log level of the JSON logs on stderr',
    default: 'info' as string,
    accepts: LOG_LEVELS.join(', '),
    parse: oneOf(LOG_LEVELS),
  }),
  defineSetting({
    env: 'LOG_OUTPUT_PATHS',
    flag: 'log-output-paths',
    key: 'logOutputPaths',
    description: 'where the JSON logs go, each line to every path (upstream defaults to stdout)',
    default: ['stderr'] as string[],
    defaultText: 'stderr',
    accepts: 'comma-separated stdout, stderr or file paths',
    parse: parsePathList,
  }),
  defineSetting({
    env: 'METRICS_PORT',
    flag: 'metrics-port',
    key: 'metricsPort',
    description: 'port of the Prometheus /metrics endpoint',
    default: 8080,
    accepts: PORT,
    parse: parsePortNumber,
  }),
  defineSetting({
    env: 'HEALTH_PROBE_PORT',
    flag: 'health-probe-port',
    key: 'healthProbePort',
    description: 'port of /healthz and /readyz',
    default: 8081,
    accepts: PORT,
    parse: parsePortNumber,
  }),
  defineSetting({
    env: 'FEATURE_GATES',
    flag: 'feature-gates',
    key: 'featureGates',
    description: 'feature gates to turn on or off',
    default: { ...DEFAULT_FEATURE_GATES } as Record<string, boolean>,
    defaultText: Object.entries(DEFAULT_FEATURE_GATES)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    accepts: `comma-separated Name=true|false of ${Object.keys(DEFAULT_FEATURE_GATES).join(', ')} (upstream's ${Object.keys(
      UPSTREAM_FEATURE_GATES,
    )
      .filter((g) => !(g in DEFAULT_FEATURE_GATES))
      .join(', ')} only =false, or =true with a warning where that is upstream's default)`,
    parse: (t, warn) => parseFeatureGates(t, DEFAULT_FEATURE_GATES, warn),
  }),
  defineSetting({
    env: 'PREFERENCE_POLICY',
    flag: 'preference-policy',
    key: 'preferencePolicy',
    description:
      'whether preferred affinities and ScheduleAnyway spreads shape the plan (Respect) or not (Ignore)',
    default: 'Respect' as PreferencePolicy,
    accepts: 'Respect, Ignore',
    parse: oneOf<PreferencePolicy>(['Respect', 'Ignore']),
  }),
  defineSetting({
    env: 'MIN_VALUES_POLICY',
    flag: 'min-values-policy',
    key: 'minValuesPolicy',
    description:
      'what happens when a NodeClaim\'s instance types cannot meet a requirement\'s minValues: Strict does not create it (the pod stays pending); BestEffort lowers that minValues to what they offer and annotates the NodeClaim karpenter.sh/nodeclaim-min-values-relaxed: "true" (also in disruption simulations)',
    default: 'Strict' as MinValuesPolicy,
    accepts: 'Strict, BestEffort',
    parse: oneOf<MinValuesPolicy>(['Strict', 'BestEffort']),
  }),
  defineSetting({
    env: 'KUBE_CLIENT_QPS',
    flag: 'kube-client-qps',
    key: 'kubeClientQPS',
    description: 'sustained requests per second to the Kubernetes API server',
    default: 200,
    accepts: 'a positive number',
    parse: parsePositiveNumber,
  }),
  defineSetting({
    env: 'KUBE_CLIENT_BURST',
    flag: 'kube-client-burst',
    key: 'kubeClientBurst',
    description: 'requests to the Kubernetes API server allowed in a burst above the QPS',
    default: 300,
    accepts: 'a positive integer',
    parse: parsePositiveInteger,
  }),
  defineSetting({
    env: 'DISABLE_LEADER_ELECTION',
    flag: 'disable-leader-election',
    key: 'leaderElect',
    description: 'run the controllers without holding the leader Lease (one replica only)',
    default: true,
    defaultText: 'false',
    accepts: 'true or false',
    boolean: true,
    parse: (t) => !parseBoolean(t),
  }),
  defineSetting({
    env: 'LEADER_ELECTION_NAME',
    flag: 'leader-election-name',
    key: 'leaderElectionName',
    description: 'name of the leader-election Lease',
    default: 'karpenter-leader-election',
    accepts: 'a Lease name',
    parse: parseNonEmpty,
  }),
  defineSetting({
    env: 'LEADER_ELECTION_NAMESPACE',
    flag: 'leader-election-namespace',
    key: 'leaderElectionNamespace',
    description: 'namespace of the leader-election Lease (the chart sets the release namespace)',
    default: 'kube-system',
    accepts: 'a namespace name',
    parse: parseNonEmpty,
  }),
  defineSetting({
    env: 'CLUSTER_NAME',
    flag: 'cluster-name',
    key: 'clusterName',
    description: 'name of the cluster (instance tags and discovery)',
    default: 'cluster-1',
    accepts: 'a cluster name',
    parse: parseNonEmpty,
    group: 'aws',
  }),
  defineSetting({
    env: 'AWS_REGION',
    flag: 'region',
    key: 'region',
    description:
      'AWS region (the kwok provider simulates its catalog and prices; unset, the aws provider asks the instance metadata service)',
    default: 'us-east-1',
    accepts: 'an AWS region such as us-east-1',
    parse: parseNonEmpty,
    group: 'aws',
  }),
] as const;

/**
 * Every setting capenter reads: the core ones, then those of providers and the scheduler (each plugs its
 * `Setting[]` in with one line here).
 */
export const SETTINGS: readonly Setting[] = [
  ...CORE_SETTINGS,
  ...UPSTREAM_ONLY_SETTINGS,
  // ...AWS_SETTINGS (src/cloudprovider/aws/settings.ts), ...
];
checkSettingList(SETTINGS);

/** Upstream defaults (metrics on 8080, health on 8081, batch 1 s / 10 s, leader election on). */
export function defaultOptions(): OperatorOptions {
  return {
    ...resolveSettings(CORE_SETTINGS, {}),
    bindAddress: '0.0.0.0',
    leaseDurationSeconds: 15,
    renewDeadlineSeconds: 10,
    retryPeriodSeconds: 2,
    gcPeriodSeconds: 120,
    metricsPeriodSeconds: 5,
  };
}

/** Embedded-mode defaults: like {@link defaultOptions} but random loopback ports. */
export function embeddedOptions(): OperatorOptions {
  return { ...defaultOptions(), metricsPort: 0, healthProbePort: 0, bindAddress: '127.0.0.1' };
}

/**
 * Resolves the core settings from flags and environment over `base` (flags win over variables, which win over
 * `base`), then checks the cross-field rules ({@link validateOptions}).
 * @throws SettingError naming the setting, the value and what it accepts; Error for a cross-field rule.
 */
export function resolveOperatorOptions(
  src: SettingSources,
  base: OperatorOptions = defaultOptions(),
): OperatorOptions {
  const values = resolveSettings(CORE_SETTINGS, src, base as unknown as Record<string, unknown>);
  resolveSettings(UPSTREAM_ONLY_SETTINGS, src); // warnings and refusals only
  return validateOptions({ ...base, ...values });
}

/**
 * Overlays the upstream environment variables present in `env` on `base` (no flags).
 * @throws SettingError naming the variable and what it accepts.
 */
export function optionsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  base: OperatorOptions,
): OperatorOptions {
  return resolveOperatorOptions({ env }, base);
}

/**
 * Checks cross-field rules (batch idle ≤ max, both > 0; ports valid); returns the options unchanged.
 * @throws Error naming the settings and the fix.
 */
export function validateOptions(o: OperatorOptions): OperatorOptions {
  if (!(o.batchIdleSeconds > 0))
    throw new Error(`BATCH_IDLE_DURATION must be > 0 (got ${o.batchIdleSeconds}s)`);
  if (!(o.batchMaxSeconds > 0)) throw new Error(`BATCH_MAX_DURATION must be > 0 (got ${o.batchMaxSeconds}s)`);
  if (o.batchIdleSeconds > o.batchMaxSeconds)
    throw new Error(
      `BATCH_IDLE_DURATION (${o.batchIdleSeconds}s) must not exceed BATCH_MAX_DURATION (${o.batchMaxSeconds}s)`,
    );
  parsePortNumber(String(o.metricsPort));
  parsePortNumber(String(o.healthProbePort));
  if (!o.region) throw new Error('AWS_REGION must not be empty (e.g. us-east-1)');
  return o;
}

/**
 * Checks a log level (for commands that take `--log-level` outside the registry, e.g. `start`).
 * @throws Error naming `what` and the accepted levels.
 */
export function checkLogLevel(level: string, what = '--log-level'): string {
  const l = level.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(l))
    throw new Error(`${what}: "${level}" is not one of ${LOG_LEVELS.join(', ')}`);
  return l;
}

/**
 * Parses a preference policy (`Respect` or `Ignore`, upstream `--preference-policy`).
 * @throws Error naming `what` and the accepted values.
 */
export function parsePreferencePolicy(v: string, what: string): PreferencePolicy {
  if (v === 'Respect' || v === 'Ignore') return v;
  throw new Error(`${what} must be one of Respect, Ignore (got "${v}")`);
}
