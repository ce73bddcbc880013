/**
 * "Would this DaemonSet run a pod on that existing Node": node selector, required node affinity and taints vs.
 * tolerations, using the scheduler's own matching (`scheduling/nodeaffinity.ts`, `scheduling/taints.ts`).
 * The DaemonSet controller's default tolerations come from Kubernetes
 * `pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations`.
 */
import type { Node, PodSpec, Toleration } from '../apis/core.ts';
import { nodeMatchesPodAffinity } from '../scheduling/nodeaffinity.ts';
import { tolerates } from '../scheduling/taints.ts';

/** Tolerations the DaemonSet controller adds to every daemon pod (Kubernetes 1.32). */
export const DAEMON_DEFAULT_TOLERATIONS: readonly Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

/**
 * True when a pod with `spec` may run on `node` as far as labels and taints go: `nodeSelector`, required
 * node affinity (terms ORed), and every `NoSchedule`/`NoExecute` taint tolerated by `spec.tolerations` plus
 * `extraTolerations`. Resources are not checked.
 */
export function podFitsNodeLabelsAndTaints(
  spec: PodSpec,
  node: Node,
  extraTolerations: readonly Toleration[] = [],
): boolean {
  const labels = node.metadata.labels ?? {};
  if (!nodeMatchesPodAffinity({ metadata: {}, spec }, labels)) return false;
  return tolerates([...(spec.tolerations ?? []), ...extraTolerations], node.spec?.taints);
}
