/**
 * Step 3 of a KarpenterMachinePool reconcile: the desired NodePool + EC2NodeClass ({@link desiredObjects}, pure)
 * from the resolved inputs, the bootstrap result and the control-plane version, checked against the version skew
 * policy (`VersionSkewPolicySatisfied`) and validated with capenter's own validation before anything is written.
 */
import { type CAPICluster, KMPConditions, refGroup } from '../../../apis/capi.ts';
import type { KubeObject } from '../../../apis/core.ts';
import { validateObject } from '../../../apis/validation.ts';
import { errorMessage } from '../../runtime/index.ts';
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
  const cp = await controlPlaneVersion(ctx, inputs.cluster);
  // an unreadable control plane holds the pool at the version it already rolled out (never rolls forward blind)
  const cpVersion = cp.error ? pass.status.version : cp.version;
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
  if (cp.error)
    pass.cond(
      KMPConditions.VersionSkewPolicySatisfied,
      'Unknown',
      'ControlPlaneVersionUnknown',
      pass.status.version
        ? `${cp.error}; the pool stays at ${pass.status.version} until the control plane can be read`
        : `${cp.error}; the MachinePool's version is rolled out unchecked`,
    );
  else if (desired.skew)
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

/** What {@link controlPlaneVersion} found: the version, or why it could not be read. */
export interface ControlPlaneVersion {
  /** `v1.33.1`; undefined when the cluster has no control plane version (yet) or it could not be read. */
  version: string | undefined;
  /** Set when the control-plane object could not be read (message names the object and the error). */
  error?: string;
}

/**
 * Control-plane version: `Cluster.spec.topology.version`, else the control-plane object's `status.version` (then
 * `spec.version`) by a live read. The object is found by its reference's `apiVersion`, or (v1beta2 refs carry only
 * `apiGroup`) by its group's preferred version from API discovery (`GET /apis/<group>`), so kinds outside
 * capenter's registry (KubeadmControlPlane, any provider's) are read too. A failed read is returned as `error`,
 * never as "no version" (which would let the skew gate pass).
 */
export async function controlPlaneVersion(
  ctx: Pick<KMPStepContext, 'client'>,
  cluster: CAPICluster,
): Promise<ControlPlaneVersion> {
  if (cluster.spec?.topology?.version) return { version: cluster.spec.topology.version };
  const ref = cluster.spec?.controlPlaneRef;
  if (!ref) return { version: undefined };
  const ns = cluster.metadata.namespace;
  const what = `${ref.kind} ${ns ?? 'default'}/${ref.name} (Cluster ${ns ?? 'default'}/${cluster.metadata.name} spec.controlPlaneRef)`;
  try {
    let apiVersion = ref.apiVersion;
    if (!apiVersion) {
      const group = refGroup(ref);
      if (!group) return { version: undefined, error: `${what} has neither apiGroup nor apiVersion` };
      const g = await ctx.client.request<{ preferredVersion?: { groupVersion?: string } }>(
        'GET',
        `/apis/${group}`,
      );
      apiVersion = g.preferredVersion?.groupVersion;
      if (!apiVersion)
        return { version: undefined, error: `API group ${group} of ${what} has no preferred version` };
    }
    const rt = await ctx.client.discover(apiVersion, ref.kind);
    const cp = (await ctx.client.get(rt, ref.name, ns)) as KubeObject & {
      status?: { version?: string };
      spec?: { version?: string };
    };
    return { version: cp.status?.version ?? cp.spec?.version };
  } catch (err) {
    return { version: undefined, error: `cannot read ${what}: ${errorMessage(err)}` };
  }
}
