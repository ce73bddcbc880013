/**
 * Node affinity of a pod as Karpenter requirements (upstream `pkg/scheduling/requirements.go`
 * `NewPodRequirements` / `NewStrictPodRequirements`): `nodeSelector` ∩ the FIRST required node selector term
 * (terms are ORed; the scheduler removes a failing first term and tries the next, see `preferences.ts`)
 * ∩, unless strict, the HEAVIEST preferred term (treated as required until relaxed).
 * `matchFields` (node name) constrains no new NodeClaim and is ignored here; matching a concrete node (with
 * `matchFields`) is `predicates.ts` `nodeMatchesNodeAffinity`.
 */
import type { NodeSelectorTerm, Pod, PreferredSchedulingTerm } from '../apis/core.ts';
import { Requirement, Requirements } from './requirements.ts';

/** The node-affinity part of a pod that the scheduler may relax (a working copy; never the pod itself). */
export interface NodeAffinityState {
  nodeSelector: Readonly<Record<string, string>>;
  /** Remaining required terms (ORed); the first is in force. */
  requiredTerms: NodeSelectorTerm[];
  /** Remaining preferred terms, heaviest first (stable for equal weights). */
  preferredTerms: PreferredSchedulingTerm[];
}

/** Extracts the relaxable node-affinity state of a pod (copies arrays, sorts preferred terms by weight desc). */
export function nodeAffinityState(pod: Pod): NodeAffinityState {
  const na = pod.spec.affinity?.nodeAffinity;
  const preferred = [...(na?.preferredDuringSchedulingIgnoredDuringExecution ?? [])];
  preferred.sort((a, b) => b.weight - a.weight);
  return {
    nodeSelector: pod.spec.nodeSelector ?? {},
    requiredTerms: [...(na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [])],
    preferredTerms: preferred,
  };
}

function termRequirements(term: NodeSelectorTerm | undefined): Requirement[] {
  return (term?.matchExpressions ?? []).map((e) => Requirement.from(e));
}

/**
 * The requirements a pod puts on its node: nodeSelector ∩ first required term (∩ heaviest preferred term
 * unless `strict`).
 * @throws RequirementError for a malformed expression.
 */
export function nodeAffinityRequirements(state: NodeAffinityState, strict = false): Requirements {
  const reqs = Requirements.fromLabels(state.nodeSelector);
  if (!strict && state.preferredTerms.length > 0)
    reqs.add(...termRequirements(state.preferredTerms[0]!.preference));
  if (state.requiredTerms.length > 0) reqs.add(...termRequirements(state.requiredTerms[0]));
  return reqs;
}

/** Each alternative (nodeSelector ∩ one required term) of a pod's required node affinity; one entry when none. */
export function requiredAlternatives(pod: Pod): Requirements[] {
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  const base = Requirements.fromLabels(pod.spec.nodeSelector);
  if (!terms || terms.length === 0) return [base];
  return terms.map((t) => base.clone().add(...termRequirements(t)));
}
