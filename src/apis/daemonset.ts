/**
 * Tolerations the Kubernetes DaemonSet controller adds to every daemon pod (kubernetes
 * `pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations`, 1.32): not-ready and unreachable `NoExecute`;
 * disk-, memory-, pid-pressure and unschedulable `NoSchedule`; network-unavailable `NoSchedule` for
 * `hostNetwork` pods. Used by the DaemonSet stand-in (`sim/workloads/daemonset.ts`) and by the simulator's
 * "would this DaemonSet run on that Node" (`simulate/match.ts`).
 */
import type { Toleration } from './core.ts';

/** The tolerations every daemon pod gets; `hostNetwork` adds network-unavailable. A fresh array. */
export function daemonPodTolerations(hostNetwork: boolean): Toleration[] {
  const t: Toleration[] = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (hostNetwork)
    t.push({ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' });
  return t;
}
