/**
 * The soak's invariant rules that need more than a lookup, as pure functions over listed objects (the run in
 * `run.ts` lists, these decide): the disruption-budget count per NodePool and the duplicate-launch check. Both read
 * "initialized" as the controllers do ({@link initialized}).
 */
import type { Node } from '../../src/apis/core.ts';
import { parseDuration } from '../../src/apis/duration.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { nominatedPodUids } from '../../src/state/cluster.ts';

/** Nodes by name, as listed. */
export type NodesByName = ReadonlyMap<string | undefined, Node>;

function cond(nc: NodeClaim, type: string): boolean {
  return nc.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;
}

/**
 * The NodeClaim's Node, if listed: by `status.nodeName`, else by provider ID, as cluster state joins them (a failed
 * status write can leave a registered NodeClaim without `status.nodeName` while its Node is already initialized).
 */
export function nodeOf(nc: NodeClaim, nodes: NodesByName): Node | undefined {
  if (nc.status?.nodeName) return nodes.get(nc.status.nodeName);
  const id = nc.status?.providerID;
  if (!id) return undefined;
  for (const n of nodes.values()) if (n.spec?.providerID === id) return n;
  return undefined;
}

/**
 * Initialized as the controllers see it: the NodeClaim's `Initialized` condition, or its Node's
 * `karpenter.sh/initialized=true` label (upstream's `StateNode.Initialized` reads only the label; the condition is
 * written after it and lags under API faults).
 */
export function initialized(nc: NodeClaim, node: Node | undefined): boolean {
  return cond(nc, 'Initialized') || node?.metadata.labels?.['karpenter.sh/initialized'] === 'true';
}

/** One NodePool's disruption-budget count at one instant. */
export interface BudgetCount {
  /** Graceful disruptions in progress that count against the budget. */
  disrupting: NodeClaim[];
  /** Nodes the budgets allow disrupting at once (min over the budgets; percentages of all its NodeClaims, up). */
  allowed: number;
  /** Deleting, initialized NodeClaims left out because their Node is gone (only the finalizer is left). */
  nodeGone: number;
}

/**
 * Counts the graceful disruptions of NodePool `np` (its NodeClaims `mine`) at `nowMs`: NodeClaims deleting or whose
 * Node carries the `karpenter.sh/disrupted` taint, initialized, whose Node still exists (as upstream's
 * `BuildDisruptionBudgetMapping`, which counts state nodes with a Node), not expired (`spec.expireAfter` passed:
 * expiration is forceful, not budgeted) and not among `vanished` provider IDs (involuntary). The allowance is
 * lenient: percentages are of every NodeClaim of the pool, initialized or not.
 */
export function budgetCount(
  np: NodePool,
  mine: readonly NodeClaim[],
  nodes: NodesByName,
  nowMs: number,
  vanished: ReadonlySet<string>,
): BudgetCount {
  let nodeGone = 0;
  const disrupting = mine.filter((nc) => {
    const node = nodeOf(nc, nodes);
    const tainted = node?.spec?.taints?.some((t) => t.key === 'karpenter.sh/disrupted') ?? false;
    if (!nc.metadata.deletionTimestamp && !tainted) return false;
    if (!initialized(nc, node)) return false;
    if (!node) {
      nodeGone++;
      return false;
    }
    if (vanished.has(nc.status?.providerID ?? '')) return false;
    const exp = nc.spec.expireAfter;
    const created = Date.parse(nc.metadata.creationTimestamp ?? '');
    if (exp && exp !== 'Never' && nowMs >= created + parseDuration(exp) * 1000) return false;
    return true;
  });
  const budgets = (np.spec.disruption?.budgets ?? [{ nodes: '10%' }]) as { nodes: string }[];
  const allowed = Math.min(
    ...budgets.map((b) =>
      b.nodes.endsWith('%') ? Math.ceil((mine.length * Number(b.nodes.slice(0, -1))) / 100) : Number(b.nodes),
    ),
  );
  return { disrupting, allowed, nodeGone };
}

/**
 * One line on why a NodeClaim counts as disrupting, for a `disruption-budget` violation: deleting (since when) or
 * only tainted, its `DisruptionReason` condition (set by the disruption orchestrator; absent for forceful deletions
 * by other controllers), creation time, `expireAfter`, provider ID and its Node's Ready status. Times are ISO 8601
 * (cluster clock); ages are seconds before `nowMs`.
 */
export function describeDisrupting(nc: NodeClaim, nodes: NodesByName, nowMs: number): string {
  const node = nodeOf(nc, nodes);
  const age = (t: string | undefined) => (t ? `${Math.round((nowMs - Date.parse(t)) / 1000)} s ago` : '?');
  const reason = nc.status?.conditions?.find((c) => c.type === 'DisruptionReason' && c.status === 'True');
  const ready = node?.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? '?';
  const tainted = node?.spec?.taints?.some((t) => t.key === 'karpenter.sh/disrupted') ?? false;
  return [
    nc.metadata.name,
    nc.metadata.deletionTimestamp ? `deleting since ${age(nc.metadata.deletionTimestamp)}` : 'not deleting',
    tainted ? 'tainted disrupted' : 'not tainted',
    `reason ${reason?.reason ?? 'none'}`,
    `created ${age(nc.metadata.creationTimestamp)}`,
    `expireAfter ${nc.spec.expireAfter ?? '?'}`,
    `${nc.status?.providerID ?? 'no provider ID'}`,
    `Node ${node?.metadata.name ?? '?'} Ready=${ready}${node?.metadata.deletionTimestamp ? ' deleting' : ''}`,
  ].join(' ');
}

/**
 * Pending pods (by UID, from `pending`) listed in the nominated-pods annotation of more than one live (not deleting),
 * uninitialized NodeClaim: pod UID → those NodeClaims' names.
 */
export function duplicateLaunches(
  ncs: readonly NodeClaim[],
  nodes: NodesByName,
  pending: ReadonlySet<string>,
): Map<string, string[]> {
  const claims = new Map<string, string[]>();
  for (const nc of ncs) {
    if (nc.metadata.deletionTimestamp || initialized(nc, nodeOf(nc, nodes))) continue;
    for (const uid of nominatedPodUids(nc)) {
      if (!pending.has(uid)) continue;
      claims.set(uid, [...(claims.get(uid) ?? []), nc.metadata.name ?? '']);
    }
  }
  return new Map([...claims].filter(([, names]) => names.length > 1));
}

/**
 * The first of each invariant's violations, in the order the invariants first failed. A violation usually repeats
 * every step until it clears; the first one carries the log lines (run.ts attaches them to the first only) and says
 * when it began.
 */
export function firstOfEach<V extends { invariant: string }>(violations: readonly V[]): V[] {
  const firsts = new Map<string, V>();
  for (const v of violations) if (!firsts.has(v.invariant)) firsts.set(v.invariant, v);
  return [...firsts.values()];
}
