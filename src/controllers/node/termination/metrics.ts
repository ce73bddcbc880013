/**
 * Drain metrics of the Node termination controller, named as upstream Karpenter
 * (kubernetes-sigs/karpenter `pkg/controllers/node/termination/metrics.go`, `terminator/metrics.go`):
 * `karpenter_nodes_drained_total{nodepool}`, `karpenter_pods_drained_total{reason}`,
 * `karpenter_pods_eviction_requests_total{code}`. Created once per registry.
 */
import type { Counter, Registry } from 'prom-client';
import { registeredCounter } from '../../../kube/metrics.ts';

/** The drain metrics. */
export interface DrainMetrics {
  /** `karpenter_nodes_drained_total{nodepool}`: nodes whose drain completed. */
  nodesDrained: Counter<'nodepool'>;
  /** `karpenter_pods_drained_total{reason}`: pods evicted, by the NodeClaim's disruption reason. */
  podsDrained: Counter<'reason'>;
  /** `karpenter_pods_eviction_requests_total{code}`: eviction API calls by HTTP response code. */
  evictionRequests: Counter<'code'>;
}

const counter = registeredCounter;

/** The drain metrics registered in `registry` (created on first call, shared afterwards). */
export function drainMetrics(registry: Registry): DrainMetrics {
  return {
    nodesDrained: counter(
      registry,
      'karpenter_nodes_drained_total',
      'The total number of nodes drained by Karpenter',
      ['nodepool'],
    ),
    podsDrained: counter(
      registry,
      'karpenter_pods_drained_total',
      'The total number of pods drained during node termination by Karpenter, labeled by reason',
      ['reason'],
    ),
    evictionRequests: counter(
      registry,
      'karpenter_pods_eviction_requests_total',
      'The total number of pod eviction requests made by Karpenter, labeled by response code',
      ['code'],
    ),
  };
}
