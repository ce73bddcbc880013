/**
 * Step 5 of a KarpenterMachinePool reconcile: what CAPI reads back. `spec.providerIDList` from the pool's
 * NodeClaims in the workload cluster ({@link nextProviderIDList}: never empty while replicas ≠ 0, an ID leaves only
 * when its Node is gone; merge-patched only when it changed), `status.replicas` (the NodeClaims), `status.ready` and
 * `status.initialization.provisioned` (the bootstrap data is there) and the root `Ready` condition.
 */
import { KMPConditions } from '../../../apis/capi.ts';
import { nextProviderIDList } from '../desired.ts';
import { type WorkloadCluster, WorkloadClusters } from '../workload.ts';
import type { KMPPass, KMPStepContext } from './context.ts';

/** Reports the pool's NodeClaims of `wc` to the KMP (see the module comment). @throws the client's errors. */
export async function reportReplicas(ctx: KMPStepContext, pass: KMPPass, wc: WorkloadCluster): Promise<void> {
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
  status.replicas = claims.length;
  const ready = pass.condition(KMPConditions.BootstrapDataReady)?.status === 'True';
  status.ready = ready;
  status.initialization = { provisioned: ready };
  pass.cond(KMPConditions.Ready, ready, ready ? undefined : 'BootstrapDataNotReady');
}
