/**
 * The alpha `karpenter_pods_provisioning_*` metrics of upstream's pod metrics controller (kubernetes-sigs/karpenter
 * `pkg/controllers/metrics/pod/controller.go`), measured from cluster state's in-memory pod times
 * ({@link PodSchedulingTimes}) rather than from the pod's creation:
 * - `karpenter_pods_provisioning_scheduling_undecided_time_seconds{name, namespace}`: now − first seen, per pod
 *   seen provisionable that no simulation decided about yet and that is not bound;
 * - `karpenter_pods_provisioning_unbound_time_seconds{name, namespace}`: now − first found schedulable, per
 *   Pending pod without `PodScheduled=True`;
 * - `karpenter_pods_provisioning_unstarted_time_seconds{name, namespace}`: now − first found schedulable, per
 *   Pending pod;
 * - histograms `karpenter_pods_provisioning_bound_duration_seconds` (first found schedulable → `PodScheduled`
 *   transition) and `karpenter_pods_provisioning_startup_duration_seconds` (→ Ready), observed when the
 *   creation-based `bound_duration` / `startup_duration` are, for pods with a schedulable time.
 * Gauges are rebuilt every pass; all values in seconds, never negative (a transition time has second precision).
 */
import { Histogram, type Registry } from 'prom-client';
import type { Pod } from '../../apis/core.ts';
import type { PodSchedulingTimes } from '../../state/podscheduling.ts';
import { DURATION_BUCKETS } from '../provisioning/metrics.ts';
import { gauge } from './common.ts';

/** Names of the metrics of this module. */
export const POD_PROVISIONING_METRICS = {
  undecided: 'karpenter_pods_provisioning_scheduling_undecided_time_seconds',
  unbound: 'karpenter_pods_provisioning_unbound_time_seconds',
  unstarted: 'karpenter_pods_provisioning_unstarted_time_seconds',
  bound: 'karpenter_pods_provisioning_bound_duration_seconds',
  startup: 'karpenter_pods_provisioning_startup_duration_seconds',
} as const;

const SCHEDULABLE_HELP = 'Note: this calculated from a point in memory, not by the pod creation timestamp.';

function histogram(registry: Registry, name: string, help: string): Histogram {
  const m = registry.getSingleMetric(name);
  if (m) return m as Histogram;
  return new Histogram({ name, help, buckets: [...DURATION_BUCKETS], registers: [registry] });
}

/** The provisioning metrics of the pod metrics controller; see the module doc. */
export class PodProvisioningMetrics {
  private readonly undecided;
  private readonly unbound;
  private readonly unstarted;
  private readonly bound: Histogram;
  private readonly startup: Histogram;

  constructor(
    registry: Registry,
    private readonly times: PodSchedulingTimes,
  ) {
    const ids = ['name', 'namespace'] as const;
    this.undecided = gauge(
      registry,
      POD_PROVISIONING_METRICS.undecided,
      `The time from when Karpenter has seen a pod without making a scheduling decision for the pod. ${SCHEDULABLE_HELP}`,
      ids,
    );
    const bindHelp = `The time from when Karpenter first thinks the pod can schedule until it binds. ${SCHEDULABLE_HELP}`;
    const runHelp = `The time from when Karpenter first thinks the pod can schedule until the pod is running. ${SCHEDULABLE_HELP}`;
    this.unbound = gauge(registry, POD_PROVISIONING_METRICS.unbound, bindHelp, ids);
    this.unstarted = gauge(registry, POD_PROVISIONING_METRICS.unstarted, runHelp, ids);
    this.bound = histogram(registry, POD_PROVISIONING_METRICS.bound, bindHelp);
    this.startup = histogram(registry, POD_PROVISIONING_METRICS.startup, runHelp);
  }

  /** Clears the per-pod gauges before a pass. */
  reset(): void {
    this.undecided.reset();
    this.unbound.reset();
    this.unstarted.reset();
  }

  /** Sets the gauges of `pod` (key `key`) at clock time `now` (ms). */
  record(pod: Pod, key: string, now: number): void {
    const id = { name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? '' };
    const isBound = pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True');
    const acked = this.times.ackTime(key);
    if (!isBound && this.times.decisionTime(key) === undefined && acked !== undefined)
      this.undecided.set(id, seconds(now - acked));
    const at = this.times.schedulableTime(key);
    if (at === undefined || pod.status?.phase !== 'Pending') return;
    this.unstarted.set(id, seconds(now - at));
    if (!isBound) this.unbound.set(id, seconds(now - at));
  }

  /** The pod's bind was observed at `boundAt` (ms): observes the provisioning bound duration if it has a schedulable time. */
  observeBound(key: string, boundAt: number): void {
    const at = this.times.schedulableTime(key);
    if (at !== undefined) this.bound.observe(seconds(boundAt - at));
  }

  /**
   * The pod's start was observed at `readyAt` (ms): observes the provisioning startup duration if it has a
   * schedulable time, then forgets its times (upstream `ClearPodSchedulingMappings` once a pod started).
   */
  observeStarted(key: string, readyAt: number): void {
    const at = this.times.schedulableTime(key);
    if (at !== undefined) this.startup.observe(seconds(readyAt - at));
    this.times.clear(key);
  }

  /** The pod ended without starting (phase Succeeded or Failed): forgets its times, as upstream. */
  ended(key: string): void {
    this.times.clear(key);
  }
}

function seconds(ms: number): number {
  return Math.max(0, ms / 1000);
}
