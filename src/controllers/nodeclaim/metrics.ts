/**
 * Prometheus metrics of the NodeClaim/Node lifecycle, named and labelled as upstream Karpenter
 * (kubernetes-sigs/karpenter `pkg/metrics/metrics.go`, `pkg/controllers/nodeclaim/lifecycle/metrics.go`,
 * `pkg/controllers/node/termination/metrics.go`). Metrics are created once per registry and shared by every
 * controller that asks for them (the operator passes one prom-client `Registry`).
 */
import type { Counter, Histogram, Registry, Summary } from 'prom-client';
import { registeredCounter, registeredHistogram, registeredSummary } from '../../kube/metrics.ts';

/** Label names, as upstream spells them. */
export type LifecycleLabel = 'nodepool' | 'capacity_type' | 'reason';

/** The lifecycle metrics. Durations are seconds. */
export interface LifecycleMetrics {
  /** `karpenter_nodeclaims_launched_total{nodepool}` */
  launched: Counter<'nodepool'>;
  /** `karpenter_nodeclaims_registered_total{nodepool}` */
  registered: Counter<'nodepool'>;
  /** `karpenter_nodeclaims_initialized_total{nodepool}` */
  initialized: Counter<'nodepool'>;
  /** `karpenter_nodeclaims_terminated_total{nodepool, capacity_type, zone}` (finalizer removed; `zone` is the NodeClaim's `topology.kubernetes.io/zone` label, v1.14). */
  terminated: Counter<'nodepool' | 'capacity_type' | 'zone'>;
  /** `karpenter_nodeclaims_disrupted_total{reason, nodepool, capacity_type}`: liveness timeouts, ICE, GC, expiry, node repair (`unhealthy`). */
  disrupted: Counter<'reason' | 'nodepool' | 'capacity_type'>;
  /** `karpenter_nodes_created_total{nodepool, zone}` (at registration; `zone` from the NodeClaim's zone label). */
  nodesCreated: Counter<'nodepool' | 'zone'>;
  /** `karpenter_nodes_terminated_total{nodepool, zone}` (Node finalizer removed; `zone` from the Node's zone label). */
  nodesTerminated: Counter<'nodepool' | 'zone'>;
  /**
   * `karpenter_nodes_lifetime_duration_seconds{nodepool}`: Node creationTimestamp → finalizer removed, observed
   * when the termination finalizer goes (upstream `pkg/controllers/node/termination/metrics.go`).
   */
  nodeLifetimeDuration: Histogram<'nodepool'>;
  /** `karpenter_nodeclaims_termination_duration_seconds{nodepool}`: deletionTimestamp → finalizer removed. */
  nodeClaimTerminationDuration: Histogram<'nodepool'>;
  /** `karpenter_nodeclaims_instance_termination_duration_seconds{nodepool}` */
  instanceTerminationDuration: Histogram<'nodepool'>;
  /**
   * `karpenter_nodes_termination_duration_seconds{nodepool}`: Node deletion request → finalizer removed; a
   * summary (quantiles 0, 0.5, 0.9, 0.99, 1) as upstream's `pkg/controllers/node/termination/metrics.go`.
   */
  nodeTerminationDuration: Summary<'nodepool'>;
}

const counter = registeredCounter;
const histogram = registeredHistogram;

const exp = (start: number, factor: number, n: number): number[] =>
  Array.from({ length: n }, (_, i) => start * factor ** i);

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

/** Buckets of `karpenter_nodes_lifetime_duration_seconds` (seconds), as upstream: 15 min … 30 days. */
export const NODE_LIFETIME_BUCKETS: readonly number[] = [
  15 * MINUTE,
  30 * MINUTE,
  45 * MINUTE,
  ...[1, 2, 4, 6, 8, 10, 12, 16, 20].map((h) => h * HOUR),
  ...[1, 2, 3, 5, 10, 15, 20, 25, 30].map((d) => d * DAY),
];

const cache = new WeakMap<Registry, LifecycleMetrics>();

/** The lifecycle metrics registered in `registry` (created on first call). */
export function lifecycleMetrics(registry: Registry): LifecycleMetrics {
  const hit = cache.get(registry);
  if (hit) return hit;
  const m: LifecycleMetrics = {
    launched: counter(
      registry,
      'karpenter_nodeclaims_launched_total',
      'Number of nodeclaims launched in total by Karpenter. Labeled by the owning nodepool.',
      ['nodepool'],
    ),
    registered: counter(
      registry,
      'karpenter_nodeclaims_registered_total',
      'Number of nodeclaims registered in total by Karpenter. Labeled by the owning nodepool.',
      ['nodepool'],
    ),
    initialized: counter(
      registry,
      'karpenter_nodeclaims_initialized_total',
      'Number of nodeclaims initialized in total by Karpenter. Labeled by the owning nodepool.',
      ['nodepool'],
    ),
    terminated: counter(
      registry,
      'karpenter_nodeclaims_terminated_total',
      'Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type, and zone.',
      ['nodepool', 'capacity_type', 'zone'],
    ),
    disrupted: counter(
      registry,
      'karpenter_nodeclaims_disrupted_total',
      'Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted and the owning nodepool.',
      ['reason', 'nodepool', 'capacity_type'],
    ),
    nodesCreated: counter(
      registry,
      'karpenter_nodes_created_total',
      'Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.',
      ['nodepool', 'zone'],
    ),
    nodesTerminated: counter(
      registry,
      'karpenter_nodes_terminated_total',
      'Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.',
      ['nodepool', 'zone'],
    ),
    nodeLifetimeDuration: histogram(
      registry,
      'karpenter_nodes_lifetime_duration_seconds',
      'The lifetime duration of the nodes since creation.',
      ['nodepool'],
      NODE_LIFETIME_BUCKETS,
    ),
    nodeClaimTerminationDuration: histogram(
      registry,
      'karpenter_nodeclaims_termination_duration_seconds',
      'Duration of NodeClaim termination in seconds.',
      ['nodepool'],
      exp(1, 2, 12),
    ),
    instanceTerminationDuration: histogram(
      registry,
      'karpenter_nodeclaims_instance_termination_duration_seconds',
      'Duration of CloudProvider Instance termination in seconds.',
      ['nodepool'],
      exp(1, 2, 11),
    ),
    nodeTerminationDuration: registeredSummary(
      registry,
      'karpenter_nodes_termination_duration_seconds',
      "The time taken between a node's deletion request and the removal of its finalizer",
      ['nodepool'],
    ),
  };
  cache.set(registry, m);
  return m;
}
