/**
 * `metrics.pod` (kubernetes-sigs/karpenter `pkg/controllers/metrics/pod`): per pod in cluster state the gauge
 * `karpenter_pods_state{name, namespace, owner, node, nodepool, zone, arch, capacity_type, instance_type, phase}`
 * = 1 (owner: the first owner reference as a self link `/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>`; node
 * fields `N/A` while unbound), and the summary `karpenter_pods_startup_duration_seconds`: creation → Ready, once
 * per pod that became Ready while this controller ran (upstream observes pods it saw Pending; its per-pod
 * reconciles see every Pending pod, while a pass every 5 s misses pods that start in between, so here a pod counts
 * when it is first seen Running with its Ready transition after the controller started). Rebuilt every pass
 * (default 5 s).
 *
 * Also, as upstream: `karpenter_pods_unbound_time_seconds{name, namespace}` (creation → now, per Pending pod
 * without `PodScheduled=True`), `karpenter_pods_unstarted_time_seconds{name, namespace}` (creation → now, per
 * Pending pod) and the histogram `karpenter_pods_bound_duration_seconds` (creation → `PodScheduled` transition,
 * once per pod bound while this controller ran, by the same rule as the startup summary).
 *
 * And the alpha `karpenter_pods_provisioning_*` family, measured from when Karpenter first found the pod
 * schedulable (`./podprovisioning.ts`).
 */
import { Histogram, type Registry, Summary } from 'prom-client';
import type { Pod } from '../../apis/core.ts';
import { podKey } from '../../state/pods.ts';
import { DURATION_BUCKETS } from '../provisioning/metrics.ts';
import { gauge, type MetricsControllerDeps, PeriodicMetricsController } from './common.ts';
import { PodProvisioningMetrics } from './podprovisioning.ts';

const LABELS = [
  'name',
  'namespace',
  'owner',
  'node',
  'nodepool',
  'zone',
  'arch',
  'capacity_type',
  'instance_type',
  'phase',
  'scheduled',
  'ready',
  'managed',
] as const;
type PodLabel = (typeof LABELS)[number];

/** Metric names of this controller. */
export const POD_METRICS = {
  state: 'karpenter_pods_state',
  startup: 'karpenter_pods_startup_duration_seconds',
  unbound: 'karpenter_pods_unbound_time_seconds',
  unstarted: 'karpenter_pods_unstarted_time_seconds',
  bound: 'karpenter_pods_bound_duration_seconds',
} as const;

/** Upstream `metrics.DurationBuckets()` (seconds): controller-runtime's, extended up to 600 s. */
export const POD_DURATION_BUCKETS: readonly number[] = DURATION_BUCKETS;

/**
 * The binding metrics of one pass over the pods (see the module doc); keeps which pods it saw unbound and which
 * it observed bound across passes. `startedAt`: ms, the controller's start floored to the second.
 */
export class PodBindingMetrics {
  private readonly unbound;
  private readonly unstarted;
  private readonly bound: Histogram;
  private readonly sawUnbound = new Set<string>();
  private readonly observed = new Set<string>();

  constructor(
    registry: Registry,
    private readonly startedAt: number,
  ) {
    this.unbound = gauge(
      registry,
      'karpenter_pods_unbound_time_seconds',
      'The time from pod creation until the pod is bound.',
      ['name', 'namespace'],
    );
    this.unstarted = gauge(
      registry,
      'karpenter_pods_unstarted_time_seconds',
      'The time from pod creation until the pod is running.',
      ['name', 'namespace'],
    );
    this.bound =
      (registry.getSingleMetric('karpenter_pods_bound_duration_seconds') as Histogram | undefined) ??
      new Histogram({
        name: 'karpenter_pods_bound_duration_seconds',
        help: 'The time from pod creation until the pod is bound.',
        buckets: [...POD_DURATION_BUCKETS],
        registers: [registry],
      });
  }

  /** Clears the per-pod gauges before a pass. */
  reset(): void {
    this.unbound.reset();
    this.unstarted.reset();
  }

  /**
   * Records `pod` (key `key`) at clock time `now` (ms); returns when it was bound (ms) if this call observed its
   * bind, else `undefined`.
   */
  record(pod: Pod, key: string, now: number): number | undefined {
    const created = Date.parse(pod.metadata.creationTimestamp ?? '');
    if (!Number.isFinite(created)) return undefined;
    const id = { name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? '' };
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    const isBound = scheduled?.status === 'True';
    if (pod.status?.phase === 'Pending') this.unstarted.set(id, Math.max(0, (now - created) / 1000));
    if (!isBound) {
      if (pod.status?.phase === 'Pending') this.unbound.set(id, Math.max(0, (now - created) / 1000));
      this.sawUnbound.add(key);
      return undefined;
    }
    if (this.observed.has(key)) return undefined;
    const at = Date.parse(scheduled?.lastTransitionTime ?? '');
    if (!this.sawUnbound.delete(key) && !(Number.isFinite(at) && at >= this.startedAt)) return undefined;
    this.observed.add(key);
    const boundAt = Number.isFinite(at) ? at : now;
    this.bound.observe(Math.max(0, (boundAt - created) / 1000));
    return boundAt;
  }

  /** Forgets pods not listed in the last pass. */
  prune(seen: ReadonlySet<string>): void {
    for (const set of [this.sawUnbound, this.observed])
      for (const k of [...set]) if (!seen.has(k)) set.delete(k);
  }
}

/** Upstream's owner "self link" of a pod's first owner reference, `''` without owner. */
export function ownerSelfLink(pod: Pod): string {
  const o = pod.metadata.ownerReferences?.[0];
  if (!o) return '';
  return `/apis/${o.apiVersion}/namespaces/${pod.metadata.namespace ?? ''}/${o.kind.toLowerCase()}s/${o.name}`;
}

/** The pod metrics controller. */
export class PodMetricsController extends PeriodicMetricsController {
  private readonly state;
  private readonly startup: Summary;
  /** Pods seen Pending, and pods already observed Running (so each is observed once). */
  private readonly pending = new Set<string>();
  private readonly observed = new Set<string>();
  /**
   * Clock time (ms) this controller was created, floored to the second (a Ready condition's lastTransitionTime has
   * second precision): pods Ready before it started before this controller. Taken at construction, not at the
   * first pass, which runs once the informers have synced: pods that turned Ready in between were neither seen
   * Pending nor Ready after it, and were never observed.
   */
  private readonly startedAt: number;
  private readonly binding: PodBindingMetrics;
  private readonly provisioning: PodProvisioningMetrics;

  constructor(deps: MetricsControllerDeps) {
    super('metrics.pod', deps);
    this.startedAt = Math.floor(deps.clock.now() / 1000) * 1000;
    this.binding = new PodBindingMetrics(deps.registry, this.startedAt);
    this.provisioning = new PodProvisioningMetrics(deps.registry, deps.cluster.podScheduling);
    this.state = gauge<PodLabel>(
      deps.registry,
      POD_METRICS.state,
      'Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type, pod phase, whether it is scheduled and ready, and whether its node is managed by a NodePool.',
      LABELS,
    );
    this.startup =
      (deps.registry.getSingleMetric(POD_METRICS.startup) as Summary | undefined) ??
      new Summary({
        name: POD_METRICS.startup,
        help: 'The time from pod creation until the pod is running.',
        percentiles: [0, 0.5, 0.9, 0.99, 1],
        registers: [deps.registry],
      });
  }

  update(): void {
    const { cluster } = this.deps;
    this.state.reset();
    this.binding.reset();
    this.provisioning.reset();
    const now = this.deps.clock.now();
    const seen = new Set<string>();
    for (const pod of cluster.listPods()) {
      const key = podKey(pod);
      seen.add(key);
      const boundAt = this.binding.record(pod, key, now);
      this.provisioning.record(pod, key, now);
      if (boundAt !== undefined) this.provisioning.observeBound(key, boundAt);
      const phase = pod.status?.phase ?? '';
      const nodeName = pod.spec?.nodeName ?? '';
      const node = nodeName ? cluster.getNode(nodeName) : undefined;
      const l = node?.metadata.labels;
      const na = (v: string | undefined): string => (node ? (v ?? 'N/A') : 'N/A');
      this.state.set(
        {
          name: pod.metadata.name ?? '',
          namespace: pod.metadata.namespace ?? '',
          owner: ownerSelfLink(pod),
          node: nodeName,
          nodepool: node
            ? (l?.['karpenter.sh/nodepool'] ?? 'N/A')
            : (pod.spec?.nodeSelector?.['karpenter.sh/nodepool'] ?? 'N/A'),
          zone: na(l?.['topology.kubernetes.io/zone']),
          arch: na(l?.['kubernetes.io/arch']),
          capacity_type: na(l?.['karpenter.sh/capacity-type']),
          instance_type: na(l?.['node.kubernetes.io/instance-type']),
          phase,
          scheduled: String(nodeName !== ''),
          ready: String(
            pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
          ),
          managed: String(!!l?.['karpenter.sh/nodepool']),
        },
        1,
      );
      if (phase === 'Pending') this.pending.add(key);
      else if (phase === 'Running' && !this.observed.has(key)) {
        const created = Date.parse(pod.metadata.creationTimestamp ?? '');
        const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
        // started means Ready (upstream's pod metrics controller): a Running pod that is not Ready yet waits
        if (!ready) continue;
        const readyAt = Date.parse(ready.lastTransitionTime ?? '');
        const sawPending = this.pending.delete(key);
        // Ready while we ran: seen Pending, or its Ready transition is after our first pass
        if (sawPending || (Number.isFinite(readyAt) && readyAt >= this.startedAt)) {
          this.observed.add(key);
          const at = Number.isFinite(readyAt) ? readyAt : this.deps.clock.now();
          if (Number.isFinite(created)) this.startup.observe(Math.max(0, (at - created) / 1000));
          this.provisioning.observeStarted(key, at);
        }
      } else if (phase === 'Succeeded' || phase === 'Failed') this.provisioning.ended(key);
    }
    for (const k of [...this.pending]) if (!seen.has(k)) this.pending.delete(k);
    for (const k of [...this.observed]) if (!seen.has(k)) this.observed.delete(k);
    this.binding.prune(seen);
  }
}
