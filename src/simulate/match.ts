/**
 * "Would this DaemonSet run a pod on that existing Node": node selector, required node affinity and taints vs.
 * tolerations, using the scheduler's own matching (`scheduling/nodeaffinity.ts`, `scheduling/taints.ts`).
 * The DaemonSet controller's default tolerations come from `apis/daemonset.ts`.
 */
import type { Node, PodSpec, Toleration } from '../apis/core.ts';
import { daemonPodTolerations } from '../apis/daemonset.ts';
import { nodeMatchesPodAffinity } from '../scheduling/nodeaffinity.ts';
import { tolerates } from '../scheduling/taints.ts';

/** Tolerations the DaemonSet controller adds to every (non-hostNetwork) daemon pod: `apis/daemonset.ts`. */
export const DAEMON_DEFAULT_TOLERATIONS: readonly Toleration[] = daemonPodTolerations(false);

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
