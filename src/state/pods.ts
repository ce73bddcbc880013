/**
 * Pod predicates of provisioning and cluster state (the ones every layer shares are in `apis/pod.ts`).
 * Source: kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go` (`IsProvisionable`, `FailedToSchedule`,
 * `IsScheduled`, `IsPreempting`).
 */
import type { Pod } from '../apis/core.ts';
import { isActive, isOwnedByDaemonSet, isOwnedByNode, isTerminal } from '../apis/pod.ts';

/** The scheduler name pods get when they name none (kube-apiserver default). */
export const DefaultSchedulerName = 'default-scheduler';

/** `namespace/name` of a pod (namespace defaults to `default`). */
export function podKey(pod: Pod): string {
  return `${pod.metadata.namespace || 'default'}/${pod.metadata.name ?? ''}`;
}

/** Bound to a node (`spec.nodeName` set). Upstream `IsScheduled`. */
export function isScheduled(pod: Pod): boolean {
  return !!pod.spec?.nodeName;
}

/** kube-scheduler is preempting other pods for it (`status.nominatedNodeName` set). Upstream `IsPreempting`. */
export function isPreempting(pod: Pod): boolean {
  return !!pod.status?.nominatedNodeName;
}

/**
 * The scheduler looked at the pod and found no node: condition `PodScheduled` with reason `Unschedulable`.
 * Upstream `FailedToSchedule`.
 */
export function failedToSchedule(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some(
    (c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable',
  );
}

/** Scheduled by the default scheduler (`spec.schedulerName` unset or `default-scheduler`). */
export function usesDefaultScheduler(pod: Pod): boolean {
  const s = pod.spec?.schedulerName;
  return s === undefined || s === '' || s === DefaultSchedulerName;
}

/**
 * Why a pod is not provisionable, or `undefined` when Karpenter should find capacity for it: it failed to
 * schedule (`PodScheduled=False`, reason `Unschedulable`), is not bound, not preempting, not owned by a
 * DaemonSet or a Node (upstream `IsProvisionable`); additionally (capenter) it is active (not terminal, not
 * being deleted) and uses the default scheduler.
 */
export function provisionableReason(pod: Pod): string | undefined {
  if (isScheduled(pod)) return `bound to node "${pod.spec.nodeName}"`;
  if (!isActive(pod)) return isTerminal(pod) ? `terminal (phase ${pod.status?.phase})` : 'being deleted';
  if (!failedToSchedule(pod)) return 'not marked Unschedulable by the scheduler yet (PodScheduled condition)';
  if (isPreempting(pod)) return `preempting pods on node "${pod.status?.nominatedNodeName}"`;
  if (isOwnedByDaemonSet(pod)) return 'owned by a DaemonSet';
  if (isOwnedByNode(pod)) return 'a mirror pod owned by its Node';
  if (!usesDefaultScheduler(pod)) return `uses scheduler "${pod.spec.schedulerName}"`;
  return undefined;
}

/** True when Karpenter should provision capacity for the pod; see {@link provisionableReason}. */
export function isProvisionable(pod: Pod): boolean {
  return provisionableReason(pod) === undefined;
}
