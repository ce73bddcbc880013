/**
 * Resource registry: how a kind maps to its REST path (`group`, `version`, `plural`, `namespaced`).
 * Built-in kinds and capenter's CRDs are pre-registered; unknown kinds can be registered at runtime or
 * resolved by API discovery in {@link KubeClient}. Each descriptor carries the object type as a phantom
 * parameter so `client.get(Resources.Pod, ...)` is typed `Pod`.
 */
import type {
  DaemonSet,
  Deployment,
  Job,
  KubeObject,
  Node,
  PersistentVolumeClaim,
  Pod,
  PodDisruptionBudget,
  ReplicaSet,
  StatefulSet,
} from '../apis/core.ts';
import type {
  ClusterAPINodeClass,
  EC2NodeClass,
  KWOKNodeClass,
  NodeClaim,
  NodeOverlay,
  NodePool,
} from '../apis/karpenter.ts';
import type {
  ConfigMap,
  CustomResourceDefinition,
  KubeEvent,
  Lease,
  Namespace,
  PersistentVolume,
  Secret,
  StorageClass,
} from './types.ts';

/** REST coordinates of one resource. `group` is `''` for the core group. */
export interface ResourceType<T extends KubeObject = KubeObject> {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Phantom: never set, only carries the object type. */
  readonly __type?: T;
}

/** `apiVersion` string of a resource (`v1`, `apps/v1`). */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group === '' ? rt.version : `${rt.group}/${rt.version}`;
}

/** Splits an `apiVersion` into group (`''` for core) and version. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

function rt<T extends KubeObject>(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
): ResourceType<T> {
  return { group, version, plural, kind, namespaced };
}

/** Descriptors of every kind capenter talks to (Kubernetes 1.32 built-ins, Karpenter v1, CAPI v1beta2, CAPA v1beta2). */
export const Resources = {
  Pod: rt<Pod>('', 'v1', 'pods', 'Pod', true),
  Node: rt<Node>('', 'v1', 'nodes', 'Node', false),
  Event: rt<KubeEvent>('', 'v1', 'events', 'Event', true),
  Namespace: rt<Namespace>('', 'v1', 'namespaces', 'Namespace', false),
  PersistentVolumeClaim: rt<PersistentVolumeClaim>(
    '',
    'v1',
    'persistentvolumeclaims',
    'PersistentVolumeClaim',
    true,
  ),
  PersistentVolume: rt<PersistentVolume>('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
  ConfigMap: rt<ConfigMap>('', 'v1', 'configmaps', 'ConfigMap', true),
  Secret: rt<Secret>('', 'v1', 'secrets', 'Secret', true),
  Deployment: rt<Deployment>('apps', 'v1', 'deployments', 'Deployment', true),
  ReplicaSet: rt<ReplicaSet>('apps', 'v1', 'replicasets', 'ReplicaSet', true),
  StatefulSet: rt<StatefulSet>('apps', 'v1', 'statefulsets', 'StatefulSet', true),
  DaemonSet: rt<DaemonSet>('apps', 'v1', 'daemonsets', 'DaemonSet', true),
  Job: rt<Job>('batch', 'v1', 'jobs', 'Job', true),
  PodDisruptionBudget: rt<PodDisruptionBudget>(
    'policy',
    'v1',
    'poddisruptionbudgets',
    'PodDisruptionBudget',
    true,
  ),
  StorageClass: rt<StorageClass>('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  CSINode: rt<KubeObject>('storage.k8s.io', 'v1', 'csinodes', 'CSINode', false),
  VolumeAttachment: rt<KubeObject>('storage.k8s.io', 'v1', 'volumeattachments', 'VolumeAttachment', false),
  Lease: rt<Lease>('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  CustomResourceDefinition: rt<CustomResourceDefinition>(
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
    false,
  ),
  NodePool: rt<NodePool>('karpenter.sh', 'v1', 'nodepools', 'NodePool', false),
  NodeClaim: rt<NodeClaim>('karpenter.sh', 'v1', 'nodeclaims', 'NodeClaim', false),
  EC2NodeClass: rt<EC2NodeClass>('karpenter.k8s.aws', 'v1', 'ec2nodeclasses', 'EC2NodeClass', false),
  KWOKNodeClass: rt<KWOKNodeClass>(
    'karpenter.kwok.sh',
    'v1alpha1',
    'kwoknodeclasses',
    'KWOKNodeClass',
    false,
  ),
  ClusterAPINodeClass: rt<ClusterAPINodeClass>(
    'karpenter.cluster.x-k8s.io',
    'v1alpha1',
    'clusterapinodeclasses',
    'ClusterAPINodeClass',
    false,
  ),
  /** `karpenter.sh/v1alpha1` NodeOverlay (alpha; read only with the `NodeOverlay` feature gate). */
  NodeOverlay: rt<NodeOverlay>('karpenter.sh', 'v1alpha1', 'nodeoverlays', 'NodeOverlay', false),
  Cluster: rt<KubeObject>('cluster.x-k8s.io', 'v1beta2', 'clusters', 'Cluster', true),
  Machine: rt<KubeObject>('cluster.x-k8s.io', 'v1beta2', 'machines', 'Machine', true),
  MachineSet: rt<KubeObject>('cluster.x-k8s.io', 'v1beta2', 'machinesets', 'MachineSet', true),
  MachineDeployment: rt<KubeObject>(
    'cluster.x-k8s.io',
    'v1beta2',
    'machinedeployments',
    'MachineDeployment',
    true,
  ),
  MachinePool: rt<KubeObject>('cluster.x-k8s.io', 'v1beta2', 'machinepools', 'MachinePool', true),
  AWSCluster: rt<KubeObject>('infrastructure.cluster.x-k8s.io', 'v1beta2', 'awsclusters', 'AWSCluster', true),
  AWSMachine: rt<KubeObject>('infrastructure.cluster.x-k8s.io', 'v1beta2', 'awsmachines', 'AWSMachine', true),
  /** CAPA's cluster identities (cluster-scoped; `AWSCluster.spec.identityRef`, `src/cloudprovider/aws/identity.ts`). */
  AWSClusterControllerIdentity: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1beta2',
    'awsclustercontrolleridentities',
    'AWSClusterControllerIdentity',
    false,
  ),
  AWSClusterRoleIdentity: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1beta2',
    'awsclusterroleidentities',
    'AWSClusterRoleIdentity',
    false,
  ),
  AWSClusterStaticIdentity: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1beta2',
    'awsclusterstaticidentities',
    'AWSClusterStaticIdentity',
    false,
  ),
  AWSMachineTemplate: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1beta2',
    'awsmachinetemplates',
    'AWSMachineTemplate',
    true,
  ),
  AWSMachinePool: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1beta2',
    'awsmachinepools',
    'AWSMachinePool',
    true,
  ),
  KarpenterMachinePool: rt<KubeObject>(
    'infrastructure.cluster.x-k8s.io',
    'v1alpha1',
    'karpentermachinepools',
    'KarpenterMachinePool',
    true,
  ),
  KubeadmConfig: rt<KubeObject>(
    'bootstrap.cluster.x-k8s.io',
    'v1beta2',
    'kubeadmconfigs',
    'KubeadmConfig',
    true,
  ),
} as const;

/** Names of the pre-registered kinds (keys of {@link Resources}). */
export type KnownKind = keyof typeof Resources;

/**
 * A resource reference: a descriptor, the name of a pre-registered kind (typed), or any other kind name
 * registered at runtime (`Widget`, `Machine.cluster.x-k8s.io`; typed `KubeObject`).
 */
export type ResourceRef<T extends KubeObject = KubeObject> = ResourceType<T> | KnownKind | (string & {});

/** The object type a {@link ResourceRef} stands for. */
export type ObjectOf<R> =
  R extends ResourceType<infer T>
    ? T
    : R extends KnownKind
      ? (typeof Resources)[R] extends ResourceType<infer T>
        ? T
        : KubeObject
      : KubeObject;

/**
 * Mutable set of resource descriptors, looked up by kind name, `Kind.group`, or apiVersion + kind.
 * Starts with {@link Resources}; `register` adds or replaces (same group + kind).
 */
export class ResourceRegistry {
  private readonly byGvk = new Map<string, ResourceType>();
  private readonly byGroupKind = new Map<string, ResourceType>();

  constructor(initial: Iterable<ResourceType> = Object.values(Resources)) {
    for (const r of initial) this.register(r);
  }

  /** Adds or replaces a descriptor. */
  register(r: ResourceType): void {
    this.byGvk.set(`${apiVersionOf(r)}|${r.kind}`, r);
    this.byGroupKind.set(`${r.group}|${r.kind}`, r);
  }

  /** Descriptor for an exact apiVersion + kind, else the same group + kind at another version. */
  forApiVersionKind(apiVersion: string, kind: string): ResourceType | undefined {
    const exact = this.byGvk.get(`${apiVersion}|${kind}`);
    if (exact) return exact;
    const { group, version } = parseApiVersion(apiVersion);
    const gk = this.byGroupKind.get(`${group}|${kind}`);
    return gk ? { ...gk, version } : undefined;
  }

  /**
   * Descriptor for a kind name (`Pod`) or `Kind.group` (`Machine.cluster.x-k8s.io`). A bare name that
   * exists in several groups resolves to the pre-registered one (core, then capenter's list).
   */
  forKind(kindOrKindGroup: string): ResourceType | undefined {
    const known = (Resources as Record<string, ResourceType>)[kindOrKindGroup];
    if (known) return this.byGroupKind.get(`${known.group}|${known.kind}`) ?? known;
    const dot = kindOrKindGroup.indexOf('.');
    if (dot > 0)
      return this.byGroupKind.get(`${kindOrKindGroup.slice(dot + 1)}|${kindOrKindGroup.slice(0, dot)}`);
    for (const r of this.byGroupKind.values()) if (r.kind === kindOrKindGroup) return r;
    return undefined;
  }

  /** Every registered descriptor. */
  all(): ResourceType[] {
    return [...this.byGroupKind.values()];
  }
}
