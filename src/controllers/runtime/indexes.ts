/**
 * Informer cache indexes the controllers share, and the NodeClaim ⇄ Node join by provider ID they serve
 * (upstream `pkg/utils/nodeclaim`).
 */
import type { KubeObject, Node } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { type Cache, type IndexFunc, IndexNames, indexByProviderID } from '../../kube/cache.ts';

/** Adds index `name` to `cache` unless it already exists (several controllers share one informer). */
export function ensureIndex<T extends KubeObject>(cache: Cache<T>, name: string, fn: IndexFunc<T>): void {
  try {
    cache.addIndexer(name, fn);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('already exists')) throw err;
  }
}

/** Adds the `providerID` index to a Node or NodeClaim cache. */
export function indexProviderID(cache: Cache<Node> | Cache<NodeClaim>): void {
  ensureIndex(cache as Cache<Node | NodeClaim>, IndexNames.providerID, indexByProviderID);
}

/** Nodes whose `spec.providerID` equals the NodeClaim's `status.providerID` (empty without one). */
export function nodesForNodeClaim(nodes: Cache<Node>, nodeClaim: NodeClaim): Node[] {
  const id = nodeClaim.status?.providerID;
  if (!id) return [];
  return nodes.byIndex(IndexNames.providerID, id);
}

/** NodeClaims whose `status.providerID` equals the Node's `spec.providerID`. */
export function nodeClaimsForNode(nodeClaims: Cache<NodeClaim>, node: Node): NodeClaim[] {
  const id = node.spec?.providerID;
  if (!id) return [];
  return nodeClaims.byIndex(IndexNames.providerID, id);
}
