/**
 * Metrics registered once per prom-client `Registry`: the operator builds controllers (and tests build operators)
 * more than once per registry, and prom-client throws on a second registration of a name, so every metric is
 * taken from the registry when it is there and created (and registered) otherwise. The name, help, labels and
 * buckets of the first registration win.
 */
import { Counter, Gauge, Histogram, type Registry, Summary } from 'prom-client';

/**
 * The counter `name` of `registry`, created with `help` and `labelNames` on first use.
 * @throws Error from prom-client when `name` is not a valid metric name.
 */
export function registeredCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter<L>({ name, help, labelNames: [...labelNames], registers: [registry] });
}

/**
 * The gauge `name` of `registry`, created with `help` and `labelNames` on first use.
 * @throws Error from prom-client when `name` is not a valid metric name.
 */
export function registeredGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Gauge<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Gauge<L>;
  return new Gauge<L>({ name, help, labelNames: [...labelNames], registers: [registry] });
}

/**
 * The histogram `name` of `registry`, created with `help`, `labelNames` and `buckets` (upper bounds, in the
 * metric's unit, usually seconds) on first use.
 * @throws Error from prom-client when `name` is not a valid metric name or the buckets are not increasing.
 */
export function registeredHistogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: readonly number[],
): Histogram<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Histogram<L>;
  return new Histogram<L>({
    name,
    help,
    labelNames: [...labelNames],
    buckets: [...buckets],
    registers: [registry],
  });
}

/**
 * The summary `name` of `registry`, created with `help`, `labelNames` and `percentiles` (quantiles in [0, 1]) on
 * first use; upstream's summaries use `SummaryObjectives()` (0, 0.5, 0.9, 0.99, 1; kubernetes-sigs/karpenter
 * `pkg/metrics/constants.go`), the default here.
 * @throws Error from prom-client when `name` is not a valid metric name or a percentile is outside [0, 1].
 */
export function registeredSummary<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  percentiles: readonly number[] = [0, 0.5, 0.9, 0.99, 1],
): Summary<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Summary<L>;
  return new Summary<L>({
    name,
    help,
    labelNames: [...labelNames],
    percentiles: [...percentiles],
    registers: [registry],
  });
}
