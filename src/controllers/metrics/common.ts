/**
 * Shared pieces of the metrics controllers: dependencies, gauge registration (idempotent per registry), label
 * formatting and unit conversion as upstream (kubernetes-sigs/karpenter `pkg/controllers/metrics/*`: cpu in
 * cores, everything else in its base unit; resource names lower-cased with `-` → `_`).
 */

import type { Logger } from 'pino';
import type { Gauge, Registry } from 'prom-client';
import { parseResources, type Resources } from '../../apis/quantity.ts';
import type { Clock } from '../../kube/clock.ts';
import { registeredGauge } from '../../kube/metrics.ts';
import type { Cluster } from '../../state/cluster.ts';
import { type Controller, SingletonController } from '../runtime/index.ts';

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

/** The gauge `name` in `registry`, created with `labelNames` on first use (see `kube/metrics.ts`). */
export const gauge = registeredGauge;

/**
 * Base of every metrics controller: a singleton loop that calls {@link update} once per pass and then waits
 * `deps.periodSeconds` (default 5 s, upstream's node metrics period). A failing pass is logged and retried by
 * {@link SingletonController}.
 */
export abstract class PeriodicMetricsController implements Controller {
  private readonly loop: SingletonController;

  /** `name`: the controller name in logs (`metrics.<kind>`). */
  constructor(
    readonly name: string,
    protected readonly deps: MetricsControllerDeps,
  ) {
    this.loop = new SingletonController({
      name,
      clock: deps.clock,
      logger: deps.logger,
      reconcile: async () => {
        this.update();
        return { requeueAfter: deps.periodSeconds ?? 5 };
      },
    });
  }

  /** Runs passes until `signal` aborts. */
  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /** One pass: rebuilds this controller's metrics from cluster state (synchronous, so a scrape never sees a half-built set). */
  abstract update(): void;
}

/**
 * Sets one series of `g` per resource in `resources` (internal units), labelled `labels` plus
 * `resource_type` ({@link resourceTypeLabel}), valued as upstream ({@link metricValue}).
 */
export function setResourceGauge<L extends string>(
  g: Gauge<L | 'resource_type'>,
  labels: Partial<Record<L, string>>,
  resources: Resources,
): void {
  for (const [r, v] of Object.entries(resources)) {
    const series = { ...labels, resource_type: resourceTypeLabel(r) };
    g.set(series as Partial<Record<L | 'resource_type', string>>, metricValue(r, v));
  }
}

/** `parseResources(list)`, or `{}` when a quantity is malformed (a metric pass never throws on bad objects). */
export function parseResourcesOrEmpty(list: Record<string, string> | undefined): Resources {
  try {
    return parseResources(list);
  } catch {
    return {};
  }
}

/** Prometheus label value of a resource name: `ephemeral-storage` → `ephemeral_storage`. */
export function resourceTypeLabel(resource: string): string {
  return resource.toLowerCase().replaceAll('-', '_');
}

/** Value of an internal-unit quantity as upstream reports it: cpu millicores → cores, others unchanged. */
export function metricValue(resource: string, internal: number): number {
  return resource === 'cpu' ? internal / 1000 : internal;
}
