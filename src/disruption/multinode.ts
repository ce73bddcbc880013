/**
 * Multi-node consolidation (upstream kubernetes-sigs/karpenter `pkg/controllers/disruption/multinodeconsolidation.go`):
 * candidates sorted by savings ratio (price / reschedule disruption cost, highest first; upstream v1.14
 * `sortCandidates`), budget-filtered in that order (each NodePool's `Underutilized` allowance is
 * spent as candidates are taken), empty ones skipped (emptiness owns them), at most `multiNodeMaxCandidates` (100);
 * then a binary search for the largest prefix `[0..n]` (n ≥ 1, so at least two nodes) that can be deleted or
 * replaced by ONE cheaper NodeClaim. A replacement must also pass `filterOutSameType`: if it could launch one of
 * the candidates' own instance types, only options cheaper than the cheapest such candidate are kept (else deleting
 * the other candidates alone would be the better move). A batch with `Balanced` NodePools must also pass the
 * Balanced score of each of them (`balanced.ts`), else the search shrinks the batch. The method's `moves` are the
 * metric records of the chosen command, else of the last batch the Balanced score rejected (upstream
 * `EmitMultiNodeEvents`).
 */

import { cheapestOffering } from '../scheduling/instancetypes.ts';
import { Requirements } from '../scheduling/requirements.ts';
import type { NodeClaimPlan } from '../scheduling/types.ts';
import { balancedRejection, bySavingsRatio, consolidationMoveRecords } from './balanced.ts';
import { computeConsolidation, savings, withOptions } from './consolidation.ts';
import type { PassContext } from './context.ts';
import { isEmptyCandidate } from './cost.ts';
import type { Method } from './method.ts';
import { consolidationShouldDisrupt } from './singlenode.ts';
import {
  type Candidate,
  type Command,
  type MethodResult,
  MULTI_NODE_CONSOLIDATION_TIMEOUT_MS,
} from './types.ts';

/** Upstream `filterOutSameType` (see the module doc); returns the surviving plan or undefined. */
export function filterOutSameType(
  plan: NodeClaimPlan,
  cands: readonly Candidate[],
): NodeClaimPlan | undefined {
  const priceByType = new Map<string, number>();
  for (const c of cands) {
    if (!c.instanceType || c.priceUSDPerHour === undefined) continue;
    const cur = priceByType.get(c.instanceType.name);
    priceByType.set(
      c.instanceType.name,
      cur === undefined ? c.priceUSDPerHour : Math.min(cur, c.priceUSDPerHour),
    );
  }
  let max = Number.POSITIVE_INFINITY;
  for (const it of plan.instanceTypeOptions) {
    const p = priceByType.get(it.name);
    if (p !== undefined && p < max) max = p;
  }
  if (!Number.isFinite(max)) return plan;
  const reqs = Requirements.fromNodeSelector(plan.requirements);
  const kept = plan.instanceTypeOptions.filter((it) => {
    const o = cheapestOffering(it.offerings, reqs);
    return o !== undefined && o.priceUSDPerHour < max;
  });
  if (kept.length === 0) return undefined;
  if (kept.length === plan.instanceTypeOptions.length) return plan;
  return withOptions(plan, kept, reqs);
}

/** The multi-node consolidation method. */
export class MultiNodeConsolidation implements Method {
  readonly name = 'MultiNodeConsolidation';
  readonly reason = 'Underutilized' as const;
  readonly class = 'graceful' as const;

  shouldDisrupt(c: Candidate): string | undefined {
    return consolidationShouldDisrupt(c);
  }

  computeCommands(ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult {
    const notes = new Map<string, string>();
    const left = new Map(budgets);
    const usable: Candidate[] = [];
    for (const c of [...candidates].sort(bySavingsRatio)) {
      if (isEmptyCandidate(c)) continue; // emptiness owns empty nodes; they spend no budget here
      const pool = c.nodePool.metadata.name;
      if ((left.get(pool) ?? 0) <= 0) {
        notes.set(c.name, `the budget of NodePool "${pool}" allows no more Underutilized disruptions now`);
        continue;
      }
      usable.push(c);
      left.set(pool, (left.get(pool) ?? 0) - 1);
    }
    const list = usable.slice(0, ctx.options.multiNodeMaxCandidates);
    const totals = ctx.nodePoolTotals();
    if (list.length < 2) return { commands: [], notes };
    let lo = 1;
    let hi = list.length - 1;
    let best: Command | undefined;
    let lastRejected: Command | undefined;
    const clock = ctx.options.clockMs;
    const deadline = clock ? clock() + MULTI_NODE_CONSOLIDATION_TIMEOUT_MS : undefined;
    let timedOut = false;
    while (lo <= hi) {
      // upstream: past the timeout the search stops and returns the last valid command
      if (deadline !== undefined && clock!() > deadline) {
        timedOut = true;
        break;
      }
      const mid = (lo + hi) >> 1;
      const batch = list.slice(0, mid + 1);
      const out = computeConsolidation(ctx, batch, this.name);
      let cmd: Command | undefined = 'command' in out ? out.command : undefined;
      if (cmd?.decision === 'replace') {
        const plan = filterOutSameType(cmd.replacements[0]!, batch);
        cmd = plan ? { ...cmd, replacements: [plan], savingsUSDPerHour: savings(batch, [plan]) } : undefined;
      }
      if (cmd && balancedRejection(cmd, totals)) {
        lastRejected = cmd;
        cmd = undefined;
      }
      if (cmd) {
        best = cmd;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    // Upstream EmitMultiNodeEvents: the chosen move's records, else once those of the last batch the Balanced
    // score rejected (the smallest failing window), not one per binary-search step.
    const moves = best
      ? consolidationMoveRecords(best, totals, true)
      : lastRejected
        ? consolidationMoveRecords(lastRejected, totals, false)
        : [];
    return { commands: best ? [best] : [], notes, moves, ...(timedOut ? { timedOut } : {}) };
  }
}
