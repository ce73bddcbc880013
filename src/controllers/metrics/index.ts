/** The metrics controllers: node, pod, NodePool and NodeClaim gauges computed from cluster state. */

import type { Controller } from '../runtime/index.ts';
import type { MetricsControllerDeps } from './common.ts';
import { NodeMetricsController } from './node.ts';
import { NodeClaimMetricsController } from './nodeclaim.ts';
import { NodePoolMetricsController } from './nodepool.ts';
import { PodMetricsController } from './pod.ts';

export * from './common.ts';
export * from './instancetype.ts';
export * from './node.ts';
export * from './nodeclaim.ts';
export * from './nodepool.ts';
export * from './pod.ts';
export * from './podprovisioning.ts';

/** All metrics controllers, sharing `deps` (their gauges are registered in `deps.registry` at construction). */
export function metricsControllers(deps: MetricsControllerDeps): Controller[] {
  return [
    new NodeMetricsController(deps),
    new PodMetricsController(deps),
    new NodePoolMetricsController(deps),
    new NodeClaimMetricsController(deps),
  ];
}
