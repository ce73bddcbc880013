/**
 * Upstream's consolidation pipeline Events (kubernetes-sigs/karpenter v1.14.1 `pkg/controllers/disruption/events/
 * events.go` `ConsolidationCandidate` / `ConsolidationRejected`, emitted by `types.go` `EmitCandidateEvents` /
 * `EmitRejectedEvents`), as pure message builders:
 * - `ConsolidationCandidate` (Normal, on each candidate's Node and NodeClaim): `Consolidation candidate: <command>
 *   (savings: $S)` — upstream emits it when a consolidation computes a replace command (`consolidation.go`), so
 *   never for a delete;
 * - `ConsolidationRejected` (Normal, same objects): `Consolidation rejected: <command>, reason: <kind> (savings:
 *   $S)` when single-node consolidation's command fails validation (`singlenodeconsolidation.go`; multi-node's call
 *   receives the emptied command `Validate` returns on failure, so upstream publishes nothing there).
 * `<command>` is upstream's `Command.StringForNode` before the command has an ID: one candidate →
 * `replace: [node] -> [1 replacement]` / `delete: [node]`; several → `replace: [node] (part of N-node
 * consolidation)`. `S` is the estimated savings in USD/hour with two decimals.
 */
import { budgetMapping } from '../../disruption/budgets.ts';
import { buildClusterView } from '../../disruption/candidates.ts';
import type { Command, DisruptionInput } from '../../disruption/types.ts';

/** Upstream `Command.StringForNode` for `node` (a candidate's name) while the command has no ID yet. */
export function commandStringForNode(cmd: Command, node: string): string {
  if (cmd.candidates.length > 1)
    return `${cmd.decision}: [${node}] (part of ${cmd.candidates.length}-node consolidation)`;
  const sources = cmd.candidates.map((c) => c.name).join(', ');
  if (cmd.replacements.length === 0) return `${cmd.decision}: [${sources}]`;
  const n = cmd.replacements.length;
  return `${cmd.decision}: [${sources}] -> [${n} ${n === 1 ? 'replacement' : 'replacements'}]`;
}

function savings(cmd: Command): string {
  return `$${cmd.savingsUSDPerHour.toFixed(2)}`;
}

/** The `ConsolidationCandidate` message for candidate `node` of `cmd`. */
export function consolidationCandidateMessage(cmd: Command, node: string): string {
  return `Consolidation candidate: ${commandStringForNode(cmd, node)} (savings: ${savings(cmd)})`;
}

/** The `ConsolidationRejected` message for candidate `node` of `cmd`, rejected for `reason` (see {@link validationFailureKind}). */
export function consolidationRejectedMessage(cmd: Command, node: string, reason: string): string {
  return `Consolidation rejected: ${commandStringForNode(cmd, node)}, reason: ${reason} (savings: ${savings(cmd)})`;
}

/** True when upstream publishes `ConsolidationCandidate` for `cmd`: a consolidation command that replaces. */
export function publishesCandidateEvents(cmd: Command): boolean {
  return (
    (cmd.method === 'SingleNodeConsolidation' || cmd.method === 'MultiNodeConsolidation') &&
    cmd.decision === 'replace'
  );
}

/**
 * Upstream's `getValidationFailureReason` class of a command that failed validation against `fresh` (the state
 * after the validation wait): `churn` when a candidate is gone or no longer a candidate (upstream
 * `ChurnValidationError`), `budget` when one is nominated for pending pods or its NodePool's budget allows no
 * disruption now (`BudgetValidationError`), else `scheduling` (the re-simulated command differs,
 * `SchedulingValidationError`).
 */
export function validationFailureKind(
  cmd: Command,
  fresh: DisruptionInput,
): 'churn' | 'budget' | 'scheduling' {
  const view = buildClusterView(fresh);
  let nominated = false;
  for (const c of cmd.candidates) {
    const now = view.candidates.get(c.name);
    if (!now || now.podsBlock) return 'churn';
    if (now.ineligible === 'node is nominated for pending pods') nominated = true;
    else if (now.ineligible) return 'churn';
  }
  if (nominated || cmd.reason === 'Expired') return nominated ? 'budget' : 'scheduling';
  const allowed = budgetMapping(fresh.nodePools, view.poolCounts, cmd.reason, fresh.now);
  if (cmd.candidates.some((c) => (allowed.get(c.nodePool.metadata.name) ?? 0) === 0)) return 'budget';
  return 'scheduling';
}
