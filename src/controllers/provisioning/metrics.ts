/**
 * Prometheus metrics of provisioning, named and labelled as upstream Karpenter v1
 * (`pkg/controllers/provisioning/scheduling/metrics.go`, `pkg/metrics/metrics.go`):
 * - `karpenter_scheduler_scheduling_duration_seconds{controller}` histogram (seconds);
 * - `karpenter_scheduler_queue_depth{controller, scheduling_id}` gauge (pods waiting in a running simulation);
 * - `karpenter_scheduler_unfinished_work_seconds{controller, scheduling_id}` gauge (age of a running simulation;
 *   the simulation is synchronous, so like `queue_depth` it exists only while one runs and reads 0);
 * - `karpenter_scheduler_unschedulable_pods_count{controller}` gauge (pods the last simulation could not place);
 * - `karpenter_pods_scheduling_decision_duration_seconds` histogram (seconds, {@link schedulingDecisionHistogram});
 * - `karpenter_nodeclaims_created_total{reason, nodepool, min_values_relaxed}` counter (also used by disruption,
 *   reason `provisioned` here; `min_values_relaxed` from the created NodeClaim's annotation, see
 *   {@link minValuesRelaxedLabel}).
 * Each getter returns the metric already registered in `registry` under that name, so controllers share them.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { AnnotationNodeClaimMinValuesRelaxed } from '../../apis/labels.ts';
import { registeredGauge } from '../../kube/metrics.ts';

/**
 * Upstream `metrics.DurationBuckets()` (seconds, `pkg/metrics/constants.go`): controller-runtime's thresholds
 * extended to 600 s for singleton controllers without a timeout.
 */
export const DURATION_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450,
  600,
];

/** Metric names. */
export const METRIC_SCHEDULING_DURATION = 'karpenter_scheduler_scheduling_duration_seconds';
export const METRIC_QUEUE_DEPTH = 'karpenter_scheduler_queue_depth';
export const METRIC_UNSCHEDULABLE_PODS = 'karpenter_scheduler_unschedulable_pods_count';
export const METRIC_NODECLAIMS_CREATED = 'karpenter_nodeclaims_created_total';
export const METRIC_SCHEDULING_DECISION = 'karpenter_pods_scheduling_decision_duration_seconds';

/**
 * `karpenter_pods_scheduling_decision_duration_seconds` (no labels; upstream `pkg/controllers/state/metrics.go`):
 * seconds from when a pod was first seen provisionable until a scheduling simulation first decided about it
 * (placed it, or found it unschedulable or invalid), once per pod.
 */
export function schedulingDecisionHistogram(registry: Registry): Histogram {
  const m = registry.getSingleMetric(METRIC_SCHEDULING_DECISION);
  if (m) return m as Histogram;
  return new Histogram({
    name: METRIC_SCHEDULING_DECISION,
    help: "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
    buckets: [...DURATION_BUCKETS],
    registers: [registry],
  });
}

/** `reason` label value of NodeClaims created for pending pods (upstream `metrics.ProvisionedReason`). */
export const ProvisionedReason = 'provisioned';

/** The scheduling-duration histogram (label `controller`). */
export function schedulingDurationHistogram(registry: Registry): Histogram<'controller'> {
  const m = registry.getSingleMetric(METRIC_SCHEDULING_DURATION);
  if (m) return m as Histogram<'controller'>;
  return new Histogram({
    name: METRIC_SCHEDULING_DURATION,
    help: 'Duration of scheduling simulations used for deprovisioning and provisioning in seconds.',
    labelNames: ['controller'],
    buckets: [...DURATION_BUCKETS],
    registers: [registry],
  });
}

/** The queue-depth gauge (labels `controller`, `scheduling_id`). */
export function queueDepthGauge(registry: Registry): Gauge<'controller' | 'scheduling_id'> {
  const m = registry.getSingleMetric(METRIC_QUEUE_DEPTH);
  if (m) return m as Gauge<'controller' | 'scheduling_id'>;
  return new Gauge({
    name: METRIC_QUEUE_DEPTH,
    help: 'The number of pods currently waiting to be scheduled.',
    labelNames: ['controller', 'scheduling_id'],
    registers: [registry],
  });
}

export const METRIC_UNFINISHED_WORK = 'karpenter_scheduler_unfinished_work_seconds';

/**
 * The unfinished-work gauge (labels `controller`, `scheduling_id`; seconds a running simulation has been going,
 * upstream `UnfinishedWorkSeconds`), set when a simulation starts and removed when it ends.
 */
export function unfinishedWorkGauge(registry: Registry): Gauge<'controller' | 'scheduling_id'> {
  return registeredGauge(
    registry,
    METRIC_UNFINISHED_WORK,
    'The amount of time in seconds a scheduling simulation has been running, labeled by controller and scheduling ID.',
    ['controller', 'scheduling_id'],
  );
}

export const METRIC_PENDING_BY_EFFECTIVE_ZONE = 'karpenter_scheduler_pending_pods_by_effective_zone_count';

/**
 * The pending-pods-by-effective-zone gauge (labels `controller`, `zone`; upstream `PendingPodsByEffectiveZone`,
 * `scheduling/metrics.go`): the pods of the last simulation by the zone they can go to (`SchedulingResult`
 * `pendingPodsByEffectiveZone`: a zone name, `flexible` or `none`), replaced by each simulation.
 */
export function pendingPodsByEffectiveZoneGauge(registry: Registry): Gauge<'controller' | 'zone'> {
  return registeredGauge(
    registry,
    METRIC_PENDING_BY_EFFECTIVE_ZONE,
    "Pending pods dimensioned by effective zone constraint, or the intersection of pod-level zone signals, volume topology (PVC zones), and topology constraints. Values: specific zone name (e.g., 'us-west-2a'), 'flexible' (multiple zones), or 'none' (no valid intersection).",
    ['controller', 'zone'],
  );
}

export const METRIC_IGNORED_PODS = 'karpenter_scheduler_ignored_pods_count';

/** The ignored-pods gauge (no labels): pending pods rejected by validation in the last provisioning pass. */
export function ignoredPodsGauge(registry: Registry): Gauge {
  const m = registry.getSingleMetric(METRIC_IGNORED_PODS);
  if (m) return m as Gauge;
  return new Gauge({
    name: METRIC_IGNORED_PODS,
    help: 'Number of pods ignored during scheduling by Karpenter',
    registers: [registry],
  });
}

/** The unschedulable-pods gauge (label `controller`). */
export function unschedulablePodsGauge(registry: Registry): Gauge<'controller'> {
  const m = registry.getSingleMetric(METRIC_UNSCHEDULABLE_PODS);
  if (m) return m as Gauge<'controller'>;
  return new Gauge({
    name: METRIC_UNSCHEDULABLE_PODS,
    help: 'The number of unschedulable Pods.',
    labelNames: ['controller'],
    registers: [registry],
  });
}

/** The NodeClaims-created counter (labels `reason`, `nodepool`, `min_values_relaxed`). */
export function nodeClaimsCreatedCounter(
  registry: Registry,
): Counter<'reason' | 'nodepool' | 'min_values_relaxed'> {
  const m = registry.getSingleMetric(METRIC_NODECLAIMS_CREATED);
  if (m) return m as Counter<'reason' | 'nodepool' | 'min_values_relaxed'>;
  return new Counter({
    name: METRIC_NODECLAIMS_CREATED,
    help: 'Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created, the owning nodepool, and if min values was relaxed for this nodeclaim.',
    labelNames: ['reason', 'nodepool', 'min_values_relaxed'],
    registers: [registry],
  });
}

/**
 * The `min_values_relaxed` label of {@link nodeClaimsCreatedCounter} for a created NodeClaim (upstream
 * `provisioner.go` `Create`): its `karpenter.sh/nodeclaim-min-values-relaxed` annotation, `"false"` when absent.
 */
export function minValuesRelaxedLabel(nodeClaim: NodeClaim): string {
  return nodeClaim.metadata.annotations?.[AnnotationNodeClaimMinValuesRelaxed] ?? 'false';
}
