/**
 * A CloudProvider decorator that records call latency and errors in Prometheus metrics, named and labelled as
 * upstream: `karpenter_cloudprovider_duration_seconds{controller, method, provider}` (histogram, seconds) and
 * `karpenter_cloudprovider_errors_total{controller, method, provider, error}` (counter).
 * `method` uses upstream's Go method names (`Create`, `Delete`, `Get`, `List`, `GetInstanceTypes`, `IsDrifted`)
 * so existing dashboards and alerts work; `error` is `NodeClaimNotFoundError`, `InsufficientCapacityError`,
 * `NodeClassNotReadyError` or `""` for any other error.
 * Source: kubernetes-sigs/karpenter `pkg/cloudprovider/metrics/cloudprovider.go`.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import {
  type CloudProvider,
  type InstanceType,
  isInsufficientCapacityError,
  isNodeClaimNotFoundError,
  isNodeClassNotReadyError,
  type NodeClassKind,
  type RepairPolicy,
} from './types.ts';

/** Name of the latency histogram (seconds). */
export const METRIC_DURATION = 'karpenter_cloudprovider_duration_seconds';
/** Name of the error counter. */
export const METRIC_ERRORS = 'karpenter_cloudprovider_errors_total';

/** Upstream method label values, by our method name. */
export const METHOD_LABELS = {
  create: 'Create',
  delete: 'Delete',
  get: 'Get',
  list: 'List',
  instanceTypes: 'GetInstanceTypes',
  isDrifted: 'IsDrifted',
} as const;

type DurationLabels = 'controller' | 'method' | 'provider';
type ErrorLabels = DurationLabels | 'error';

/** Options of {@link withMetrics}. */
export interface WithMetricsOptions {
  /** Value of the `controller` label (upstream takes it from the context); default `""`. */
  controller?: string;
  /** Monotonic time source in milliseconds, for durations; default `performance.now`. */
  now?: () => number;
}

/**
 * The `error` label value for an error thrown by a provider method (upstream `GetErrorTypeLabelValue`):
 * the well-known class name, or `""` for anything else.
 */
export function errorTypeLabel(err: unknown): string {
  if (isInsufficientCapacityError(err)) return 'InsufficientCapacityError';
  if (isNodeClaimNotFoundError(err)) return 'NodeClaimNotFoundError';
  if (isNodeClassNotReadyError(err)) return 'NodeClassNotReadyError';
  return '';
}

function durationMetric(registry: Registry): Histogram<DurationLabels> {
  const existing = registry.getSingleMetric(METRIC_DURATION);
  if (existing) return existing as Histogram<DurationLabels>;
  return new Histogram({
    name: METRIC_DURATION,
    help: 'Duration of cloud provider method calls. Labeled by the controller, method name and provider.',
    labelNames: ['controller', 'method', 'provider'],
    registers: [registry],
  });
}

function errorsMetric(registry: Registry): Counter<ErrorLabels> {
  const existing = registry.getSingleMetric(METRIC_ERRORS);
  if (existing) return existing as Counter<ErrorLabels>;
  return new Counter({
    name: METRIC_ERRORS,
    help: 'Total number of errors returned from CloudProvider calls.',
    labelNames: ['controller', 'method', 'provider', 'error'],
    registers: [registry],
  });
}

/**
 * Wraps `provider` so that every call of `create`, `delete`, `get`, `list`, `instanceTypes` and `isDrifted` is
 * timed into {@link METRIC_DURATION} and every rejection counted in {@link METRIC_ERRORS} (then rethrown
 * unchanged). `name`, `supportedNodeClasses` and `repairPolicies` pass through unmeasured, as upstream.
 * The metrics are created in `registry` on first use and reused by later calls (one decorated provider per
 * controller label is fine). Do not decorate a provider twice with the same registry: calls would count twice.
 */
export function withMetrics(
  provider: CloudProvider,
  registry: Registry,
  options: WithMetricsOptions = {},
): CloudProvider {
  const duration = durationMetric(registry);
  const errors = errorsMetric(registry);
  const controller = options.controller ?? '';
  const now = options.now ?? (() => performance.now());

  async function measure<T>(method: keyof typeof METHOD_LABELS, call: () => Promise<T>): Promise<T> {
    const labels = { controller, method: METHOD_LABELS[method], provider: provider.name };
    const start = now();
    try {
      return await call();
    } catch (err) {
      errors.inc({ ...labels, error: errorTypeLabel(err) });
      throw err;
    } finally {
      duration.observe(labels, Math.max(0, now() - start) / 1000);
    }
  }

  return {
    get name(): string {
      return provider.name;
    },
    supportedNodeClasses: (): NodeClassKind[] => provider.supportedNodeClasses(),
    repairPolicies: (): RepairPolicy[] => provider.repairPolicies(),
    create: (nodeClaim: NodeClaim): Promise<NodeClaim> => measure('create', () => provider.create(nodeClaim)),
    delete: (nodeClaim: NodeClaim): Promise<void> => measure('delete', () => provider.delete(nodeClaim)),
    get: (providerID: string): Promise<NodeClaim> => measure('get', () => provider.get(providerID)),
    list: (): Promise<NodeClaim[]> => measure('list', () => provider.list()),
    instanceTypes: (nodePool: NodePool): Promise<InstanceType[]> =>
      measure('instanceTypes', () => provider.instanceTypes(nodePool)),
    isDrifted: (nodeClaim: NodeClaim): Promise<string | undefined> =>
      measure('isDrifted', () => provider.isDrifted(nodeClaim)),
  };
}
