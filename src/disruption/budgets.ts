/**
 * Disruption budgets (`spec.disruption.budgets`), upstream kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`
 * (`GetAllowedDisruptionsByReason`, `Budget.IsActive`) and `pkg/controllers/disruption/helpers.go`
 * (`BuildDisruptionBudgetMapping`):
 * - a budget with neither `schedule` nor `duration` is always active; otherwise it is active when the cron
 *   `schedule` (UTC) fired within the last `duration` before now; a malformed budget fails closed (allows 0);
 * - `nodes` is a count (`"5"`) or a percent of the NodePool's nodes (`"10%"`), rounded UP (10% of 15 nodes = 2);
 * - allowed for a reason = min over the active budgets that list the reason (or list none); no budget = unlimited;
 * - minus the NodePool's nodes already disrupting (NotReady or marked for deletion), never below 0.
 */
import { CronExpressionParser } from 'cron-parser';
import { tryParseDuration } from '../apis/duration.ts';
import type { Budget, NodePool } from '../apis/karpenter.ts';
import type { BudgetReason } from './types.ts';

/** "Unlimited" (upstream uses MaxInt32). */
export const UNLIMITED = 2147483647;

/** Whether a budget is active at `nowMs`, or why it is malformed (upstream fails closed then). */
export function budgetActive(budget: Budget, nowMs: number): { active: boolean; error?: string } {
  if (budget.schedule === undefined && budget.duration === undefined) return { active: true };
  if (budget.schedule === undefined || budget.duration === undefined)
    return { active: false, error: 'budget needs both schedule and duration' };
  const d = tryParseDuration(budget.duration);
  if (!d.ok || !Number.isFinite(d.seconds))
    return { active: false, error: `duration: ${d.ok ? 'Never' : d.message}` };
  try {
    // Walk back `duration` from now; active when the next hit after that point is not after now.
    const checkpoint = nowMs - d.seconds * 1000;
    const expr = CronExpressionParser.parse(budget.schedule, {
      currentDate: new Date(checkpoint),
      tz: 'UTC',
    });
    const next = expr.next().getTime();
    return { active: next <= nowMs };
  } catch (e) {
    return { active: false, error: `schedule "${budget.schedule}": ${(e as Error).message}` };
  }
}

/**
 * Nodes one budget allows disrupting out of `numNodes`, rounding percentages up; {@link UNLIMITED} when the
 * budget is inactive; 0 when it is malformed (fail closed).
 */
export function budgetAllowed(budget: Budget, numNodes: number, nowMs: number): number {
  const a = budgetActive(budget, nowMs);
  if (a.error) return 0;
  if (!a.active) return UNLIMITED;
  const v = budget.nodes.trim();
  if (v.endsWith('%')) {
    const pct = Number(v.slice(0, -1));
    if (!Number.isFinite(pct) || pct < 0) return 0;
    return Math.max(0, Math.ceil((pct * numNodes) / 100 - 1e-9));
  }
  const n = Number(v);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/** Allowed disruptions of `nodePool` for `reason` with `numNodes` nodes, before subtracting disrupting nodes. */
export function allowedDisruptions(
  nodePool: NodePool,
  numNodes: number,
  reason: BudgetReason,
  nowMs: number,
): number {
  let allowed = UNLIMITED;
  for (const b of nodePool.spec.disruption?.budgets ?? []) {
    if (b.reasons && b.reasons.length > 0 && !b.reasons.includes(reason)) continue;
    allowed = Math.min(allowed, budgetAllowed(b, numNodes, nowMs));
  }
  return allowed;
}

/** Per-NodePool node counts for budgets: managed, initialized nodes, and those of them already disrupting. */
export interface PoolCounts {
  nodes: number;
  disrupting: number;
}

/**
 * NodePool name → disruptions still allowed for `reason`: {@link allowedDisruptions} − disrupting, floored at 0.
 * Every NodePool gets an entry (0 nodes → percentages give 0).
 */
export function budgetMapping(
  nodePools: readonly NodePool[],
  counts: ReadonlyMap<string, PoolCounts>,
  reason: BudgetReason,
  nowMs: number,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const np of nodePools) {
    const c = counts.get(np.metadata.name) ?? { nodes: 0, disrupting: 0 };
    out.set(np.metadata.name, Math.max(0, allowedDisruptions(np, c.nodes, reason, nowMs) - c.disrupting));
  }
  return out;
}
