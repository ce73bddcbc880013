/**
 * Single-node consolidation (upstream kubernetes-sigs/karpenter `pkg/controllers/disruption/singlenodeconsolidation.go`):
 * candidates by savings ratio (price / reschedule disruption cost, highest first; upstream v1.14 `sortCandidates`),
 * then interleaved by NodePool ({@link interweaveByNodePool}); each non-empty candidate (`isEmptyCandidate`, upstream
 * v1.14 `consolidation.go` ShouldDisrupt leaves empty nodes to Emptiness and its `Empty` budget) with `Underutilized`
 * budget left is simulated alone, and the first that can be deleted or replaced by one cheaper NodeClaim wins.
 * A candidate of a `Balanced` NodePool is skipped when even deleting it would not pass the Balanced score, and its
 * command must pass the score (`balanced.ts`). Like upstream it gives up (no command, `timedOut`) once 3 minutes
 * of the injected clock (`DisruptionOptions.clockMs`) have passed; it also stops after `singleNodeMaxSimulations`
 * simulations.
 *
 * Pruning (capenter, exact-safe): a candidate is skipped without a simulation when a lower bound on what its
 * replacement must hold — the pods that fit no other node's free capacity, or the part of its pods' total requests
 * exceeding the other nodes' total free capacity (cpu, memory, pods) — is held by no instance type any NodePool's
 * template requirements allow at a price below the candidate's. Such a candidate can neither be deleted nor replaced more cheaply.
 */
import { tryParseDuration } from '../apis/duration.ts';
import { LabelCapacityType, LabelInstanceType, LabelTopologyZone } from '../apis/labels.ts';
import { isTerminal } from '../apis/pod.ts';
import { parseResource, type Resources } from '../apis/quantity.ts';
import { cheapestOffering, instanceTypeIncompatibility, providerKeys } from '../scheduling/instancetypes.ts';
import { nodeClaimTemplateRequirements } from '../scheduling/nodeclaimtemplate.ts';
import type { Requirements } from '../scheduling/requirements.ts';
import { podRequests } from '../scheduling/resources.ts';
import { balancedPrecheck, balancedRejection, bySavingsRatio, consolidationMoveRecords } from './balanced.ts';
import { computeConsolidation } from './consolidation.ts';
import type { PassContext } from './context.ts';
import { isEmptyCandidate } from './cost.ts';
import type { Method } from './method.ts';
import {
  type Candidate,
  type ConsolidationMoveRecord,
  type MethodResult,
  SINGLE_NODE_CONSOLIDATION_TIMEOUT_MS,
} from './types.ts';

/**
 * Upstream's `Unconsolidatable` Event message from consolidation `ShouldDisrupt` (kubernetes-sigs/karpenter
 * v1.14 `pkg/controllers/disruption/consolidation.go`), checked in upstream's order: instance type unknown,
 * capacity-type or zone label missing, `consolidateAfter: Never`, then (for a non-empty node) policy `WhenEmpty`.
 * Undefined when upstream publishes nothing (an empty node, or one consolidation may evaluate).
 */
export function consolidationShouldDisruptEvent(c: Candidate): string | undefined {
  const labels = c.node.metadata.labels ?? {};
  const pool = c.nodePool.metadata.name;
  if (!c.instanceType) return `Instance Type "${labels[LabelInstanceType] ?? ''}" not found`;
  if (labels[LabelCapacityType] === undefined) return `Node does not have label "${LabelCapacityType}"`;
  if (labels[LabelTopologyZone] === undefined) return `Node does not have label "${LabelTopologyZone}"`;
  const after = tryParseDuration(c.nodePool.spec.disruption?.consolidateAfter ?? '0s');
  if (after.ok && !Number.isFinite(after.seconds)) return `NodePool "${pool}" has consolidation disabled`;
  if (isEmptyCandidate(c)) return undefined;
  if (c.nodePool.spec.disruption?.consolidationPolicy === 'WhenEmpty')
    return `NodePool "${pool}" has consolidation policy WhenEmpty, but node is not empty`;
  return undefined;
}

/** Upstream consolidation `ShouldDisrupt`: policy, `consolidateAfter`, consolidatable, price known. */
export function consolidationShouldDisrupt(c: Candidate): string | undefined {
  const policy = c.nodePool.spec.disruption?.consolidationPolicy ?? 'WhenEmptyOrUnderutilized';
  if (policy === 'WhenEmpty') return 'consolidationPolicy is WhenEmpty (only empty nodes are consolidated)';
  if (!c.consolidatable) return c.notConsolidatableReason ?? 'not consolidatable yet';
  if (!c.instanceType) return "instance type not found in its NodePool's catalog";
  if (c.priceUSDPerHour === undefined) return 'no offering price for its zone and capacity type';
  return undefined;
}

const DIMS = ['cpu', 'memory', 'pods'] as const;

/** Precomputed spare capacity and price-sorted instance types for the prune (see the module doc). */
export class SpareCapacity {
  private readonly free = new Map<string, number[]>();
  private readonly total = [0, 0, 0];
  /** Top two free values per dimension: [value, node] pairs. */
  private readonly top: [number, string][][] = [[], [], []];
  private readonly types: { price: number; alloc: number[] }[] = [];

  constructor(ctx: PassContext) {
    for (const dn of ctx.input.nodes) {
      const name = dn.node.metadata.name ?? '?';
      const c = ctx.view.candidates.get(name);
      if (c?.markedForDeletion || ctx.excluded.has(name) || dn.node.spec?.unschedulable) continue;
      if (c && !c.initialized) continue;
      let f: number[];
      try {
        const alloc = dn.node.status?.allocatable ?? {};
        const a = DIMS.map((d) => (alloc[d] === undefined ? 0 : parseResource(d, alloc[d]!)));
        for (const p of dn.pods) {
          if (isTerminal(p)) continue;
          const r = podRequests(p);
          for (let i = 0; i < 3; i++) a[i]! -= r[DIMS[i]!] ?? 0;
        }
        f = a.map((v) => Math.max(0, v));
      } catch {
        continue;
      }
      this.free.set(name, f);
      for (let i = 0; i < 3; i++) {
        this.total[i]! += f[i]!;
        const t = this.top[i]!;
        t.push([f[i]!, name]);
        t.sort((x, y) => y[0] - x[0]);
        if (t.length > 2) t.pop();
      }
    }
    for (const np of ctx.input.nodePools) {
      let reqs: Requirements;
      try {
        reqs = nodeClaimTemplateRequirements(np);
      } catch {
        continue;
      }
      const types = ctx.input.instanceTypes[np.metadata.name] ?? [];
      const keys = providerKeys(types);
      for (const it of types) {
        // A replacement from this NodePool satisfies at least its template requirements (a superset is safe).
        if (instanceTypeIncompatibility(it, reqs, keys)) continue;
        const o = cheapestOffering(it.offerings, reqs);
        if (!o) continue;
        this.types.push({ price: o.priceUSDPerHour, alloc: DIMS.map((d) => it.allocatable[d] ?? 0) });
      }
    }
    this.types.sort((a, b) => a.price - b.price);
  }

  /** Why `c` cannot be consolidated (see the module doc), or undefined when it might be. */
  prune(c: Candidate): string | undefined {
    const price = c.priceUSDPerHour;
    if (price === undefined) return undefined;
    const own = this.free.get(c.name) ?? [0, 0, 0];
    const maxOther = DIMS.map((_, i) => {
      const t = this.top[i]!;
      const first = t[0];
      if (!first) return 0;
      return first[1] === c.name ? (t[1]?.[0] ?? 0) : first[0];
    });
    const sum = [0, 0, 0];
    const unfit = [0, 0, 0];
    for (const p of c.reschedulablePods) {
      let r: Resources;
      try {
        r = podRequests(p);
      } catch {
        return undefined;
      }
      const v = DIMS.map((d) => r[d] ?? 0);
      let fitsSomewhere = true;
      for (let i = 0; i < 3; i++) {
        sum[i]! += v[i]!;
        if (v[i]! > maxOther[i]!) fitsSomewhere = false;
      }
      if (!fitsSomewhere) for (let i = 0; i < 3; i++) unfit[i]! += v[i]!;
    }
    const need = DIMS.map((_, i) => Math.max(unfit[i]!, sum[i]! - (this.total[i]! - own[i]!)));
    if (need.every((v) => v <= 0)) return undefined;
    for (const t of this.types) {
      if (t.price >= price) break;
      if (t.alloc.every((a, i) => a >= need[i]!)) return undefined;
    }
    return `its pods need at least cpu ${Math.round(need[0]!)}m, memory ${Math.round(need[1]! / 2 ** 20)}Mi, ${need[2]} pods beyond the other nodes' free capacity, and no instance type cheaper than $${price}/h holds that`;
  }
}

/**
 * Upstream `SingleNodeConsolidation.shuffleCandidates`: takes the sorted candidates round-robin by NodePool (the
 * first of every pool, then the second of every pool, …) so one large pool cannot starve the others. Pools go in
 * the order their first candidate appears (upstream iterates a Go map: unordered).
 */
export function interweaveByNodePool(sorted: readonly Candidate[]): Candidate[] {
  const byPool = new Map<string, Candidate[]>();
  for (const c of sorted) {
    const k = c.nodePool.metadata.name;
    const l = byPool.get(k);
    if (l) l.push(c);
    else byPool.set(k, [c]);
  }
  if (byPool.size <= 1) return [...sorted];
  const lists = [...byPool.values()];
  const max = Math.max(...lists.map((l) => l.length));
  const out: Candidate[] = [];
  for (let i = 0; i < max; i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
  return out;
}

/** The single-node consolidation method. */
export class SingleNodeConsolidation implements Method {
  readonly name = 'SingleNodeConsolidation';
  readonly reason = 'Underutilized' as const;
  readonly class = 'graceful' as const;

  shouldDisrupt(c: Candidate): string | undefined {
    return consolidationShouldDisrupt(c);
  }

  computeCommands(ctx: PassContext, budgets: Map<string, number>, candidates: Candidate[]): MethodResult {
    const notes = new Map<string, string>();
    const unconsolidatable = new Map<string, string>();
    const moves: ConsolidationMoveRecord[] = [];
    const spare = new SpareCapacity(ctx);
    const max = ctx.options.singleNodeMaxSimulations;
    let runs = 0;
    const totals = ctx.nodePoolTotals();
    const clock = ctx.options.clockMs;
    const deadline = clock ? clock() + SINGLE_NODE_CONSOLIDATION_TIMEOUT_MS : undefined;
    for (const c of interweaveByNodePool([...candidates].sort(bySavingsRatio))) {
      // upstream: checked before each candidate; a timeout abandons the pass with no command
      if (deadline !== undefined && clock!() > deadline)
        return { commands: [], notes, moves, unconsolidatable, timedOut: true };
      // Emptiness owns empty nodes under the `Empty` budget: an `Empty` budget of 0 must keep them (upstream v1.14
      // consolidation.go ShouldDisrupt `cn.IsEmpty()`; before v1.14 singlenodeconsolidation.go "Filter out empty
      // candidates").
      if (isEmptyCandidate(c)) continue;
      const pool = c.nodePool.metadata.name;
      if ((budgets.get(pool) ?? 0) <= 0) {
        notes.set(c.name, `the budget of NodePool "${pool}" allows no more Underutilized disruptions now`);
        continue;
      }
      const precheck = balancedPrecheck(c, totals);
      if (precheck) {
        notes.set(c.name, `cannot be consolidated: ${precheck}`);
        continue;
      }
      const pruned = spare.prune(c);
      if (pruned) {
        notes.set(c.name, `cannot be consolidated: ${pruned}`);
        // the prune proves no cheaper instance type holds what must move: upstream's simulation ends the same way
        unconsolidatable.set(c.name, "Can't replace with a cheaper node");
        continue;
      }
      if (runs >= max) {
        notes.set(
          c.name,
          `not evaluated: single-node consolidation reached its limit of ${max} simulations this pass`,
        );
        continue;
      }
      runs++;
      const out = computeConsolidation(ctx, [c], this.name);
      // Every computed move is counted, approved or not (upstream balancedEvaluator.ApproveCommand).
      if ('command' in out) moves.push(...consolidationMoveRecords(out.command, totals));
      const rejected = 'command' in out ? balancedRejection(out.command, totals) : out.reason;
      if (!rejected && 'command' in out) return { commands: [out.command], notes, moves, unconsolidatable };
      notes.set(c.name, `cannot be consolidated: ${rejected}`);
      if ('event' in out && out.event) unconsolidatable.set(c.name, out.event);
    }
    return { commands: [], notes, moves, unconsolidatable };
  }
}
