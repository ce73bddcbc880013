/**
 * Settings of the `aws` cloud provider, with upstream's names (aws/karpenter-provider-aws `pkg/operator/options`):
 * flag, environment variable, default, description, what it accepts, and a parser. The list has the same shape as
 * the operator's settings registry (`Setting` in `src/operator/settings.ts`: env, flag, key, description, default,
 * accepts, parse, boolean, group), so the registry plugs it in with one line; it is self-contained so the provider
 * does not depend on the operator. {@link resolveAwsSettings} resolves it on its own (tests, the benchmark).
 *
 * Region: `AWS_REGION` (upstream reads it through the SDK; capenter resolves it here so it is validated and shown).
 * Endpoints (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`) and credentials are left to the SDK's default chain.
 */

/** One setting (same shape as the operator registry's `Setting`). */
export interface AwsSetting<K extends string = string, T = unknown> {
  /** Environment variable, e.g. `CLUSTER_NAME`. */
  env: string;
  /** Flag without the dashes, e.g. `cluster-name`. */
  flag: string;
  /** Field of {@link AwsSettings} the parsed value goes to. */
  key: K;
  description: string;
  default: T;
  defaultText?: string;
  /** What values it accepts (shown in help, docs and errors). */
  accepts: string;
  /** @throws Error saying what is wrong with the text (the caller names the setting). */
  parse: (text: string) => T;
  /** A Go-style boolean flag (`--isolated-vpc` alone means true). */
  boolean?: boolean;
  /** Always `aws`. */
  group: 'aws';
}

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
  /** `ISOLATED_VPC`: no Pricing API (embedded prices) and no public endpoints. */
  isolatedVPC: boolean;
  /** `VM_MEMORY_OVERHEAD_PERCENT`: fraction of memory the hypervisor keeps (0.075 = 7.5%). */
  vmMemoryOverheadPercent: number;
  /** `RESERVED_ENIS`: ENIs kept out of the max-pods computation. */
  reservedENIs: number;
  /** `AWS_REGION`: region of the EC2 API; empty means the SDK's default chain decides. */
  region: string;
}

function parseBool(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['true', '1', 't', 'yes'].includes(t)) return true;
  if (['false', '0', 'f', 'no'].includes(t)) return false;
  throw new Error('not a boolean');
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

/** The aws provider's settings (upstream names and defaults). */
export const AWS_SETTINGS = [
  {
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
  } satisfies AwsSetting<'clusterName', string>,
  {
    env: 'CLUSTER_ENDPOINT',
    flag: 'cluster-endpoint',
    key: 'clusterEndpoint',
    description: 'the API server URL nodes join; discovered with EKS DescribeCluster when empty.',
    default: '',
    accepts: 'an http(s) URL, e.g. https://ABCD.gr7.us-west-2.eks.amazonaws.com',
    parse: parseURL,
    group: 'aws',
  } satisfies AwsSetting<'clusterEndpoint', string>,
  {
    env: 'CLUSTER_CA_BUNDLE',
    flag: 'cluster-ca-bundle',
    key: 'clusterCABundle',
    description:
      'the cluster CA (base64 PEM) written into user data; discovered with EKS DescribeCluster when empty.',
    default: '',
    accepts: 'base64 text',
    parse: parseBase64,
    group: 'aws',
  } satisfies AwsSetting<'clusterCABundle', string>,
  {
    env: 'INTERRUPTION_QUEUE',
    flag: 'interruption-queue',
    key: 'interruptionQueue',
    description:
      'SQS queue of EC2 interruption events (spot warnings, rebalance, scheduled changes, state changes); empty disables interruption handling.',
    default: '',
    accepts: 'an SQS queue name (letters, digits, "-", "_", at most 80 characters)',
    parse: parseName('queue name', 80),
    group: 'aws',
  } satisfies AwsSetting<'interruptionQueue', string>,
  {
    env: 'ISOLATED_VPC',
    flag: 'isolated-vpc',
    key: 'isolatedVPC',
    description:
      'the cluster has no internet access: on-demand prices come from the embedded table, not the Pricing API.',
    default: false,
    accepts: 'true or false',
    parse: parseBool,
    boolean: true,
    group: 'aws',
  } satisfies AwsSetting<'isolatedVPC', boolean>,
  {
    env: 'VM_MEMORY_OVERHEAD_PERCENT',
    flag: 'vm-memory-overhead-percent',
    key: 'vmMemoryOverheadPercent',
    description:
      "fraction of an instance type's memory subtracted from its capacity for the hypervisor and OS.",
    default: 0.075,
    accepts: 'a number from 0 up to (not including) 1, e.g. 0.075',
    parse: parseFraction,
    group: 'aws',
  } satisfies AwsSetting<'vmMemoryOverheadPercent', number>,
  {
    env: 'RESERVED_ENIS',
    flag: 'reserved-enis',
    key: 'reservedENIs',
    description: 'ENIs reserved for other uses, left out of the ENI-limited max pods.',
    default: 0,
    accepts: 'a non-negative integer',
    parse: parseCount,
    group: 'aws',
  } satisfies AwsSetting<'reservedENIs', number>,
  {
    env: 'AWS_REGION',
    flag: 'aws-region',
    key: 'region',
    description:
      "the AWS region of the cluster; empty leaves it to the SDK's default chain (profile, instance metadata).",
    default: '',
    accepts: 'an AWS region name, e.g. us-west-2',
    parse: parseRegion,
    group: 'aws',
  } satisfies AwsSetting<'region', string>,
] as const;

/** An invalid aws setting: names the setting and what it accepts. */
export class AwsSettingError extends Error {
  readonly code = 'InvalidSetting' as const;
  constructor(
    readonly setting: string,
    readonly source: string,
    readonly value: string,
    reason: string,
    accepts: string,
  ) {
    super(`${source}: "${value}" is not valid (${reason}); ${setting} accepts ${accepts}`);
    this.name = 'AwsSettingError';
  }
}

/**
 * Resolves {@link AWS_SETTINGS} from flags (camelCase keys, e.g. `clusterName`, as commander gives them) and an
 * environment map (flags win; empty variables count as unset), then applies the defaults.
 * @throws AwsSettingError naming the flag or variable, the value and what it accepts.
 */
export function resolveAwsSettings(src: {
  flags?: Readonly<Record<string, unknown>>;
  env?: Readonly<Record<string, string | undefined>>;
}): AwsSettings {
  const out: Record<string, unknown> = {};
  for (const s of AWS_SETTINGS as readonly AwsSetting[]) {
    const attr = s.flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    const f = src.flags?.[attr];
    const e = src.env?.[s.env];
    let raw: string | undefined;
    let source = '';
    if (f !== undefined && f !== false) {
      raw = f === true ? 'true' : String(f);
      source = `--${s.flag}`;
    } else if (e !== undefined && e !== '') {
      raw = e;
      source = s.env;
    }
    if (raw === undefined) {
      out[s.key] = s.default;
      continue;
    }
    try {
      out[s.key] = s.parse(raw);
    } catch (err) {
      throw new AwsSettingError(s.env, source, raw, (err as Error).message, s.accepts);
    }
  }
  return out as unknown as AwsSettings;
}

/**
 * Checks what the provider needs to launch: a cluster name.
 * @throws AwsSettingError when `clusterName` is empty.
 */
export function validateAwsSettings(s: AwsSettings): AwsSettings {
  if (!s.clusterName) {
    throw new AwsSettingError(
      'CLUSTER_NAME',
      '--cluster-name',
      '',
      'required with --cloud-provider aws',
      'a cluster name (letters, digits, "-", "_", ".", at most 100 characters)',
    );
  }
  return s;
}

/** Defaults for tests and the benchmark, with `overrides` applied. */
export function awsSettings(overrides: Partial<AwsSettings> = {}): AwsSettings {
  return { ...resolveAwsSettings({}), ...overrides };
}
