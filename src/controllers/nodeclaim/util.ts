/**
 * Helpers shared by the NodeClaim, Node and NodePool controllers: the informer indexes they rely on, the
 * NodeClaim ⇄ Node join by provider ID (upstream `pkg/utils/nodeclaim`), taint matching and message trimming.
 */
import type { KubeObject, Node, Taint } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { type Cache, type IndexFunc, IndexNames, indexByProviderID } from '../../kube/cache.ts';
import type { KubeEvent } from '../../kube/types.ts';

/** Something that records Events (the `EventRecorder` of `kube/events.ts` fits). */
export interface Recorder {
  publish(
    obj: KubeObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<KubeEvent | undefined>;
}

/** Adds index `name` to `cache` unless it already exists (several controllers share one informer). */
export function ensureIndex<T extends KubeObject>(cache: Cache<T>, name: string, fn: IndexFunc<T>): void {
  try {
    cache.addIndexer(name, fn);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('already exists')) throw err;
  }
}

/** Index name: Nodes by the value of label `karpenter.sh/nodepool`. */
export const IndexNodePool = `label:${LabelNodePool}`;

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

/** True when two taints have the same key and effect (core/v1 `Taint.MatchTaint`). */
export function matchTaint(a: Pick<Taint, 'key' | 'effect'>, b: Pick<Taint, 'key' | 'effect'>): boolean {
  return a.key === b.key && a.effect === b.effect;
}

/** `key=value:Effect` or `key:Effect`. */
export function formatTaint(t: Taint): string {
  return t.value ? `${t.key}=${t.value}:${t.effect}` : `${t.key}:${t.effect}`;
}

/** Adds `extra` taints not already present (by key+effect) to `taints` (upstream `Taints.Merge`). */
export function mergeTaints(taints: readonly Taint[], extra: readonly Taint[] | undefined): Taint[] {
  const out = [...taints];
  for (const t of extra ?? []) if (!out.some((x) => matchTaint(x, t))) out.push({ ...t });
  return out;
}

/** Truncates a condition/event message to 300 characters plus `...` (upstream `truncateMessage`). */
export function truncateMessage(msg: string): string {
  return msg.length < 300 ? msg : `${msg.slice(0, 300)}...`;
}

/** The printable message of any thrown value. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `karpenter.sh/nodepool` label of an object, or `""`. */
export function nodePoolOf(obj: KubeObject): string {
  return obj.metadata?.labels?.[LabelNodePool] ?? '';
}

/** `karpenter.sh/capacity-type` label of an object, or `""`. */
export function capacityTypeOf(obj: KubeObject): string {
  return obj.metadata?.labels?.['karpenter.sh/capacity-type'] ?? '';
}

/** Adds `f` to a finalizer list copy (no duplicates). */
export function withFinalizer(list: readonly string[] | undefined, f: string): string[] {
  const out = [...(list ?? [])];
  if (!out.includes(f)) out.push(f);
  return out;
}

/** Removes `f` from a finalizer list copy. */
export function withoutFinalizer(list: readonly string[] | undefined, f: string): string[] {
  return (list ?? []).filter((x) => x !== f);
}
