/**
 * Sample objects for the `clusterapi` cloud provider on the embedded two-cluster environment: a Cluster, CAPA
 * AWSMachineTemplates (with `status.capacity`, as CAPA publishes for scale-from-zero), a KubeadmConfigTemplate and
 * MachineDeployments labelled `node.cluster.x-k8s.io/karpenter-member`, plus the workload side (a
 * ClusterAPINodeClass and a NodePool). Used by `capenter start --cloud-provider clusterapi`, the conformance run
 * and the end-to-end tests. Pure.
 */
import {
  AnnotationMaxSize,
  AnnotationMinSize,
  AnnotationPricePerHour,
  LabelClusterName,
  LabelKarpenterMember,
} from '../../apis/capi.ts';
import type { KubeObject } from '../../apis/core.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists } from '../../kube/errors.ts';

/** One sample MachineDeployment. */
export interface SampleDeployment {
  name: string;
  /** AWS instance type of its AWSMachineTemplate (`instanceType`), or undefined for a generic deployment. */
  instanceType?: string;
  /** `status.capacity` of the AWSMachineTemplate (default from {@link SampleCapacity}). */
  capacity?: { cpu: string; memory: string };
  /** Scale-from-zero annotations (`capacity.cluster-autoscaler.kubernetes.io/*` keys without the prefix). */
  capacityAnnotations?: Record<string, string>;
  failureDomain?: string;
  spot?: boolean;
  /** {@link AnnotationPricePerHour}. */
  price?: number;
  minSize?: number;
  maxSize?: number;
  replicas?: number;
  taints?: Array<{ key: string; value?: string; effect: 'NoSchedule' | 'NoExecute' | 'PreferNoSchedule' }>;
  labels?: Record<string, string>;
  /** Labels of `spec.template.metadata` (CAPI propagates `node.cluster.x-k8s.io/*` ones to the Nodes). */
  templateLabels?: Record<string, string>;
  paused?: boolean;
}

/** Capacity CAPA publishes for a few instance types (from the AWS catalog). */
export const SampleCapacity: Record<string, { cpu: string; memory: string }> = {
  'm5.large': { cpu: '2', memory: '8Gi' },
  'm5.xlarge': { cpu: '4', memory: '16Gi' },
  'm5.2xlarge': { cpu: '8', memory: '32Gi' },
  'c5.xlarge': { cpu: '4', memory: '8Gi' },
  'c5.2xlarge': { cpu: '8', memory: '16Gi' },
  'r5.xlarge': { cpu: '4', memory: '32Gi' },
};

/** Options of {@link sampleClusterAPIObjects}. */
export interface SampleClusterAPIOptions {
  namespace?: string;
  clusterName?: string;
  version?: string;
  deployments?: SampleDeployment[];
}

/**
 * The default pair for `capenter start --cloud-provider clusterapi`: two deployments of different instance types and
 * prices (embedded AWS catalog: m5.xlarge 4 vCPU/16 GiB at 0.192 USD/h, c5.2xlarge 8 vCPU/16 GiB at 0.34 USD/h).
 */
export const DefaultSampleDeployments: SampleDeployment[] = [
  { name: 'md-m5-xlarge', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 20 },
  { name: 'md-c5-2xlarge', instanceType: 'c5.2xlarge', failureDomain: 'us-east-1b', maxSize: 20 },
];

/**
 * The management-cluster objects: Cluster (v1beta2), KubeadmConfigTemplate, one AWSMachineTemplate per AWS
 * deployment, the MachineDeployments. Pure.
 */
export function sampleClusterAPIObjects(o: SampleClusterAPIOptions = {}): KubeObject[] {
  const ns = o.namespace ?? 'default';
  const cluster = o.clusterName ?? 'demo';
  const version = o.version ?? 'v1.33.1';
  const labels = { [LabelClusterName]: cluster };
  const out: KubeObject[] = [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: cluster, namespace: ns, labels },
      spec: {
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'AWSCluster', name: cluster },
      },
    },
    {
      apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
      kind: 'KubeadmConfigTemplate',
      metadata: { name: `${cluster}-workers`, namespace: ns, labels },
      spec: {
        template: {
          spec: {
            joinConfiguration: {
              nodeRegistration: { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }] },
            },
          },
        },
      },
    },
  ];
  for (const d of o.deployments ?? DefaultSampleDeployments) {
    const ann: Record<string, string> = {};
    if (d.price !== undefined) ann[AnnotationPricePerHour] = String(d.price);
    if (d.minSize !== undefined) ann[AnnotationMinSize] = String(d.minSize);
    if (d.maxSize !== undefined) ann[AnnotationMaxSize] = String(d.maxSize);
    for (const [k, v] of Object.entries(d.capacityAnnotations ?? {}))
      ann[`capacity.cluster-autoscaler.kubernetes.io/${k}`] = v;
    const templateName = `${d.name}-template`;
    if (d.instanceType) {
      out.push({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
        kind: 'AWSMachineTemplate',
        metadata: { name: templateName, namespace: ns, labels },
        spec: {
          template: {
            spec: {
              instanceType: d.instanceType,
              iamInstanceProfile: `nodes-${cluster}`,
              ...(d.spot ? { spotMarketOptions: {} } : {}),
            },
          },
        },
        status: { capacity: d.capacity ?? SampleCapacity[d.instanceType] ?? { cpu: '2', memory: '8Gi' } },
      } as KubeObject);
    }
    out.push({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachineDeployment',
      metadata: {
        name: d.name,
        namespace: ns,
        labels: { ...labels, [LabelKarpenterMember]: '', ...(d.labels ?? {}) },
        annotations: ann,
      },
      spec: {
        clusterName: cluster,
        replicas: d.replicas ?? 0,
        ...(d.paused ? { paused: true } : {}),
        selector: { matchLabels: { [LabelClusterName]: cluster, 'capenter.io/md': d.name } },
        rollout: { strategy: { type: 'OnDelete' } },
        template: {
          metadata: {
            labels: { ...(d.templateLabels ?? {}), [LabelClusterName]: cluster, 'capenter.io/md': d.name },
          },
          spec: {
            clusterName: cluster,
            version,
            ...(d.failureDomain ? { failureDomain: d.failureDomain } : {}),
            bootstrap: {
              configRef: {
                apiGroup: 'bootstrap.cluster.x-k8s.io',
                kind: 'KubeadmConfigTemplate',
                name: `${cluster}-workers`,
              },
            },
            infrastructureRef: d.instanceType
              ? {
                  apiGroup: 'infrastructure.cluster.x-k8s.io',
                  kind: 'AWSMachineTemplate',
                  name: templateName,
                }
              : {
                  apiGroup: 'infrastructure.cluster.x-k8s.io',
                  kind: 'DockerMachineTemplate',
                  name: templateName,
                },
            ...(d.taints ? { taints: d.taints.map((t) => ({ ...t, propagation: 'Always' })) } : {}),
          },
        },
      },
    });
  }
  return out;
}

/** The workload-cluster objects: a ClusterAPINodeClass `default` and a NodePool `default` using it. Pure. */
export function sampleClusterAPIWorkloadObjects(
  o: {
    nodePool?: string;
    nodeClass?: string;
    requirements?: Array<{ key: string; operator: string; values?: string[] }>;
    limits?: Record<string, string>;
    consolidateAfter?: string;
    selector?: Record<string, string>;
  } = {},
): KubeObject[] {
  const nc = o.nodeClass ?? 'default';
  return [
    {
      apiVersion: 'karpenter.cluster.x-k8s.io/v1alpha1',
      kind: 'ClusterAPINodeClass',
      metadata: { name: nc },
      spec: { scalableResourceSelector: { matchLabels: o.selector ?? {} } },
    },
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: o.nodePool ?? 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.cluster.x-k8s.io', kind: 'ClusterAPINodeClass', name: nc },
            requirements: o.requirements ?? [],
            expireAfter: 'Never',
          },
        },
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized',
          consolidateAfter: o.consolidateAfter ?? '0s',
          budgets: [{ nodes: '100%' }],
        },
        ...(o.limits ? { limits: o.limits } : {}),
      },
    },
  ];
}

/**
 * Creates `objects` in order (existing ones are left alone) and writes their `status` through the status
 * subresource (the API server drops `status` on create, e.g. the AWSMachineTemplate's `status.capacity`).
 * @throws the first API error other than AlreadyExists.
 */
export async function createClusterAPIObjects(
  client: KubeClient,
  objects: readonly KubeObject[],
): Promise<void> {
  for (const obj of objects) {
    let created: KubeObject;
    try {
      created = await client.create(obj);
    } catch (err) {
      if (isAlreadyExists(err)) continue;
      throw err;
    }
    const status = (obj as { status?: unknown }).status;
    if (status !== undefined) await client.updateStatus({ ...created, status } as KubeObject);
  }
}

/**
 * Writes the `status` of each object of `objects` that has one onto the stored object (status subresource), e.g.
 * after `applyObjects`. Objects without a status are skipped. @throws the first API error.
 */
export async function writeStatuses(client: KubeClient, objects: readonly KubeObject[]): Promise<void> {
  for (const obj of objects) {
    const status = (obj as { status?: unknown }).status;
    if (status === undefined || !obj.kind || !obj.metadata?.name) continue;
    const rt = client.registry.forKind(`${obj.kind}.${obj.apiVersion?.split('/')[0] ?? ''}`) ?? obj.kind;
    const stored = await client.tryGet(rt, obj.metadata.name, obj.metadata.namespace ?? 'default');
    if (stored) await client.updateStatus({ ...stored, status } as KubeObject);
  }
}
