/**
 * The region from the EC2 instance metadata service, as upstream asks it when no region is configured
 * (aws/karpenter-provider-aws `pkg/operator/operator.go`: `imds.NewFromConfig(cfg).GetRegion`, which reads
 * `/latest/meta-data/placement/region` with an IMDSv2 session token). The endpoint is the SDK's:
 * `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else `http://169.254.169.254`; `AWS_EC2_METADATA_DISABLED=true` turns it off.
 */

/** Where and how to ask the instance metadata service. */
export interface IMDSOptions {
  /** Base URL, e.g. `http://169.254.169.254` (the SDK's `AWS_EC2_METADATA_SERVICE_ENDPOINT`). */
  endpoint: string;
  /** `AWS_EC2_METADATA_DISABLED=true`: never ask. */
  disabled?: boolean;
  /** Milliseconds each request may take (default 2000). */
  timeoutMs?: number;
}

/** The IMDS options of an environment (the SDK's variables). */
export function imdsOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): IMDSOptions {
  return {
    endpoint: env.AWS_EC2_METADATA_SERVICE_ENDPOINT || 'http://169.254.169.254',
    disabled: (env.AWS_EC2_METADATA_DISABLED ?? '').toLowerCase() === 'true',
  };
}

/**
 * The instance's region (`us-west-2`): an IMDSv2 token (PUT `/latest/api/token`), then GET
 * `/latest/meta-data/placement/region` with it; without a token when the service refuses to issue one (IMDSv1).
 * @throws Error `unable to determine the region from the instance metadata service (<endpoint>): <why>; set
 * AWS_REGION (or --region)`.
 */
export async function regionFromIMDS(o: IMDSOptions): Promise<string> {
  const base = o.endpoint.replace(/\/+$/, '');
  const fail = (why: string): Error =>
    new Error(
      `unable to determine the region from the instance metadata service (${base}): ${why}; set AWS_REGION (or --region)`,
    );
  if (o.disabled) throw fail('AWS_EC2_METADATA_DISABLED=true');
  const timeout = o.timeoutMs ?? 2000;
  try {
    const headers: Record<string, string> = {};
    const token = await fetch(`${base}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '21600' },
      signal: AbortSignal.timeout(timeout),
    });
    if (token.ok) headers['x-aws-ec2-metadata-token'] = await token.text();
    const res = await fetch(`${base}/latest/meta-data/placement/region`, {
      headers,
      signal: AbortSignal.timeout(timeout),
    });
    const text = (await res.text()).trim();
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(text)) throw new Error(`"${text.slice(0, 40)}" is not a region`);
    return text;
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    throw fail(e.cause?.code ? `${e.cause.code}` : e.message);
  }
}
