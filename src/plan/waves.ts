/**
 * The pace of a drift roll-out under the NodePools' disruption budgets (`disruption/budgets.ts`
 * `allowedDisruptions`, reason `Drifted`, at each wave's start time, so a `schedule`/`duration` window is
 * honoured). Model (documented in docs/plan.md): a wave disrupts, per NodePool, as many of its drifted nodes as
 * the budget allows minus the nodes already disrupting; a wave lasts `waveSeconds` (launching the replacement
 * until it is Ready, then draining the old node), after which its nodes are gone and the next wave starts. When
 * no NodePool's budget allows a disruption, the next wave waits, in one-minute steps, for a budget window to open,
 * up to {@link HORIZON_MS}; nodes still left then are blocked. Empty drifted nodes go first in their NodePool,
 * then by fewest pods (upstream's disruption-cost order). Nodes of a deleted NodePool all go in the first wave,
 * outside any budget (cascade deletion). Pure.
 */
import type { NodePool } from '../apis/karpenter.ts';
import { allowedDisruptions } from '../disruption/budgets.ts';

/** A node to roll: its NodePool, pod count (for the order) and whether budgets apply. */
export interface WaveNode {
  name: string;
  nodePool: string;
  pods: number;
  /** False for nodes of a deleted NodePool (cascade deletion, no budget). */
  budgeted: boolean;
}

/** One wave: its 1-based index, start (ms since the epoch) and the node names it disrupts. */
export interface Wave {
  index: number;
  startMs: number;
  nodes: string[];
}

/** What {@link computeWaves} returns. */
export interface WavePlan {
  waves: Wave[];
  /** Node name → why it is never disrupted within the horizon. */
  blocked: Map<string, string>;
}

/** How far ahead a budget window is looked for: 31 days. */
export const HORIZON_MS = 31 * 24 * 3600 * 1000;
const STEP_MS = 60_000;

/** Per NodePool: node count for percentages and nodes already disrupting (from the live cluster). */
export interface PoolState {
  nodes: number;
  disrupting: number;
}

/**
 * Splits `nodes` into waves (see the module doc). `pools` has every NodePool with budgeted nodes; `state` their
 * node counts. `nowMs` and `waveSeconds` set the clock.
 */
export function computeWaves(
  nodes: readonly WaveNode[],
  pools: ReadonlyMap<string, NodePool>,
  state: ReadonlyMap<string, PoolState>,
  nowMs: number,
  waveSeconds: number,
): WavePlan {
  const queues = new Map<string, WaveNode[]>();
  for (const n of [...nodes]
    .filter((x) => x.budgeted)
    .sort((a, b) => a.pods - b.pods || cmp(a.name, b.name))) {
    const q = queues.get(n.nodePool) ?? [];
    q.push(n);
    queues.set(n.nodePool, q);
  }
  const waves: Wave[] = [];
  const first = nodes.filter((n) => !n.budgeted).map((n) => n.name);
  let t = nowMs;
  while ([...queues.values()].some((q) => q.length > 0) || first.length > 0) {
    const taken = [...first.splice(0)];
    for (const [pool, q] of queues) {
      const np = pools.get(pool);
      const s = state.get(pool) ?? { nodes: q.length, disrupting: 0 };
      const allowed = np
        ? Math.max(0, allowedDisruptions(np, s.nodes, 'Drifted', t) - s.disrupting)
        : q.length;
      taken.push(...q.splice(0, allowed).map((n) => n.name));
    }
    if (taken.length > 0) {
      waves.push({ index: waves.length + 1, startMs: t, nodes: taken });
      t += waveSeconds * 1000;
      continue;
    }
    if (t - nowMs >= HORIZON_MS || !anyScheduled(queues, pools)) break;
    t += STEP_MS;
  }
  const blocked = new Map<string, string>();
  for (const [pool, q] of queues)
    for (const n of q)
      blocked.set(
        n.name,
        `drifted, but the budgets of NodePool "${pool}" allow no Drifted disruption within 31 days`,
      );
  return { waves, blocked };
}

/** Whether a NodePool with nodes left has a budget with a schedule (else waiting never opens a window). */
function anyScheduled(
  queues: ReadonlyMap<string, WaveNode[]>,
  pools: ReadonlyMap<string, NodePool>,
): boolean {
  return [...queues].some(
    ([pool, q]) => q.length > 0 && (pools.get(pool)?.spec.disruption?.budgets ?? []).some((b) => b.schedule),
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
