/**
 * Step 5 of a KarpenterMachinePool reconcile: what CAPI reads back.
 * - {@link publishReplicas}: `spec.providerIDList` from the pool's NodeClaims in the workload cluster
 *   ({@link nextProviderIDList}: never empty while a NodeClaim has none yet, an ID leaves only when its Node is
 *   gone; merge-patched only when it changed), `status.replicas` = the length of that list (instances CAPI can see;
 *   a NodeClaim without a provider ID is not counted, or CAPI v1.14 logs "Retrieved empty spec.providerIDList from
 *   infrastructure provider but status.replicas is not zero" and skips the copy), and the MachinePool's
 *   `spec.replicas` kept equal to it (capenter annotated the MachinePool `replicas-managed-by:
 *   external-autoscaler`, so it owns that field, as CAPA's AWSManagedMachinePool does): CAPI's MachinePool phase
 *   compares `spec.replicas` with its ready replicas (`Scaling` forever otherwise), and at zero its node-ref sync
 *   (`reconcileNodeRefs`, cluster-api `machinepool_controller_noderef.go`) returns early while `spec.replicas` ≠ 0,
 *   keeping deleted Nodes in `status.nodeRefs`. The controller also calls it when a later step failed (the list
 *   only depends on the workload cluster).
 * - {@link reportReplicas}: that, plus `status.ready` / `status.initialization.provisioned` and the root `Ready`
 *   condition. Provisioning is one-way (CAPI's v1beta2 contract "initialization"): once the bootstrap data was
 *   there both stay true and later trouble shows only in `Ready` — CAPI v1.14.2's MachinePool controller reads only
 *   `status.ready` and stops copying `providerIDList` when it turns false.
 */
import { KMPConditions, type MachinePool } from '../../../apis/capi.ts';
import { nextProviderIDList } from '../desired.ts';
import { type WorkloadCluster, WorkloadClusters } from '../workload.ts';
import type { KMPPass, KMPStepContext } from './context.ts';

/**
 * Publishes the pool's provider IDs and replica count: KMP `spec.providerIDList`, `status.replicas` (in
 * `pass.status`, written by the controller) and `MachinePool.spec.replicas` of `mp` (merge patches, only when they
 * changed). @throws the client's errors.
 */
export async function publishReplicas(
  ctx: KMPStepContext,
  pass: KMPPass,
  wc: WorkloadCluster,
  mp: MachinePool,
): Promise<void> {
  const claims = WorkloadClusters.nodeClaims(wc, pass.name);
  const nodeIDs = new Set(
    WorkloadClusters.nodes(wc)
      .map((n) => n.spec?.providerID ?? '')
      .filter((x) => x),
  );
  const prevList = pass.kmp.spec?.providerIDList ?? [];
  const list = nextProviderIDList(
    prevList,
    claims.map((c) => c.status?.providerID ?? ''),
    claims.length,
    nodeIDs,
  );
  if (JSON.stringify(list) !== JSON.stringify(prevList)) {
    // Shrinking: status.replicas goes down first, so CAPI never reads a shorter (or empty) list beside the old
    // count ("Retrieved empty spec.providerIDList from infrastructure provider but status.replicas is not zero").
    if (list.length < (pass.kmp.status?.replicas ?? 0))
      await ctx.client.patchStatus(
        'KarpenterMachinePool',
        pass.name,
        pass.namespace,
        { status: { replicas: list.length } },
        { type: 'merge' },
      );
    await ctx.client.patch(
      'KarpenterMachinePool',
      pass.name,
      pass.namespace,
      { spec: { providerIDList: list } },
      { type: 'merge' },
    );
  }
  pass.status.replicas = list.length;
  if (mp.spec?.replicas !== list.length) {
    await ctx.client.patch(
      'MachinePool',
      mp.metadata.name as string,
      mp.metadata.namespace,
      { spec: { replicas: list.length } },
      { type: 'merge' },
    );
  }
}

/** True once the KMP reported itself provisioned (`status.initialization.provisioned` or `status.ready`). */
export function wasProvisioned(pass: KMPPass): boolean {
  const s = pass.kmp.status;
  return s?.initialization?.provisioned === true || s?.ready === true;
}

/** Reports the pool's NodeClaims of `wc` to the KMP and its MachinePool `mp` (see the module comment). @throws the client's errors. */
export async function reportReplicas(
  ctx: KMPStepContext,
  pass: KMPPass,
  wc: WorkloadCluster,
  mp: MachinePool,
): Promise<void> {
  await publishReplicas(ctx, pass, wc, mp);
  const { status } = pass;
  const ready = pass.condition(KMPConditions.BootstrapDataReady)?.status === 'True';
  const provisioned = ready || wasProvisioned(pass);
  status.ready = provisioned;
  status.initialization = { provisioned };
  pass.cond(KMPConditions.Ready, ready, ready ? undefined : 'BootstrapDataNotReady');
}
