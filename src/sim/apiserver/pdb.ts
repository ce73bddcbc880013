/**
 * PodDisruptionBudget status (the disruption controller, pkg/controller/disruption) and the eviction
 * decision (pkg/registry/core/pod/storage/eviction.go), simplified: expected pods are the pods the PDB
 * selects in its namespace (not the controllers' scale).
 */
import { ApiError } from '../../apis/builtin/errors.ts';
import { asArr, asObj, asStr, type Json, type JsonObject, type StoredObj } from '../../apis/builtin/types.ts';
import { matchLabelSelectorObject } from './selectors.ts';

/** How long an evicted pod counts as disrupted when it is not deleted (DeletionTimeout, 2 minutes). */
const DISRUPTED_TIMEOUT_MS = 2 * 60 * 1000;

/** Pod has condition Ready=True (podutil.IsPodReady). */
export function isPodReady(pod: StoredObj): boolean {
  const conds = asArr(asObj(pod.status)?.conditions) ?? [];
  return conds.some((c) => asObj(c)?.type === 'Ready' && asObj(c)?.status === 'True');
}

function scaled(v: Json | undefined, total: number): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const m = /^(\d+)%$/.exec(v);
    if (m) return Math.ceil((Number(m[1]) * total) / 100);
    if (/^\d+$/.test(v)) return Number(v);
  }
  return undefined;
}

/** Pods of `pods` selected by the PDB. */
export function podsOfPdb(pdb: StoredObj, pods: StoredObj[]): StoredObj[] {
  const sel = asObj(pdb.spec)?.selector;
  return pods.filter((p) => matchLabelSelectorObject(sel, p.metadata.labels));
}

/**
 * New PDB status: expectedPods, desiredHealthy (minAvailable, or expected − maxUnavailable; percentages
 * rounded up), currentHealthy (ready, not terminating, not recently evicted), disruptionsAllowed,
 * observedGeneration, disruptedPods and the DisruptionAllowed condition.
 */
export function recomputePdbStatus(pdb: StoredObj, allPods: StoredObj[], now: number): JsonObject {
  const spec = asObj(pdb.spec) ?? {};
  const old = asObj(pdb.status) ?? {};
  const pods = podsOfPdb(pdb, allPods);
  const byName = new Map(pods.map((p) => [p.metadata.name, p]));
  const disrupted: JsonObject = {};
  for (const [name, ts] of Object.entries(asObj(old.disruptedPods) ?? {})) {
    const p = byName.get(name);
    if (!p || p.metadata.deletionTimestamp) continue;
    const t = Date.parse(String(ts));
    if (Number.isFinite(t) && t + DISRUPTED_TIMEOUT_MS < now) continue;
    disrupted[name] = ts;
  }
  const expected = pods.length;
  let desired = 0;
  if (spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
    desired = Math.max(0, expected - (scaled(spec.maxUnavailable, expected) ?? 0));
  } else if (spec.minAvailable !== undefined && spec.minAvailable !== null) {
    desired = scaled(spec.minAvailable, expected) ?? 0;
  }
  let healthy = 0;
  for (const p of pods) {
    if (p.metadata.deletionTimestamp) continue;
    if (disrupted[p.metadata.name] !== undefined) continue;
    const phase = asStr(asObj(p.status)?.phase);
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    if (isPodReady(p)) healthy++;
  }
  let allowed = healthy - desired;
  if (expected <= 0 || allowed <= 0) allowed = 0;
  const prevCond = (asArr(old.conditions) ?? [])
    .map((c) => asObj(c) ?? {})
    .find((c) => c.type === 'DisruptionAllowed');
  const condStatus = allowed > 0 ? 'True' : 'False';
  const cond: JsonObject = {
    type: 'DisruptionAllowed',
    status: condStatus,
    reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
    message: '',
    observedGeneration: pdb.metadata.generation ?? 1,
    lastTransitionTime:
      prevCond && prevCond.status === condStatus && typeof prevCond.lastTransitionTime === 'string'
        ? prevCond.lastTransitionTime
        : new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z'),
  };
  const status: JsonObject = {
    observedGeneration: pdb.metadata.generation ?? 1,
    disruptionsAllowed: allowed,
    currentHealthy: healthy,
    desiredHealthy: desired,
    expectedPods: expected,
    conditions: [cond],
  };
  if (Object.keys(disrupted).length > 0) status.disruptedPods = disrupted;
  return status;
}

/** Outcome of an eviction request before the pod is deleted. */
export type EvictionDecision =
  | { kind: 'allow' }
  | { kind: 'decrement'; pdb: StoredObj }
  | { kind: 'deny'; error: ApiError };

const VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget.";

/**
 * Decide an eviction: terminal/pending/terminating pods ignore PDBs; more than one matching PDB is a
 * 500; a pod that is not ready may go when the budget is currently met (IfHealthyBudget) or the policy
 * is AlwaysAllow; otherwise disruptionsAllowed must be positive (429 TooManyRequests when zero).
 */
export function evictionDecision(pod: StoredObj, pdbs: StoredObj[]): EvictionDecision {
  const phase = asStr(asObj(pod.status)?.phase);
  if (phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || pod.metadata.deletionTimestamp)
    return { kind: 'allow' };
  const matching = pdbs.filter((p) => matchLabelSelectorObject(asObj(p.spec)?.selector, pod.metadata.labels));
  if (matching.length === 0) return { kind: 'allow' };
  if (matching.length > 1)
    return {
      kind: 'deny',
      error: new ApiError(
        500,
        'InternalError',
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      ),
    };
  const pdb = matching[0]!;
  const st = asObj(pdb.status) ?? {};
  const allowed = typeof st.disruptionsAllowed === 'number' ? st.disruptionsAllowed : 0;
  const current = typeof st.currentHealthy === 'number' ? st.currentHealthy : 0;
  const desired = typeof st.desiredHealthy === 'number' ? st.desiredHealthy : 0;
  if (!isPodReady(pod)) {
    const policy = asStr(asObj(pdb.spec)?.unhealthyPodEvictionPolicy) ?? 'IfHealthyBudget';
    if (policy === 'AlwaysAllow' || (current >= desired && desired > 0)) return { kind: 'allow' };
  }
  const tooMany = (message: string): EvictionDecision => ({
    kind: 'deny',
    error: new ApiError(
      429,
      'TooManyRequests',
      VIOLATION,
      // the real handler passes retryAfterSeconds 0: no Retry-After header (client-go would auto-retry)
      { causes: [{ reason: 'DisruptionBudget', message }] },
    ),
  });
  if ((st.observedGeneration ?? 0) !== (pdb.metadata.generation ?? 1))
    return tooMany(`The disruption budget ${pdb.metadata.name} is still being processed by the server.`);
  if (allowed <= 0)
    return tooMany(
      `The disruption budget ${pdb.metadata.name} needs ${desired} healthy pods and has ${current} currently`,
    );
  return { kind: 'decrement', pdb };
}
