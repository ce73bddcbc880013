/**
 * Status conditions with a root `Ready` condition, after awslabs/operatorpkg `status.ConditionSet` as used by
 * upstream Karpenter v1 (NodeClaim: Launched, Registered, Initialized; NodePool: ValidationSucceeded,
 * NodeClassReady). Rules:
 * - missing dependents and the root start `Unknown` (reason `AwaitingReconciliation`);
 * - `lastTransitionTime` (from the injected clock) changes only when `status` changes (metav1 convention);
 * - root = `False` if any dependent is False (the most recent one's reason/message), else `Unknown` if any is
 *   Unknown, else `True` (reason `Ready`).
 * Conditions are kept sorted by type, like upstream.
 */
import type { Condition } from '../../apis/karpenter.ts';
import type { Clock } from '../../kube/clock.ts';

/** The root condition type. */
export const ConditionReady = 'Ready';
/** Reason of a condition nobody has reconciled yet (operatorpkg). */
export const ReasonAwaitingReconciliation = 'AwaitingReconciliation';

/** Anything with `status.conditions` (NodeClaim, NodePool, NodeClasses). */
export interface HasConditions {
  status?: { conditions?: Condition[] } | Record<string, unknown>;
  metadata?: { generation?: number };
}

/** RFC 3339 without milliseconds, as metav1.Time serialises. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Mutable view of an object's conditions; every setter edits `obj.status.conditions` in place. */
export class ConditionSet {
  constructor(
    private readonly obj: HasConditions,
    private readonly dependents: readonly string[],
    private readonly clock: Clock,
  ) {
    for (const t of [...dependents, ConditionReady]) {
      if (!this.get(t)) {
        this.write({
          type: t,
          status: 'Unknown',
          reason: ReasonAwaitingReconciliation,
          message: 'object is awaiting reconciliation',
        });
      }
    }
  }

  /** All conditions (live array). */
  list(): Condition[] {
    this.obj.status ??= {};
    const st = this.obj.status as { conditions?: Condition[] };
    st.conditions ??= [];
    return st.conditions;
  }

  /** The condition of `type`, if present. */
  get(type: string): Condition | undefined {
    return this.list().find((c) => c.type === type);
  }

  /** True when condition `type` has status True. */
  isTrue(type: string): boolean {
    return this.get(type)?.status === 'True';
  }

  /** Sets `type` True (reason defaults to the type name, as upstream shows it) and recomputes the root. */
  setTrue(type: string, reason = type, message = ''): void {
    this.write({ type, status: 'True', reason, message });
    this.recompute(type);
  }

  /** Sets `type` False and recomputes the root. */
  setFalse(type: string, reason: string, message: string): void {
    this.write({ type, status: 'False', reason, message });
    this.recompute(type);
  }

  /** Sets `type` Unknown and recomputes the root. */
  setUnknown(type: string, reason: string, message: string): void {
    this.write({ type, status: 'Unknown', reason, message });
    this.recompute(type);
  }

  /** Removes a non-dependent condition (e.g. `InstanceTerminating`). */
  clear(type: string): void {
    const list = this.list();
    const i = list.findIndex((c) => c.type === type);
    if (i >= 0 && type !== ConditionReady && !this.dependents.includes(type)) list.splice(i, 1);
  }

  private write(c: Omit<Condition, 'lastTransitionTime'>): void {
    const list = this.list();
    const i = list.findIndex((x) => x.type === c.type);
    const old = i >= 0 ? list[i] : undefined;
    const gen = this.obj.metadata?.generation;
    const next: Condition = {
      type: c.type,
      status: c.status,
      reason: c.reason ?? '',
      message: c.message ?? '',
      lastTransitionTime:
        old && old.status === c.status && old.lastTransitionTime
          ? old.lastTransitionTime
          : rfc3339(this.clock.now()),
      ...(gen !== undefined ? { observedGeneration: gen } : {}),
    };
    if (old) list[i] = next;
    else list.push(next);
    list.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  }

  private recompute(changed: string): void {
    if (changed === ConditionReady || !this.dependents.includes(changed)) return;
    const deps = this.dependents
      .map((t) => this.get(t))
      .filter((c): c is Condition => c !== undefined)
      .sort((a, b) => Date.parse(b.lastTransitionTime ?? '') - Date.parse(a.lastTransitionTime ?? ''));
    const bad = deps.find((c) => c.status === 'False') ?? deps.find((c) => c.status === 'Unknown');
    if (bad)
      this.write({
        type: ConditionReady,
        status: bad.status,
        reason: bad.reason ?? '',
        message: bad.message ?? '',
      });
    else this.write({ type: ConditionReady, status: 'True', reason: ConditionReady, message: '' });
  }
}
