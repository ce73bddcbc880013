/**
 * Settings of the `aws` cloud provider, with upstream's names (aws/karpenter-provider-aws `pkg/operator/options`):
 * flag, environment variable, default, description, what it accepts, and a parser. The list is a settings registry
 * list (`Setting`, `src/config/settings.ts`, below the provider and the operator alike); the aws `ProviderModule`
 * (`./module.ts`) exposes it to `capenter controller` and the docs table. {@link resolveAwsSettings} resolves it on
 * its own (tests, the benchmark); invalid values throw the registry's `SettingError`.
 *
 * Region: `AWS_REGION` (upstream reads it through the SDK; capenter resolves it here so it is validated and shown).
 * Endpoints (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`) and credentials are left to the SDK's default chain.
 */
import {
  defineSetting,
  onlyDefault,
  parseBooleanWord,
  parseDuration,
  resolveSettings,
  SettingError,
  type SettingSources,
} from '../../config/settings.ts';

/** The resolved settings of the aws provider. */
export interface AwsSettings {
  /** `CLUSTER_NAME`: the cluster's name; tags every instance (`kubernetes.io/cluster/<name>=owned`). Required. */
  clusterName: string;
  /** `CLUSTER_ENDPOINT`: the API server URL written into user data; empty means discovered from EKS. */
  clusterEndpoint: string;
  /** `CLUSTER_CA_BUNDLE`: base64 PEM of the cluster CA written into user data; empty means discovered. */
  clusterCABundle: string;
  /** `INTERRUPTION_QUEUE`: SQS queue name for interruption events; empty disables interruption handling. */
  interruptionQueue: string;
  /**
   * `DISABLE_DRY_RUN`: the EC2NodeClass validation skips its EC2 authorization checks (upstream
   * `pkg/controllers/nodeclass/validation.go` `dryRunDisabled`).
   */
  disableDryRun: boolean;
  /** `ISOLATED_VPC`: no Pricing API (embedded prices) and no public endpoints. */
  isolatedVPC: boolean;
  /** `VM_MEMORY_OVERHEAD_PERCENT`: fraction of memory the hypervisor keeps (0.075 = 7.5%). */
  vmMemoryOverheadPercent: number;
  /** `RESERVED_ENIS`: ENIs kept out of the max-pods computation. */
  reservedENIs: number;
  /** `AWS_REGION`: region of the EC2 API; empty means the SDK's default chain decides. */
  region: string;
  /**
   * `EKS_CONTROL_PLANE`: `false` never calls EKS DescribeCluster (a non-EKS cluster: `CLUSTER_ENDPOINT` is required,
   * the CA comes from `CLUSTER_CA_BUNDLE`); `true` or unset (`undefined`) asks DescribeCluster for what is not set.
   */
  eksControlPlane: boolean | undefined;
  /** `AMI_REFRESH_INTERVAL` in seconds (upstream 1m, at least 1m). */
  amiRefreshSeconds: number;
  /** `SUBNET_REFRESH_INTERVAL` in seconds (upstream 1m, at least 1m). */
  subnetRefreshSeconds: number;
}

function parseFraction(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n)) throw new Error('not a number');
  if (n < 0 || n >= 1) throw new Error('must be at least 0 and less than 1');
  return n;
}

function parseCount(text: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(n) || n < 0) throw new Error('not a non-negative integer');
  return n;
}

function parseURL(text: string): string {
  const t = text.trim();
  let u: URL;
  try {
    u = new URL(t);
  } catch {
    throw new Error('not a URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('must be an http(s) URL');
  return t;
}

function parseBase64(text: string): string {
  const t = text.trim();
  if (!/^[A-Za-z0-9+/\s]*={0,2}$/.test(t)) throw new Error('not base64');
  return t;
}

function parseName(what: string, max: number): (text: string) => string {
  return (text: string) => {
    const t = text.trim();
    if (t === '') throw new Error(`empty ${what}`);
    if (t.length > max) throw new Error(`longer than ${max} characters`);
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(t)) {
      throw new Error(`${what} may contain only letters, digits, "-", "_" and "."`);
    }
    return t;
  };
}

function parseRegion(text: string): string {
  const t = text.trim();
  if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(t)) throw new Error('not an AWS region name');
  return t;
}

/** Seconds of a refresh interval, at least 1m (upstream's rule). @throws Error. */
function parseRefreshInterval(text: string): number {
  const seconds = parseDuration(text);
  if (seconds < 60) throw new Error('must be at least 1m');
  return seconds;
}

/** The aws provider's settings (upstream names and defaults). */
export const AWS_SETTINGS = [
  defineSetting({
    env: 'CLUSTER_NAME',
    flag: 'cluster-name',
    key: 'clusterName',
    description:
      'the cluster name; instances are tagged kubernetes.io/cluster/<name>=owned and user data joins it.',
    default: '',
    defaultText: '(required with --cloud-provider aws)',
    accepts: 'a cluster name (letters, digits, "-", "_", ".", at most 100 characters)',
    parse: parseName('cluster name', 100),
    group: 'aws',
  }),
  defineSetting({
    env: 'CLUSTER_ENDPOINT',
    flag: 'cluster-endpoint',
    key: 'clusterEndpoint',
    description: 'the API server URL nodes join; discovered with EKS DescribeCluster when empty.',
    default: '',
    accepts: 'an http(s) URL, e.g. https://ABCD.gr7.us-west-2.eks.amazonaws.com',
    parse: parseURL,
    group: 'aws',
  }),
  defineSetting({
    env: 'CLUSTER_CA_BUNDLE',
    flag: 'cluster-ca-bundle',
    key: 'clusterCABundle',
    description:
      "the cluster CA (base64 PEM) written into user data; when empty, the CA of the controller's kubeconfig (as upstream), else EKS DescribeCluster.",
    default: '',
    accepts: 'base64 text',
    parse: parseBase64,
    group: 'aws',
  }),
  defineSetting({
    env: 'INTERRUPTION_QUEUE',
    flag: 'interruption-queue',
    key: 'interruptionQueue',
    description:
      'SQS queue of EC2 interruption events (spot warnings, rebalance, scheduled changes, state changes); empty disables interruption handling.',
    default: '',
    accepts: 'an SQS queue name (letters, digits, "-", "_", at most 80 characters)',
    parse: parseName('queue name', 80),
    group: 'aws',
  }),
  defineSetting({
    env: 'ISOLATED_VPC',
    flag: 'isolated-vpc',
    key: 'isolatedVPC',
    description:
      'the cluster has no internet access: on-demand prices come from the embedded table, not the Pricing API.',
    default: false,
    accepts: 'true or false',
    parse: parseBooleanWord,
    boolean: true,
    group: 'aws',
  }),
  defineSetting({
    env: 'VM_MEMORY_OVERHEAD_PERCENT',
    flag: 'vm-memory-overhead-percent',
    key: 'vmMemoryOverheadPercent',
    description:
      "fraction of an instance type's memory subtracted from its capacity for the hypervisor and OS.",
    default: 0.075,
    accepts: 'a number from 0 up to (not including) 1, e.g. 0.075',
    parse: parseFraction,
    group: 'aws',
  }),
  defineSetting({
    env: 'RESERVED_ENIS',
    flag: 'reserved-enis',
    key: 'reservedENIs',
    description: 'ENIs reserved for other uses, left out of the ENI-limited max pods.',
    default: 0,
    accepts: 'a non-negative integer',
    parse: parseCount,
    group: 'aws',
  }),
  defineSetting({
    env: 'AWS_REGION',
    flag: 'aws-region',
    key: 'region',
    description:
      "the AWS region of the cluster; empty leaves it to the SDK's default chain (profile, instance metadata).",
    default: '',
    accepts: 'an AWS region name, e.g. us-west-2',
    parse: parseRegion,
    group: 'aws',
  }),
  defineSetting({
    env: 'EKS_CONTROL_PLANE',
    flag: 'eks-control-plane',
    key: 'eksControlPlane',
    description:
      'false: the cluster is not EKS, never call EKS DescribeCluster (CLUSTER_ENDPOINT is then required); true or unset: DescribeCluster finds the endpoint/CA not set.',
    default: undefined as boolean | undefined,
    defaultText: '(unset)',
    accepts: 'true or false',
    parse: parseBooleanWord,
    boolean: true,
    group: 'aws',
  }),
  defineSetting({
    env: 'DISABLE_DRY_RUN',
    flag: 'disable-dry-run',
    key: 'disableDryRun',
    description:
      'skip the EC2 authorization checks of EC2NodeClass validation (its launch template, DryRun CreateFleet and RunInstances); ValidationSucceeded is then set without them.',
    default: false,
    accepts: 'true or false',
    parse: parseBooleanWord,
    boolean: true,
    group: 'aws',
  }),
  defineSetting({
    env: 'AMI_REFRESH_INTERVAL',
    flag: 'ami-refresh-interval',
    key: 'amiRefreshSeconds',
    description:
      'how often AMIs are looked up again; EC2NodeClasses are re-resolved every min(AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL).',
    default: 60,
    defaultText: '1m',
    accepts: 'a duration of at least 1m, e.g. "5m"',
    parse: parseRefreshInterval,
    group: 'aws',
  }),
  defineSetting({
    env: 'SUBNET_REFRESH_INTERVAL',
    flag: 'subnet-refresh-interval',
    key: 'subnetRefreshSeconds',
    description: 'how often subnets (and security groups) are looked up again; see AMI_REFRESH_INTERVAL.',
    default: 60,
    defaultText: '1m',
    accepts: 'a duration of at least 1m, e.g. "5m"',
    parse: parseRefreshInterval,
    group: 'aws',
  }),
] as const;

/**
 * Upstream aws settings capenter accepts without acting on them, or only at upstream's default (aws/karpenter-
 * provider-aws v1.14.1 `pkg/operator/options/options.go`); resolved for their warnings and refusals only.
 */
export const AWS_UPSTREAM_ONLY_SETTINGS = [
  defineSetting({
    env: 'ENABLE_ZONAL_SHIFT',
    flag: 'enable-zonal-shift',
    key: 'enableZonalShift',
    description: 'upstream: avoid zones under an ARC zonal shift. Not implemented: only false',
    default: false,
    accepts: 'false (true is refused: not implemented)',
    parse: onlyDefault(parseBooleanWord, false, 'zonal shift is not supported'),
    boolean: true,
    group: 'aws',
  }),
] as const;

/**
 * Resolves {@link AWS_SETTINGS} from flags (camelCase keys, e.g. `clusterName`, as commander gives them) and an
 * environment map (flags win; empty variables count as unset), then applies the defaults.
 * @throws SettingError naming the flag or variable, the value and what it accepts.
 */
export function resolveAwsSettings(src: SettingSources): AwsSettings {
  resolveSettings(AWS_UPSTREAM_ONLY_SETTINGS, src); // warnings and refusals only
  return resolveSettings(AWS_SETTINGS, src);
}

/**
 * Checks what the provider needs to launch: a cluster name, and an endpoint when DescribeCluster is off.
 * @throws SettingError when `clusterName` is empty, or `clusterEndpoint` is with `EKS_CONTROL_PLANE=false`.
 */
export function validateAwsSettings(s: AwsSettings): AwsSettings {
  if (!s.clusterName) {
    throw new SettingError(
      'CLUSTER_NAME',
      '--cluster-name',
      '',
      'required with --cloud-provider aws',
      'a cluster name (letters, digits, "-", "_", ".", at most 100 characters)',
    );
  }
  if (s.eksControlPlane === false && !s.clusterEndpoint) {
    throw new SettingError(
      'CLUSTER_ENDPOINT',
      'CLUSTER_ENDPOINT',
      '',
      'required with EKS_CONTROL_PLANE=false, which never asks EKS DescribeCluster',
      'an http(s) URL, e.g. https://ABCD.gr7.us-west-2.eks.amazonaws.com',
    );
  }
  return s;
}

/** Defaults for tests and the benchmark, with `overrides` applied. */
export function awsSettings(overrides: Partial<AwsSettings> = {}): AwsSettings {
  return { ...resolveAwsSettings({}), ...overrides };
}
