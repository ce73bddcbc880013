/**
 * NodeClaim and NodePool status counts, as upstream exposes them through operatorpkg's status controllers
 * (`operator_<kind>_status_condition_count{type, status, reason}`: how many objects currently have that
 * condition) plus `karpenter_nodeclaims_current{nodepool, phase}` (capenter addition: NodeClaims per lifecycle
 * phase `Launching`, `Registering`, `Initializing`, `Ready`, `Deleting`, for dashboards without PromQL joins).
 */
import type { Condition, NodeClaim } from '../../apis/karpenter.ts';
import { gauge, type MetricsControllerDeps, PeriodicMetricsController } from './common.ts';

/** Metric names of this controller. */
export const NODECLAIM_METRICS = {
  nodeClaimConditions: 'operator_nodeclaim_status_condition_count',
  nodePoolConditions: 'operator_nodepool_status_condition_count',
  current: 'karpenter_nodeclaims_current',
} as const;

/** Lifecycle phase of a NodeClaim from its conditions: `Deleting`, `Ready`, `Initializing`, `Registering` or `Launching`. */
export function nodeClaimPhase(nc: NodeClaim): string {
  if (nc.metadata.deletionTimestamp) return 'Deleting';
  const is = (t: string) => nc.status?.conditions?.some((c) => c.type === t && c.status === 'True') ?? false;
  if (is('Initialized')) return 'Ready';
  if (is('Registered')) return 'Initializing';
  if (is('Launched')) return 'Registering';
  return 'Launching';
}

/** The NodeClaim/NodePool count metrics controller. */
export class NodeClaimMetricsController extends PeriodicMetricsController {
  private readonly gauges;

  constructor(deps: MetricsControllerDeps) {
    super('metrics.nodeclaim', deps);
    const cond = ['type', 'status', 'reason'] as const;
    this.gauges = {
      nc: gauge(
        deps.registry,
        NODECLAIM_METRICS.nodeClaimConditions,
        'The number of nodeclaims with a status condition, labeled by type, status and reason.',
        cond,
      ),
      np: gauge(
        deps.registry,
        NODECLAIM_METRICS.nodePoolConditions,
        'The number of nodepools with a status condition, labeled by type, status and reason.',
        cond,
      ),
      current: gauge(
        deps.registry,
        NODECLAIM_METRICS.current,
        'NodeClaims that currently exist, by nodepool and lifecycle phase.',
        ['nodepool', 'phase'] as const,
      ),
    };
  }

  update(): void {
    const { cluster } = this.deps;
    for (const g of Object.values(this.gauges)) g.reset();
    const count = (g: typeof this.gauges.nc, conds: Condition[] | undefined) => {
      for (const c of conds ?? []) g.inc({ type: c.type, status: c.status, reason: c.reason ?? '' });
    };
    for (const nc of cluster.listNodeClaims()) {
      count(this.gauges.nc, nc.status?.conditions);
      this.gauges.current.inc({
        nodepool: nc.metadata.labels?.['karpenter.sh/nodepool'] ?? '',
        phase: nodeClaimPhase(nc),
      });
    }
    for (const np of cluster.listNodePools())
      count(this.gauges.np, (np.status as { conditions?: Condition[] } | undefined)?.conditions);
  }
}
