/**
 * When Karpenter first saw a pending pod, first decided about it and first thought it could schedule it — the
 * in-memory pod maps of upstream's cluster state (kubernetes-sigs/karpenter `pkg/controllers/state/cluster.go`:
 * `podAcks`, `podsSchedulingAttempted`, `podsSchedulableTimes`, with `AckPods`, `MarkPodSchedulingDecisions`,
 * `PodAckTime`, `PodSchedulingDecisionTime`, `PodSchedulingSuccessTime`, `ClearPodSchedulingMappings`). The pod
 * metrics controller reads them for `karpenter_pods_provisioning_*`; the provisioner observes the decision
 * latencies {@link PodSchedulingTimes.markDecisions} returns in `karpenter_pods_scheduling_decision_duration_seconds`
 * (upstream observes it inside cluster state; here state stays free of metrics). Keys are `namespace/name`; times
 * are cluster-clock ms.
 */

/** The three per-pod times; see the module doc. */
export class PodSchedulingTimes {
  private readonly acks = new Map<string, number>();
  private readonly attempted = new Map<string, number>();
  private readonly schedulable = new Map<string, number>();

  /** Records `now` as the first time each pod of `keys` was seen provisionable (kept if already set; upstream `AckPods`). */
  ack(keys: Iterable<string>, now: number): void {
    for (const k of keys) if (!this.acks.has(k)) this.acks.set(k, now);
  }

  /**
   * Records one scheduling simulation's decisions at `now` (upstream `MarkPodSchedulingDecisions`): `failed` pods
   * (no place, or rejected by validation) lose their schedulable time; `schedulable` pods (placed on a new
   * NodeClaim or an existing node; callers leave out pods already bound) get one if they had none. Returns, in
   * seconds, now − ack time of every acknowledged pod decided here for the first time (what upstream observes
   * in `karpenter_pods_scheduling_decision_duration_seconds`).
   */
  markDecisions(failed: Iterable<string>, schedulable: Iterable<string>, now: number): number[] {
    const firstDecisions: number[] = [];
    const decide = (k: string): void => {
      if (this.attempted.has(k)) return;
      this.attempted.set(k, now);
      const acked = this.acks.get(k);
      if (acked !== undefined) firstDecisions.push(Math.max(0, (now - acked) / 1000));
    };
    for (const k of failed) {
      this.schedulable.delete(k);
      decide(k);
    }
    for (const k of schedulable) {
      if (!this.schedulable.has(k)) this.schedulable.set(k, now);
      decide(k);
    }
    return firstDecisions;
  }

  /** When the pod was first seen provisionable (ms), `undefined` if never (upstream `PodAckTime`). */
  ackTime(key: string): number | undefined {
    return this.acks.get(key);
  }

  /** When a simulation first decided about the pod (ms), `undefined` if none did (upstream `PodSchedulingDecisionTime`). */
  decisionTime(key: string): number | undefined {
    return this.attempted.get(key);
  }

  /**
   * When a simulation first found the pod a place (ms), since its last failure; `undefined` if none did
   * (upstream `PodSchedulingSuccessTime`).
   */
  schedulableTime(key: string): number | undefined {
    return this.schedulable.get(key);
  }

  /** Forgets the pod (upstream `ClearPodSchedulingMappings`: on delete, and once it started or ended). */
  clear(key: string): void {
    this.acks.delete(key);
    this.attempted.delete(key);
    this.schedulable.delete(key);
  }

  /** Number of pods with any recorded time (for tests and leak checks). */
  get size(): number {
    return new Set([...this.acks.keys(), ...this.attempted.keys(), ...this.schedulable.keys()]).size;
  }
}
