/**
 * Test factories for the disruption core: managed nodes built from a catalog instance type (labels, allocatable,
 * a registered and initialized NodeClaim carrying the NodePool's current hash), bound pods, NodePools and a
 * ready-to-run {@link DisruptionInput}. Only for tests and benchmarks.
 */
import type { Pod, Taint } from '../apis/core.ts';
import { NodePoolHashVersion, nodePoolHash } from '../apis/hash.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { Budget, NodeClaim, NodePool } from '../apis/karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion } from '../apis/labels.ts';
import { formatResources } from '../apis/quantity.ts';
import { makeNodePool, smallCatalog } from '../scheduling/testing.ts';
import type { DisruptionInput, DisruptionNode } from './types.ts';

/** The catalog the disruption tests use (`scheduling/testing.ts` `smallCatalog`: m5.large $0.096/h ...). */
export const CATALOG: InstanceType[] = smallCatalog();

/** A NodePool of m5 on-demand types with the given disruption settings (defaults: underutilized, 0s, 100%). */
export function pool(
  name = 'default',
  d: {
    policy?: 'WhenEmpty' | 'WhenEmptyOrUnderutilized' | 'Balanced';
    after?: string;
    budgets?: Budget[];
    capacityTypes?: string[];
    families?: string[];
  } = {},
): NodePool {
  const np = makeNodePool(name, {
    requirements: [
      { key: 'karpenter.sh/capacity-type', operator: 'In', values: d.capacityTypes ?? ['on-demand'] },
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: d.families ?? ['m5'] },
    ],
  });
  np.spec.disruption = {
    consolidationPolicy: d.policy ?? 'WhenEmptyOrUnderutilized',
    consolidateAfter: d.after ?? '0s',
    budgets: d.budgets ?? [{ nodes: '100%' }],
  };
  return np;
}

/** Options of {@link node}. */
export interface NodeOptions {
  type?: string;
  pool?: NodePool;
  zone?: string;
  capacityType?: string;
  /** NodeClaim (and Node) creation time, RFC 3339. */
  created?: string;
  lastPodEventTime?: string;
  nodeAnnotations?: Record<string, string>;
  taints?: Taint[];
  terminationGracePeriod?: string;
  expireAfter?: string;
}

/** A managed, initialized node of `type` (default m5.xlarge) in `pool`, with its NodeClaim. */
export function node(name: string, pods: Pod[] = [], o: NodeOptions = {}): DisruptionNode {
  const it = CATALOG.find((t) => t.name === (o.type ?? 'm5.xlarge'));
  if (!it) throw new Error(`unknown type ${o.type}`);
  const np = o.pool ?? pool();
  const labels: Record<string, string> = {
    ...it.labels,
    'kubernetes.io/hostname': name,
    'topology.kubernetes.io/zone': o.zone ?? 'test-zone-a',
    'karpenter.sh/capacity-type': o.capacityType ?? 'on-demand',
    'karpenter.sh/nodepool': np.metadata.name,
    'karpenter.sh/registered': 'true',
    'karpenter.sh/initialized': 'true',
  };
  const nc: NodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      labels,
      annotations: {
        [AnnotationNodePoolHash]: nodePoolHash(np),
        [AnnotationNodePoolHashVersion]: NodePoolHashVersion,
      },
      ...(o.created ? { creationTimestamp: o.created } : {}),
    },
    spec: {
      nodeClassRef: np.spec.template.spec.nodeClassRef,
      requirements: np.spec.template.spec.requirements,
      ...(o.terminationGracePeriod ? { terminationGracePeriod: o.terminationGracePeriod } : {}),
      ...(o.expireAfter ? { expireAfter: o.expireAfter } : {}),
    },
    status: {
      nodeName: name,
      conditions: [{ type: 'Initialized', status: 'True' }],
      ...(o.lastPodEventTime ? { lastPodEventTime: o.lastPodEventTime } : {}),
    },
  };
  const alloc = formatResources(it.allocatable);
  return {
    node: {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        labels,
        ...(o.created ? { creationTimestamp: o.created } : {}),
        ...(o.nodeAnnotations ? { annotations: o.nodeAnnotations } : {}),
      },
      spec: { providerID: `kwok://${name}`, ...(o.taints ? { taints: o.taints } : {}) },
      status: {
        allocatable: alloc,
        capacity: formatResources(it.capacity),
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    },
    nodeClaim: nc,
    pods: pods.map((p) => ({ ...p, spec: { ...p.spec, nodeName: name } })),
  };
}

/** Options of {@link pod}. */
export interface BoundPodOptions {
  cpu?: string;
  memory?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  priority?: number;
  namespace?: string;
  ready?: boolean;
  ownerKind?: string;
}

/** A running, ready pod owned by a ReplicaSet (bound by {@link node}). */
export function pod(name: string, o: BoundPodOptions = {}): Pod {
  const requests: Record<string, string> = { cpu: o.cpu ?? '500m', memory: o.memory ?? '512Mi' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      uid: `uid-${name}`,
      labels: o.labels ?? { app: name },
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: o.ownerKind ?? 'ReplicaSet',
          name: 'rs-1',
          uid: 'rs-uid',
          controller: true,
        },
      ],
    },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests } }],
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
    },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  } as Pod;
}

/** A {@link DisruptionInput} for `nodes` with the test catalog for every NodePool given (default: one `default`). */
export function input(nodes: DisruptionNode[], extra: Partial<DisruptionInput> = {}): DisruptionInput {
  const nodePools = extra.nodePools ?? [pool()];
  const instanceTypes: Record<string, InstanceType[]> = {};
  for (const np of nodePools) instanceTypes[np.metadata.name] = CATALOG;
  return {
    nodes,
    nodePools,
    instanceTypes,
    daemonSets: [],
    pdbs: [],
    now: Date.parse('2026-01-01T00:00:00Z'),
    ...extra,
  };
}
