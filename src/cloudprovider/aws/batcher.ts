/**
 * Request batching for EC2 calls, as upstream Karpenter batches them (aws/karpenter-provider-aws `pkg/batcher`):
 * requests arriving within an idle window are merged into one call per batch key; a batch is sent when no new
 * request came for `idleMs`, or `maxMs` after its first request, or when it holds `maxItems`.
 * Upstream windows: CreateFleet 35 ms idle / 1 s max; DescribeInstances and TerminateInstances 100 ms / 1 s.
 */

/** Options of {@link Batcher}. */
export interface BatcherOptions<I, O> {
  /** Requests with the same key go into one call. */
  key: (input: I) => string;
  /** Executes one batch; returns one result (or Error) per input, in order. */
  exec: (inputs: I[]) => Promise<Array<O | Error>>;
  idleMs: number;
  maxMs: number;
  maxItems: number;
}

interface Pending<I, O> {
  inputs: I[];
  resolvers: Array<{ resolve: (o: O) => void; reject: (e: unknown) => void }>;
  idle: ReturnType<typeof setTimeout> | undefined;
  max: ReturnType<typeof setTimeout> | undefined;
}

/** Merges concurrent requests into batched calls. Uses real timers (the windows are wall-clock I/O coalescing). */
export class Batcher<I, O> {
  private readonly pending = new Map<string, Pending<I, O>>();
  /** Number of batches executed (for metrics/benchmarks). */
  batches = 0;

  constructor(private readonly opts: BatcherOptions<I, O>) {}

  /** Queues `input`; resolves with its result, rejects with its error. */
  add(input: I): Promise<O> {
    const key = this.opts.key(input);
    let p = this.pending.get(key);
    if (!p) {
      p = { inputs: [], resolvers: [], idle: undefined, max: undefined };
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
