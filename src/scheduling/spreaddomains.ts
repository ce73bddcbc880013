/**
 * The domains a topology spread constraint counts (kube-scheduler PodTopologySpread node inclusion policies,
 * upstream Karpenter `topologygroup.go` / `topologydomaingroup.go`): with `nodeAffinityPolicy: Honor` (the
 * default) only domains of nodes the pod's node selector and required node affinity allow are eligible, with
 * `nodeTaintsPolicy: Honor` (default Ignore) only domains of nodes whose taints the pod tolerates. For capacity
 * Karpenter can still create, a NodePool contributes its domains only when its requirements are compatible with
 * one of the pod's node-affinity alternatives (then the domains that alternative allows) and, with taints Honor,
 * the pod tolerates the NodePool's taints. Existing nodes contribute their label when they pass the same filters.
 * A domain no pod can ever use must not hold the skew's minimum at 0 (the bug of upstream issue #2623).
 *
 * Pure. Called by `runstate.ts` (through {@link Topology}'s universe callback) once per spread group.
 */
import type { Taint, Toleration } from '../apis/core.ts';
import { LabelHostname, WellKnownLabels } from '../apis/labels.ts';
import type { Requirements } from './requirements.ts';
import { firstUntoleratedTaint } from './taints.ts';

/** The node filter of a spread group: the pod's node-affinity alternatives and (taints Honor) its tolerations. */
export interface SpreadNodeFilter {
  /** nodeAffinityPolicy Honor: nodeSelector ∩ each required term; undefined = Ignore. */
  nodeFilter?: readonly Requirements[] | undefined;
  /** nodeTaintsPolicy Honor: the pod's tolerations; undefined = Ignore. */
  taintFilter?: readonly Toleration[] | undefined;
}

/** A NodePool as the filter sees it: template requirements, taints, and its domains of a key under requirements. */
export interface SpreadPool {
  requirements: Requirements;
  taints: readonly Taint[];
  /** Domains of `key` the pool offers, optionally narrowed by `reqs` (zones from offerings, labels otherwise). */
  domains(key: string, reqs?: Requirements): Iterable<string>;
}

/** A node as the filter sees it. */
export interface SpreadNode {
  labels: Readonly<Record<string, string>>;
  taints?: readonly Taint[];
}

/** True when a node passes the filter (labels match an alternative; taints tolerated). */
export function spreadNodeEligible(f: SpreadNodeFilter, node: SpreadNode): boolean {
  if (f.nodeFilter && !f.nodeFilter.some((r) => r.matchesLabels(node.labels))) return false;
  if (f.taintFilter && firstUntoleratedTaint(f.taintFilter, node.taints)) return false;
  return true;
}

/** The eligible domains of `key` for a spread group with filter `f` (see the module doc). Never hostname. */
export function eligibleSpreadDomains(
  key: string,
  f: SpreadNodeFilter,
  pools: readonly SpreadPool[],
  nodes: readonly SpreadNode[],
): Set<string> {
  const out = new Set<string>();
  if (key === LabelHostname) return out;
  for (const pool of pools) {
    if (f.taintFilter && firstUntoleratedTaint(f.taintFilter, pool.taints)) continue;
    if (!f.nodeFilter) {
      for (const d of pool.domains(key)) out.add(d);
      continue;
    }
    for (const alt of f.nodeFilter) {
      if (pool.requirements.compatible(alt, WellKnownLabels)) continue;
      for (const d of pool.domains(key, alt)) out.add(d);
    }
  }
  for (const n of nodes) {
    const v = n.labels[key];
    if (v !== undefined && spreadNodeEligible(f, n)) out.add(v);
  }
  return out;
}
