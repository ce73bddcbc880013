/**
 * The node health controller's own metric, named and labelled as upstream Karpenter v1.14.1
 * (kubernetes-sigs/karpenter `pkg/controllers/node/health/metrics.go`). Created once per registry.
 */
import { Counter, type Registry } from 'prom-client';

/** Label names of {@link unhealthyDisruptedTotal}, as upstream spells them. */
export type UnhealthyDisruptedLabel = 'condition' | 'nodepool' | 'capacity_type' | 'image_id';

/**
 * `karpenter_nodeclaims_unhealthy_disrupted_total{condition, nodepool, capacity_type, image_id}` registered in
 * `registry` (created on first call, shared afterwards): NodeClaims deleted by node repair, by the repaired
 * condition in snake case (`ready`, `accelerated_hardware_ready`), the Node's NodePool and capacity type and the
 * NodeClaim's `status.imageID`.
 */
export function unhealthyDisruptedTotal(registry: Registry): Counter<UnhealthyDisruptedLabel> {
  const name = 'karpenter_nodeclaims_unhealthy_disrupted_total';
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<UnhealthyDisruptedLabel>;
  return new Counter({
    name,
    help: 'Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on the node was disrupted, the owning nodepool, and the image ID.',
    labelNames: ['condition', 'nodepool', 'capacity_type', 'image_id'],
    registers: [registry],
  });
}
