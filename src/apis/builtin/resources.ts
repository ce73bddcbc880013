/**
 * The built-in resources served by the embedded API server, with the discovery facts of Kubernetes
 * 1.32 (kind, scope, short names, categories, subresources) and the printer columns kubectl shows.
 */
import type { PrinterColumn, ResourceDef, ScaleSpec } from './types.ts';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

interface BuiltinSpec {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  status?: boolean;
  scale?: ScaleSpec;
  generation?: boolean;
  keepStatusOnCreate?: boolean;
  post?: string[];
  verbs?: string[];
  columns?: PrinterColumn[];
}

const REPLICAS_SCALE: ScaleSpec = {
  specReplicasPath: '.spec.replicas',
  statusReplicasPath: '.status.replicas',
  labelSelectorPath: '.spec.selector',
};

const SPECS: BuiltinSpec[] = [
  {
    group: '',
    version: 'v1',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    status: true,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    columns: [{ name: 'Status', type: 'string', jsonPath: '.status.phase' }],
  },
  {
    group: '',
    version: 'v1',
    plural: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    status: true,
    post: ['binding', 'eviction'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    status: true,
    keepStatusOnCreate: true,
  },
  { group: '', version: 'v1', plural: 'bindings', kind: 'Binding', namespaced: true, verbs: ['create'] },
  {
    group: '',
    version: 'v1',
    plural: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    // kubectl's columns for events (LAST SEEN is the object's age here).
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.type' },
      { name: 'Reason', type: 'string', jsonPath: '.reason' },
      { name: 'Object', type: 'string', jsonPath: '.involvedObject.name' },
      { name: 'Message', type: 'string', jsonPath: '.message' },
    ],
  },
  {
    group: '',
    version: 'v1',
    plural: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    shortNames: ['pvc'],
    status: true,
    columns: [
      { name: 'Status', type: 'string', jsonPath: '.status.phase' },
      { name: 'Volume', type: 'string', jsonPath: '.spec.volumeName' },
      { name: 'StorageClass', type: 'string', jsonPath: '.spec.storageClassName' },
    ],
  },
  {
    group: '',
    version: 'v1',
    plural: 'persistentvolumes',
    kind: 'PersistentVolume',
    namespaced: false,
    shortNames: ['pv'],
    status: true,
    columns: [
      { name: 'Capacity', type: 'string', jsonPath: '.spec.capacity.storage' },
      { name: 'Status', type: 'string', jsonPath: '.status.phase' },
      { name: 'StorageClass', type: 'string', jsonPath: '.spec.storageClassName' },
    ],
  },
  { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] },
  { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
  {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    status: true,
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Cluster-IP', type: 'string', jsonPath: '.spec.clusterIP' },
    ],
  },
  {
    group: 'apps',
    version: 'v1',
    plural: 'deployments',
    kind: 'Deployment',
    namespaced: true,
    shortNames: ['deploy'],
    categories: ['all'],
    status: true,
    scale: REPLICAS_SCALE,
    generation: true,
  },
  {
    group: 'apps',
    version: 'v1',
    plural: 'replicasets',
    kind: 'ReplicaSet',
    namespaced: true,
    shortNames: ['rs'],
    categories: ['all'],
    status: true,
    scale: REPLICAS_SCALE,
    generation: true,
    columns: [
      { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas' },
      { name: 'Current', type: 'integer', jsonPath: '.status.replicas' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    ],
  },
  {
    group: 'apps',
    version: 'v1',
    plural: 'statefulsets',
    kind: 'StatefulSet',
    namespaced: true,
    shortNames: ['sts'],
    categories: ['all'],
    status: true,
    scale: REPLICAS_SCALE,
    generation: true,
  },
  {
    group: 'apps',
    version: 'v1',
    plural: 'daemonsets',
    kind: 'DaemonSet',
    namespaced: true,
    shortNames: ['ds'],
    categories: ['all'],
    status: true,
    generation: true,
    columns: [
      { name: 'Desired', type: 'integer', jsonPath: '.status.desiredNumberScheduled' },
      { name: 'Current', type: 'integer', jsonPath: '.status.currentNumberScheduled' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.numberReady' },
    ],
  },
  {
    group: 'batch',
    version: 'v1',
    plural: 'jobs',
    kind: 'Job',
    namespaced: true,
    categories: ['all'],
    status: true,
    generation: true,
    columns: [{ name: 'Completions', type: 'integer', jsonPath: '.spec.completions' }],
  },
  {
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    namespaced: true,
    shortNames: ['pdb'],
    status: true,
    generation: true,
    columns: [
      { name: 'Min Available', type: 'string', jsonPath: '.spec.minAvailable' },
      { name: 'Max Unavailable', type: 'string', jsonPath: '.spec.maxUnavailable' },
      { name: 'Allowed Disruptions', type: 'integer', jsonPath: '.status.disruptionsAllowed' },
    ],
  },
  {
    group: 'storage.k8s.io',
    version: 'v1',
    plural: 'storageclasses',
    kind: 'StorageClass',
    namespaced: false,
    shortNames: ['sc'],
    columns: [
      { name: 'Provisioner', type: 'string', jsonPath: '.provisioner' },
      { name: 'VolumeBindingMode', type: 'string', jsonPath: '.volumeBindingMode' },
    ],
  },
  { group: 'storage.k8s.io', version: 'v1', plural: 'csinodes', kind: 'CSINode', namespaced: false },
  {
    group: 'storage.k8s.io',
    version: 'v1',
    plural: 'volumeattachments',
    kind: 'VolumeAttachment',
    namespaced: false,
    status: true,
  },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    plural: 'leases',
    kind: 'Lease',
    namespaced: true,
    columns: [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity' }],
  },
  {
    group: 'events.k8s.io',
    version: 'v1',
    plural: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
  },
  // kinds real manifests carry: stored and served (no admission or controller behind them)
  {
    group: '',
    version: 'v1',
    plural: 'limitranges',
    kind: 'LimitRange',
    namespaced: true,
    shortNames: ['limits'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'resourcequotas',
    kind: 'ResourceQuota',
    namespaced: true,
    shortNames: ['quota'],
    status: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'replicationcontrollers',
    kind: 'ReplicationController',
    namespaced: true,
    shortNames: ['rc'],
    categories: ['all'],
    status: true,
    generation: true,
  },
  { group: '', version: 'v1', plural: 'endpoints', kind: 'Endpoints', namespaced: true, shortNames: ['ep'] },
  {
    group: 'apps',
    version: 'v1',
    plural: 'controllerrevisions',
    kind: 'ControllerRevision',
    namespaced: true,
  },
  {
    group: 'batch',
    version: 'v1',
    plural: 'cronjobs',
    kind: 'CronJob',
    namespaced: true,
    shortNames: ['cj'],
    categories: ['all'],
    status: true,
    generation: true,
  },
  {
    group: 'autoscaling',
    version: 'v2',
    plural: 'horizontalpodautoscalers',
    kind: 'HorizontalPodAutoscaler',
    namespaced: true,
    shortNames: ['hpa'],
    categories: ['all'],
    status: true,
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    kind: 'NetworkPolicy',
    namespaced: true,
    shortNames: ['netpol'],
    generation: true,
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'ingresses',
    kind: 'Ingress',
    namespaced: true,
    shortNames: ['ing'],
    status: true,
    generation: true,
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'ingressclasses',
    kind: 'IngressClass',
    namespaced: false,
  },
  { group: 'node.k8s.io', version: 'v1', plural: 'runtimeclasses', kind: 'RuntimeClass', namespaced: false },
  {
    group: 'scheduling.k8s.io',
    version: 'v1',
    plural: 'priorityclasses',
    kind: 'PriorityClass',
    namespaced: false,
    shortNames: ['pc'],
  },
  { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role', namespaced: true },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    kind: 'RoleBinding',
    namespaced: true,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    kind: 'ClusterRole',
    namespaced: false,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterrolebindings',
    kind: 'ClusterRoleBinding',
    namespaced: false,
  },
  { group: 'storage.k8s.io', version: 'v1', plural: 'csidrivers', kind: 'CSIDriver', namespaced: false },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'validatingwebhookconfigurations',
    kind: 'ValidatingWebhookConfiguration',
    namespaced: false,
  },
  {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'mutatingwebhookconfigurations',
    kind: 'MutatingWebhookConfiguration',
    namespaced: false,
  },
  {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    status: true,
    generation: true,
    columns: [{ name: 'Created At', type: 'date', jsonPath: '.metadata.creationTimestamp' }],
  },
];

/** Singular form of a plural resource name (`policies` → `policy`, `pods` → `pod`, `classes` → `class`). */
export function singularOf(kind: string): string {
  return kind.toLowerCase();
}

/** Build the ResourceDef list of all built-in resources. */
export function builtinResources(): ResourceDef[] {
  return SPECS.map((s) => {
    const apiVersion = s.group ? `${s.group}/${s.version}` : s.version;
    const def: ResourceDef = {
      group: s.group,
      version: s.version,
      plural: s.plural,
      singular: singularOf(s.kind),
      kind: s.kind,
      namespaced: s.namespaced,
      shortNames: s.shortNames ?? [],
      categories: s.categories ?? [],
      verbs: s.verbs ?? ALL_VERBS,
      storageKey: `${s.group}/${s.plural}`,
      storageApiVersion: apiVersion,
      hasStatus: s.status ?? false,
      tracksGeneration: s.generation ?? false,
      keepStatusOnCreate: s.keepStatusOnCreate ?? false,
      postSubresources: s.post ?? [],
    };
    if (s.scale) def.scale = s.scale;
    if (s.columns) def.printerColumns = s.columns;
    return def;
  });
}
