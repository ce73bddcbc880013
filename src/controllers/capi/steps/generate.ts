/**
 * Step 3 of a KarpenterMachinePool reconcile: the desired NodePool + EC2NodeClass ({@link desiredObjects}, pure)
 * from the resolved inputs, the bootstrap result and the control-plane version, checked against the version skew
 * policy (`VersionSkewPolicySatisfied`) and validated with capenter's own validation before anything is written.
 */
import type { CAPICluster } from '../../../apis/capi.ts';
import { KMPConditions } from '../../../apis/capi.ts';
import type { KubeObject } from '../../../apis/core.ts';
import { validateObject } from '../../../apis/validation.ts';
import { type Desired, desiredObjects, uninitializedEffect } from '../desired.ts';
import type { BootstrapResult } from './bootstrap.ts';
import type { KMPPass, KMPStepContext } from './context.ts';
import type { PoolInputs } from './resolve.ts';

/**
 * The desired objects of the pool. Sets `VersionSkewPolicySatisfied` (False, reason `VersionNewerThanControlPlane`,
 * while the pool's version is held back).
 * @throws NotReady with `Ready=False` reason `InvalidGeneratedSpec` (severity Error) naming the object and the
 * spec field to fix.
 */
export async function generateDesired(
  ctx: KMPStepContext,
  pass: KMPPass,
  inputs: PoolInputs,
  boot: BootstrapResult,
): Promise<Desired> {
  const cpVersion = await controlPlaneVersion(ctx, inputs.cluster);
  const desired = desiredObjects(
    {
      kmp: pass.kmp,
      machinePool: inputs.machinePool,
      cluster: inputs.cluster,
      awsCluster: inputs.awsCluster,
      bootstrapFormat: boot.format,
      bootstrapLocation: inputs.location,
      uninitializedTaintEffect: uninitializedEffect(boot.config),
      ...(cpVersion ? { controlPlaneVersion: cpVersion } : {}),
    },
    pass.status.version,
  );
  if (desired.skew)
    pass.cond(
      KMPConditions.VersionSkewPolicySatisfied,
      false,
      'VersionNewerThanControlPlane',
      desired.skew.message,
    );
  else pass.cond(KMPConditions.VersionSkewPolicySatisfied, true);
  for (const obj of [desired.ec2NodeClass, desired.nodePool]) {
    const v = validateObject(obj);
    if (!v.ok)
      throw pass.notReady(
        'InvalidGeneratedSpec',
        `${pass.id}: the generated ${obj.kind} is invalid: ${v.issues.map((i) => i.message).join('; ')}; fix spec.${obj.kind === 'NodePool' ? 'nodePool' : 'ec2NodeClass'}`,
        'Error',
      );
  }
  return desired;
}

/**
 * Control-plane version: `Cluster.spec.topology.version`, else the control-plane object's `status.version` (then
 * `spec.version`) by a live read; undefined when neither is known or the object cannot be read.
 */
export async function controlPlaneVersion(
  ctx: Pick<KMPStepContext, 'client'>,
  cluster: CAPICluster,
): Promise<string | undefined> {
  if (cluster.spec?.topology?.version) return cluster.spec.topology.version;
  const ref = cluster.spec?.controlPlaneRef;
  if (!ref) return undefined;
  try {
    const cp = (await ctx.client.get(ref.kind, ref.name, cluster.metadata.namespace)) as KubeObject & {
      status?: { version?: string };
      spec?: { version?: string };
    };
    return cp.status?.version ?? cp.spec?.version;
  } catch {
    return undefined;
  }
}
