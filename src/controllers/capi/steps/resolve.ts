/**
 * Step 1 of a KarpenterMachinePool reconcile: the inputs from the management cluster's caches — the KMP's spec
 * checked, its MachinePool (annotated `cluster.x-k8s.io/replicas-managed-by: external-autoscaler`), the Cluster,
 * the AWSCluster (region, S3 bucket) and where the bootstrap data goes. Each missing piece sets `Ready=False` with a
 * reason naming the object, the field and the fix, and stops the pass ({@link NotReady}).
 */
import {
  AnnotationReplicasManagedBy,
  type AWSCluster,
  type CAPICluster,
  type KarpenterMachinePool,
  type MachinePool,
  ReplicasManagedByExternalAutoscaler,
  refersToKMP,
  validateKMP,
} from '../../../apis/capi.ts';
import type { SharedInformers } from '../../../kube/informer.ts';
import { type BootstrapLocation, bootstrapKey } from '../bootstrap.ts';
import { clusterNameOf } from '../desired.ts';
import type { KMPPass, KMPStepContext } from './context.ts';

/** What the later steps build from. */
export interface PoolInputs {
  machinePool: MachinePool;
  cluster: CAPICluster;
  awsCluster: AWSCluster;
  /** `s3://<bucket>/karpenter-machine-pool/<ns>/<name>` in the AWSCluster's region. */
  location: BootstrapLocation;
}

/**
 * Resolves the pass's inputs. Returns `undefined` when the pool belongs to another workload cluster than
 * `ctx.clusterName` (the pass ends without a status write).
 * @throws NotReady with `Ready=False` reason `InvalidSpec`, `WaitingForMachinePool`, `WaitingForCluster`,
 * `ClusterPaused`, `WaitingForAWSCluster`, `MissingRegion`, `S3BucketNotConfigured`, or the reason of a failed
 * `ctx.clusterIdentity` check (aws: `PrincipalUsageUnauthorized`, `SourcePrincipalUsageUnauthorized`,
 * `IdentityNotFound`, `InvalidIdentity`).
 */
export async function resolveInputs(ctx: KMPStepContext, pass: KMPPass): Promise<PoolInputs | undefined> {
  const valid = validateKMP(pass.kmp);
  if (!valid.ok)
    throw pass.notReady('InvalidSpec', `${pass.id} is invalid: ${valid.issues.join('; ')}`, 'Error');
  const mp = machinePoolOf(ctx.informers, pass.kmp);
  if (!mp)
    throw pass.notReady(
      'WaitingForMachinePool',
      `no MachinePool in namespace ${pass.namespace} has spec.template.spec.infrastructureRef {kind: KarpenterMachinePool, name: ${pass.name}}`,
    );
  const clusterName = clusterNameOf(mp);
  if (ctx.clusterName && clusterName !== ctx.clusterName) return undefined;
  await annotateMachinePool(ctx, mp);
  const cluster = clusterName
    ? (ctx.informers.informerFor('Cluster').cache.getByName(clusterName, pass.namespace) as
        | CAPICluster
        | undefined)
    : undefined;
  if (!cluster)
    throw pass.notReady(
      'WaitingForCluster',
      `Cluster ${pass.namespace}/${clusterName ?? '<unset>'} of MachinePool ${mp.metadata.name} not found (spec.clusterName)`,
    );
  if (cluster.spec?.paused)
    throw pass.notReady(
      'ClusterPaused',
      `Cluster ${pass.namespace}/${cluster.metadata.name} is paused (spec.paused): the pool is not reconciled until it is unpaused`,
    );
  const { awsCluster, location } = resolveAWS(ctx, pass, cluster);
  const identity = await ctx.clusterIdentity?.(awsCluster);
  if (identity && !identity.ok) throw pass.notReady(identity.reason, identity.message, 'Error');
  return { machinePool: mp, cluster, awsCluster, location };
}

/** The Cluster's AWSCluster and the bootstrap location in its region and bucket. @throws NotReady */
function resolveAWS(
  ctx: KMPStepContext,
  pass: KMPPass,
  cluster: CAPICluster,
): { awsCluster: AWSCluster; location: BootstrapLocation } {
  const ns = pass.namespace;
  const awsRef = cluster.spec?.infrastructureRef;
  const aws =
    awsRef?.kind === 'AWSCluster'
      ? (ctx.informers.informerFor('AWSCluster').cache.getByName(awsRef.name, ns) as AWSCluster | undefined)
      : undefined;
  if (!aws)
    throw pass.notReady(
      'WaitingForAWSCluster',
      `Cluster ${ns}/${cluster.metadata.name} has no AWSCluster (spec.infrastructureRef ${awsRef ? `${awsRef.kind}/${awsRef.name} not found` : 'unset'})`,
    );
  const region = aws.spec?.region;
  const bucket = aws.spec?.s3Bucket?.name;
  if (!region)
    throw pass.notReady('MissingRegion', `AWSCluster ${ns}/${aws.metadata.name} has no spec.region`);
  if (!bucket)
    throw pass.notReady(
      'S3BucketNotConfigured',
      `AWSCluster ${ns}/${aws.metadata.name} has no spec.s3Bucket.name; set it (the pool's bootstrap data is stored there)`,
      'Error',
    );
  return { awsCluster: aws, location: { region, bucket, key: bootstrapKey(ns, pass.name) } };
}

/** The MachinePool owning `kmp` (ownerReference), else the one whose infrastructureRef names it (cache reads). */
export function machinePoolOf(
  informers: SharedInformers,
  kmp: KarpenterMachinePool,
): MachinePool | undefined {
  const ns = kmp.metadata.namespace ?? 'default';
  const cache = informers.informerFor('MachinePool').cache;
  const owner = kmp.metadata.ownerReferences?.find(
    (o) => o.kind === 'MachinePool' && o.apiVersion.startsWith('cluster.x-k8s.io/'),
  );
  if (owner) {
    const mp = cache.getByName(owner.name, ns) as MachinePool | undefined;
    if (mp) return mp;
  }
  return (cache.list({ namespace: ns }) as MachinePool[]).find((mp) =>
    refersToKMP(mp.spec?.template?.spec?.infrastructureRef, kmp.metadata.name as string),
  );
}

/** Marks the MachinePool's replicas as managed by an external autoscaler (merge patch, only when missing). */
async function annotateMachinePool(ctx: KMPStepContext, mp: MachinePool): Promise<void> {
  if (mp.metadata.annotations?.[AnnotationReplicasManagedBy] === ReplicasManagedByExternalAutoscaler) return;
  await ctx.client.patch(
    'MachinePool',
    mp.metadata.name as string,
    mp.metadata.namespace,
    { metadata: { annotations: { [AnnotationReplicasManagedBy]: ReplicasManagedByExternalAutoscaler } } },
    { type: 'merge' },
  );
}
