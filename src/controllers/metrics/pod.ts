/**
 * `metrics.pod` (kubernetes-sigs/karpenter `pkg/controllers/metrics/pod`): per pod in cluster state the gauge
 * `karpenter_pods_state{name, namespace, owner, node, nodepool, zone, arch, capacity_type, instance_type, phase}`
 * = 1 (owner: the first owner reference as a self link `/apis/<apiVersion>/namespaces/<ns>/<kind>s/<name>`; node
 * fields `N/A` while unbound), and the summary `karpenter_pods_startup_duration_seconds`: creation → Running, for
 * pods this controller saw Pending. Rebuilt every pass (default 5 s).
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
  private readonly pending = new Set<string>();

  constructor(deps: MetricsControllerDeps) {
    super('metrics.pod', deps);
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
    for (const pod of cluster.snapshot().pods) {
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
      else if (phase === 'Running' && this.pending.delete(key)) {
        const created = Date.parse(pod.metadata.creationTimestamp ?? '');
        const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
        const at = Date.parse(ready?.lastTransitionTime ?? '') || this.deps.clock.now();
        if (Number.isFinite(created)) this.startup.observe(Math.max(0, (at - created) / 1000));
      }
    }
    for (const k of [...this.pending]) if (!seen.has(k)) this.pending.delete(k);
  }
}
