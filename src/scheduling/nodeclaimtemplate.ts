/**
 * The NodeClaim template of a NodePool as requirements (upstream `nodeclaimtemplate.go`
 * `NewNodeClaimTemplate`): `spec.template.spec.requirements` ∩ every template label as `In [value]` ∩
 * `karpenter.sh/nodepool In [name]`.
 */
import type { Taint } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelNodePool } from '../apis/labels.ts';
import { Requirement, Requirements } from './requirements.ts';

/**
 * Requirements every NodeClaim of `np` carries.
 * @throws RequirementError naming the key when a NodePool requirement is malformed.
 */
export function nodeClaimTemplateRequirements(np: NodePool): Requirements {
  const reqs = Requirements.fromNodeSelector(np.spec.template.spec.requirements ?? []);
  for (const [k, v] of Object.entries(np.spec.template.metadata?.labels ?? {}))
    reqs.add(Requirement.in(k, [v]));
  reqs.add(Requirement.in(LabelNodePool, [np.metadata.name]));
  return reqs;
}

/** The taints pods must tolerate on a NodeClaim of `np` (`spec.template.spec.taints`; startup taints excluded). */
export function nodePoolTaints(np: NodePool): Taint[] {
  return np.spec.template.spec.taints ?? [];
}
