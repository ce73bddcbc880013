/**
 * `metrics.pod` (kubernetes-sigs/karpenter `pkg/controllers/metrics/pod`): per pod in cluster state the gauge
 * `karpenter_pods_state{name, namespace, owner, node, nodepool, zone, arch, capacity_type, instance_type, phase}`
 * = 1 (owner: the first owner reference as a self link `/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>`; node
 * fields `N/A` while unbound), and the summary `karpenter_pods_startup_duration_seconds`: creation → Ready, once
 * per pod that became Ready while this controller ran (upstream observes pods it saw Pending; its per-pod
 * reconciles see every Pending pod, while a pass every 5 s misses pods that start in between, so here a pod counts
 * when it is first seen Running with its Ready transition after the controller started). Rebuilt every pass
 * (default 5 s).
 */
import { Summary } from 'prom-client';
import type { Pod } from '../../apis/core.ts';
import { podKey } from '../../state/pods.ts';
import { gauge, type MetricsControllerDeps, PeriodicMetricsController } from './common.ts';

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
] as const;
type PodLabel = (typeof LABELS)[number];

/** Metric names of this controller. */
export const POD_METRICS = {
  state: 'karpenter_pods_state',
  startup: 'karpenter_pods_startup_duration_seconds',
} as const;

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

  constructor(deps: MetricsControllerDeps) {
    super('metrics.pod', deps);
    this.startedAt = Math.floor(deps.clock.now() / 1000) * 1000;
    this.state = gauge<PodLabel>(
      deps.registry,
      POD_METRICS.state,
      'Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type and pod phase.',
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
    const seen = new Set<string>();
    for (const pod of cluster.listPods()) {
      const key = podKey(pod);
      seen.add(key);
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
        },
        1,
      );
      if (phase === 'Pending') this.pending.add(key);
      else if (phase === 'Running' && !this.observed.has(key)) {
        const created = Date.parse(pod.metadata.creationTimestamp ?? '');
        const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
        const readyAt = Date.parse(ready?.lastTransitionTime ?? '');
        const sawPending = this.pending.delete(key);
        // Ready while we ran: seen Pending, or its Ready transition is after our first pass
        if (sawPending || (Number.isFinite(readyAt) && readyAt >= this.startedAt)) {
          this.observed.add(key);
          const at = Number.isFinite(readyAt) ? readyAt : this.deps.clock.now();
          if (Number.isFinite(created)) this.startup.observe(Math.max(0, (at - created) / 1000));
        }
      }
    }
    for (const k of [...this.pending]) if (!seen.has(k)) this.pending.delete(k);
    for (const k of [...this.observed]) if (!seen.has(k)) this.observed.delete(k);
  }
}
