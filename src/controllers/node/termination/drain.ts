/**
 * Basic drain for Node termination: evicts every drainable pod on the Node through the Eviction API (PDBs
 * respected; 429 means "try again later"), or deletes them once the NodeClaim's termination grace period has
 * expired. Drainable = not owned by a DaemonSet, not a mirror/static pod (owned by the Node), not terminal, and
 * not tolerating `karpenter.sh/disrupted:NoSchedule` (upstream `pkg/controllers/node/termination/terminator`:
 * such pods are left to run until the instance goes away). The full tiered drain (critical pods last,
 * do-not-disrupt) comes with the disruption work; this function is its insertion point.
 */
import type { Pod, Toleration } from '../../../apis/core.ts';
import { TaintDisrupted } from '../../../apis/labels.ts';
import type { KubeClient } from '../../../kube/client.ts';

/** Outcome of one drain pass: pods still on the Node (0 = drained) and what was done. */
export interface DrainResult {
  remaining: number;
  evicted: string[];
  deleted: string[];
  /** Evictions refused now (PDB 429 and the like), as `namespace/name: message`. */
  blocked: string[];
}

function tolerates(tols: readonly Toleration[] | undefined, key: string, effect: string): boolean {
  return (tols ?? []).some((t) => {
    const keyOk = t.operator === 'Exists' ? !t.key || t.key === key : t.key === key && !t.value;
    return keyOk && (!t.effect || t.effect === effect);
  });
}

/** True when the drain must remove `pod` before the Node goes away. Pure. */
export function isDrainable(pod: Pod): boolean {
  const owners = pod.metadata.ownerReferences ?? [];
  if (owners.some((o) => o.kind === 'DaemonSet' || o.kind === 'Node')) return false;
  if (pod.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined) return false;
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  if (tolerates(pod.spec.tolerations, TaintDisrupted.key, TaintDisrupted.effect)) return false;
  return true;
}

/**
 * One drain pass over the pods bound to `nodeName`. `force` deletes instead of evicting (grace period over).
 * Pods already terminating count as remaining. Connection errors throw.
 */
export async function drainNode(client: KubeClient, nodeName: string, force: boolean): Promise<DrainResult> {
  const pods = (await client.list('Pod', { fieldSelector: `spec.nodeName=${nodeName}` })).items.filter(
    (p) => p.spec?.nodeName === nodeName && isDrainable(p),
  );
  const out: DrainResult = { remaining: pods.length, evicted: [], deleted: [], blocked: [] };
  for (const pod of pods) {
    const id = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (pod.metadata.deletionTimestamp && !force) continue;
    if (force) {
      if (await client.tryDelete('Pod', pod.metadata.name as string, pod.metadata.namespace))
        out.deleted.push(id);
      continue;
    }
    const r = await client.evict(pod);
    if (r.ok) out.evicted.push(id);
    else if (r.code !== 'NotFound') out.blocked.push(`${id}: ${r.message}`);
  }
  return out;
}
