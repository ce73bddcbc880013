/**
 * Step 5 of a KarpenterMachinePool reconcile: what CAPI reads back. `spec.providerIDList` from the pool's
 * NodeClaims in the workload cluster ({@link nextProviderIDList}: never empty while replicas ≠ 0, an ID leaves only
 * when its Node is gone; merge-patched only when it changed), `status.replicas` (the NodeClaims that have a provider
 * ID: the observed instances, as the contract asks), `status.ready` and `status.initialization.provisioned` (the
 * bootstrap data is there) and the root `Ready` condition; and the MachinePool's `spec.replicas`, set to the same
 * count while it is marked `cluster.x-k8s.io/replicas-managed-by: external-autoscaler` (as the community KMP
 * controller, CAPA's AWSManagedMachinePool and CAPZ do for externally managed replicas): without it CAPI's phase stays
 * `Scaling` and, at zero, `status.nodeRefs` keeps deleted Nodes (shared/tools/realcapi/FINDINGS.md, mismatches 1-2).
 */
import {
  AnnotationReplicasManagedBy,
  KMPConditions,
  type MachinePool,
  ReplicasManagedByExternalAutoscaler,
} from '../../../apis/capi.ts';
import { nextProviderIDList } from '../desired.ts';
import { type WorkloadCluster, WorkloadClusters } from '../workload.ts';
import type { KMPPass, KMPStepContext } from './context.ts';

/**
 * Reports the pool's NodeClaims of `wc` to the KMP and to `machinePool`'s `spec.replicas` (see the module comment).
 * @throws the client's errors.
 */
export async function reportReplicas(
  ctx: KMPStepContext,
  pass: KMPPass,
  wc: WorkloadCluster,
  machinePool: MachinePool,
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
    await ctx.client.patch(
      'KarpenterMachinePool',
      pass.name,
      pass.namespace,
      { spec: { providerIDList: list } },
      { type: 'merge' },
    );
  }
  const { status } = pass;
  const launched = claims.filter((c) => c.status?.providerID).length;
  status.replicas = launched;
  await writeMachinePoolReplicas(ctx, machinePool, launched);
  const ready = pass.condition(KMPConditions.BootstrapDataReady)?.status === 'True';
  status.ready = ready;
  status.initialization = { provisioned: ready };
  pass.cond(KMPConditions.Ready, ready, ready ? undefined : 'BootstrapDataNotReady');
}

/**
 * Sets `machinePool.spec.replicas` to `replicas` (merge patch, only when it differs) while the pool's replicas are
 * managed by an external autoscaler (the annotation the resolve step adds). @throws the client's errors.
 */
async function writeMachinePoolReplicas(
  ctx: KMPStepContext,
  machinePool: MachinePool,
  replicas: number,
): Promise<void> {
  const managed =
    machinePool.metadata.annotations?.[AnnotationReplicasManagedBy] === ReplicasManagedByExternalAutoscaler;
  if (!managed && machinePool.metadata.annotations?.[AnnotationReplicasManagedBy] !== undefined) return;
  if (machinePool.spec?.replicas === replicas) return;
  await ctx.client.patch(
    'MachinePool',
    machinePool.metadata.name as string,
    machinePool.metadata.namespace,
    { spec: { replicas } },
    { type: 'merge' },
  );
}
