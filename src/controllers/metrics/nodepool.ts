/**
 * `metrics.nodepool` (kubernetes-sigs/karpenter `pkg/controllers/metrics/nodepool`): per NodePool the gauges
 * `karpenter_nodepools_usage{nodepool, resource_type}` (what has been provisioned: `status.resources` when the
 * NodePool controller has written it, else the usage cluster state computes) and
 * `karpenter_nodepools_limit{nodepool, resource_type}` (`spec.limits`). cpu in cores, memory in bytes.
 */
import type { NodePool } from '../../apis/karpenter.ts';
import {
  gauge,
  type MetricsControllerDeps,
  PeriodicMetricsController,
  parseResourcesOrEmpty,
  setResourceGauge,
} from './common.ts';

/** Metric names of this controller. */
export const NODEPOOL_METRICS = {
  usage: 'karpenter_nodepools_usage',
  limit: 'karpenter_nodepools_limit',
} as const;

/** The NodePool metrics controller. */
export class NodePoolMetricsController extends PeriodicMetricsController {
  private readonly usage;
  private readonly limit;

  constructor(deps: MetricsControllerDeps) {
    super('metrics.nodepool', deps);
    const labels = ['nodepool', 'resource_type'] as const;
    this.usage = gauge(
      deps.registry,
      NODEPOOL_METRICS.usage,
      'The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.',
      labels,
    );
    this.limit = gauge(
      deps.registry,
      NODEPOOL_METRICS.limit,
      'Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.',
      labels,
    );
  }

  update(): void {
    const { cluster } = this.deps;
    this.usage.reset();
    this.limit.reset();
    const computed = cluster.nodePoolUsage();
    for (const np of cluster.listNodePools() as NodePool[]) {
      const name = np.metadata.name;
      const status = (np.status as { resources?: Record<string, string> } | undefined)?.resources;
      const usage =
        status && Object.keys(status).length > 0 ? parseResourcesOrEmpty(status) : (computed[name] ?? {});
      setResourceGauge(this.usage, { nodepool: name }, usage);
      const limits = parseResourcesOrEmpty(np.spec.limits as Record<string, string> | undefined);
      setResourceGauge(this.limit, { nodepool: name }, limits);
    }
  }
}
