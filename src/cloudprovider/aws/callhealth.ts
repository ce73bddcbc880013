/**
 * What the aws provider's AWS calls say about the controller's readiness (issue 26 item 7): a controller without
 * credentials, with refused credentials or with an unreachable endpoint is not ready, and `/readyz` says which of
 * the three and the fix, instead of answering 200 while every call fails. One SDK middleware per client records
 * each call's final outcome (after the SDK's retries); a later successful call of the same service clears it.
 * Errors of single calls (throttling, validation, a missing IAM permission for one action) are not readiness
 * problems: they are the call's own error. Upstream Karpenter has no such check (its `/readyz` is the
 * controller-runtime ping); this is capenter's addition, on the same endpoint.
 */

/** The minimal client surface capenter's SDK middlewares need (every SDK v3 client has it; also `./sdkmetrics.ts`). */
export interface MiddlewareClient {
  middlewareStack: {
    add(
      mw: (
        next: (args: unknown) => Promise<unknown>,
        ctx: { commandName?: string },
      ) => (args: unknown) => Promise<unknown>,
      options: { step: 'initialize' | 'build' | 'deserialize'; name: string; override?: boolean },
    ): void;
  };
}

/** Error codes of a request that got no answer (a connection never made, reset, or timed out). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'ETIMEDOUT',
]);
/** AWS error names of credentials the service refused (not a missing permission for one action). */
const REFUSED = new Set([
  'AuthFailure',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'ExpiredTokenException',
  'UnrecognizedClientException',
  'InvalidAccessKeyId',
]);

/** Where the build-step middleware leaves the request's URL for the initialize-step one (the call's context). */
const URL_KEY = '__capenterRequestURL';
type UrlContext = { [URL_KEY]?: string };

/** The URL of an SDK `HttpRequest` (`protocol//hostname:port`), or undefined. */
function urlOf(args: unknown): string | undefined {
  const r = (args as { request?: { protocol?: string; hostname?: string; port?: number } } | undefined)
    ?.request;
  if (!r?.hostname) return undefined;
  return `${r.protocol ?? 'https:'}//${r.hostname}${r.port ? `:${r.port}` : ''}`;
}

/**
 * Why `err` (from an AWS SDK v3 call of `service`'s `command` to `url`) means the controller cannot use AWS at
 * all, in words naming the fix; undefined for an error of the call alone.
 */
export function awsReadinessProblem(
  err: unknown,
  service: string,
  command: string,
  url?: string,
): string | undefined {
  const e = err as { name?: string; code?: string; message?: string };
  const call = `${service} ${command.replace(/Command$/, '')}`;
  if (e?.name === 'CredentialsProviderError')
    return (
      `no AWS credentials (${call}): the SDK's default chain found none — set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ` +
      `AWS_PROFILE, IRSA or EKS Pod Identity on the ServiceAccount, or run where instance metadata gives a role ` +
      `(${e.message ?? 'Could not load credentials from any providers'})`
    );
  if ((e?.code && UNREACHABLE.has(e.code)) || e?.name === 'TimeoutError') {
    const what =
      e.code === 'ECONNREFUSED'
        ? 'connection refused'
        : e.code === 'ENOTFOUND'
          ? 'host not found'
          : (e.code ?? 'timed out');
    return `cannot reach the AWS API (${call}): ${what} to ${url ?? 'the endpoint'} — check AWS_ENDPOINT_URL, the region and the network path`;
  }
  if (e?.name && REFUSED.has(e.name))
    return `AWS refused the controller's credentials (${call}: ${e.name}): fix or rotate them (${e.message ?? ''})`;
  return undefined;
}

/** Seconds between two connectivity probes while no call has worked yet or a problem persists. */
export const ProbeEverySeconds = 10;

/** See the module doc. */
export class AwsCallHealth {
  private readonly problems = new Map<string, string>();
  /** A call of any service has completed (worked or failed) since start. */
  private seen = false;
  private probing = false;
  private lastProbe = Number.NEGATIVE_INFINITY;

  /** `now` in ms (the operator's clock in the controller; the wall clock by default). */
  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Adds the recording middleware to `client` (calls of `service`, e.g. `EC2`). The middleware rethrows every
   * error unchanged, after giving an unreachable endpoint's error the URL it could not reach.
   */
  watch(client: MiddlewareClient, service: string): void {
    // initialize: around the whole call (credentials are resolved before the request is built); build: the URL
    client.middlewareStack.add(
      (next, ctx) => async (args) => {
        try {
          const out = await next(args);
          this.seen = true;
          this.problems.delete(service);
          return out;
        } catch (err) {
          this.seen = true;
          const url = (ctx as UrlContext)[URL_KEY];
          const problem = awsReadinessProblem(err, service, ctx.commandName ?? 'call', url);
          if (problem) this.problems.set(service, problem);
          const e = err as { code?: string; message?: string };
          if (
            url &&
            e?.code &&
            UNREACHABLE.has(e.code) &&
            typeof e.message === 'string' &&
            !e.message.includes(url)
          )
            e.message = `${e.message} (${url})`;
          throw err;
        }
      },
      { step: 'initialize', name: 'capenterCallHealth', override: true },
    );
    client.middlewareStack.add(
      (next, ctx) => (args) => {
        const url = urlOf(args);
        if (url) (ctx as UrlContext)[URL_KEY] = url;
        return next(args);
      },
      { step: 'build', name: 'capenterCallHealthURL', override: true },
    );
  }

  /**
   * The first service's problem (`/readyz`'s reason), or undefined when every watched service's last call worked.
   * With `probe` (a cheap read call of a watched client, e.g. EC2 DescribeAvailabilityZones, as upstream's start-up
   * `CheckEC2Connectivity`): until a first call completes the answer is `checking access to the AWS API`, and the
   * probe runs (in the background, at most every {@link ProbeEverySeconds}) while no call completed or a problem
   * persists, so a fixed credential clears it without waiting for the controllers' next call.
   */
  problem(probe?: () => Promise<unknown>): string | undefined {
    if (probe && (!this.seen || this.problems.size > 0) && !this.probing) {
      const t = this.now();
      if (t - this.lastProbe >= ProbeEverySeconds * 1000) {
        this.lastProbe = t;
        this.probing = true;
        void probe()
          .catch(() => undefined) // recorded by the middleware
          .finally(() => {
            this.probing = false;
          });
      }
    }
    const first = this.problems.values().next().value;
    if (first !== undefined) return first;
    return probe && !this.seen
      ? 'checking access to the AWS API (the first call has not completed)'
      : undefined;
  }
}
