/**
 * The pure core of the KarpenterMachinePool controller: from the KarpenterMachinePool, its MachinePool, the Cluster
 * and AWSCluster (CAPA), the bootstrap format and the control-plane version, compute the NodePool + EC2NodeClass
 * written into the workload cluster. No I/O, no clock.
 *
 * Derived inputs, each overridable by the KMP's own `spec.ec2NodeClass` / `spec.nodePool` fields:
 * - subnets: the AWSCluster's private subnets (`spec.network.subnets[]` with `isPublic: false`, by
 *   `resourceID`/`id`), else CAPA's subnet tags for the cluster;
 * - security groups: the node security group (`spec.network.securityGroupOverrides.node`, else
 *   `status.networkStatus.securityGroups.node.id`), else CAPA's role tag;
 * - instance profile: `spec.s3Bucket.nodesIAMInstanceProfiles[0]`, else CAPA's default worker profile
 *   `nodes.cluster-api-provider-aws.sigs.k8s.io`;
 * - tags: `spec.additionalTags`, then the KMP's `tags`, plus the cluster tags (used to find the pool's instances);
 * - AMI: CAPA's image lookup for the MachinePool version (`capa-ami-<baseOS>-?<version>-*` owned by CAPA's
 *   publishing account, `amiFamily: Custom`: the user data is kubeadm's, not nodeadm's);
 * - user data: the S3 stub (bootstrap.ts);
 * - startup taint `node.cluster.x-k8s.io/uninitialized` with the bootstrap provider's effect (NoSchedule for
 *   kubeadm), declared so Karpenter's simulation does not launch duplicates while CAPI has not removed it.
 * Sources: CAPA `pkg/cloud/services/ec2/ami.go` (DefaultAMILookupFormat, DefaultMachineAMIOwnerID,
 * DefaultAmiNameFormat), CAPA `api/v1beta2/tags.go` (NameAWSProviderPrefix, role tags), cluster-api
 * `api/core/v1beta2` NodeUninitializedTaint, the community KarpenterMachinePool operator.
 */

import {
  AnnotationKubernetesVersion,
  type AWSCluster,
  CAPADefaultBaseOS,
  type CAPICluster,
  type KarpenterMachinePool,
  LabelClusterName,
  LabelKMPName,
  LabelKMPNamespace,
  type MachinePool,
  ManagedBy,
  TaintUninitializedKey,
} from '../../apis/capi.ts';
import type { Taint, TaintEffect } from '../../apis/core.ts';
import type { EC2NodeClass, KubeletConfiguration, NodePool } from '../../apis/karpenter.ts';
import { type BootstrapFormat, type BootstrapLocation, userDataStub } from './bootstrap.ts';

/** CAPA's AMI publishing account (`DefaultMachineAMIOwnerID`). */
export const CAPAAMIOwner = '258751437250';
/** CAPA's default image name format (`DefaultAmiNameFormat`), with `{{.BaseOS}}` and `{{.K8sVersion}}`. */
export const CAPAAMINameFormat = 'capa-ami-{{.BaseOS}}-?{{.K8sVersion}}-*';
export { CAPADefaultBaseOS } from '../../apis/capi.ts';
/** CAPA's default worker instance profile (`DefaultNodesIAMInstanceProfile`... the bootstrap stack's). */
export const CAPADefaultNodeInstanceProfile = 'nodes.cluster-api-provider-aws.sigs.k8s.io';
/** CAPA's cluster tag key prefix (`NameAWSProviderPrefix` + `cluster/`). */
export const CAPAClusterTagPrefix = 'sigs.k8s.io/cluster-api-provider-aws/cluster/';
/** CAPA's role tag key. */
export const CAPARoleTag = 'sigs.k8s.io/cluster-api-provider-aws/role';

/** Everything the desired state depends on. */
export interface DesiredInputs {
  kmp: KarpenterMachinePool;
  machinePool: MachinePool;
  cluster: CAPICluster;
  awsCluster: AWSCluster;
  /** Format of the bootstrap data (from its Secret). */
  bootstrapFormat: BootstrapFormat;
  /** Where the bootstrap data is stored. */
  bootstrapLocation: BootstrapLocation;
  /** Effect of the uninitialized taint applied by the bootstrap provider (default NoSchedule, kubeadm). */
  uninitializedTaintEffect?: TaintEffect;
  /** Control-plane Kubernetes version (`v1.33.1`), when known: node versions are capped at it. */
  controlPlaneVersion?: string;
}

/** The desired workload objects, or why they cannot be built. */
export interface Desired {
  nodePool: NodePool;
  ec2NodeClass: EC2NodeClass;
  /** Kubernetes version the NodePool rolls out (after the skew gate); `undefined` when the MachinePool has none. */
  version: string | undefined;
  /** Set when the MachinePool's version was held back because it is newer than the control plane. */
  skew?: { requested: string; controlPlane: string; message: string };
  /** The workload cluster's name (`MachinePool.spec.clusterName`). */
  clusterName: string;
}

/** Parses `v1.33.1` / `1.33` into [major, minor, patch]; `undefined` when not a version. Pure. */
export function parseVersion(v: string | undefined): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v ?? '');
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

/** Compares two versions (−1, 0, 1); unparsable versions compare equal. Pure. */
export function compareVersions(a: string | undefined, b: string | undefined): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  if (!x || !y) return 0;
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] as number) < (y[i] as number) ? -1 : 1;
  return 0;
}

/**
 * The version to roll out: the MachinePool's, unless it is newer than the control plane, then the version already
 * rolled out (`previous`), else the control plane's (Kubernetes version skew policy: a kubelet is never newer than
 * the API server). Pure.
 */
export function gateVersion(
  requested: string | undefined,
  controlPlane: string | undefined,
  previous: string | undefined,
): { version: string | undefined; skew?: Desired['skew'] } {
  if (!requested || !controlPlane || compareVersions(requested, controlPlane) <= 0)
    return { version: requested };
  const held = previous && compareVersions(previous, controlPlane) <= 0 ? previous : controlPlane;
  return {
    version: held,
    skew: {
      requested,
      controlPlane,
      message: `MachinePool version ${requested} is newer than the control plane (${controlPlane}); nodes stay at ${held} until the control plane is upgraded`,
    },
  };
}

/** CAPA's AMI name pattern for a version (`capa-ami-ubuntu-24.04-?1.33.1-*`). Pure. */
export function capaAMIName(version: string, baseOS = CAPADefaultBaseOS, format = CAPAAMINameFormat): string {
  return format.replaceAll('{{.BaseOS}}', baseOS).replaceAll('{{.K8sVersion}}', version.replace(/^v/, ''));
}

/** Private subnets of the AWSCluster as selector terms (all subnets when none is private). Pure. */
export function subnetTerms(aws: AWSCluster, clusterName: string): Array<Record<string, unknown>> {
  const subnets = aws.spec?.network?.subnets ?? [];
  const priv = subnets.filter((s) => s.isPublic !== true);
  const ids = (priv.length > 0 ? priv : subnets)
    .map((s) => s.resourceID ?? s.id)
    .filter((x): x is string => !!x && x.startsWith('subnet-'));
  if (ids.length > 0) return ids.map((id) => ({ id }));
  return [{ tags: { [`${CAPAClusterTagPrefix}${clusterName}`]: 'owned', [CAPARoleTag]: 'private' } }];
}

/** The node security group of the AWSCluster as selector terms. Pure. */
export function securityGroupTerms(aws: AWSCluster, clusterName: string): Array<Record<string, unknown>> {
  const id =
    aws.spec?.network?.securityGroupOverrides?.node ?? aws.status?.networkStatus?.securityGroups?.node?.id;
  if (id) return [{ id }];
  return [{ tags: { [`${CAPAClusterTagPrefix}${clusterName}`]: 'owned', [CAPARoleTag]: 'node' } }];
}

/** Labels every generated object carries. */
export function ownedLabels(kmp: KarpenterMachinePool, clusterName: string): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': ManagedBy,
    [LabelKMPName]: kmp.metadata.name as string,
    [LabelKMPNamespace]: kmp.metadata.namespace ?? 'default',
    [LabelClusterName]: clusterName,
  };
}

/** `MachinePool.spec.clusterName` (v1beta2 and v1beta1), else the cluster-name label. */
export function clusterNameOf(mp: MachinePool): string | undefined {
  return mp.spec?.clusterName ?? mp.metadata.labels?.[LabelClusterName];
}

function withUninitializedTaint(taints: Taint[] | undefined, effect: TaintEffect): Taint[] {
  const rest = (taints ?? []).filter((t) => t.key !== TaintUninitializedKey);
  return [...rest, { key: TaintUninitializedKey, effect }];
}

/**
 * Builds the desired NodePool and EC2NodeClass (both named after the KMP). `previousVersion` is the version the
 * pool rolled out last (`KMP.status.version`). Pure; validation of the result is the caller's (validateObject).
 */
export function desiredObjects(inp: DesiredInputs, previousVersion?: string): Desired {
  const { kmp, machinePool: mp, awsCluster: aws } = inp;
  const name = kmp.metadata.name as string;
  const clusterName = clusterNameOf(mp) ?? inp.cluster.metadata.name ?? '';
  const labels = ownedLabels(kmp, clusterName);
  const gate = gateVersion(mp.spec?.template?.spec?.version, inp.controlPlaneVersion, previousVersion);
  const version = gate.version;

  const user = structuredClone(kmp.spec?.ec2NodeClass ?? {});
  const spec: EC2NodeClass['spec'] = { ...user } as EC2NodeClass['spec'];
  // The community KMP (giantswarm/aws-resolver-rules-operator) selects AMIs by name/owner without `amiFamily`;
  // upstream v1 EC2NodeClass requires one unless a term is an alias. The pool's user data is capenter's bootstrap
  // stub, used as is: `Custom` semantics (issue 29).
  const aliased = (user.amiSelectorTerms ?? []).some((t) => (t as { alias?: string }).alias !== undefined);
  if (user.amiSelectorTerms?.length && !aliased && user.amiFamily === undefined) spec.amiFamily = 'Custom';
  if (!user.amiSelectorTerms || user.amiSelectorTerms.length === 0) {
    spec.amiFamily = user.amiFamily ?? 'Custom';
    spec.amiSelectorTerms = version
      ? [
          {
            name: capaAMIName(
              version,
              aws.spec?.imageLookupBaseOS ?? CAPADefaultBaseOS,
              aws.spec?.imageLookupFormat ?? CAPAAMINameFormat,
            ),
            owner: aws.spec?.imageLookupOrg ?? CAPAAMIOwner,
          },
        ]
      : [{ tags: { [`${CAPAClusterTagPrefix}${clusterName}`]: 'owned' } }];
  }
  if (!user.subnetSelectorTerms || user.subnetSelectorTerms.length === 0)
    spec.subnetSelectorTerms = subnetTerms(aws, clusterName);
  if (!user.securityGroupSelectorTerms || user.securityGroupSelectorTerms.length === 0)
    spec.securityGroupSelectorTerms = securityGroupTerms(aws, clusterName);
  if (!user.role && !user.instanceProfile)
    spec.instanceProfile =
      aws.spec?.s3Bucket?.nodesIAMInstanceProfiles?.[0] ?? CAPADefaultNodeInstanceProfile;
  spec.tags = {
    ...(aws.spec?.additionalTags ?? {}),
    ...(user.tags ?? {}),
    [`${CAPAClusterTagPrefix}${clusterName}`]: 'owned',
    [LabelClusterName]: clusterName,
  };
  if (user.userData === undefined) spec.userData = userDataStub(inp.bootstrapLocation, inp.bootstrapFormat);
  if (user.kubelet) spec.kubelet = user.kubelet as KubeletConfiguration;

  const ec2NodeClass: EC2NodeClass = {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name, labels },
    spec,
  };

  const np = structuredClone(kmp.spec?.nodePool ?? {});
  const tmpl = np.template ?? {};
  const tspec = tmpl.spec ?? {};
  // CAPI v1.14 machine taints carry a `propagation` field; Karpenter taints are key/value/effect.
  const mpTaints: Taint[] = (mp.spec?.template?.spec?.taints ?? []).map((t) => ({
    key: t.key,
    effect: t.effect,
    ...(t.value ? { value: t.value } : {}),
  }));
  const annotations = { ...(tmpl.metadata?.annotations ?? {}) };
  if (version) annotations[AnnotationKubernetesVersion] = version;
  const nodePool: NodePool = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name, labels },
    spec: {
      ...(np as Omit<NodePool['spec'], 'template'>),
      template: {
        metadata: {
          ...(tmpl.metadata?.labels ? { labels: tmpl.metadata.labels } : {}),
          ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        },
        spec: {
          ...tspec,
          requirements: tspec.requirements ?? [
            { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          ],
          ...(tspec.taints || mpTaints.length > 0 ? { taints: [...(tspec.taints ?? []), ...mpTaints] } : {}),
          startupTaints: withUninitializedTaint(
            tspec.startupTaints,
            inp.uninitializedTaintEffect ?? 'NoSchedule',
          ),
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name },
        },
      },
    } as NodePool['spec'],
  };
  return { nodePool, ec2NodeClass, version, clusterName, ...(gate.skew ? { skew: gate.skew } : {}) };
}

/**
 * Provider IDs for `KMP.spec.providerIDList` (CAPI deletes Nodes whose IDs vanish from it):
 * the IDs of the pool's NodeClaims, plus previously listed IDs whose Node still exists (an ID leaves only when its
 * node is gone); never empty while the pool has NodeClaims (then the previous list is kept). Sorted. Pure.
 * @param previous the current `spec.providerIDList`
 * @param claimIDs provider IDs of the pool's NodeClaims (launched ones)
 * @param replicas number of the pool's NodeClaims
 * @param nodeIDs provider IDs of the workload cluster's existing Nodes
 */
export function nextProviderIDList(
  previous: readonly string[],
  claimIDs: readonly string[],
  replicas: number,
  nodeIDs: ReadonlySet<string>,
): string[] {
  const out = new Set(claimIDs.filter((x) => x));
  for (const id of previous) if (nodeIDs.has(id)) out.add(id);
  if (out.size === 0 && replicas > 0) return [...previous].sort();
  return [...out].sort();
}

/**
 * Whether the bootstrap config registers nodes with `karpenter.sh/unregistered:NoExecute` (Karpenter's
 * registration taint): KubeadmConfig (v1beta2 or v1beta1) `spec.joinConfiguration.nodeRegistration.taints[]`, or a
 * `register-with-taints` kubelet argument. `undefined` when there is no config to inspect. Pure.
 */
export function hasRegistrationTaint(config: Record<string, unknown> | undefined): boolean | undefined {
  if (!config) return undefined;
  const nr = (
    config.spec as { joinConfiguration?: { nodeRegistration?: Record<string, unknown> } } | undefined
  )?.joinConfiguration?.nodeRegistration;
  const taints = (nr?.taints as Taint[] | undefined) ?? [];
  if (taints.some((t) => t.key === 'karpenter.sh/unregistered' && t.effect === 'NoExecute')) return true;
  const args = nr?.kubeletExtraArgs;
  const values: string[] = Array.isArray(args)
    ? (args as Array<{ name?: string; value?: string }>)
        .filter((a) => a.name === 'register-with-taints')
        .map((a) => a.value ?? '')
    : args && typeof args === 'object'
      ? [String((args as Record<string, unknown>)['register-with-taints'] ?? '')]
      : [];
  return values.some((v) => v.split(',').some((t) => t.trim() === 'karpenter.sh/unregistered:NoExecute'));
}

/** The uninitialized-taint effect the bootstrap config applies (its own taint entry wins; kubeadm: NoSchedule). Pure. */
export function uninitializedEffect(config: Record<string, unknown> | undefined): TaintEffect {
  const nr = (config?.spec as { joinConfiguration?: { nodeRegistration?: { taints?: Taint[] } } } | undefined)
    ?.joinConfiguration?.nodeRegistration;
  return nr?.taints?.find((t) => t.key === TaintUninitializedKey)?.effect ?? 'NoSchedule';
}
