/**
 * Drift (upstream kubernetes-sigs/karpenter `pkg/controllers/disruption/drift.go`): drifted nodes (see
 * `drift-reason.ts`) are replaced. Empty drifted nodes are deleted together, within the `Drifted` budget; else the
 * first drifted node (by disruption cost) whose pods all reschedule is replaced by the NodeClaims the simulation
 * needs (any number; on-demand-only ones narrowed as in `consolidation.ts`), or deleted when none are needed.
 * Drift is an eventual disruption: with a `terminationGracePeriod` on the NodeClaim, do-not-disrupt pods and PDBs do
 * not stop it (the drain is bounded by that period).
 */
import { byDisruptionCost } from './candidates.ts';
import { narrowReplacement, savings } from './consolidation.ts';
import type { PassContext } from './context.ts';
import type { Method } from './method.ts';
import type { Candidate, MethodResult } from './types.ts';

/** The drift method. */
export class Drift implements Method {
  readonly name = 'Drift';
  readonly reason = 'Drifted' as const;
  readonly class = 'eventual' as const;

  shouldDisrupt(c: Candidate): string | undefined {
    // upstream drift.go: static NodePools' drifted nodes are StaticDrift's (`staticdrift.ts`)
    if (c.nodePool.spec.replicas !== undefined) return 'in a static NodePool (StaticDrift replaces it)';
    return c.driftReason ? undefined : 'not drifted';
  }

  computeCommands(ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult {
    const notes = new Map<string, string>();
    const sorted = [...candidates].sort(byDisruptionCost);
    const left = new Map(budgets);
    const empty: Candidate[] = [];
    for (const c of sorted) {
      if (c.reschedulablePods.length > 0) continue;
      const pool = c.nodePool.metadata.name;
      if ((left.get(pool) ?? 0) <= 0) {
        notes.set(
          c.name,
          `drifted (${c.driftReason}), but the budget of NodePool "${pool}" allows no more Drifted disruptions now`,
        );
        continue;
      }
      empty.push(c);
      left.set(pool, (left.get(pool) ?? 0) - 1);
    }
    if (empty.length > 0)
      return {
        commands: [
          {
            decision: 'delete',
            reason: 'Drifted',
            method: this.name,
            candidates: empty,
            replacements: [],
            savingsUSDPerHour: savings(empty, []),
          },
        ],
        notes,
      };
    for (const c of sorted) {
      const pool = c.nodePool.metadata.name;
      if ((budgets.get(pool) ?? 0) <= 0) {
        notes.set(
          c.name,
          `drifted (${c.driftReason}), but the budget of NodePool "${pool}" allows no more Drifted disruptions now`,
        );
        continue;
      }
      const sim = ctx.simulator().simulate([c]);
      if (!sim.ok) {
        notes.set(c.name, `drifted (${c.driftReason}), but ${sim.reason}`);
        continue;
      }
      const replacements = sim.newNodeClaims.map((p) => narrowReplacement(p, ctx, true));
      return {
        commands: [
          {
            decision: replacements.length > 0 ? 'replace' : 'delete',
            reason: 'Drifted',
            method: this.name,
            candidates: [c],
            replacements,
            savingsUSDPerHour: savings([c], replacements),
          },
        ],
        notes,
      };
    }
    return { commands: [], notes };
  }
}
