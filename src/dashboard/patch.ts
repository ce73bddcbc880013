/**
 * Row-level diffs between two {@link DashboardView}s, so a viewer gets only what changed (a node's bars, a new
 * pending pod) rather than the whole cluster at every change: each keyed list (nodes by name, pending pods by
 * key, NodePools and KarpenterMachinePools by name) becomes `upsert` (rows new or changed) and `remove` (keys
 * gone); `totals`, `at` and `error` are sent whole. Pure. {@link applyPatch} is the inverse the page runs
 * (its JavaScript twin is in `page.ts`).
 */
import type { DashboardView } from './view.ts';

/** Changes of one keyed list. */
export interface ListPatch<T> {
  upsert: T[];
  remove: string[];
}

/** The `patch` message: the lists' changes and the new scalars. */
export interface ViewPatch {
  at: number;
  totals: DashboardView['totals'];
  /** The new error, or null when it cleared (absent: unchanged). */
  error?: string | null;
  nodes?: ListPatch<DashboardView['nodes'][number]>;
  pendingPods?: ListPatch<DashboardView['pendingPods'][number]>;
  nodePools?: ListPatch<DashboardView['nodePools'][number]>;
  machinePools?: ListPatch<DashboardView['machinePools'][number]>;
}

function diffList<T>(
  prev: readonly T[],
  next: readonly T[],
  key: (t: T) => string,
): ListPatch<T> | undefined {
  const before = new Map<string, string>();
  for (const t of prev) before.set(key(t), JSON.stringify(t));
  const upsert: T[] = [];
  const seen = new Set<string>();
  for (const t of next) {
    const k = key(t);
    seen.add(k);
    if (before.get(k) !== JSON.stringify(t)) upsert.push(t);
  }
  const remove = [...before.keys()].filter((k) => !seen.has(k));
  return upsert.length > 0 || remove.length > 0 ? { upsert, remove } : undefined;
}

/** The patch from `prev` to `next`, or undefined when nothing but the time changed. */
export function diffView(prev: DashboardView, next: DashboardView): ViewPatch | undefined {
  const p: ViewPatch = { at: next.at, totals: next.totals };
  let changed = JSON.stringify(prev.totals) !== JSON.stringify(next.totals);
  if (prev.error !== next.error) {
    p.error = next.error ?? null;
    changed = true;
  }
  const nodes = diffList(prev.nodes, next.nodes, (n) => n.name);
  const pending = diffList(prev.pendingPods, next.pendingPods, (x) => x.pod);
  const pools = diffList(prev.nodePools, next.nodePools, (x) => x.name);
  const mps = diffList(prev.machinePools, next.machinePools, (x) => `${x.namespace}/${x.name}`);
  if (nodes) p.nodes = nodes;
  if (pending) p.pendingPods = pending;
  if (pools) p.nodePools = pools;
  if (mps) p.machinePools = mps;
  return changed || nodes || pending || pools || mps ? p : undefined;
}

function applyList<T>(list: readonly T[], lp: ListPatch<T> | undefined, key: (t: T) => string): T[] {
  if (!lp) return [...list];
  const gone = new Set(lp.remove);
  const up = new Map(lp.upsert.map((t) => [key(t), t]));
  const out = list.filter((t) => !gone.has(key(t))).map((t) => up.get(key(t)) ?? t);
  const have = new Set(out.map(key));
  for (const [k, t] of up) if (!have.has(k)) out.push(t);
  return out;
}

/** `view` with `p` applied (new rows appended; the page sorts when it renders). */
export function applyPatch(view: DashboardView, p: ViewPatch): DashboardView {
  const out: DashboardView = {
    ...view,
    at: p.at,
    totals: p.totals,
    nodes: applyList(view.nodes, p.nodes, (n) => n.name),
    pendingPods: applyList(view.pendingPods, p.pendingPods, (x) => x.pod),
    nodePools: applyList(view.nodePools, p.nodePools, (x) => x.name),
    machinePools: applyList(view.machinePools, p.machinePools, (x) => `${x.namespace}/${x.name}`),
  };
  if (p.error === null) delete out.error;
  else if (p.error !== undefined) out.error = p.error;
  return out;
}
