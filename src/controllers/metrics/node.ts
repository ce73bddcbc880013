/**
 * `metrics.node` (kubernetes-sigs/karpenter `pkg/controllers/metrics/node`): every 5 s, per Node in cluster state,
 * the gauges `karpenter_nodes_allocatable`, `karpenter_nodes_total_pod_requests` (non-DaemonSet pods),
 * `karpenter_nodes_total_pod_limits`, `karpenter_nodes_total_daemon_requests`,
 * `karpenter_nodes_total_daemon_limits` and `karpenter_nodes_system_overhead` (capacity − allocatable), labelled
 * `node_name`, `resource_type`, `phase` and the well-known node labels (`nodepool`, `instance_type`,
 * `capacity_type`, `zone`, `region`, `arch`, `os`). cpu in cores, memory/storage in bytes, others counts.
 * Also `karpenter_nodes_current_lifetime_seconds` (Node age, the same labels without `resource_type`) and the
 * cluster-wide `karpenter_cluster_utilization_percent{resource_type}`: 100 × Σ pod requests (all pods, DaemonSet
 * ones included, as upstream's `StateNode.PodRequests`) / Σ allocatable over the nodes in cluster state, for each
 * resource with non-zero allocatable. Gauges are rebuilt on every pass, so deleted nodes disappear.
 */
import type { Pod } from '../../apis/core.ts';
import { parseResources, type Resources } from '../../apis/quantity.ts';
import type { StateNode } from '../../state/cluster.ts';
import {
  gauge,
  type MetricsControllerDeps,
  PeriodicMetricsController,
  parseResourcesOrEmpty,
  resourceTypeLabel,
  setResourceGauge,
} from './common.ts';

/** Well-known node label → metric label (upstream `getWellKnownLabels`, core subset). */
export const NODE_WELL_KNOWN_LABELS: Readonly<Record<string, string>> = {
  'karpenter.sh/nodepool': 'nodepool',
  'node.kubernetes.io/instance-type': 'instance_type',
  'karpenter.sh/capacity-type': 'capacity_type',
  'topology.kubernetes.io/zone': 'zone',
  'topology.kubernetes.io/region': 'region',
  'kubernetes.io/arch': 'arch',
  'kubernetes.io/os': 'os',
  'node.kubernetes.io/windows-build': 'windows_build',
};

const LABELS = [
  'node_name',
  'resource_type',
  'phase',
  'managed',
  ...Object.values(NODE_WELL_KNOWN_LABELS),
] as const;
type NodeLabel = (typeof LABELS)[number];

/** Metric names of this controller. */
export const NODE_METRICS = {
  allocatable: 'karpenter_nodes_allocatable',
  podRequests: 'karpenter_nodes_total_pod_requests',
  podLimits: 'karpenter_nodes_total_pod_limits',
  daemonRequests: 'karpenter_nodes_total_daemon_requests',
  daemonLimits: 'karpenter_nodes_total_daemon_limits',
  overhead: 'karpenter_nodes_system_overhead',
  lifetime: 'karpenter_nodes_current_lifetime_seconds',
  clusterUtilization: 'karpenter_cluster_utilization_percent',
} as const;

/** Sum of container limits of `pods` (internal units); malformed quantities are skipped. */
export function podsLimits(pods: readonly Pod[]): Resources {
  const out: Resources = {};
  for (const p of pods)
    for (const c of p.spec?.containers ?? []) {
      let l: Resources;
      try {
        l = parseResources(c.resources?.limits as Record<string, string> | undefined);
      } catch {
        continue;
      }
      for (const [k, v] of Object.entries(l)) out[k] = (out[k] ?? 0) + v;
    }
  return out;
}

function minus(a: Resources, b: Resources): Resources {
  const out: Resources = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out[k] = (a[k] ?? 0) - (b[k] ?? 0);
  return out;
}

/** The node metrics controller. */
export class NodeMetricsController extends PeriodicMetricsController {
  private readonly gauges;
  private readonly lifetime;
  private readonly utilization;

  constructor(deps: MetricsControllerDeps) {
    super('metrics.node', deps);
    const g = (name: string, help: string) => gauge<NodeLabel>(deps.registry, name, help, LABELS);
    this.lifetime = gauge<Exclude<NodeLabel, 'resource_type'>>(
      deps.registry,
      NODE_METRICS.lifetime,
      'Node age in seconds',
      LABELS.filter((l): l is Exclude<NodeLabel, 'resource_type'> => l !== 'resource_type'),
    );
    this.utilization = gauge<'resource_type'>(
      deps.registry,
      NODE_METRICS.clusterUtilization,
      'Utilization of allocatable resources by pod requests',
      ['resource_type'],
    );
    this.gauges = {
      allocatable: g(NODE_METRICS.allocatable, 'Node allocatable are the resources allocatable by nodes.'),
      podRequests: g(
        NODE_METRICS.podRequests,
        'Node total pod requests are the resources requested by non-DaemonSet pods bound to nodes.',
      ),
      podLimits: g(
        NODE_METRICS.podLimits,
        'Node total pod limits are the resources specified by non-DaemonSet pod limits.',
      ),
      daemonRequests: g(
        NODE_METRICS.daemonRequests,
        'Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.',
      ),
      daemonLimits: g(
        NODE_METRICS.daemonLimits,
        'Node total daemon limits are the resources specified by DaemonSet pod limits.',
      ),
      overhead: g(
        NODE_METRICS.overhead,
        "Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.",
      ),
    };
  }

  /** One pass: rebuilds every gauge from cluster state (synchronous, so a scrape never sees a half-built set). */
  update(): void {
    for (const g of Object.values(this.gauges)) g.reset();
    this.lifetime.reset();
    this.utilization.reset();
    const allocatable: Resources = {};
    const requested: Resources = {};
    const add = (into: Resources, r: Resources) => {
      for (const [k, v] of Object.entries(r)) into[k] = (into[k] ?? 0) + v;
    };
    for (const sn of this.deps.cluster.stateNodes()) {
      if (!sn.node) continue;
      this.record(sn);
      add(
        allocatable,
        parseResourcesOrEmpty(sn.node.status?.allocatable as Record<string, string> | undefined),
      );
      add(requested, sn.podRequests);
    }
    for (const [r, total] of Object.entries(allocatable))
      if (total > 0)
        this.utilization.set({ resource_type: resourceTypeLabel(r) }, (100 * (requested[r] ?? 0)) / total);
  }

  private record(sn: StateNode): void {
    const node = sn.node!;
    const base: Partial<Record<NodeLabel, string>> = {
      node_name: node.metadata.name ?? '',
      phase: (node.status as { phase?: string } | undefined)?.phase ?? '',
      // upstream `StateNode.Managed()`: the Node has a NodeClaim
      managed: String(sn.managed),
    };
    const labels = node.metadata.labels ?? {};
    for (const [k, l] of Object.entries(NODE_WELL_KNOWN_LABELS)) base[l as NodeLabel] = labels[k] ?? '';
    const capacity = parseResourcesOrEmpty(node.status?.capacity as Record<string, string> | undefined);
    const allocatable = parseResourcesOrEmpty(node.status?.allocatable as Record<string, string> | undefined);
    const dsPods = sn.daemonSetPods;
    const otherPods = sn.pods.filter((p) => !dsPods.includes(p));
    const strip = (r: Resources): Resources => {
      const { pods: _p, ...rest } = r;
      return rest;
    };
    const lists: Array<[keyof typeof this.gauges, Resources]> = [
      ['allocatable', allocatable],
      ['overhead', minus(capacity, allocatable)],
      ['podRequests', strip(minus(sn.podRequests, sn.daemonSetRequests))],
      ['daemonRequests', strip(sn.daemonSetRequests)],
      ['podLimits', podsLimits(otherPods)],
      ['daemonLimits', podsLimits(dsPods)],
    ];
    for (const [g, list] of lists) setResourceGauge(this.gauges[g], base, list);
    const created = Date.parse(node.metadata.creationTimestamp ?? '');
    if (Number.isFinite(created)) {
      const { resource_type: _r, ...nodeLabels } = base;
      this.lifetime.set(nodeLabels, Math.max(0, (this.deps.clock.now() - created) / 1000));
    }
  }
}
