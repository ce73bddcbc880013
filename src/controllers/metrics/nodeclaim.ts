/**
 * Status-condition and termination metrics of NodeClaims, NodePools, Nodes and the provider's node classes, as
 * upstream exposes them through operatorpkg's status controllers (`operator_<kind>_status_condition_*`,
 * `operator_<kind>_termination_*` and the generic `operator_status_condition_*`; see `./statusconditions.ts`),
 * plus `karpenter_nodeclaims_current{nodepool, phase}` (capenter addition: NodeClaims per lifecycle phase
 * `Launching`, `Registering`, `Initializing`, `Ready`, `Deleting`, for dashboards without PromQL joins).
 */
import type { NodeClaim } from '../../apis/karpenter.ts';
import { LabelNodeInitialized, LabelNodePool } from '../../apis/labels.ts';
import type { Cluster } from '../../state/cluster.ts';
import { gauge, type MetricsControllerDeps, PeriodicMetricsController } from './common.ts';
import { StatusConditionMetrics, type StatusKind } from './statusconditions.ts';

/** Metric names of this controller. */
export const NODECLAIM_METRICS = {
  nodeClaimConditions: 'operator_nodeclaim_status_condition_count',
  nodePoolConditions: 'operator_nodepool_status_condition_count',
  nodeConditions: 'operator_node_status_condition_count',
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

/**
 * The kinds upstream runs operatorpkg status controllers for: NodeClaim and NodePool (with the deprecated generic
 * metrics), Node (labelled by its node-class label of each supported node class, `karpenter.sh/nodepool` and
 * `karpenter.sh/initialized`), and each node class kind of the provider (with the generic metrics, as the AWS
 * provider registers its EC2NodeClass's).
 */
export function statusKinds(cluster: Cluster): StatusKind[] {
  const classes = cluster.nodeClassKinds();
  return [
    {
      metricName: 'nodeclaim',
      group: 'karpenter.sh',
      kind: 'NodeClaim',
      deprecated: true,
      labelKeys: [],
      list: () => cluster.listNodeClaims(),
    },
    {
      metricName: 'nodepool',
      group: 'karpenter.sh',
      kind: 'NodePool',
      deprecated: true,
      labelKeys: [],
      list: () => cluster.listNodePools(),
    },
    {
      metricName: 'node',
      group: '',
      kind: 'Node',
      deprecated: false,
      labelKeys: [
        ...classes.map((c) => `${c.group}/${c.kind.toLowerCase()}`),
        LabelNodePool,
        LabelNodeInitialized,
      ],
      list: () => cluster.listNodes(),
    },
    ...classes.map((c) => ({
      metricName: c.kind.toLowerCase(),
      group: c.group,
      kind: c.kind,
      deprecated: true,
      labelKeys: [],
      list: () => cluster.listNodeClasses(c.group, c.kind),
    })),
  ];
}

/** The NodeClaim/NodePool/Node/node class status metrics controller. */
export class NodeClaimMetricsController extends PeriodicMetricsController {
  private readonly current;
  private readonly status: StatusConditionMetrics;

  constructor(deps: MetricsControllerDeps) {
    super('metrics.nodeclaim', deps);
    this.status = new StatusConditionMetrics(deps.registry, statusKinds(deps.cluster));
    this.current = gauge(
      deps.registry,
      NODECLAIM_METRICS.current,
      'NodeClaims that currently exist, by nodepool and lifecycle phase.',
      ['nodepool', 'phase'] as const,
    );
  }

  update(): void {
    const { cluster } = this.deps;
    this.status.update(this.deps.clock.now());
    this.current.reset();
    for (const nc of cluster.listNodeClaims()) {
      this.current.inc({
        nodepool: nc.metadata.labels?.['karpenter.sh/nodepool'] ?? '',
        phase: nodeClaimPhase(nc),
      });
    }
  }
}
