/**
 * The AWS SDK request metrics upstream Karpenter exports through jonathan-innis/aws-sdk-go-prometheus v0.1.1
 * (`common/metrics.go`), for the SDK v3 clients of the aws provider: labels `service` (the client's service ID, e.g.
 * `EC2`), `action` (the operation, e.g. `DescribeSubnets`) and `code` (the HTTP status code of the response, `0`
 * when none arrived, as `fmt.Sprint` of Go's zero status code):
 *
 * - `aws_sdk_go_request_total` and `aws_sdk_go_request_duration_seconds`: one per call, after the SDK's retries,
 *   with the final code;
 * - `aws_sdk_go_request_attempt_total` and `aws_sdk_go_request_attempt_duration_seconds`: one per attempt, with that
 *   attempt's code;
 * - `aws_sdk_go_request_retry_count`: the retries of one call (attempts - 1), buckets 0..10.
 *
 * Durations are wall-clock seconds (`performance.now`), buckets `ExponentialBuckets(0.01, 1.5, 20)` as upstream. Two
 * middlewares per client: one around the whole call (`initialize` step) and one around each attempt (`deserialize`
 * step, inside the SDK's retry loop in `finalizeRequest`).
 */
import type { Registry } from 'prom-client';
import { registeredCounter, registeredHistogram } from '../../kube/metrics.ts';
import type { MiddlewareClient } from './callhealth.ts';

/** `ExponentialBuckets(0.01, 1.5, 20)` (seconds). */
export const AWS_SDK_DURATION_BUCKETS = Array.from({ length: 20 }, (_, i) => 0.01 * 1.5 ** i);
/** Retries per call, 0 to 10. */
export const AWS_SDK_RETRY_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

/** The HTTP status of an SDK call's output or error (`$metadata.httpStatusCode`, the raw response's), else 0. */
function statusOf(outcome: unknown): number {
  const o = outcome as {
    $metadata?: { httpStatusCode?: number };
    $response?: { statusCode?: number };
    response?: { statusCode?: number };
  };
  return o?.$metadata?.httpStatusCode ?? o?.$response?.statusCode ?? o?.response?.statusCode ?? 0;
}

/**
 * Attempts an SDK call made (`$metadata.attempts`, which the retry middleware sets on the handler's `output` or on
 * the error), at least 1.
 */
function attemptsOf(outcome: unknown): number {
  const o = outcome as { $metadata?: { attempts?: number }; output?: { $metadata?: { attempts?: number } } };
  return Math.max(1, o?.output?.$metadata?.attempts ?? o?.$metadata?.attempts ?? 1);
}

/**
 * Adds the metric middlewares to `client` (calls of `service`, e.g. `EC2`) recording into `registry`. Adding them
 * again (another operator on the same clients) replaces them: the newest registry records.
 */
export function watchAwsSdkMetrics(client: MiddlewareClient, service: string, registry: Registry): void {
  const labels = ['service', 'action', 'code'] as const;
  const requests = registeredCounter(
    registry,
    'aws_sdk_go_request_total',
    'The total number of AWS SDK Go requests',
    labels,
  );
  const attempts = registeredCounter(
    registry,
    'aws_sdk_go_request_attempt_total',
    'The total number of AWS SDK Go request attempts',
    labels,
  );
  const latency = registeredHistogram(
    registry,
    'aws_sdk_go_request_duration_seconds',
    'Latency of AWS SDK Go requests',
    labels,
    AWS_SDK_DURATION_BUCKETS,
  );
  const attemptLatency = registeredHistogram(
    registry,
    'aws_sdk_go_request_attempt_duration_seconds',
    'Latency of AWS SDK Go request attempts',
    labels,
    AWS_SDK_DURATION_BUCKETS,
  );
  const retries = registeredHistogram(
    registry,
    'aws_sdk_go_request_retry_count',
    'The total number of AWS SDK Go retry attempts per request',
    labels,
    AWS_SDK_RETRY_BUCKETS,
  );
  const action = (ctx: { commandName?: string }): string => (ctx.commandName ?? '').replace(/Command$/, '');
  const record = (
    counter: typeof requests,
    histogram: typeof latency,
    ctx: { commandName?: string },
    outcome: unknown,
    t0: number,
  ): { service: string; action: string; code: string } => {
    const l = { service, action: action(ctx), code: String(statusOf(outcome)) };
    counter.inc(l);
    histogram.observe(l, (performance.now() - t0) / 1000);
    return l;
  };
  client.middlewareStack.add(
    (next, ctx) => async (args) => {
      const t0 = performance.now();
      try {
        const out = await next(args);
        retries.observe(record(requests, latency, ctx, out, t0), attemptsOf(out) - 1);
        return out;
      } catch (err) {
        retries.observe(record(requests, latency, ctx, err, t0), attemptsOf(err) - 1);
        throw err;
      }
    },
    { step: 'initialize', name: 'capenterAwsSdkRequestMetrics', override: true },
  );
  client.middlewareStack.add(
    (next, ctx) => async (args) => {
      const t0 = performance.now();
      try {
        const out = await next(args);
        record(attempts, attemptLatency, ctx, out, t0);
        return out;
      } catch (err) {
        record(attempts, attemptLatency, ctx, err, t0);
        throw err;
      }
    },
    { step: 'deserialize', name: 'capenterAwsSdkAttemptMetrics', override: true },
  );
}
