/**
 * `consolidationPolicy: Balanced` (upstream kubernetes-sigs/karpenter v1.14, `pkg/controllers/disruption/balanced.go`,
 * `types.go` `ScoreResult`, `pkg/apis/v1/nodepool.go` `BalancedK`; design `designs/balanced-consolidation.md`):
 * a consolidation move of a Balanced NodePool is taken only when the share of the pool's cost it saves is at least
 * half the share of the pool's disruption it causes:
 *
 *   score = (savings / poolTotalCost) / (moveDisruptionCost / poolTotalDisruptionCost) ≥ 1 / k,  k = 2
 *
 * - savings: the command's savings (USD/hour: Σ candidate prices − replacement price); for a move spanning several
 *   NodePools each pool gets the savings × its share of the candidates' summed price;
 * - moveDisruptionCost: Σ {@link rescheduleDisruptionCost} of the pool's candidates in the move;
 * - poolTotalCost: Σ current price of every managed node of the pool (upstream `ClusterCost.GetNodepoolCost`, which
 *   tracks every priced NodeClaim; capenter sums the snapshot's nodes), else Σ its candidates' prices;
 * - poolTotalDisruptionCost: Σ over EVERY node of the pool (candidates or not) of 1 + Σ max(0, eviction cost) of
 *   its pods (candidates: reschedulable pods; other nodes: every active non-DaemonSet pod).
 * Score is 0 when savings ≤ 0 (or the pool totals are 0), +∞ when the disruption fraction is 0. Other policies are
 * never scored. Pure.
 */
import { LabelNodePool } from '../apis/labels.ts';
import { isActive, isOwnedByDaemonSet } from '../apis/pod.ts';
import type { ClusterView } from './candidates.ts';
import { rescheduleDisruptionCost } from './cost.ts';
import type { Candidate, Command, ConsolidationMoveRecord, DisruptionInput } from './types.ts';

/** Upstream `v1.BalancedK`: a move passes when its score is ≥ 1/k = 0.5. */
export const BALANCED_K = 2;

/**
 * Upstream `Candidate.SavingsRatio`: current price (USD/hour; 0 when unknown, as upstream's `resolveNodePrice`)
 * per unit of {@link rescheduleDisruptionCost}. Higher = better to disrupt.
 */
export function savingsRatio(c: Candidate): number {
  return (c.priceUSDPerHour ?? 0) / c.rescheduleDisruptionCost;
}

/**
 * Consolidation candidate order (upstream v1.14 `consolidation.sortCandidates`): savings ratio descending, ties by
 * node name (upstream's `sort.Slice` leaves ties unordered).
 */
export function bySavingsRatio(a: Candidate, b: Candidate): number {
  return savingsRatio(b) - savingsRatio(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Per-NodePool denominators of the score (upstream `NodePoolTotals`). */
export interface NodePoolTotals {
  /** USD/hour. */
  totalCost: number;
  totalDisruptionCost: number;
}

/** True when upstream's `NewCandidate` would accept the node for a graceful method (its totals use the candidate). */
function isUpstreamCandidate(c: Candidate | undefined): c is Candidate {
  return c !== undefined && !c.ineligible && !c.podsBlock;
}

/**
 * Upstream `computeNodePoolTotals` over the snapshot (see the module doc), for every NodePool that has at least one
 * candidate. Keyed by NodePool name.
 */
export function nodePoolTotals(input: DisruptionInput, view: ClusterView): Map<string, NodePoolTotals> {
  const candidateCost = new Map<string, number>();
  const clusterCost = new Map<string, number>();
  for (const c of view.candidates.values()) {
    const pool = c.nodePool.metadata.name;
    clusterCost.set(pool, (clusterCost.get(pool) ?? 0) + (c.priceUSDPerHour ?? 0));
    if (isUpstreamCandidate(c))
      candidateCost.set(pool, (candidateCost.get(pool) ?? 0) + (c.priceUSDPerHour ?? 0));
  }
  const disruption = new Map<string, number>();
  for (const dn of input.nodes) {
    const pool = dn.node.metadata.labels?.[LabelNodePool];
    if (!pool) continue;
    const c = view.candidates.get(dn.node.metadata.name ?? '?');
    const cost = isUpstreamCandidate(c)
      ? c.rescheduleDisruptionCost
      : rescheduleDisruptionCost(dn.pods.filter((p) => isActive(p) && !isOwnedByDaemonSet(p)));
    disruption.set(pool, (disruption.get(pool) ?? 0) + cost);
  }
  const out = new Map<string, NodePoolTotals>();
  for (const [pool, fallback] of candidateCost) {
    const cc = clusterCost.get(pool) ?? 0;
    out.set(pool, { totalCost: cc > 0 ? cc : fallback, totalDisruptionCost: disruption.get(pool) ?? 0 });
  }
  return out;
}

/** Upstream `ScoreResult`: the two fractions of a move for one NodePool. */
export interface ScoreResult {
  savingsFraction: number;
  disruptionFraction: number;
}

/** Upstream `ScoreResult.Score`: 0 when savings ≤ 0, +∞ when the disruption fraction is 0, else their ratio. */
export function score(r: ScoreResult): number {
  if (!(r.savingsFraction > 0)) return 0;
  if (r.disruptionFraction === 0) return Number.POSITIVE_INFINITY;
  return r.savingsFraction / r.disruptionFraction;
}

/** Upstream `ScoreResult.Approved`: score ≥ 1 / {@link BALANCED_K}. */
export function approved(r: ScoreResult): boolean {
  return score(r) >= 1 / BALANCED_K;
}

/** Upstream `ScoreMove`: zero fractions (score 0) when a pool total is not positive. */
export function scoreMove(
  savings: number,
  disruptionCost: number,
  totals: NodePoolTotals | undefined,
): ScoreResult {
  if (!totals || totals.totalCost <= 0 || totals.totalDisruptionCost <= 0)
    return { savingsFraction: 0, disruptionFraction: 0 };
  return {
    savingsFraction: savings / totals.totalCost,
    disruptionFraction: disruptionCost / totals.totalDisruptionCost,
  };
}

/** True when `c`'s NodePool uses `consolidationPolicy: Balanced`. */
export function isBalanced(c: Candidate): boolean {
  return c.nodePool.spec.disruption?.consolidationPolicy === 'Balanced';
}

const pct = (v: number) => `${Number((v * 100).toFixed(2))}%`;

/** Human-readable verdict of one pool's score, for blocked reasons. */
function describe(pool: string, r: ScoreResult): string {
  const s = score(r);
  return `NodePool "${pool}" is Balanced: saves ${pct(r.savingsFraction)} of its cost for ${pct(r.disruptionFraction)} of its disruption (score ${Number.isFinite(s) ? Number(s.toFixed(3)) : 'inf'}, needs ≥ ${1 / BALANCED_K})`;
}

/** `cmd`'s candidates grouped by NodePool name, pools in the order their first candidate appears. */
function candidatesByPool(cmd: Command): Map<string, Candidate[]> {
  const byPool = new Map<string, Candidate[]>();
  for (const c of cmd.candidates) {
    const k = c.nodePool.metadata.name;
    const l = byPool.get(k);
    if (l) l.push(c);
    else byPool.set(k, [c]);
  }
  return byPool;
}

/**
 * Upstream `EvaluateBalancedMove`'s per-pool results: the {@link ScoreResult} of every Balanced NodePool of `cmd`
 * (pools not Balanced are left out), each scored on its share of the savings (a move across NodePools splits the
 * savings by the pools' shares of the candidates' summed price). Keyed by NodePool name, in candidate order. Pure.
 */
export function balancedScores(
  cmd: Command,
  totals: ReadonlyMap<string, NodePoolTotals>,
): Map<string, ScoreResult> {
  const byPool = candidatesByPool(cmd);
  const sourceCost = cmd.candidates.reduce((s, c) => s + (c.priceUSDPerHour ?? 0), 0);
  const out = new Map<string, ScoreResult>();
  for (const [pool, cands] of byPool) {
    if (!isBalanced(cands[0]!)) continue;
    const poolCost = cands.reduce((s, c) => s + (c.priceUSDPerHour ?? 0), 0);
    const poolSavings =
      sourceCost > 0 && byPool.size > 1
        ? cmd.savingsUSDPerHour * (poolCost / sourceCost)
        : cmd.savingsUSDPerHour;
    const disruption = cands.reduce((s, c) => s + c.rescheduleDisruptionCost, 0);
    out.set(pool, scoreMove(poolSavings, disruption, totals.get(pool)));
  }
  return out;
}

/**
 * Upstream `EvaluateBalancedMove`: scores each Balanced NodePool of the command independently; the move is taken
 * only when every Balanced pool approves. Returns undefined when approved, else why not (the first failing pool).
 */
export function balancedRejection(
  cmd: Command,
  totals: ReadonlyMap<string, NodePoolTotals>,
): string | undefined {
  for (const [pool, r] of balancedScores(cmd, totals)) if (!approved(r)) return describe(pool, r);
  return undefined;
}

const verdict = (ok: boolean): 'approved' | 'rejected' => (ok ? 'approved' : 'rejected');

function policyOf(c: Candidate): string {
  return c.nodePool.spec.disruption?.consolidationPolicy ?? 'WhenEmptyOrUnderutilized';
}

/**
 * The metric records of an evaluated consolidation move (see {@link ConsolidationMoveRecord}), as upstream v1.14
 * balanced.go records them:
 * - one candidate (`ApproveCommand`): one record for its NodePool, `rejected` only when that pool is Balanced and
 *   fails its score; the score only for a Balanced pool;
 * - several candidates (`EmitMultiNodeEvents`, called for the chosen multi-node command with `moveApproved` true,
 *   or once for the last rejected batch when none was approved): one record per NodePool of the move with the
 *   move's verdict, and for each Balanced pool its score with the pool's own verdict.
 * Pure.
 */
export function consolidationMoveRecords(
  cmd: Command,
  totals: ReadonlyMap<string, NodePoolTotals>,
  moveApproved = true,
): ConsolidationMoveRecord[] {
  const scores = balancedScores(cmd, totals);
  const out: ConsolidationMoveRecord[] = [];
  const single = cmd.candidates.length === 1;
  for (const [pool, cands] of candidatesByPool(cmd)) {
    const r = scores.get(pool);
    const poolVerdict = verdict(r === undefined || approved(r));
    out.push({
      decision: single ? poolVerdict : verdict(moveApproved),
      nodePool: pool,
      policy: policyOf(cands[0]!),
      ...(r ? { score: { value: score(r), decision: poolVerdict } } : {}),
    });
  }
  return out;
}

/** One Balanced NodePool's approved score for a command (what upstream's `ConsolidationApproved` Event reports). */
export interface BalancedApproval {
  nodePool: string;
  score: number;
  /** 1 / {@link BALANCED_K}. */
  threshold: number;
  k: number;
  savingsFraction: number;
  disruptionFraction: number;
}

/**
 * The approved per-pool scores of `cmd` for its Balanced NodePools (pools not Balanced, or whose score fails, are
 * left out), scored as {@link balancedRejection} does. Pure.
 */
export function balancedApprovals(
  cmd: Command,
  totals: ReadonlyMap<string, NodePoolTotals>,
): BalancedApproval[] {
  const out: BalancedApproval[] = [];
  for (const [pool, r] of balancedScores(cmd, totals)) {
    if (!approved(r)) continue;
    out.push({ nodePool: pool, score: score(r), threshold: 1 / BALANCED_K, k: BALANCED_K, ...r });
  }
  return out;
}

/** Go's `%.Nf` of `v` (`+Inf` for infinity). */
function goFixed(v: number, digits: number): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return v.toFixed(digits);
}

/**
 * Upstream `consolidationScoreMessage`: `score 1.25 >= threshold 0.50 (k: 2, savings 12.5%, disruption 10.0%)`.
 */
export function balancedApprovalMessage(a: BalancedApproval): string {
  return `score ${goFixed(a.score, 2)} >= threshold ${goFixed(a.threshold, 2)} (k: ${a.k}, savings ${goFixed(a.savingsFraction * 100, 1)}%, disruption ${goFixed(a.disruptionFraction * 100, 1)}%)`;
}

/**
 * Upstream `balancedEvaluator.CanPassThreshold`: whether deleting `c` outright (the best score any move of it can
 * reach) passes; undefined when it may, else why not. Non-Balanced pools and pools without a positive total cost
 * always may.
 */
export function balancedPrecheck(
  c: Candidate,
  totals: ReadonlyMap<string, NodePoolTotals>,
): string | undefined {
  if (!isBalanced(c)) return undefined;
  const t = totals.get(c.nodePool.metadata.name);
  if (!t || t.totalCost <= 0) return undefined;
  const r = scoreMove(c.priceUSDPerHour ?? 0, c.rescheduleDisruptionCost, t);
  return approved(r)
    ? undefined
    : `even deleting it would not pass: ${describe(c.nodePool.metadata.name, r)}`;
}
