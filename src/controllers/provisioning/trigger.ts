/**
 * Wakes the provisioner (upstream kubernetes-sigs/karpenter `pkg/controllers/provisioning/controller.go`, the
 * pod and node trigger controllers): cluster-state changes that may need new capacity open or extend the batch
 * window.
 * - a pod that is provisionable ({@link isProvisionable}) and not held by a nomination onto a NodeClaim that is
 *   not initialized yet ({@link Cluster.inFlightNominationFor}; keyed by pod UID, so one pod extends a window
 *   once, upstream's `Trigger(pod.UID)`);
 * - a Node or NodeClaim that becomes marked for deletion (its pods must move), a deleted NodeClaim (its
 *   nominated pods are pending again), a NodePool or NodeClass added or changed (pending pods may fit now);
 * - every `resyncSeconds` (default 10) while provisionable pods that no nomination holds exist (upstream
 *   requeues each provisionable pod every 10 s), so pods whose nomination ended are looked at again.
 * Every provisionable pod it sees is acknowledged in {@link Cluster.podScheduling} (upstream `AckPods`): the start
 * of `karpenter_pods_scheduling_decision_duration_seconds` and `..._provisioning_scheduling_undecided_time_seconds`.
 */
import type { Logger } from 'pino';
import type { Node, Pod } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { TaintDisrupted } from '../../apis/labels.ts';
import type { Clock } from '../../kube/clock.ts';
import type { Cluster, ClusterChange } from '../../state/cluster.ts';
import { isProvisionable, podKey } from '../../state/pods.ts';
import type { Controller } from '../runtime/index.ts';

/** What the trigger wakes: the {@link Provisioner} (or anything with `trigger(key?)`). */
export interface Triggerable {
  trigger(key?: string): void;
}

/** Constructor dependencies of {@link ProvisioningTrigger}. */
export interface ProvisioningTriggerDeps {
  cluster: Cluster;
  provisioner: Triggerable;
  clock: Clock;
  logger: Logger;
  /** Seconds between resync checks (default 10). */
  resyncSeconds?: number;
}

function deleting(obj: Node | NodeClaim | undefined): boolean {
  if (!obj) return false;
  if (obj.metadata.deletionTimestamp) return true;
  return ((obj as Node).spec?.taints ?? []).some(
    (t) => t.key === TaintDisrupted.key && t.effect === TaintDisrupted.effect,
  );
}

/**
 * Decides whether a state change should trigger provisioning; returns the dedupe key (pod UID or key) or
 * `''` for an un-keyed trigger, `undefined` for no trigger.
 */
export function triggerKeyFor(
  change: ClusterChange,
  cluster: Pick<Cluster, 'inFlightNominationFor'>,
): string | undefined {
  switch (change.kind) {
    case 'Pod': {
      if (change.type === 'delete') return undefined;
      const pod = change.object as Pod;
      if (!isProvisionable(pod) || cluster.inFlightNominationFor(pod)) return undefined;
      return pod.metadata.uid ?? podKey(pod);
    }
    case 'Node':
    case 'NodeClaim': {
      if (change.type === 'delete') return change.kind === 'NodeClaim' ? '' : undefined;
      const now = change.object as Node | NodeClaim;
      const before = change.old as Node | NodeClaim | undefined;
      return deleting(now) && !deleting(before) ? '' : undefined;
    }
    case 'NodePool':
    case 'NodeClass':
      return change.type === 'delete' ? undefined : '';
    default:
      return undefined;
  }
}

/** The trigger controller; see the module comment. */
export class ProvisioningTrigger implements Controller {
  readonly name = 'provisioner.trigger';
  private readonly deps: ProvisioningTriggerDeps;

  constructor(deps: ProvisioningTriggerDeps) {
    this.deps = deps;
  }

  async start(signal: AbortSignal): Promise<void> {
    const { cluster, provisioner, clock } = this.deps;
    const log = this.deps.logger.child({ controller: this.name });
    const off = cluster.onChange((c) => {
      // ACK a provisionable pod when first seen, so the time it waits on Karpenter is measured (upstream's pod
      // trigger `AckPods`)
      if (c.kind === 'Pod' && c.type !== 'delete' && isProvisionable(c.object as Pod))
        cluster.podScheduling.ack([podKey(c.object as Pod)], clock.now());
      const key = triggerKeyFor(c, cluster);
      if (key === undefined) return;
      provisioner.trigger(key === '' ? undefined : key);
    });
    try {
      const resyncMs = (this.deps.resyncSeconds ?? 10) * 1000;
      while (!signal.aborted) {
        await clock.sleep(resyncMs, signal);
        if (signal.aborted) break;
        // a count, not the pods: the loop's locals live through the next sleep, and a list would hold every
        // pending pod's version of now for 10 s
        let waiting = 0;
        for (const p of cluster.pendingPods()) {
          if (!isProvisionable(p)) continue;
          cluster.podScheduling.ack([podKey(p)], clock.now());
          if (!cluster.inFlightNominationFor(p)) waiting++;
        }
        if (waiting > 0) {
          log.debug({ pods: waiting }, 'resync: provisionable pods waiting');
          provisioner.trigger();
        }
      }
    } finally {
      off();
    }
  }
}
