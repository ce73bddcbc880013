/**
 * The contract of one disruption method. Its own module (not `types.ts`) because it takes the pass context
 * (`context.ts`), which itself reads `types.ts`: kept here, `types.ts` stays the bottom of the folder.
 */
import type { PassContext } from './context.ts';
import type { BudgetReason, Candidate, DisruptionClass, MethodResult } from './types.ts';

/** One disruption method (upstream `disruption.Method`). */
export interface Method {
  /** `Emptiness`, `Drift`, `MultiNodeConsolidation`, `SingleNodeConsolidation`. */
  readonly name: string;
  /** The budget reason it spends. */
  readonly reason: BudgetReason;
  readonly class: DisruptionClass;
  /** `undefined` when the candidate is one for this method, else why not. */
  shouldDisrupt(c: Candidate, ctx: PassContext): string | undefined;
  /**
   * Computes the method's commands over its candidates. `budgets` maps NodePool name → disruptions still allowed
   * for {@link reason} (the method decrements a copy).
   */
  computeCommands(ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult;
}
