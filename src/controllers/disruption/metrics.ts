/**
 * Metrics of the disruption controller, named and labelled as upstream Karpenter
 * (kubernetes-sigs/karpenter `pkg/controllers/disruption/metrics.go`, `orchestration/metrics.go`). Created once per
 * registry (prom-client refuses duplicates) and shared afterwards.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ConsolidationMoveRecord } from '../../disruption/types.ts';

/** The disruption metrics. */
export interface DisruptionMetrics {
  /** `karpenter_voluntary_disruption_decisions_total{decision, reason, consolidation_type}`: commands executed. */
  decisions: Counter<'decision' | 'reason' | 'consolidation_type'>;
  /**
   * `karpenter_voluntary_disruption_decisions_by_nodepool_total{nodepool, decision, reason, consolidation_type}`:
   * commands executed, once per distinct NodePool of their candidates (upstream `queue.go`).
   */
  decisionsByNodePool: Counter<'nodepool' | 'decision' | 'reason' | 'consolidation_type'>;
  /**
   * `karpenter_voluntary_disruption_failed_validations_total{consolidation_type}`: candidates of a command that
   * failed the re-validation after the validation period (upstream `validation.go`).
   */
  failedValidations: Counter<'consolidation_type'>;
  /** `karpenter_voluntary_disruption_eligible_nodes{reason}`: candidates per method reason, last pass. */
  eligibleNodes: Gauge<'reason'>;
  /** `karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type}`. */
  consolidationTimeouts: Counter<'consolidation_type'>;
  /**
   * `karpenter_nodepools_allowed_disruptions{nodepool, reason}`: the budget's allowed disruptions per NodePool and
   * reason (upstream: before the nodes already disrupting are taken off).
   */
  allowedDisruptions: Gauge<'nodepool' | 'reason'>;
  /** `karpenter_nodepools_nodes_consuming_budgets{nodepool, reason}`: nodes NotReady or being disrupted. */
  nodesConsumingBudgets: Gauge<'nodepool' | 'reason'>;
  /**
   * `karpenter_voluntary_disruption_decision_evaluation_duration_seconds{reason, consolidation_type}`: one
   * observation per pass, `reason` the chosen command's lower-cased disruption reason or `none`.
   */
  evaluationDuration: Histogram<'reason' | 'consolidation_type'>;
  /** `karpenter_voluntary_disruption_queue_failures_total{decision, reason, consolidation_type}`: rolled back commands. */
  queueFailures: Counter<'decision' | 'reason' | 'consolidation_type'>;
  /**
   * `karpenter_consolidation_moves_total{decision, nodepool, policy}`: consolidation moves scored, approved or
   * rejected (upstream v1.14 metrics.go `ConsolidationMovesTotal`, recorded by balanced.go).
   */
  consolidationMoves: Counter<'decision' | 'nodepool' | 'policy'>;
  /**
   * `karpenter_consolidation_score{decision, nodepool, policy}`: the score of each Balanced pool of a scored move
   * (upstream v1.14 metrics.go `ConsolidationScoreHistogram`; buckets 0.1 … 10).
   */
  consolidationScore: Histogram<'decision' | 'nodepool' | 'policy'>;
}

function get<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/** `decisionsByNodePool` and `failedValidations` of {@link DisruptionMetrics}, registered in `registry`. */
function decisionDetailMetrics(
  registry: Registry,
): Pick<DisruptionMetrics, 'decisionsByNodePool' | 'failedValidations'> {
  const registers = [registry];
  return {
    decisionsByNodePool: get(
      registry,
      'karpenter_voluntary_disruption_decisions_by_nodepool_total',
      () =>
        new Counter({
          name: 'karpenter_voluntary_disruption_decisions_by_nodepool_total',
          help: 'Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, reason, and consolidation type.',
          labelNames: ['nodepool', 'decision', 'reason', 'consolidation_type'],
          registers,
        }),
    ),
    failedValidations: get(
      registry,
      'karpenter_voluntary_disruption_failed_validations_total',
      () =>
        new Counter({
          name: 'karpenter_voluntary_disruption_failed_validations_total',
          help: 'Number of candidates that were selected for disruption but failed validation. Labeled by consolidation type.',
          labelNames: ['consolidation_type'],
          registers,
        }),
    ),
  };
}

/** The disruption metrics registered in `registry`. */
export function disruptionMetrics(registry: Registry): DisruptionMetrics {
  const registers = [registry];
  return {
    decisions: get(
      registry,
      'karpenter_voluntary_disruption_decisions_total',
      () =>
        new Counter({
          name: 'karpenter_voluntary_disruption_decisions_total',
          help: 'Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.',
          labelNames: ['decision', 'reason', 'consolidation_type'],
          registers,
        }),
    ),
    ...decisionDetailMetrics(registry),
    eligibleNodes: get(
      registry,
      'karpenter_voluntary_disruption_eligible_nodes',
      () =>
        new Gauge({
          name: 'karpenter_voluntary_disruption_eligible_nodes',
          help: 'Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.',
          labelNames: ['reason'],
          registers,
        }),
    ),
    consolidationTimeouts: get(
      registry,
      'karpenter_voluntary_disruption_consolidation_timeouts_total',
      () =>
        new Counter({
          name: 'karpenter_voluntary_disruption_consolidation_timeouts_total',
          help: 'Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation type.',
          labelNames: ['consolidation_type'],
          registers,
        }),
    ),
    allowedDisruptions: get(
      registry,
      'karpenter_nodepools_allowed_disruptions',
      () =>
        new Gauge({
          name: 'karpenter_nodepools_allowed_disruptions',
          help: 'The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool and reason.',
          labelNames: ['nodepool', 'reason'],
          registers,
        }),
    ),
    nodesConsumingBudgets: get(
      registry,
      'karpenter_nodepools_nodes_consuming_budgets',
      () =>
        new Gauge({
          name: 'karpenter_nodepools_nodes_consuming_budgets',
          help: 'The number of nodes consuming the budget of a nodepool at a point in time. Labeled by NodePool.',
          labelNames: ['nodepool', 'reason'],
          registers,
        }),
    ),
    evaluationDuration: get(
      registry,
      'karpenter_voluntary_disruption_decision_evaluation_duration_seconds',
      () =>
        new Histogram({
          name: 'karpenter_voluntary_disruption_decision_evaluation_duration_seconds',
          help: 'Duration of the disruption decision evaluation process in seconds. Labeled by reason and consolidation type.',
          labelNames: ['reason', 'consolidation_type'],
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
          registers,
        }),
    ),
    queueFailures: get(
      registry,
      'karpenter_voluntary_disruption_queue_failures_total',
      () =>
        new Counter({
          name: 'karpenter_voluntary_disruption_queue_failures_total',
          help: 'The number of times that an enqueued disruption decision failed. Labeled by disruption method.',
          labelNames: ['decision', 'reason', 'consolidation_type'],
          registers,
        }),
    ),
    consolidationMoves: get(
      registry,
      'karpenter_consolidation_moves_total',
      () =>
        new Counter({
          name: 'karpenter_consolidation_moves_total',
          help: 'Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.',
          labelNames: ['decision', 'nodepool', 'policy'],
          registers,
        }),
    ),
    consolidationScore: get(
      registry,
      'karpenter_consolidation_score',
      () =>
        new Histogram({
          name: 'karpenter_consolidation_score',
          help: 'Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.',
          labelNames: ['decision', 'nodepool', 'policy'],
          buckets: [0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0],
          registers,
        }),
    ),
  };
}

/**
 * Counts the consolidation methods that stopped at their timeout in one pass (`DisruptionStats.consolidationTimeouts`)
 * in `karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type}` (upstream
 * singlenodeconsolidation.go / multinodeconsolidation.go `ConsolidationTimeoutsTotal.Inc`).
 */
export function recordConsolidationTimeouts(
  m: Pick<DisruptionMetrics, 'consolidationTimeouts'>,
  timeouts: ReadonlyArray<'multi' | 'single'> | undefined,
): void {
  for (const t of timeouts ?? []) m.consolidationTimeouts.inc({ consolidation_type: t });
}

/**
 * Records the consolidation moves of one pass (`DisruptionStats.consolidationMoves`) as upstream balanced.go does:
 * each adds 1 to `karpenter_consolidation_moves_total`; a Balanced pool's score is observed in
 * `karpenter_consolidation_score` with that pool's own verdict as `decision`.
 */
export function recordConsolidationMoves(
  m: Pick<DisruptionMetrics, 'consolidationMoves' | 'consolidationScore'>,
  moves: readonly ConsolidationMoveRecord[] | undefined,
): void {
  for (const mv of moves ?? []) {
    m.consolidationMoves.inc({ decision: mv.decision, nodepool: mv.nodePool, policy: mv.policy });
    if (mv.score)
      m.consolidationScore.observe(
        { decision: mv.score.decision, nodepool: mv.nodePool, policy: mv.policy },
        mv.score.value,
      );
  }
}

/** Upstream `consolidation_type` label of a method: `empty`, `single`, `multi`, or `''` (drift, expiration). */
export function consolidationType(method: string): string {
  switch (method) {
    case 'Emptiness':
      return 'empty';
    case 'SingleNodeConsolidation':
      return 'single';
    case 'MultiNodeConsolidation':
      return 'multi';
    default:
      return '';
  }
}

/** Metric label form of a disruption reason (`Underutilized` → `underutilized`), as upstream lower-cases it. */
export function reasonLabel(reason: string): string {
  return reason.toLowerCase();
}
