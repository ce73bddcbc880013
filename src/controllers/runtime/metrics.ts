/**
 * controller-runtime's reconcile and work-queue metrics for capenter's keyed controllers ({@link QueueController}),
 * under the names, types, labels and buckets upstream Karpenter exports them (controller-runtime v0.23.1
 * `pkg/internal/controller/metrics/metrics.go` and `pkg/internal/metrics/workqueue.go`; client-go's workqueue
 * metrics with the `controller` label added):
 *
 * - `controller_runtime_reconcile_total{controller, result}` (`success`, `error`, `requeue`, `requeue_after`),
 *   `controller_runtime_reconcile_errors_total{controller}`, `controller_runtime_reconcile_time_seconds{controller}`,
 *   `controller_runtime_active_workers{controller}`, `controller_runtime_max_concurrent_reconciles{controller}`;
 * - `controller_runtime_reconcile_panics_total`, `controller_runtime_terminal_reconcile_errors_total` and
 *   `controller_runtime_reconcile_timeouts_total` (`{controller}`) are exported at 0, as upstream's are in normal
 *   operation: a JavaScript reconcile cannot panic (a thrown error is an `error` result), capenter has no terminal
 *   errors (every error is retried with backoff) and sets no reconciliation timeout;
 * - `workqueue_adds_total`, `workqueue_retries_total`, `workqueue_queue_duration_seconds`,
 *   `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
 *   `workqueue_longest_running_processor_seconds` (`{name, controller}`, both the controller's name) and
 *   `workqueue_depth{name, controller, priority}` (`priority` empty: one priority).
 *
 * Durations are seconds on the controller's clock. Every metric is registered once per registry
 * (`src/kube/metrics.ts`); the gauges read their queues when scraped.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../kube/clock.ts';
import { registeredCounter, registeredGauge, registeredHistogram } from '../../kube/metrics.ts';
import type {
  ReconcileObserver,
  ReconcileOutcome,
  WorkQueue,
  WorkQueueObserver,
} from '../../kube/workqueue.ts';

/** controller-runtime v0.23 `ReconcileTime` buckets (seconds). */
export const RECONCILE_TIME_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/** client-go's workqueue latency buckets, `prometheus.ExponentialBuckets(10e-9, 10, 12)` (seconds). */
export const WORKQUEUE_DURATION_BUCKETS = Array.from({ length: 12 }, (_, i) =>
  Number((1e-8 * 10 ** i).toPrecision(1)),
);

const OUTCOMES: readonly ReconcileOutcome[] = ['success', 'error', 'requeue', 'requeue_after'];

/** The queues whose gauges a registry reports, by controller name (a rebuilt controller replaces its predecessor). */
const queuesOf = new WeakMap<Registry, Map<string, WorkQueue<unknown>>>();

/** A gauge over every registered queue, set from `read` when scraped. */
function queueGauge(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
  read: (q: WorkQueue<unknown>) => number,
): void {
  if (registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help,
    labelNames: [...labelNames],
    registers: [registry],
    collect() {
      this.reset();
      for (const [controller, q] of queuesOf.get(registry) ?? []) {
        const labels: Record<string, string> = { name: controller, controller };
        if (labelNames.includes('priority')) labels.priority = '';
        this.set(labels, read(q));
      }
    },
  });
}

/** A {@link WorkQueueObserver} that also reports a queue's depth and unfinished work when scraped. */
export interface WorkQueueMetrics extends WorkQueueObserver {
  /** The queue (built with this observer) whose gauges are reported under the controller's name from now on. */
  track(queue: WorkQueue<unknown>): void;
}

/** The work-queue metrics of controller `controller` on `registry`; pass to the queue, then `track` it. */
export function workQueueMetrics(registry: Registry, controller: string): WorkQueueMetrics {
  const labels = ['name', 'controller'] as const;
  const adds = registeredCounter(
    registry,
    'workqueue_adds_total',
    'Total number of adds handled by workqueue',
    labels,
  );
  const retries = registeredCounter(
    registry,
    'workqueue_retries_total',
    'Total number of retries handled by workqueue',
    labels,
  );
  const queued = registeredHistogram(
    registry,
    'workqueue_queue_duration_seconds',
    'How long in seconds an item stays in workqueue before being requested',
    labels,
    WORKQUEUE_DURATION_BUCKETS,
  );
  const worked = registeredHistogram(
    registry,
    'workqueue_work_duration_seconds',
    'How long in seconds processing an item from workqueue takes.',
    labels,
    WORKQUEUE_DURATION_BUCKETS,
  );
  queueGauge(
    registry,
    'workqueue_depth',
    'Current depth of workqueue by workqueue and priority',
    ['name', 'controller', 'priority'],
    (q) => q.depth(),
  );
  queueGauge(
    registry,
    'workqueue_unfinished_work_seconds',
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
    labels,
    (q) => q.unfinishedWork().totalSeconds,
  );
  queueGauge(
    registry,
    'workqueue_longest_running_processor_seconds',
    'How many seconds has the longest running processor for workqueue been running.',
    labels,
    (q) => q.unfinishedWork().longestSeconds,
  );
  const l = { name: controller, controller };
  adds.inc(l, 0);
  retries.inc(l, 0);
  return {
    track(queue) {
      const queues = queuesOf.get(registry) ?? new Map<string, WorkQueue<unknown>>();
      queuesOf.set(registry, queues);
      queues.set(controller, queue);
    },
    added: () => adds.inc(l),
    retried: () => retries.inc(l),
    queued: (s) => queued.observe(l, s),
    worked: (s) => worked.observe(l, s),
  };
}

/**
 * The reconcile observer of controller `controller` on `registry` running `concurrency` workers; reconcile times
 * on `clock`. Sets `controller_runtime_max_concurrent_reconciles` and starts every counter at 0 (as
 * controller-runtime's `initMetrics`).
 */
export function reconcileMetrics(
  registry: Registry,
  controller: string,
  concurrency: number,
  clock: Clock,
): ReconcileObserver {
  const c = ['controller'] as const;
  const total = registeredCounter(
    registry,
    'controller_runtime_reconcile_total',
    'Total number of reconciliations per controller',
    ['controller', 'result'],
  );
  const errors = registeredCounter(
    registry,
    'controller_runtime_reconcile_errors_total',
    'Total number of reconciliation errors per controller',
    c,
  );
  const terminal = registeredCounter(
    registry,
    'controller_runtime_terminal_reconcile_errors_total',
    'Total number of terminal reconciliation errors per controller',
    c,
  );
  const panics = registeredCounter(
    registry,
    'controller_runtime_reconcile_panics_total',
    'Total number of reconciliation panics per controller',
    c,
  );
  const timeouts = registeredCounter(
    registry,
    'controller_runtime_reconcile_timeouts_total',
    'Total number of reconciliation timeouts per controller',
    c,
  );
  const time = registeredHistogram(
    registry,
    'controller_runtime_reconcile_time_seconds',
    'Length of time per reconciliation per controller',
    c,
    RECONCILE_TIME_BUCKETS,
  );
  const maxConcurrent = registeredGauge(
    registry,
    'controller_runtime_max_concurrent_reconciles',
    'Maximum number of concurrent reconciles per controller',
    c,
  );
  const active = registeredGauge(
    registry,
    'controller_runtime_active_workers',
    'Number of currently used workers per controller',
    c,
  );
  const l = { controller };
  for (const result of OUTCOMES) total.inc({ controller, result }, 0);
  for (const m of [errors, terminal, panics, timeouts]) m.inc(l, 0);
  maxConcurrent.set(l, concurrency);
  active.set(l, 0);
  return {
    started() {
      const t0 = clock.now();
      active.inc(l);
      return (outcome) => {
        active.dec(l);
        total.inc({ controller, result: outcome });
        if (outcome === 'error') errors.inc(l);
        time.observe(l, (clock.now() - t0) / 1000);
      };
    },
  };
}
