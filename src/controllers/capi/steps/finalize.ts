/**
 * The deletion of a KarpenterMachinePool (finalizer `capenter.sh/karpentermachinepool`): the NodePool is removed
 * (and the pool's NodeClaims, so Karpenter drains and terminates them), then the pass waits until no NodeClaim and
 * no instance of the pool is left — when the Cluster is being deleted (a live read) whatever remains is
 * terminated — then removes the EC2NodeClass and the stored bootstrap data and drops the finalizer.
 */
import {
  type AWSCluster,
  type CAPICluster,
  type KarpenterMachinePool,
  KMPFinalizer,
  LabelClusterName,
  LabelKMPName,
} from '../../../apis/capi.ts';
import { LabelNodePool } from '../../../apis/labels.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { ReconcileResult } from '../../runtime/index.ts';
import { bootstrapKey } from '../bootstrap.ts';
import { clusterNameOf } from '../desired.ts';
import type { PoolQuery } from '../instances.ts';
import type { KMPStepContext } from './context.ts';
import { machinePoolOf } from './resolve.ts';

/** Seconds between checks while the pool's NodeClaims or instances go away. */
const DrainRequeueSeconds = 2;

/** What a deletion works on. */
interface DeletionTarget {
  kmp: KarpenterMachinePool;
  /** The pool's instances: namespace, cluster, NodePool (= KMP name), region. */
  query: PoolQuery;
  /** The Cluster is gone or being deleted: remaining instances are terminated, an unreachable workload is fine. */
  clusterGone: boolean;
  awsCluster: AWSCluster | undefined;
  /** The workload cluster's client, when reachable. */
  workload: KubeClient | undefined;
}

/**
 * One deletion pass of `kmp` (see the module comment): `{requeueAfter: 2}` while NodeClaims or instances remain,
 * `{}` once the finalizer is dropped (or the KMP is not ours: no finalizer, another workload cluster).
 * @throws the workload cluster's error while the Cluster still exists; client and store errors.
 */
export async function finalizePool(ctx: KMPStepContext, kmp: KarpenterMachinePool): Promise<ReconcileResult> {
  if (!kmp.metadata.finalizers?.includes(KMPFinalizer)) return {};
  const target = await deletionTarget(ctx, kmp);
  if (!target) return {};
  if (!(await drainPool(ctx, target))) return { requeueAfter: DrainRequeueSeconds };
  await releasePool(ctx, target);
  return {};
}

/**
 * The pool's cluster, AWSCluster and workload client by live reads, with the AWSCluster's identity check run
 * (`ctx.clusterIdentity`); undefined when another capenter owns it.
 */
async function deletionTarget(
  ctx: KMPStepContext,
  kmp: KarpenterMachinePool,
): Promise<DeletionTarget | undefined> {
  const ns = kmp.metadata.namespace ?? 'default';
  const mp = machinePoolOf(ctx.informers, kmp);
  const clusterName = (mp && clusterNameOf(mp)) ?? kmp.metadata.labels?.[LabelClusterName];
  if (ctx.clusterName && clusterName !== ctx.clusterName) return undefined;
  const cluster = clusterName
    ? ((await ctx.client.tryGet('Cluster', clusterName, ns)) as CAPICluster | undefined)
    : undefined;
  const clusterGone = !cluster || !!cluster.metadata.deletionTimestamp;
  const awsCluster =
    cluster?.spec?.infrastructureRef?.kind === 'AWSCluster'
      ? ((await ctx.client.tryGet('AWSCluster', cluster.spec.infrastructureRef.name, ns)) as
          | AWSCluster
          | undefined)
      : undefined;
  // the provider's calls below (instances, S3) sign with the cluster's identity: resolved here too, as the first
  // reconcile after a restart may be this deletion (a refused identity makes them fail with its reason)
  if (awsCluster) await ctx.clusterIdentity?.(awsCluster);
  let workload: KubeClient | undefined;
  if (clusterName) {
    try {
      workload = (await ctx.workloads.get(ns, clusterName)).client;
    } catch (err) {
      if (!clusterGone) throw err;
    }
  }
  const region = awsCluster?.spec?.region ?? '';
  const query = {
    namespace: ns,
    clusterName: clusterName ?? '',
    nodePool: kmp.metadata.name as string,
    region,
  };
  return { kmp, query, clusterGone, awsCluster, workload };
}

/**
 * Deletes the NodePool and the pool's NodeClaims, then checks the instances (terminating them when the Cluster is
 * gone). True when nothing of the pool is left.
 */
async function drainPool(ctx: KMPStepContext, t: DeletionTarget): Promise<boolean> {
  const { query: q, workload } = t;
  if (workload) {
    await workload.tryDelete('NodePool', q.nodePool);
    const claims = (await workload.list('NodeClaim', { labelSelector: { [LabelNodePool]: q.nodePool } }))
      .items;
    for (const c of claims)
      if (!c.metadata?.deletionTimestamp) await workload.tryDelete('NodeClaim', c.metadata?.name as string);
    if (claims.length > 0 && !t.clusterGone) return false;
  }
  const left = await ctx.instances.list(q);
  if (left.length === 0) return true;
  if (!t.clusterGone) return false;
  ctx.log.info(
    { kmp: `${q.namespace}/${q.nodePool}`, instances: left.length },
    'cluster deleted: terminating the pool instances',
  );
  await ctx.instances.terminate(q, left);
  return (await ctx.instances.list(q)).length === 0;
}

/** Removes the EC2NodeClass and the bootstrap data, then the finalizer (on a fresh read, with its resourceVersion). */
async function releasePool(ctx: KMPStepContext, t: DeletionTarget): Promise<void> {
  const { namespace: ns, nodePool: name, region } = t.query;
  if (t.workload) await t.workload.tryDelete('EC2NodeClass', name);
  const bucket = t.awsCluster?.spec?.s3Bucket?.name;
  if (bucket && region) await ctx.bootstrapStore.delete({ region, bucket, key: bootstrapKey(ns, name) });
  const fresh = (await ctx.client.tryGet('KarpenterMachinePool', name, ns)) as
    | KarpenterMachinePool
    | undefined;
  if (!fresh) return;
  await ctx.client.patch(
    'KarpenterMachinePool',
    name,
    ns,
    {
      metadata: {
        finalizers: (fresh.metadata.finalizers ?? []).filter((f) => f !== KMPFinalizer),
        resourceVersion: fresh.metadata.resourceVersion,
      },
    },
    { type: 'merge' },
  );
  ctx.log.info({ kmp: `${ns}/${name}`, label: LabelKMPName }, 'karpentermachinepool finalized');
}
