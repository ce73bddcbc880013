/**
 * Pod predicates every layer shares (the scheduling core, cluster state, provisioning, disruption, termination,
 * simulate and doctor): one definition each. Source: kubernetes-sigs/karpenter `pkg/utils/pod/scheduling.go`
 * (`IsTerminal`, `IsTerminating`, `IsActive`, `IsOwnedByDaemonSet`, `IsOwnedByNode`, `IsReschedulable`) and
 * kubelet's `kubetypes.IsMirrorPod` (the `kubernetes.io/config.mirror` annotation).
 */
import type { Pod } from './core.ts';

/** The annotation kubelet puts on the mirror pod of a static pod (kubelet `kubetypes.ConfigMirrorAnnotationKey`). */
export const AnnotationConfigMirror = 'kubernetes.io/config.mirror';

/** Phase `Succeeded` or `Failed`: holds no resources. Upstream `IsTerminal`. */
export function isTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Has a `deletionTimestamp`. Upstream `IsTerminating`. */
export function isTerminating(pod: Pod): boolean {
  return !!pod.metadata.deletionTimestamp;
}

/** Neither terminal nor terminating. Upstream `IsActive`. */
export function isActive(pod: Pod): boolean {
  return !isTerminal(pod) && !isTerminating(pod);
}

/** Owned by a DaemonSet (its pods are daemon overhead, never provisioned for). Upstream `IsOwnedByDaemonSet`. */
export function isOwnedByDaemonSet(pod: Pod): boolean {
  return (pod.metadata.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet');
}

/**
 * A mirror (static) pod: owned by its Node (upstream `IsOwnedByNode`) or annotated
 * {@link AnnotationConfigMirror} (kubelet's `IsMirrorPod`; a mirror pod has both once kubelet set its owner).
 */
export function isOwnedByNode(pod: Pod): boolean {
  return (
    (pod.metadata.ownerReferences ?? []).some((o) => o.kind === 'Node') ||
    pod.metadata.annotations?.[AnnotationConfigMirror] !== undefined
  );
}

/**
 * A bound pod that must move when its node goes away: active, not owned by a DaemonSet (it is recreated on
 * each node) and not a mirror pod. Upstream `IsReschedulable`, except that upstream also counts a terminating
 * StatefulSet pod (its replacement is created only once it is gone); that exception is not modelled here.
 */
export function isReschedulable(pod: Pod): boolean {
  return isActive(pod) && !isOwnedByDaemonSet(pod) && !isOwnedByNode(pod);
}
