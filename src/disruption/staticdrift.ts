/**
 * Static drift (upstream kubernetes-sigs/karpenter v1.14 `pkg/controllers/disruption/staticdrift.go`): drifted
 * nodes of a static NodePool (`spec.replicas` set) are replaced one for one by a fresh NodeClaim of the NodePool
 * template ({@link staticPlan}; no scheduling simulation, the replicas count is what matters), within the
 * NodePool's `Drifted` budget and its `limits.nodes`: nothing while the NodePool is above `replicas` (scale-down
 * first), at most `limits.nodes − (active + deleting + pending disruption)` replacements at once. Regular
 * {@link Drift} leaves static candidates alone. One command per candidate; an eventual disruption (not
 * re-validated, as upstream).
 */
import { byDisruptionCost } from './candidates.ts';
import { savings } from './consolidation.ts';
import type { PassContext } from './context.ts';
import type { Method } from './method.ts';
import { nodeLimitOf, type StaticCounts, staticPlan } from './static.ts';
import type { Candidate, Command, DisruptionInput, MethodResult } from './types.ts';

/** Counts of a static NodePool in a disruption input (nodes by state plus the in-flight NodeClaims' `nodes`). */
export function staticCountsOf(input: DisruptionInput, nodePool: string): StaticCounts {
  const counts: StaticCounts = { active: 0, deleting: 0, pendingDisruption: 0 };
  for (const dn of input.nodes) {
    const pool = dn.nodeClaim?.metadata.labels?.['karpenter.sh/nodepool'];
    if (pool !== nodePool) continue;
    if (dn.nodeClaim?.metadata.deletionTimestamp || dn.node.metadata.deletionTimestamp) counts.deleting++;
    else if (dn.markedForDeletion) counts.pendingDisruption++;
    else counts.active++;
  }
  counts.active += Math.round(input.inFlightUsage?.[nodePool]?.nodes ?? 0);
  return counts;
}

/** The static drift method. */
export class StaticDrift implements Method {
  readonly name = 'StaticDrift';
  readonly reason = 'Drifted' as const;
  readonly class = 'eventual' as const;

  shouldDisrupt(c: Candidate): string | undefined {
    if (c.nodePool.spec.replicas === undefined) return 'not in a static NodePool';
    return c.driftReason ? undefined : 'not drifted';
  }

  computeCommands(ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult {
    const notes = new Map<string, string>();
    const commands: Command[] = [];
    const byPool = new Map<string, Candidate[]>();
    for (const c of [...candidates].sort(byDisruptionCost)) {
      const pool = c.nodePool.metadata.name ?? '';
      byPool.set(pool, [...(byPool.get(pool) ?? []), c]);
    }
    for (const [pool, cands] of byPool) {
      const np = cands[0]!.nodePool;
      const note = (why: string) => {
        for (const c of cands) notes.set(c.name, `drifted (${c.driftReason}), but ${why}`);
      };
      const budget = budgets.get(pool) ?? 0;
      if (budget <= 0) {
        note(`the budget of NodePool "${pool}" allows no more Drifted disruptions now`);
        continue;
      }
      const n = staticCountsOf(ctx.input, pool);
      if (n.active + n.pendingDisruption > (np.spec.replicas ?? 0)) {
        note(`static NodePool "${pool}" is above its replicas; it scales down first`);
        continue;
      }
      let limit: number;
      try {
        limit = nodeLimitOf(np);
      } catch (err) {
        note((err as Error).message);
        continue;
      }
      const room = Math.max(0, limit - (n.active + n.deleting + n.pendingDisruption));
      const allowed = Math.min(budget, cands.length, room);
      if (allowed === 0) {
        note(`limits.nodes of static NodePool "${pool}" leaves no room for a replacement`);
        continue;
      }
      const plan = staticPlan(np, ctx.input.instanceTypes[pool] ?? []);
      if (typeof plan === 'string') {
        note(plan);
        continue;
      }
      for (const c of cands.slice(0, allowed)) {
        const replacements = [{ ...plan }];
        commands.push({
          decision: 'replace',
          reason: 'Drifted',
          method: this.name,
          candidates: [c],
          replacements,
          savingsUSDPerHour: savings([c], replacements),
        });
      }
    }
    return { commands, notes };
  }
}
