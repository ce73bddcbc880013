/**
 * Step 3 of a KarpenterMachinePool reconcile: the desired NodePool + EC2NodeClass ({@link desiredObjects}, pure)
 * from the resolved inputs, the bootstrap result and the control-plane version, checked against the version skew
 * policy (`VersionSkewPolicySatisfied`) and validated with capenter's own validation before anything is written.
 */
import {
  type CAPICluster,
  type CAPIRef,
  KMPConditions,
  LabelClusterName,
  LabelControlPlane,
  type Machine,
} from '../../../apis/capi.ts';
import type { KubeObject } from '../../../apis/core.ts';
import { validateObject } from '../../../apis/validation.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { ResourceType } from '../../../kube/resources.ts';
import { compareVersions, type Desired, desiredObjects, uninitializedEffect } from '../desired.ts';
import type { BootstrapResult } from './bootstrap.ts';
import type { KMPPass, KMPStepContext } from './context.ts';
import type { PoolInputs } from './resolve.ts';

/**
 * The desired objects of the pool. Sets `VersionSkewPolicySatisfied`: False, reason `VersionNewerThanControlPlane`,
 * while the pool's version is held back; False, reason `ControlPlaneVersionUnknown`, when the control plane's version
 * cannot be read (fail closed: the pool stays at the version it rolled out, `status.version`).
 * @throws NotReady with `Ready=False` reason `InvalidGeneratedSpec` (severity Error) naming the object and the
 * spec field to fix; `ControlPlaneVersionUnknown` when the control plane's version cannot be read and the pool has
 * rolled out none yet; `VersionNewerThanControlPlane` when the version must be held back but the KMP's own
 * `spec.ec2NodeClass.amiSelectorTerms` choose the AMI (capenter cannot hold those back: nothing is applied).
 */
export async function generateDesired(
  ctx: KMPStepContext,
  pass: KMPPass,
  inputs: PoolInputs,
  boot: BootstrapResult,
): Promise<Desired> {
  const cp = await controlPlaneVersionOf(ctx, inputs.cluster);
  const previous = pass.status.version;
  if ('error' in cp) {
    const message = `${pass.id}: the control plane's Kubernetes version cannot be read (${cp.error}); the version skew gate fails closed${previous ? `: nodes stay at ${previous}` : ''}`;
    void ctx.recorder.publish(pass.kmp, 'Warning', 'ControlPlaneVersionUnknown', message);
    pass.cond(KMPConditions.VersionSkewPolicySatisfied, false, 'ControlPlaneVersionUnknown', message);
    if (!previous) throw pass.notReady('ControlPlaneVersionUnknown', message);
  }
  const cpVersion = 'error' in cp ? previous : cp.version;
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
    previous,
  );
  if (desired.skew) {
    if (!('error' in cp))
      pass.cond(
        KMPConditions.VersionSkewPolicySatisfied,
        false,
        'VersionNewerThanControlPlane',
        desired.skew.message,
      );
    if ((pass.kmp.spec?.ec2NodeClass?.amiSelectorTerms ?? []).length > 0)
      throw pass.notReady(
        'VersionNewerThanControlPlane',
        `${pass.id}: MachinePool version ${desired.skew.requested} is newer than the control plane (${desired.skew.controlPlane}) and spec.ec2NodeClass.amiSelectorTerms choose the AMI, so capenter cannot hold the nodes back; nothing is applied until the control plane is upgraded or MachinePool spec.template.spec.version is lowered`,
      );
  } else if (!('error' in cp)) pass.cond(KMPConditions.VersionSkewPolicySatisfied, true);
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
 * Control-plane version (undefined when the Cluster has none known), the oldest of: `Cluster.spec.topology.version`;
 * the control-plane object's `status.version` (then `spec.version`), for any control-plane provider, resolved by
 * `apiGroup` (or `apiVersion`) and kind through API discovery; and, without a `controlPlaneRef`, the `spec.version`
 * of the Cluster's control-plane Machines (label `cluster.x-k8s.io/control-plane`). A kubelet must not be newer
 * than the oldest API server (Kubernetes version skew policy, as CAPI's topology controller applies it).
 * Returns `{error}` when the control plane exists but its version cannot be read (unknown kind, not found, no
 * version yet): callers fail closed.
 */
export async function controlPlaneVersionOf(
  ctx: Pick<KMPStepContext, 'client'>,
  cluster: CAPICluster,
): Promise<{ version: string | undefined } | { error: string }> {
  const versions: string[] = [];
  if (cluster.spec?.topology?.version) versions.push(cluster.spec.topology.version);
  const ns = cluster.metadata.namespace ?? 'default';
  const ref = cluster.spec?.controlPlaneRef;
  if (ref) {
    try {
      const rt = await controlPlaneResource(ctx.client, ref);
      const cp = (await ctx.client.get(rt, ref.name, ns)) as KubeObject & {
        status?: { version?: string };
        spec?: { version?: string };
      };
      const v = cp.status?.version ?? cp.spec?.version;
      if (!v) return { error: `${ref.kind} ${ns}/${ref.name} has no status.version yet` };
      versions.push(v);
    } catch (err) {
      return { error: `${ref.kind} ${ns}/${ref.name}: ${(err as Error).message}` };
    }
  } else {
    const machines = (
      await ctx.client.list('Machine', {
        namespace: ns,
        labelSelector: `${LabelClusterName}=${cluster.metadata.name ?? ''},${LabelControlPlane}`,
      })
    ).items as Machine[];
    const live = machines.filter((m) => !m.metadata.deletionTimestamp);
    for (const m of live) {
      if (!m.spec.version)
        return { error: `control-plane Machine ${ns}/${m.metadata.name} has no spec.version` };
      versions.push(m.spec.version);
    }
  }
  if (versions.length === 0) return { version: undefined };
  return { version: versions.reduce((a, b) => (compareVersions(b, a) < 0 ? b : a)) };
}

/** The resource type of a control-plane reference (v1beta2 `apiGroup`, or v1beta1 `apiVersion`), discovered. */
async function controlPlaneResource(client: KubeClient, ref: CAPIRef): Promise<ResourceType> {
  if (ref.apiVersion) return client.discover(ref.apiVersion, ref.kind);
  const group = ref.apiGroup ?? 'controlplane.cluster.x-k8s.io';
  const known = client.registry.forKind(`${ref.kind}.${group}`);
  if (known) return known;
  const doc = await client.request<{ preferredVersion?: { groupVersion?: string } }>('GET', `/apis/${group}`);
  const gv = doc.preferredVersion?.groupVersion;
  if (!gv) throw new Error(`API group ${group} has no preferred version`);
  return client.discover(gv, ref.kind);
}

/**
 * Control-plane version, or undefined when none is known or it cannot be read (see {@link controlPlaneVersionOf},
 * which tells the two apart).
 */
export async function controlPlaneVersion(
  ctx: Pick<KMPStepContext, 'client'>,
  cluster: CAPICluster,
): Promise<string | undefined> {
  const r = await controlPlaneVersionOf(ctx, cluster);
  return 'error' in r ? undefined : r.version;
}
