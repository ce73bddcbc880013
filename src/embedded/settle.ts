/**
 * The one settle-and-summary loop of `capenter start` (every mode: one embedded cluster, `--capi`, `--cloud-provider
 * clusterapi`): every `progressIntervalMs` it reads the cluster view, prints a progress line on stderr when it
 * changed (with the mode's extra, e.g. the KarpenterMachinePools or MachineDeployments), and once the cluster is
 * settled (every pod Running, no NodeClaim in flight; see `summarize`) prints the summary on stdout (table or JSON,
 * with the mode's extra). With `exitWhenSettled` it then returns 0, or 1 after `timeoutSeconds` with a summary of
 * what is still pending and why; without, it runs until the signal aborts (and prints a summary then if none was).
 */
import type { OperatorConfig } from '../operator/operator.ts';
import {
  type ClusterView,
  formatSummaryTable,
  progressLine,
  type StartSummary,
  summarize,
} from './summary.ts';

/** IO of an embedded run (`runStart` and the runners of `src/embedded/`). */
export interface StartIO {
  stdout: (t: string) => void;
  stderr: (t: string) => void;
  /** Aborting stops the run (like Ctrl-C). */
  signal?: AbortSignal;
  /** Progress interval in ms (default 1000). */
  progressIntervalMs?: number;
  /** Environment (`--cloud-provider aws` reads `AWS_ENDPOINT_URL`, `AWS_REGION`, `CLUSTER_NAME`, ...). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Operator tuning of the single-cluster run (tests shorten the disruption periods, e.g. `{ disruption: {
   * pollSeconds: 1, validationSeconds: 1 } }`); default the operator's (upstream's periods).
   */
  tuning?: OperatorConfig['tuning'];
  /**
   * Monotonic clock in milliseconds (default `performance.now()`): the elapsed seconds and the `--timeout` deadline
   * count on it. A test passes one that jumps past the deadline once the cluster is in the state it asserts the
   * timed-out summary on, so that summary does not depend on how far a real run got in a fixed time.
   */
  now?: () => number;
}

/** What a mode adds to each progress line and to the settled summary. */
export interface SettleExtra {
  /** Appended to the progress line after ` · `. */
  line: string;
  /** Merged into the JSON summary. */
  json: Record<string, unknown>;
  /** Appended to the table summary. */
  table: string;
}

/** Inputs of {@link settle}. */
export interface SettleOptions {
  io: StartIO;
  /** Aborts the loop (Ctrl-C, the caller's signal). */
  signal: AbortSignal;
  output: 'table' | 'json';
  region: string;
  /** The kubeconfig shown in the summary (the workload cluster's). */
  kubeconfig: string;
  exitWhenSettled: boolean;
  timeoutSeconds: number;
  /** The clock of `io.now` (default `performance.now()`) when the run started (elapsed times count from it). */
  startedMs: number;
  /** The view of each tick (pods, NodeClaims, Nodes; no Events needed). */
  view(): Promise<ClusterView>;
  /** The view of a timed-out summary, with Events for the reasons of pending pods. */
  finalView(): Promise<ClusterView>;
  /** The mode's extra, read each tick (default none). */
  extra?(): Promise<SettleExtra>;
  /** Runs after each summary printed (the doctor line). */
  afterSummary?(): Promise<void>;
}

/** The summary as printed: JSON (with `extra.json`) or the table (with `extra.table`). */
function render(s: StartSummary, output: 'table' | 'json', extra?: SettleExtra): string {
  if (output === 'json') return `${JSON.stringify({ ...s, ...(extra?.json ?? {}) }, null, 2)}\n`;
  return `${formatSummaryTable(s)}${extra?.table ?? ''}`;
}

/** Runs the loop of the module comment; resolves with the exit code (0, or 1 on timeout). Never rejects for a tick. */
export async function settle(o: SettleOptions): Promise<number> {
  const { io, signal } = o;
  const now = io.now ?? (() => performance.now());
  const elapsed = (): number => (now() - o.startedMs) / 1000;
  const deadline = now() + o.timeoutSeconds * 1000;
  let lastLine = '';
  let printed = false;
  let summary: StartSummary | undefined;
  while (!signal.aborted) {
    await new Promise((r) => setTimeout(r, io.progressIntervalMs ?? 1000));
    if (signal.aborted) break;
    // not kept across the wait: it would hold the superseded version of every object changed meanwhile (at
    // 10,000 pods, up to a copy of each); pending pods are listed only in a summary printed unsettled (below)
    summary = summarize(await o.view(), o.region, o.kubeconfig, elapsed(), false, false);
    const extra = await o.extra?.();
    const line = extra ? `${progressLine(summary)} · ${extra.line}` : progressLine(summary);
    const sans = line.replace(/^\[[^\]]*\] /, '');
    if (sans !== lastLine) {
      io.stderr(`${line}\n`);
      lastLine = sans;
    }
    if (summary.settled) {
      if (!printed) {
        io.stdout(render(summary, o.output, extra));
        await o.afterSummary?.();
        printed = true;
        if (o.exitWhenSettled) return 0;
      }
    } else printed = false;
    if (o.exitWhenSettled && now() > deadline) {
      summary = summarize(await o.finalView(), o.region, o.kubeconfig, elapsed(), true);
      io.stderr(
        `capenter: timed out after ${o.timeoutSeconds}s with ${summary.pods.pending} pod(s) not running\n`,
      );
      io.stdout(render(summary, o.output));
      await o.afterSummary?.();
      return 1;
    }
  }
  if (!printed && summary && !o.exitWhenSettled)
    io.stdout(render(summarize(await o.view(), o.region, o.kubeconfig, summary.elapsedSeconds), o.output));
  return 0;
}
