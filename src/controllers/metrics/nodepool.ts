/**
 * `metrics.nodepool` (kubernetes-sigs/karpenter `pkg/controllers/metrics/nodepool`): per NodePool the gauges
 * `karpenter_nodepools_usage{nodepool, resource_type}` (what has been provisioned: `status.resources` when the
 * NodePool controller has written it, else the usage cluster state computes) and
 * `karpenter_nodepools_limit{nodepool, resource_type}` (`spec.limits`). cpu in cores, memory in bytes.
 */
import type { NodePool } from '../../apis/karpenter.ts';
import { parseResources, type Resources } from '../../apis/quantity.ts';
import { type Controller, SingletonController } from '../runtime.ts';
import { gauge, type MetricsControllerDeps, metricValue, resourceTypeLabel } from './common.ts';

/** Metric names of this controller. */
export const NODEPOOL_METRICS = {
  usage: 'karpenter_nodepools_usage',
  limit: 'karpenter_nodepools_limit',
} as const;

function safe(list: Record<string, string> | undefined): Resources {
  try {
    return parseResources(list);
  } catch {
    return {};
  }
}

/** The NodePool metrics controller. */
export class NodePoolMetricsController implements Controller {
  readonly name = 'metrics.nodepool';
  private readonly loop: SingletonController;
  private readonly usage;
  private readonly limit;

  constructor(private readonly deps: MetricsControllerDeps) {
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
    this.loop = new SingletonController({
      name: this.name,
      clock: deps.clock,
      logger: deps.logger,
      reconcile: async () => {
        this.update();
        return { requeueAfter: deps.periodSeconds ?? 5 };
      },
    });
  }

  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /** One pass (synchronous). */
  update(): void {
    const { cluster } = this.deps;
    this.usage.reset();
    this.limit.reset();
    const computed = cluster.nodePoolUsage();
    for (const np of cluster.listNodePools() as NodePool[]) {
      const name = np.metadata.name;
      const status = (np.status as { resources?: Record<string, string> } | undefined)?.resources;
      const usage = status && Object.keys(status).length > 0 ? safe(status) : (computed[name] ?? {});
      for (const [r, v] of Object.entries(usage))
        this.usage.set({ nodepool: name, resource_type: resourceTypeLabel(r) }, metricValue(r, v));
      for (const [r, v] of Object.entries(safe(np.spec.limits as Record<string, string> | undefined)))
        this.limit.set({ nodepool: name, resource_type: resourceTypeLabel(r) }, metricValue(r, v));
    }
  }
}
