/**
 * The AWS SDK v3 clients the aws provider uses, built in one place. Endpoint and credentials: when `endpoint` /
 * `credentials` are given (tests, the emulator) they are used; otherwise the SDK's own default chain applies
 * (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`, profiles, IRSA/Pod Identity, instance metadata): capenter
 * never reads credentials itself and never logs them.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { EKSClient } from '@aws-sdk/client-eks';
import { IAMClient } from '@aws-sdk/client-iam';
import { PricingClient } from '@aws-sdk/client-pricing';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { AwsCallHealth, type MiddlewareClient } from './callhealth.ts';
import type { AwsCredentialIdentityProvider } from './identity.ts';

/** The clients of one provider. */
export interface AwsClients {
  ec2: EC2Client;
  ssm: SSMClient;
  sqs: SQSClient;
  iam: IAMClient;
  pricing: PricingClient;
  eks: EKSClient;
  /** What the calls say about readiness (no credentials, refused, unreachable); see `./callhealth.ts`. */
  health?: AwsCallHealth;
  /** Closes every client's sockets. */
  destroy(): void;
}

/** Options of {@link createAwsClients}. */
export interface AwsClientOptions {
  /** Region of EC2/SSM/SQS/EKS; undefined = the SDK's default chain. */
  region?: string;
  /** One endpoint for every service (an emulator); undefined = the SDK's default (incl. `AWS_ENDPOINT_URL`). */
  endpoint?: string;
  /**
   * Static credentials (emulator only) or a credential provider (a CAPA cluster identity, `./identity.ts`);
   * undefined = the SDK's default chain.
   */
  credentials?:
    | { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
    | AwsCredentialIdentityProvider;
  /** SDK attempts per call (default 3, the SDK's default; throttling errors are retried with backoff). */
  maxAttempts?: number;
  /** Seconds to open a connection before the attempt fails (default 30, the dial timeout of aws-sdk-go-v2). */
  connectTimeoutSeconds?: number;
  /**
   * Seconds one attempt (request and whole response) may take before it fails with a `TimeoutError`, retried as a
   * transient error (default 120). The SDK's own default is none: an endpoint that accepts the request and never
   * answers would hold the reconcile (and an operator's shutdown, which waits for it) forever.
   */
  requestTimeoutSeconds?: number;
}

/**
 * The region of the Pricing API for `region`: the Pricing API lives in us-east-1, ap-south-1 and eu-central-1 only
 * (upstream `pricing.PricingAPIRegion`: `ap-` → ap-south-1, `cn-` → cn-northwest-1, `eu-`/`me-`/`af-` → eu-central-1,
 * otherwise us-east-1).
 */
export function pricingRegion(region: string): string {
  if (region.startsWith('ap-')) return 'ap-south-1';
  if (region.startsWith('cn-')) return 'cn-northwest-1';
  if (region.startsWith('eu-') || region.startsWith('me-') || region.startsWith('af-')) return 'eu-central-1';
  return 'us-east-1';
}

/** Builds the clients (no network I/O until the first call). */
export function createAwsClients(opts: AwsClientOptions = {}): AwsClients {
  const base = {
    ...(opts.region ? { region: opts.region } : {}),
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
    maxAttempts: opts.maxAttempts ?? 3,
    requestHandler: {
      connectionTimeout: (opts.connectTimeoutSeconds ?? 30) * 1000,
      requestTimeout: (opts.requestTimeoutSeconds ?? 120) * 1000,
      throwOnRequestTimeout: true,
    },
  };
  const ec2 = new EC2Client(base);
  const ssm = new SSMClient(base);
  const sqs = new SQSClient(base);
  const iam = new IAMClient(base);
  const eks = new EKSClient(base);
  const pricing = new PricingClient({ ...base, region: pricingRegion(opts.region ?? 'us-east-1') });
  const health = new AwsCallHealth();
  for (const [c, service] of [
    [ec2, 'EC2'],
    [ssm, 'SSM'],
    [sqs, 'SQS'],
    [iam, 'IAM'],
    [eks, 'EKS'],
    [pricing, 'Pricing'],
  ] as const)
    health.watch(c as unknown as MiddlewareClient, service);
  return {
    health,
    ec2,
    ssm,
    sqs,
    iam,
    pricing,
    eks,
    destroy() {
      for (const c of [ec2, ssm, sqs, iam, eks, pricing]) c.destroy();
    },
  };
}
