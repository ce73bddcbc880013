/**
 * The proposed cluster of `capenter plan`: the live objects with the proposed ones applied (replacing an object
 * of the same kind, namespace and name, as `kubectl apply` would) and the deletions removed. Deleting a NodePool
 * also removes its Nodes (upstream, its NodeClaims are owned by the NodePool and cascade-deleted, without
 * disruption budgets); their reschedulable pods become pending, their DaemonSet and mirror pods go with them.
 */
import type { KubeObject, Pod } from '../apis/core.ts';
import { LabelNodePool } from '../apis/labels.ts';
import { isReschedulable } from '../apis/pod.ts';
import type { SourcedObject } from '../simulate/input.ts';

/** One `--delete KIND/NAME`: a cluster-scoped Karpenter object to delete (NodePool, EC2NodeClass, KWOKNodeClass). */
export interface Deletion {
  kind: string;
  name: string;
}

/** What applying one proposed object or deletion does, as `kubectl apply` would say it. */
export interface Change {
  action: 'apply' | 'delete';
  kind: string;
  name: string;
  /** The file the proposed object came from (apply only). */
  file?: string;
  /** `created` (new), `configured` (changed), `unchanged`, `deleted`. */
  result: 'created' | 'configured' | 'unchanged' | 'deleted';
}

/** What {@link mergeProposed} returns. */
export interface MergedCluster {
  /** The proposed cluster's objects (proposed ones keep their file). */
  objects: SourcedObject[];
  changes: Change[];
  /** Node name → its NodePool, for the Nodes removed with a deleted NodePool. */
  removedNodes: Map<string, string>;
  /** Pods of removed Nodes that become pending, `namespace/name` → node name. */
  evicted: Map<string, string>;
  /** Deletions naming nothing in the cluster (`kubectl delete`'s NotFound), ready to print. */
  errors: string[];
}

/** `Kind/namespace/name`, the identity an object is applied under. */
export function objectKey(o: KubeObject): string {
  return `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** Same content, ignoring server-set metadata (resourceVersion, uid, timestamps, managedFields) and status. */
function sameSpec(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const m = o.metadata ?? {};
    return stable({
      spec: (o as { spec?: unknown }).spec,
      labels: m.labels ?? {},
      annotations: Object.fromEntries(
        Object.entries(m.annotations ?? {}).filter(([k]) => !k.startsWith('karpenter.sh/nodepool-hash')),
      ),
    });
  };
  return strip(a) === strip(b);
}

/** JSON with object keys sorted (the API server and the loader default fields in different orders). */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** The plural resource and group of a Karpenter kind, as the API server names it (`nodepools.karpenter.sh`). */
export function resourceName(kind: string): string {
  const groups: Record<string, string> = {
    NodePool: 'nodepools.karpenter.sh',
    NodeClaim: 'nodeclaims.karpenter.sh',
    EC2NodeClass: 'ec2nodeclasses.karpenter.k8s.aws',
    KWOKNodeClass: 'kwoknodeclasses.karpenter.kwok.sh',
  };
  return groups[kind] ?? kind.toLowerCase();
}

/**
 * Applies `proposed` and `deletions` to `live` in memory (see the module doc). Pure. Deletion of an object
 * that exists neither live nor in `proposed` is an error worded as `kubectl delete` words it.
 */
export function mergeProposed(
  live: readonly KubeObject[],
  proposed: readonly SourcedObject[],
  deletions: readonly Deletion[],
): MergedCluster {
  const byKey = new Map<string, SourcedObject>(
    live.map((o) => [objectKey(o), { object: o, admitted: true }]),
  );
  const changes: Change[] = [];
  for (const p of proposed) {
    const key = objectKey(p.object);
    const before = byKey.get(key)?.object;
    const result = !before ? 'created' : sameSpec(before, p.object) ? 'unchanged' : 'configured';
    changes.push({
      action: 'apply',
      kind: p.object.kind ?? '',
      name: p.object.metadata?.name ?? '',
      ...(p.file ? { file: p.file } : {}),
      result,
    });
    byKey.set(key, p);
  }
  const errors: string[] = [];
  const deletedPools = new Set<string>();
  for (const d of deletions) {
    const key = `${d.kind}//${d.name}`;
    if (!byKey.delete(key)) {
      errors.push(`Error from server (NotFound): ${resourceName(d.kind)} "${d.name}" not found`);
      continue;
    }
    changes.push({ action: 'delete', kind: d.kind, name: d.name, result: 'deleted' });
    if (d.kind === 'NodePool') deletedPools.add(d.name);
  }
  const removedNodes = new Map<string, string>();
  for (const [key, s] of byKey) {
    const pool = s.object.metadata?.labels?.[LabelNodePool];
    if (s.object.kind !== 'Node' || pool === undefined || !deletedPools.has(pool)) continue;
    removedNodes.set(s.object.metadata?.name ?? '', pool);
    byKey.delete(key);
  }
  const evicted = new Map<string, string>();
  const objects: SourcedObject[] = [];
  for (const s of byKey.values()) {
    const pod = s.object as Pod;
    const node = s.object.kind === 'Pod' ? pod.spec?.nodeName : undefined;
    if (node === undefined || !removedNodes.has(node)) {
      objects.push(s);
      continue;
    }
    if (!isReschedulable(pod)) continue;
    evicted.set(`${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`, node);
    objects.push({ object: unbound(pod), admitted: true });
  }
  return { objects, changes, removedNodes, evicted, errors };
}

/** A copy of `pod` as the controller that owns it would recreate it: pending, bound to no node. */
export function unbound(pod: Pod): Pod {
  const p = structuredClone(pod);
  if (p.spec) delete p.spec.nodeName;
  p.status = { phase: 'Pending' };
  return p;
}
