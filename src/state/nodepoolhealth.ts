/**
 * NodePool registration health, after kubernetes-sigs/karpenter `pkg/state/nodepoolhealth/tracker.go`: per NodePool
 * UID, a ring buffer of the last {@link RegistrationHealthBufferSize} (4) launch/registration outcomes
 * (`true` = a NodeClaim registered, `false` = one hit the launch or registration timeout). The status is
 * `unknown` while the buffer is empty, `unhealthy` when at least {@link RegistrationHealthThresholdFalse} (50%) of
 * the buffer's capacity are failures, else `healthy`. The lifecycle steps record outcomes (and set the NodePool
 * condition `NodeRegistrationHealthy`), the NodePool controller resets the buffer when the NodePool or its
 * NodeClass changes. In memory only: after a restart the buffer is re-seeded from the condition.
 */

/** Outcomes remembered per NodePool (upstream `BufferSize`). */
export const RegistrationHealthBufferSize = 4;
/** Share of failures (of the buffer's capacity) that makes a NodePool unhealthy (upstream `ThresholdFalse`). */
export const RegistrationHealthThresholdFalse = 0.5;

/** The health of one NodePool's registrations. */
export type RegistrationHealthStatus = 'unknown' | 'healthy' | 'unhealthy';

/** The status of a buffer of outcomes (oldest first). Pure. */
export function registrationHealthOf(outcomes: readonly boolean[]): RegistrationHealthStatus {
  if (outcomes.length === 0) return 'unknown';
  const failures = outcomes.filter((o) => !o).length;
  return failures / RegistrationHealthBufferSize >= RegistrationHealthThresholdFalse
    ? 'unhealthy'
    : 'healthy';
}

/** Per-NodePool (by UID) registration outcome buffers; one instance per process, shared by the controllers. */
export class NodePoolHealth {
  private readonly buffers = new Map<string, boolean[]>();

  private buffer(uid: string): boolean[] {
    let b = this.buffers.get(uid);
    if (!b) {
      b = [];
      this.buffers.set(uid, b);
    }
    return b;
  }

  /** The NodePool's status now. */
  status(uid: string): RegistrationHealthStatus {
    return registrationHealthOf(this.buffer(uid));
  }

  /** Records one outcome (`true` registered, `false` timed out), dropping the oldest beyond the buffer size. */
  update(uid: string, success: boolean): void {
    const b = this.buffer(uid);
    b.push(success);
    if (b.length > RegistrationHealthBufferSize) b.splice(0, b.length - RegistrationHealthBufferSize);
  }

  /** The status the NodePool would have after recording `success`, without recording it (upstream `DryRun`). */
  dryRun(uid: string, success: boolean): RegistrationHealthStatus {
    const b = [...this.buffer(uid), success];
    return registrationHealthOf(b.slice(-RegistrationHealthBufferSize));
  }

  /**
   * Seeds the buffer so the status reads `status` (upstream `SetStatus`): `unknown` empties it, `healthy` holds one
   * success, `unhealthy` holds as many failures as the threshold needs (2).
   */
  setStatus(uid: string, status: RegistrationHealthStatus): void {
    const b = this.buffer(uid);
    b.length = 0;
    if (status === 'healthy') b.push(true);
    if (status === 'unhealthy')
      for (let i = 0; i < RegistrationHealthBufferSize * RegistrationHealthThresholdFalse; i++) b.push(false);
  }
}
