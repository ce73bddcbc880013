/**
 * Builders shared by the provisioning tests (unit and integration); not used by production code:
 * a kwok NodePool, a pending (Unschedulable) pod, a DaemonSet.
 */
import type { DaemonSet, Pod, Taint } from '../../apis/core.ts';
import type { NodePool, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';

/** Options of {@link testNodePool}. */
export interface TestNodePoolOptions {
  requirements?: NodeSelectorRequirementWithMinValues[];
  limits?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  taints?: Taint[];
  startupTaints?: Taint[];
  weight?: number;
  nodeClass?: string;
  expireAfter?: string;
  terminationGracePeriod?: string;
  ready?: boolean;
}

/**
 * A NodePool on KWOKNodeClass `nodeClass` (default `default`); requirements default to on-demand amd64 linux
 * c/m/r instances (as upstream's getting-started NodePool). With `ready: true` the status carries `Ready=True`.
 */
export function testNodePool(name: string, o: TestNodePoolOptions = {}): NodePool {
  const np: NodePool = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        ...(o.labels || o.annotations
          ? {
              metadata: {
                ...(o.labels ? { labels: o.labels } : {}),
                ...(o.annotations ? { annotations: o.annotations } : {}),
              },
            }
          : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: o.nodeClass ?? 'default' },
          requirements: o.requirements ?? [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
            { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
            { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm', 'r'] },
          ],
          expireAfter: o.expireAfter ?? '720h',
          ...(o.taints ? { taints: o.taints } : {}),
          ...(o.startupTaints ? { startupTaints: o.startupTaints } : {}),
          ...(o.terminationGracePeriod ? { terminationGracePeriod: o.terminationGracePeriod } : {}),
        },
      },
      disruption: {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '0s',
        budgets: [{ nodes: '10%' }],
      },
      ...(o.limits ? { limits: o.limits } : {}),
      ...(o.weight !== undefined ? { weight: o.weight } : {}),
    },
  };
  if (o.ready) np.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready' }] };
  return np;
}

/** Options of {@link pendingPod}. */
export interface PendingPodOptions {
  namespace?: string;
  cpu?: string;
  memory?: string;
  labels?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  uid?: string;
  /** Without the `PodScheduled=False/Unschedulable` condition (default: with it). */
  notYetUnschedulable?: boolean;
  ownerKind?: string;
}

/** A pending pod with one container requesting `cpu`/`memory`, marked Unschedulable by the scheduler. */
export function pendingPod(name: string, o: PendingPodOptions = {}): Pod {
  const namespace = o.namespace ?? 'default';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      uid: o.uid ?? `uid-${namespace}-${name}`,
      labels: o.labels ?? { app: 'test' },
      creationTimestamp: '2024-01-01T00:00:00Z',
      ...(o.ownerKind
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: o.ownerKind, name: 'owner', uid: 'owner-uid', controller: true },
            ],
          }
        : {}),
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu: o.cpu ?? '1', memory: o.memory ?? '1Gi' } },
        },
      ],
      ...(o.nodeSelector ? { nodeSelector: o.nodeSelector } : {}),
    },
    status: o.notYetUnschedulable
      ? { phase: 'Pending' }
      : {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: 'Unschedulable',
              message: '0/0 nodes are available',
            },
          ],
        },
  };
}

/** A DaemonSet whose pods request `cpu`/`memory` and tolerate everything. */
export function testDaemonSet(
  name: string,
  cpu = '100m',
  memory = '128Mi',
  namespace = 'kube-system',
): DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          tolerations: [{ operator: 'Exists' }],
          containers: [
            { name: 'd', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu, memory } } },
          ],
        },
      },
    },
  };
}
