/**
 * Request batching for EC2 calls, as upstream Karpenter batches them (aws/karpenter-provider-aws `pkg/batcher`):
 * requests arriving within an idle window are merged into one call per batch key; a batch is sent when no new
 * request came for `idleMs`, or `maxMs` after its first request, or when it holds `maxItems`.
 * Upstream windows: CreateFleet 35 ms idle / 1 s max; DescribeInstances and TerminateInstances 100 ms / 1 s.
 * With `metrics`, each batch is observed as upstream's `pkg/batcher/metrics.go`:
 * `karpenter_cloudprovider_batcher_batch_size{batcher}` (requests in the batch) and
 * `karpenter_cloudprovider_batcher_batch_time_seconds{batcher}` (first request → batch sent).
 */
import type { Histogram, Registry } from 'prom-client';
import { registeredHistogram } from '../../kube/metrics.ts';

/** Upstream's `metrics.DurationBuckets()` (seconds; kubernetes-sigs/karpenter `pkg/metrics/constants.go`). */
const DURATION_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450,
  600,
];

/** Upstream's `SizeBuckets()` (requests per batch). */
export const BATCH_SIZE_BUCKETS: readonly number[] = [
  1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225, 250, 275, 300, 350,
  400, 450, 500, 550, 600, 700, 800, 900, 1000,
];

/** The two batcher histograms of `registry` (registered on first use). */
export function batcherMetrics(registry: Registry): {
  size: Histogram<'batcher'>;
  time: Histogram<'batcher'>;
} {
  return {
    size: registeredHistogram(
      registry,
      'karpenter_cloudprovider_batcher_batch_size',
      'Size of the request batch per batcher',
      ['batcher'],
      BATCH_SIZE_BUCKETS,
    ),
    time: registeredHistogram(
      registry,
      'karpenter_cloudprovider_batcher_batch_time_seconds',
      'Duration of the batching window per batcher',
      ['batcher'],
      DURATION_BUCKETS,
    ),
  };
}

/** Options of {@link Batcher}. */
export interface BatcherOptions<I, O> {
  /** Requests with the same key go into one call. */
  key: (input: I) => string;
  /** Executes one batch; returns one result (or Error) per input, in order. */
  exec: (inputs: I[]) => Promise<Array<O | Error>>;
  idleMs: number;
  maxMs: number;
  maxItems: number;
  /** Observe batches in `registry` under `name` (upstream `create_fleet`, `describe_instances`, …). */
  metrics?: { name: string; registry: Registry };
}

interface Pending<I, O> {
  inputs: I[];
  resolvers: Array<{ resolve: (o: O) => void; reject: (e: unknown) => void }>;
  idle: ReturnType<typeof setTimeout> | undefined;
  max: ReturnType<typeof setTimeout> | undefined;
  /** performance.now() at the first request. */
  startedAt: number;
}

/** Merges concurrent requests into batched calls. Uses real timers (the windows are wall-clock I/O coalescing). */
export class Batcher<I, O> {
  private readonly pending = new Map<string, Pending<I, O>>();
  /** Number of batches executed (for metrics/benchmarks). */
  batches = 0;

  private readonly metrics: ReturnType<typeof batcherMetrics> | undefined;

  constructor(private readonly opts: BatcherOptions<I, O>) {
    this.metrics = opts.metrics ? batcherMetrics(opts.metrics.registry) : undefined;
  }

  /** Queues `input`; resolves with its result, rejects with its error. */
  add(input: I): Promise<O> {
    const key = this.opts.key(input);
    let p = this.pending.get(key);
    if (!p) {
      p = { inputs: [], resolvers: [], idle: undefined, max: undefined, startedAt: performance.now() };
      this.pending.set(key, p);
      p.max = setTimeout(() => this.flush(key), this.opts.maxMs);
    }
    const batch = p;
    return new Promise<O>((resolve, reject) => {
      batch.inputs.push(input);
      batch.resolvers.push({ resolve, reject });
      if (batch.idle) clearTimeout(batch.idle);
      if (batch.inputs.length >= this.opts.maxItems) this.flush(key);
      else batch.idle = setTimeout(() => this.flush(key), this.opts.idleMs);
    });
  }

  private flush(key: string): void {
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    if (p.idle) clearTimeout(p.idle);
    if (p.max) clearTimeout(p.max);
    this.batches++;
    if (this.metrics) {
      const batcher = { batcher: this.opts.metrics!.name };
      this.metrics.size.observe(batcher, p.inputs.length);
      this.metrics.time.observe(batcher, (performance.now() - p.startedAt) / 1000);
    }
    this.opts.exec(p.inputs).then(
      (results) => {
        p.resolvers.forEach((r, i) => {
          const out = results[i];
          if (out instanceof Error) r.reject(out);
          else if (out === undefined) r.reject(new Error('batched call returned no result for this request'));
          else r.resolve(out);
        });
      },
      (err: unknown) => {
        for (const r of p.resolvers) r.reject(err);
      },
    );
  }
}
