/**
 * Emptiness (upstream kubernetes-sigs/karpenter `pkg/controllers/disruption/emptiness.go`): consolidatable empty
 * nodes ({@link isEmptyCandidate}: no reschedulable pod with a positive eviction cost) are deleted, all of them in one command, as many per NodePool as its `Empty` budget
 * allows (cheapest disruption cost first). Runs for both consolidation policies; not with `consolidateAfter: Never`.
 */
import { byDisruptionCost } from './candidates.ts';
import { savings } from './consolidation.ts';
import type { PassContext } from './context.ts';
import { isEmptyCandidate } from './cost.ts';
import type { Method } from './method.ts';
import type { Candidate, MethodResult } from './types.ts';

/** The emptiness method. */
export class Emptiness implements Method {
  readonly name = 'Emptiness';
  readonly reason = 'Empty' as const;
  readonly class = 'graceful' as const;

  shouldDisrupt(c: Candidate): string | undefined {
    if (!isEmptyCandidate(c)) return 'not empty';
    if (!c.consolidatable) return c.notConsolidatableReason ?? 'not consolidatable yet';
    return undefined;
  }

  computeCommands(_ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult {
    const notes = new Map<string, string>();
    const left = new Map(budgets);
    const empty: Candidate[] = [];
    for (const c of [...candidates].sort(byDisruptionCost)) {
      const pool = c.nodePool.metadata.name;
      if ((left.get(pool) ?? 0) <= 0) {
        notes.set(
          c.name,
          `empty, but the disruption budget of NodePool "${pool}" allows no more Empty disruptions now`,
        );
        continue;
      }
      empty.push(c);
      left.set(pool, (left.get(pool) ?? 0) - 1);
    }
    if (empty.length === 0) return { commands: [], notes };
    return {
      commands: [
        {
          decision: 'delete',
          reason: 'Empty',
          method: this.name,
          candidates: empty,
          replacements: [],
          savingsUSDPerHour: savings(empty, []),
        },
      ],
      notes,
    };
  }
}
