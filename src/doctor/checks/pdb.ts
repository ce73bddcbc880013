/**
 * PodDisruptionBudgets that can never allow an eviction, and the nodes they keep alive.
 *
 * Kubernetes' disruption controller (`pkg/controller/disruption`) allows `currentHealthy − desiredHealthy`
 * evictions, where for `minAvailable` desiredHealthy = the value (a percent of the expected pods, rounded up)
 * and for `maxUnavailable` desiredHealthy = expected − the value (a percent rounded up). Expected pods are the
 * scale of the pods' controllers (Deployment via ReplicaSet, StatefulSet, ReplicaSet), else the selected pods.
 * When desiredHealthy ≥ expected, no eviction is ever allowed: Karpenter's drain (termination, consolidation,
 * drift, expiration) waits for such pods forever, unless the node's NodeClaim has a `terminationGracePeriod`.
 */
import type { IntOrString, Pod, PodDisruptionBudget } from '../../apis/core.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { isTerminal } from '../../apis/pod.ts';
import { selectorMatches } from '../../scheduling/labelselector.ts';
import { type Check, type DoctorSnapshot, type Finding, ref } from '../types.ts';

/** `value` of an int-or-percent against `total`, percent rounded up (`intstr.GetScaledValueFromIntOrPercent`). */
export function scaledValue(v: IntOrString, total: number): number | undefined {
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v.trim());
  if (m) return Math.ceil((Number(m[1]) * total) / 100);
  const n = Number(v);
  return Number.isInteger(n) ? n : undefined;
}

/** Expected pod count of a PDB: the summed scale of the selected pods' controllers, else the pod count. */
function expectedPods(s: DoctorSnapshot, pods: Pod[]): { expected: number; owners: string[] } {
  const scale = new Map<string, number>();
  let unowned = 0;
  for (const p of pods) {
    const owner = p.metadata.ownerReferences?.find((o) => o.controller);
    const ns = p.metadata.namespace ?? 'default';
    if (owner?.kind === 'ReplicaSet') {
      const rs = s.replicaSets.find((r) => r.metadata.namespace === ns && r.metadata.name === owner.name);
      const dOwner = rs?.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'Deployment');
      const d = dOwner
        ? s.deployments.find((x) => x.metadata.namespace === ns && x.metadata.name === dOwner.name)
        : undefined;
      if (d) scale.set(ref(d), d.spec?.replicas ?? 1);
      else if (rs) scale.set(ref(rs), rs.spec?.replicas ?? 1);
      else unowned++;
    } else if (owner?.kind === 'StatefulSet') {
      const st = s.statefulSets.find((x) => x.metadata.namespace === ns && x.metadata.name === owner.name);
      if (st) scale.set(ref(st), st.spec?.replicas ?? 1);
      else unowned++;
    } else unowned++;
  }
  let expected = unowned;
  for (const v of scale.values()) expected += v;
  return {
    expected,
    owners: [...scale.entries()].map(([k, v]) => `${k} (${v} replica${v === 1 ? '' : 's'})`),
  };
}

/** Why the budget allows no eviction, or undefined when it can allow one. */
function blockingRule(pdb: PodDisruptionBudget, expected: number): string | undefined {
  if (expected === 0) return undefined;
  const { minAvailable, maxUnavailable } = pdb.spec ?? {};
  if (maxUnavailable !== undefined) {
    const v = scaledValue(maxUnavailable, expected);
    if (v !== undefined && v <= 0)
      return `maxUnavailable ${maxUnavailable} allows 0 of ${expected} pods to be unavailable`;
    return undefined;
  }
  if (minAvailable !== undefined) {
    const v = scaledValue(minAvailable, expected);
    if (v !== undefined && v >= expected)
      return `minAvailable ${minAvailable} requires ${v} of ${expected} expected pod${expected === 1 ? '' : 's'} available at all times`;
  }
  return undefined;
}

/** The `PDBBlocksEviction` check. */
export const pdbCheck: Check = (s) => {
  const out: Finding[] = [];
  for (const pdb of s.pdbs) {
    const ns = pdb.metadata.namespace ?? 'default';
    const selected = s.pods.filter(
      (p) =>
        (p.metadata.namespace ?? 'default') === ns &&
        !isTerminal(p) &&
        pdb.spec?.selector !== undefined &&
        selectorMatches(pdb.spec.selector, p.metadata.labels ?? {}),
    );
    const { expected, owners } = expectedPods(s, selected);
    const rule = blockingRule(pdb, expected);
    if (!rule) continue;
    // The capenter nodes that host the selected pods, and whether their drain ever ends.
    const nodeNames = [...new Set(selected.map((p) => p.spec.nodeName).filter((n): n is string => !!n))];
    const forever: string[] = [];
    const bounded: string[] = [];
    for (const name of nodeNames) {
      const node = s.nodes.find((n) => n.metadata.name === name);
      const pool = node?.metadata.labels?.[LabelNodePool];
      if (!node || !pool) continue;
      const claim = s.nodeClaims.find((c) => c.status?.nodeName === name);
      const np = s.nodePools.find((p) => p.metadata.name === pool);
      const tgp = claim?.spec.terminationGracePeriod ?? np?.spec.template.spec.terminationGracePeriod;
      (tgp ? bounded : forever).push(`Node ${name}`);
    }
    const error = forever.length > 0;
    const nodesText = error
      ? ` It keeps ${forever.length} node${forever.length === 1 ? '' : 's'} alive forever (no terminationGracePeriod): ${forever.join(', ')}.`
      : bounded.length > 0
        ? ` Draining ${bounded.join(', ')} waits for the NodePool's terminationGracePeriod.`
        : '';
    out.push({
      check: 'PDBBlocksEviction',
      severity: error ? 'error' : 'warning',
      objects: [
        ref({ ...pdb, kind: 'PodDisruptionBudget' }),
        ...owners.map((o) => o.replace(/ \(.*$/, '')),
        ...forever,
        ...bounded,
      ],
      message: `${rule}${owners.length ? ` (${owners.join(', ')})` : ''}: it can never allow an eviction.${nodesText}`,
      why: 'Karpenter drains nodes through the Eviction API; a budget that allows no eviction blocks consolidation, drift, expiration and node deletion, so the node and its cost stay until someone intervenes.',
      fix: `Allow at least one disruption: raise the workload's replicas above ${pdb.spec?.minAvailable ?? 'the budget'}, or use maxUnavailable: 1 (or a percent); if the pods must never be evicted, set spec.template.spec.terminationGracePeriod on the NodePool so drains end.`,
    });
  }
  return out;
};
