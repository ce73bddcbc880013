/**
 * PodDisruptionBudgets as disruption sees them (upstream kubernetes-sigs/karpenter `pkg/utils/pdb/pdb.go`): a pod
 * blocks its node's voluntary disruption when a PDB selecting it allows 0 disruptions, or when more than one PDB
 * selects it (the Eviction API refuses such pods). With `unhealthyPodEvictionPolicy: AlwaysAllow`, unhealthy
 * (not Ready) pods never block.
 *
 * `disruptionsAllowed` comes from `status.disruptionsAllowed` when the PDB has a status; otherwise it is computed
 * like the Kubernetes disruption controller: healthy = Running and Ready pods selected by the PDB in its
 * namespace; expected = all selected pods; desired healthy from `minAvailable` (int, or percent of expected
 * rounded up) or expected − `maxUnavailable` (percent rounded up); allowed = max(0, healthy − desired).
 */
import type { Pod, PodDisruptionBudget } from '../apis/core.ts';
import { isTerminal } from '../apis/pod.ts';
import { selectorMatches } from '../scheduling/labelselector.ts';

/** True for a pod that is Running with condition Ready=True (Kubernetes `IsPodReady` for a running pod). */
export function podHealthy(pod: Pod): boolean {
  if (pod.status?.phase !== 'Running') return false;
  const conds = (pod.status as { conditions?: Array<{ type: string; status: string }> }).conditions ?? [];
  return conds.some((c) => c.type === 'Ready' && c.status === 'True');
}

function scaled(v: number | string, total: number): number {
  if (typeof v === 'number') return v;
  const s = v.trim();
  if (s.endsWith('%')) {
    const pct = Number(s.slice(0, -1));
    return Number.isFinite(pct) ? Math.max(0, Math.ceil((pct * total) / 100 - 1e-9)) : 0;
  }
  const n = Number(s);
  return Number.isFinite(n) ? n : 0;
}

/** One PDB with its allowed disruptions resolved. */
export interface ResolvedPDB {
  key: string;
  pdb: PodDisruptionBudget;
  disruptionsAllowed: number;
  alwaysAllowUnhealthy: boolean;
}

/** Pods selected by `pdb` (same namespace, selector matches; a nil selector selects nothing). */
export function pdbSelects(pdb: PodDisruptionBudget, pod: Pod): boolean {
  return (
    (pdb.metadata.namespace ?? 'default') === (pod.metadata.namespace ?? 'default') &&
    selectorMatches(pdb.spec?.selector, pod.metadata.labels ?? {})
  );
}

/** Computes `disruptionsAllowed` of `pdb` from the pods (see the module doc). */
export function computeDisruptionsAllowed(pdb: PodDisruptionBudget, pods: readonly Pod[]): number {
  let expected = 0;
  let healthy = 0;
  for (const p of pods) {
    if (isTerminal(p)) continue;
    if (!pdbSelects(pdb, p)) continue;
    expected++;
    if (podHealthy(p) && !p.metadata.deletionTimestamp) healthy++;
  }
  let desired = 0;
  if (pdb.spec?.maxUnavailable !== undefined)
    desired = Math.max(0, expected - scaled(pdb.spec.maxUnavailable, expected));
  else if (pdb.spec?.minAvailable !== undefined) desired = scaled(pdb.spec.minAvailable, expected);
  return Math.max(0, healthy - desired);
}

/** Resolves every PDB's allowed disruptions (status first, else computed from `allPods`). */
export function resolvePDBs(pdbs: readonly PodDisruptionBudget[], allPods: readonly Pod[]): ResolvedPDB[] {
  return pdbs.map((pdb) => {
    const st = pdb.status?.disruptionsAllowed;
    return {
      key: `${pdb.metadata.namespace ?? 'default'}/${pdb.metadata.name ?? ''}`,
      pdb,
      disruptionsAllowed: typeof st === 'number' ? st : computeDisruptionsAllowed(pdb, allPods),
      alwaysAllowUnhealthy: pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow',
    };
  });
}

/** Why evicting `pod` is refused by PDBs, or undefined when PDBs allow it. */
export function pdbBlocks(pod: Pod, pdbs: readonly ResolvedPDB[]): string | undefined {
  const matching: ResolvedPDB[] = [];
  for (const r of pdbs) {
    if (!pdbSelects(r.pdb, pod)) continue;
    if (r.alwaysAllowUnhealthy && !podHealthy(pod)) continue;
    matching.push(r);
  }
  const name = `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? ''}`;
  if (matching.length > 1)
    return `pod ${name} is selected by more than one PodDisruptionBudget (${matching.map((m) => m.key).join(', ')}); the Eviction API refuses it`;
  const m = matching[0];
  if (m && m.disruptionsAllowed <= 0)
    return `PodDisruptionBudget ${m.key} allows 0 disruptions (pod ${name})`;
  return undefined;
}
