/**
 * Shared pieces of the metrics controllers: dependencies, gauge registration (idempotent per registry), label
 * formatting and unit conversion as upstream (kubernetes-sigs/karpenter `pkg/controllers/metrics/*`: cpu in
 * cores, everything else in its base unit; resource names lower-cased with `-` → `_`).
 */

import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../kube/clock.ts';
import type { Cluster } from '../../state/cluster.ts';

/** Dependencies of every metrics controller. */
export interface MetricsControllerDeps {
  /** Cluster state the gauges are computed from (no API calls). */
  cluster: Cluster;
  clock: Clock;
  logger: Logger;
  registry: Registry;
  /** Seconds between passes (upstream: 5 s for nodes; default 5). */
  periodSeconds?: number;
}

/** The gauge `name` in `registry`, created with `labelNames` on first use. */
export function gauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Gauge<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Gauge<L>;
  return new Gauge<L>({ name, help, labelNames: [...labelNames], registers: [registry] });
}

/** Prometheus label value of a resource name: `ephemeral-storage` → `ephemeral_storage`. */
export function resourceTypeLabel(resource: string): string {
  return resource.toLowerCase().replaceAll('-', '_');
}

/** Value of an internal-unit quantity as upstream reports it: cpu millicores → cores, others unchanged. */
export function metricValue(resource: string, internal: number): number {
  return resource === 'cpu' ? internal / 1000 : internal;
}
