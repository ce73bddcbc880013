/**
 * EC2 error classification and the throttling backoff of the aws provider.
 * Sources: aws/karpenter-provider-aws `pkg/errors/errors.go` (not-found codes, `UnfulfillableCapacityErrorCodes`),
 * and EC2's documented throttling codes (`RequestLimitExceeded`, `Throttling`).
 */

/** EC2 fleet error codes that mean "no capacity for this offering" (upstream `UnfulfillableCapacityErrorCodes`). */
export const CAPACITY_ERROR_CODES: ReadonlySet<string> = new Set([
  'InsufficientInstanceCapacity',
  'MaxSpotInstanceCountExceeded',
  'VcpuLimitExceeded',
  'UnfulfillableCapacity',
  'Unsupported',
  'InsufficientFreeAddressesInSubnet',
  'MaxFleetCountExceeded',
  'ReservationCapacityExceeded',
]);

const NOT_FOUND = new Set([
  'InvalidInstanceID.NotFound',
  'InvalidLaunchTemplateName.NotFoundException',
  'InvalidLaunchTemplateId.NotFound',
  'InvalidLaunchTemplateId.Malformed',
  'InvalidInstanceID.Malformed',
]);

const THROTTLE = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
]);

/** The AWS error code of `err` (`name`/`Code` of an SDK v3 service exception), or undefined. */
export function awsErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { name?: unknown; Code?: unknown; code?: unknown };
  if (typeof e.Code === 'string') return e.Code;
  if (typeof e.name === 'string' && e.name !== 'Error') return e.name;
  return typeof e.code === 'string' ? e.code : undefined;
}

/** True for EC2 "does not exist" errors (instance, launch template). */
export function isAwsNotFound(err: unknown): boolean {
  const c = awsErrorCode(err);
  return c !== undefined && (NOT_FOUND.has(c) || c.endsWith('.NotFound'));
}

/** True for throttling errors (`RequestLimitExceeded`, ...). */
export function isThrottle(err: unknown): boolean {
  const c = awsErrorCode(err);
  return c !== undefined && THROTTLE.has(c);
}

/** Options of {@link withThrottleRetry}. */
export interface ThrottleRetryOptions {
  /** Attempts in total, default 5. */
  attempts?: number;
  /** First delay in ms, doubled per attempt with full jitter, default 200; capped at 10 s. */
  baseMs?: number;
  /** Sleep function (tests inject an instant one). */
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs `fn`, retrying on throttling errors (`RequestLimitExceeded`) with exponential backoff and full jitter, on top
 * of the SDK's own retries. Other errors propagate at once.
 * @throws the last throttling error after `attempts` tries, or the first other error.
 */
export async function withThrottleRetry<T>(
  fn: () => Promise<T>,
  opts: ThrottleRetryOptions = {},
): Promise<T> {
  const attempts = opts.attempts ?? 5;
  const base = opts.baseMs ?? 200;
  const sleep = opts.sleep ?? realSleep;
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isThrottle(err) || i >= attempts) throw err;
      await sleep(Math.random() * Math.min(10_000, base * 2 ** (i - 1)));
    }
  }
}
