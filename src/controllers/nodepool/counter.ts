/**
 * NodePool usage (upstream `pkg/controllers/nodepool/counter`): `status.resources` = sum of the capacity of the
 * NodePool's nodes (a Node's capacity when it exists, else its NodeClaim's, so in-flight NodeClaims count) plus
 * `nodes` (their number), with cpu/memory/pods/ephemeral-storage/nodes always present; `status.nodes` = the count.
 */
import type { Node } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { formatResources, parseResources, type Resources } from '../../apis/quantity.ts';

/** Usage of one NodePool. `resources` are quantity strings. Pure. */
export function nodePoolUsage(
  nodePool: string,
  nodeClaims: readonly NodeClaim[],
  nodes: readonly Node[],
): { resources: Record<string, string>; nodes: number } {
  const total: Resources = { cpu: 0, memory: 0, pods: 0, 'ephemeral-storage': 0 };
  const add = (list: Record<string, string | number> | undefined): void => {
    let r: Resources;
    try {
      r = parseResources(list);
    } catch {
      return;
    }
    for (const [k, v] of Object.entries(r)) total[k] = (total[k] ?? 0) + v;
  };
  const byID = new Map<string, Node>();
  for (const n of nodes) if (n.spec?.providerID) byID.set(n.spec.providerID, n);
  const seen = new Set<string>();
  let count = 0;
  for (const nc of nodeClaims) {
    if (nc.metadata.labels?.[LabelNodePool] !== nodePool) continue;
    const id = nc.status?.providerID;
    const node = id ? byID.get(id) : undefined;
    if (id) seen.add(id);
    count++;
    add(node?.status?.capacity ?? nc.status?.capacity);
  }
  for (const n of nodes) {
    if (n.metadata.labels?.[LabelNodePool] !== nodePool) continue;
    if (n.spec?.providerID && seen.has(n.spec.providerID)) continue;
    count++;
    add(n.status?.capacity);
  }
  return { resources: { ...formatResources(total), nodes: String(count) }, nodes: count };
}
