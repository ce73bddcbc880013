/**
 * Step 4 of a KarpenterMachinePool reconcile: the desired EC2NodeClass and NodePool written to the workload
 * cluster (reached through CAPI's `<cluster>-kubeconfig` Secret): created, or their labels and spec replaced when
 * they differ (server-side defaults ignored). Sets `EC2NodeClassCreated`, `NodePoolCreated` and `status.version`.
 */
import { KMPConditions } from '../../../apis/capi.ts';
import type { KubeObject } from '../../../apis/core.ts';
import { applyDefaults } from '../../../apis/defaults.ts';
import type { EC2NodeClass, NodePool } from '../../../apis/karpenter.ts';
import type { KubeClient } from '../../../kube/client.ts';
import { errorMessage } from '../../runtime/index.ts';
import type { Desired } from '../desired.ts';
import type { WorkloadCluster } from '../workload.ts';
import type { KMPPass, KMPStepContext } from './context.ts';

/**
 * Writes `desired` to its workload cluster and returns that cluster (the report step reads its NodeClaims).
 * @throws NotReady with `Ready=False` reason `WorkloadClusterUnavailable` when the cluster cannot be reached; the
 * workload client's errors (a conflict requeues the pass).
 */
export async function applyDesired(
  ctx: KMPStepContext,
  pass: KMPPass,
  desired: Desired,
): Promise<WorkloadCluster> {
  const wc = await ctx.workloads.get(pass.namespace, desired.clusterName).catch((err: unknown) => {
    throw pass.notReady('WorkloadClusterUnavailable', errorMessage(err));
  });
  await put(wc.client, 'EC2NodeClass', desired.ec2NodeClass);
  pass.cond(KMPConditions.EC2NodeClassCreated, true);
  await put(wc.client, 'NodePool', desired.nodePool);
  pass.cond(KMPConditions.NodePoolCreated, true);
  if (desired.version) pass.status.version = desired.version;
  return wc;
}

/**
 * Creates `obj` or replaces its labels (merged over the live ones) and spec when they differ from the live object
 * (kind is NodePool or EC2NodeClass; cluster-scoped). No write when nothing differs.
 */
export async function put(
  client: KubeClient,
  kind: 'NodePool' | 'EC2NodeClass',
  obj: NodePool | EC2NodeClass,
): Promise<void> {
  const name = obj.metadata.name;
  const have = (await client.tryGet(kind, name)) as NodePool | EC2NodeClass | undefined;
  if (!have) {
    await client.create(obj);
    return;
  }
  const labels = { ...(have.metadata.labels ?? {}), ...(obj.metadata.labels ?? {}) };
  const same =
    JSON.stringify(labels) === JSON.stringify(have.metadata.labels ?? {}) &&
    specContains(have.spec as unknown, applyDefaults(obj).spec as unknown) &&
    specContains(applyDefaults(obj).spec as unknown, have.spec as unknown);
  if (same) return;
  await client.update({ ...have, metadata: { ...have.metadata, labels }, spec: obj.spec } as KubeObject);
}

/** True when every field of `want` equals the same field of `have` (server defaults in `have` are ignored). */
export function specContains(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return (
      Array.isArray(have) && have.length === want.length && want.every((w, i) => specContains(have[i], w))
    );
  }
  if (want && typeof want === 'object') {
    if (!have || typeof have !== 'object') return false;
    return Object.entries(want).every(([k, v]) =>
      v === undefined ? true : specContains((have as Record<string, unknown>)[k], v),
    );
  }
  return have === want;
}
