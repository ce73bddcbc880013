/**
 * CAPI v1beta1-style conditions (`sigs.k8s.io/cluster-api/api/core/v1beta1.Condition`) as the KarpenterMachinePool
 * status carries them: `severity` only when `status` is False; `lastTransitionTime` changes only when the status
 * does. Pure.
 */
import type { CAPICondition } from '../../apis/capi.ts';

/** Severity of a False condition. */
export type Severity = 'Error' | 'Warning' | 'Info';

/**
 * Returns `conditions` with `type` set; keeps `lastTransitionTime` when the status is unchanged. `now` is an ISO
 * timestamp. Pure (the input is not mutated).
 */
export function setCondition(
  conditions: readonly CAPICondition[] | undefined,
  type: string,
  status: CAPICondition['status'],
  now: string,
  reason?: string,
  message?: string,
  severity: Severity = 'Warning',
): CAPICondition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === type);
  const prev = i >= 0 ? list[i] : undefined;
  const next: CAPICondition = {
    type,
    status,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
    ...(status === 'False' ? { severity } : {}),
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list.sort((a, b) =>
    a.type === 'Ready' ? -1 : b.type === 'Ready' ? 1 : a.type.localeCompare(b.type),
  );
}

/** The condition of `type`, if any. */
export function getCondition(
  conditions: readonly CAPICondition[] | undefined,
  type: string,
): CAPICondition | undefined {
  return conditions?.find((c) => c.type === type);
}
