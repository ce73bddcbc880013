/**
 * The disruption decision core: `computeDisruption(input)` runs one pass of upstream Karpenter's disruption
 * controller (kubernetes-sigs/karpenter `pkg/controllers/disruption/controller.go`) on a snapshot, purely:
 * 1. expired NodeClaims → `Expired` delete commands (not budgeted; see `expiration.ts`);
 * 2. the methods in order — emptiness, static drift (`staticdrift.ts`), drift, multi-node consolidation, single-node consolidation — each over its
 *    candidates (eligible managed nodes its `shouldDisrupt` accepts) with the per-NodePool budget for its reason;
 *    the first method returning a command ends the pass;
 * 3. every node no command disrupts is listed in `blocked` with the most specific reason known.
 * The controller executes the commands (taint, launch replacements, wait, delete) and re-validates a command by
 * calling this again ~15 s later with a fresh snapshot.
 */
import { budgetMapping } from './budgets.ts';
import { buildClusterView } from './candidates.ts';
import { PassContext } from './context.ts';
import { isEmptyCandidate } from './cost.ts';
import { Drift } from './drift.ts';
import { Emptiness } from './emptiness.ts';
import { expirationCommands } from './expiration.ts';
import type { Method } from './method.ts';
import { MultiNodeConsolidation } from './multinode.ts';
import { consolidationShouldDisruptEvent, SingleNodeConsolidation } from './singlenode.ts';
import { StaticDrift } from './staticdrift.ts';
import type {
  BlockedNode,
  Candidate,
  Command,
  ConsolidationMoveRecord,
  DisruptionInput,
  DisruptionResult,
} from './types.ts';

export { PassContext } from './context.ts';
export type { Method } from './method.ts';
export type * from './types.ts';

/** The methods in upstream's order (v1.14 `NewMethods`: emptiness, static drift, drift, multi, single). */
export function defaultMethods(): Method[] {
  return [
    new Emptiness(),
    new StaticDrift(),
    new Drift(),
    new MultiNodeConsolidation(),
    new SingleNodeConsolidation(),
  ];
}

/** Extra facts about a finished pass, for benchmarks and logs. */
export interface DisruptionStats {
  /** Scheduling simulations run. */
  simulations: number;
  /** The method whose command was chosen, if any. */
  method?: string;
  /**
   * The consolidation moves the methods run this pass scored, in method order (upstream
   * `karpenter_consolidation_moves_total` / `karpenter_consolidation_score`, balanced.go); absent when none.
   */
  consolidationMoves?: ConsolidationMoveRecord[];
  /**
   * Consolidation methods that stopped at their timeout this pass (`MethodResult.timedOut`), as upstream's
   * `consolidation_type` label (`multi`, `single`); absent when none.
   */
  consolidationTimeouts?: Array<'multi' | 'single'>;
}

/** Why a candidate cannot be disrupted by a method of `m`'s class, or undefined. */
function blockFor(c: Candidate, m: Method): string | undefined {
  if (c.ineligible) return c.ineligible;
  if (c.podsBlock) {
    const tgp =
      c.nodeClaim.spec.terminationGracePeriod ?? c.nodePool.spec.template.spec.terminationGracePeriod;
    if (!(m.class === 'eventual' && tgp !== undefined)) return c.podsBlock;
  }
  return undefined;
}

/**
 * One disruption pass over `input` (see the module doc). Pure: same input, same result. Never throws for
 * malformed objects (they become `blocked` reasons); `stats`, when given, is filled in.
 */
export function computeDisruption(input: DisruptionInput, stats?: DisruptionStats): DisruptionResult {
  const view = buildClusterView(input);
  const expired = expirationCommands(view.candidates.values(), input.now);
  const excluded = new Set(expired.map((c) => c.candidates[0]!.name));
  // Expired nodes are being deleted from now on: they count as disrupting for budgets.
  for (const name of excluded) {
    const c = view.candidates.get(name)!;
    const pc = view.poolCounts.get(c.nodePool.metadata.name);
    if (pc && c.initialized) pc.disrupting++;
  }
  const ctx = new PassContext(input, view, excluded);
  const commands: Command[] = [...expired];
  const why = new Map<string, string>();
  const remember = (name: string, reason: string) => {
    if (!why.has(name)) why.set(name, reason);
  };
  let chosen: Command | undefined;
  const moves: ConsolidationMoveRecord[] = [];
  const timeouts: Array<'multi' | 'single'> = [];
  const unconsolidatable = new Map<string, string>();
  for (const m of defaultMethods()) {
    const cands: Candidate[] = [];
    for (const c of view.candidates.values()) {
      if (excluded.has(c.name) || blockFor(c, m)) continue;
      if (m.name === 'SingleNodeConsolidation') {
        const msg = consolidationShouldDisruptEvent(c);
        if (msg) unconsolidatable.set(c.name, msg);
      }
      if (m.shouldDisrupt(c, ctx)) continue;
      cands.push(c);
    }
    if (cands.length === 0) continue;
    const budgets = budgetMapping(input.nodePools, view.poolCounts, m.reason, input.now);
    const res = m.computeCommands(ctx, budgets, cands);
    if (res.moves?.length) moves.push(...res.moves);
    if (res.timedOut) timeouts.push(m.name === 'MultiNodeConsolidation' ? 'multi' : 'single');
    for (const [k, v] of res.unconsolidatable ?? []) if (!unconsolidatable.has(k)) unconsolidatable.set(k, v);
    for (const [k, v] of res.notes) {
      const prev = why.get(k);
      why.set(k, prev ? `${prev}; ${m.name}: ${v}` : `${m.name}: ${v}`);
    }
    chosen = res.commands[0];
    if (chosen) {
      for (const c of cands)
        remember(c.name, `not evaluated: ${chosen.method} chose a command first this pass`);
      break;
    }
  }
  if (chosen) commands.push(chosen);
  if (stats) {
    stats.simulations = ctx.simulations;
    if (chosen) stats.method = chosen.method;
    if (moves.length) stats.consolidationMoves = moves;
    if (timeouts.length) stats.consolidationTimeouts = timeouts;
  }

  const disrupted = new Set(commands.flatMap((c) => c.candidates.map((x) => x.name)));
  const blocked: BlockedNode[] = [];
  for (const dn of input.nodes) {
    const name = dn.node.metadata.name ?? '?';
    if (disrupted.has(name)) continue;
    const c = view.candidates.get(name);
    const reason = view.notManaged.get(name) ?? c?.ineligible ?? why.get(name) ?? fallbackReason(c, chosen);
    blocked.push({ node: name, reason });
  }
  blocked.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  const uncons = [...unconsolidatable]
    .filter(([node]) => !disrupted.has(node))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, message]) => ({ node, message }));
  return uncons.length > 0 ? { commands, blocked, unconsolidatable: uncons } : { commands, blocked };
}

function fallbackReason(c: Candidate | undefined, chosen: Command | undefined): string {
  if (!c) return 'not a disruption candidate';
  if (c.ineligible) return c.ineligible;
  if (c.podsBlock) return c.podsBlock;
  const policy = c.nodePool.spec.disruption?.consolidationPolicy ?? 'WhenEmptyOrUnderutilized';
  if (!c.consolidatable) return c.notConsolidatableReason ?? 'not consolidatable yet';
  if (policy === 'WhenEmpty' && !isEmptyCandidate(c))
    return 'consolidationPolicy is WhenEmpty and the node is not empty';
  if (chosen) return `not evaluated: ${chosen.method} chose a command first this pass`;
  return 'no disruption method applies (not empty, not drifted, no cheaper placement found)';
}
