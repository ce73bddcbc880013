/**
 * Soft constraints and their relaxation, as upstream Karpenter
 * `pkg/controllers/provisioning/scheduling/preferences.go`.
 *
 * Karpenter first treats every preference as a requirement (the heaviest preferred node-affinity term, all
 * preferred pod (anti-)affinity terms, ScheduleAnyway spread constraints, PreferNoSchedule taints) and, when a
 * pod cannot be placed, relaxes ONE thing at a time in this order and tries again:
 * 1. remove the first required node-affinity term when more than one remains (terms are ORed);
 * 2. remove the heaviest preferred pod-affinity term;
 * 3. remove the heaviest preferred pod-anti-affinity term;
 * 4. remove the heaviest preferred node-affinity term;
 * 5. remove one `ScheduleAnyway` topology spread constraint;
 * 6. tolerate `PreferNoSchedule` taints (only when some NodePool has such a taint, as upstream).
 */
import type {
  Pod,
  PodAffinityTerm,
  Toleration,
  TopologySpreadConstraint,
  WeightedPodAffinityTerm,
} from '../apis/core.ts';
import { type NodeAffinityState, nodeAffinityState } from './nodeaffinity.ts';

/** The relaxable scheduling constraints of one pod (a working copy; the pod object is never modified). */
export interface PodConstraints {
  nodeAffinity: NodeAffinityState;
  podAffinityRequired: PodAffinityTerm[];
  /** Heaviest first. */
  podAffinityPreferred: WeightedPodAffinityTerm[];
  podAntiAffinityRequired: PodAffinityTerm[];
  /** Heaviest first. */
  podAntiAffinityPreferred: WeightedPodAffinityTerm[];
  topologySpread: TopologySpreadConstraint[];
  tolerations: Toleration[];
  /** True once relaxation step 6 ran: PreferNoSchedule taints no longer need a toleration. */
  toleratePreferNoSchedule: boolean;
}

const byWeightDesc = (a: WeightedPodAffinityTerm, b: WeightedPodAffinityTerm) => b.weight - a.weight;

/** The full (unrelaxed) constraints of a pod. */
export function podConstraints(pod: Pod): PodConstraints {
  const a = pod.spec.affinity;
  return {
    nodeAffinity: nodeAffinityState(pod),
    podAffinityRequired: [...(a?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [])],
    podAffinityPreferred: [...(a?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [])].sort(
      byWeightDesc,
    ),
    podAntiAffinityRequired: [...(a?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [])],
    podAntiAffinityPreferred: [
      ...(a?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []),
    ].sort(byWeightDesc),
    topologySpread: [...(pod.spec.topologySpreadConstraints ?? [])],
    tolerations: [...(pod.spec.tolerations ?? [])],
    toleratePreferNoSchedule: false,
  };
}

/** A copy of `c` that can be relaxed without touching `c` (arrays copied; terms themselves are never mutated). */
export function copyConstraints(c: PodConstraints): PodConstraints {
  return {
    nodeAffinity: {
      nodeSelector: c.nodeAffinity.nodeSelector,
      requiredTerms: [...c.nodeAffinity.requiredTerms],
      preferredTerms: [...c.nodeAffinity.preferredTerms],
    },
    podAffinityRequired: [...c.podAffinityRequired],
    podAffinityPreferred: [...c.podAffinityPreferred],
    podAntiAffinityRequired: [...c.podAntiAffinityRequired],
    podAntiAffinityPreferred: [...c.podAntiAffinityPreferred],
    topologySpread: [...c.topologySpread],
    tolerations: [...c.tolerations],
    toleratePreferNoSchedule: c.toleratePreferNoSchedule,
  };
}

/**
 * Relaxes one preference in upstream's order (see the module doc). Mutates `c`. Returns a description of
 * what was removed (for `--explain`), or `undefined` when nothing is left to relax.
 * @param allowPreferNoSchedule whether step 6 is available (some NodePool carries a PreferNoSchedule taint).
 */
export function relax(c: PodConstraints, allowPreferNoSchedule = true): string | undefined {
  if (c.nodeAffinity.requiredTerms.length > 1) {
    c.nodeAffinity.requiredTerms.shift();
    return 'removed required node affinity term [0] (trying the next ORed term)';
  }
  if (c.podAffinityPreferred.length > 0) {
    const t = c.podAffinityPreferred.shift()!;
    return `removed preferred pod affinity term (weight ${t.weight}, topologyKey ${t.podAffinityTerm.topologyKey})`;
  }
  if (c.podAntiAffinityPreferred.length > 0) {
    const t = c.podAntiAffinityPreferred.shift()!;
    return `removed preferred pod anti-affinity term (weight ${t.weight}, topologyKey ${t.podAffinityTerm.topologyKey})`;
  }
  if (c.nodeAffinity.preferredTerms.length > 0) {
    const t = c.nodeAffinity.preferredTerms.shift()!;
    return `removed preferred node affinity term (weight ${t.weight})`;
  }
  const i = c.topologySpread.findIndex((t) => t.whenUnsatisfiable === 'ScheduleAnyway');
  if (i >= 0) {
    const [t] = c.topologySpread.splice(i, 1);
    return `removed ScheduleAnyway topology spread constraint on ${t!.topologyKey}`;
  }
  if (allowPreferNoSchedule && !c.toleratePreferNoSchedule) {
    c.toleratePreferNoSchedule = true;
    c.tolerations.push({ operator: 'Exists', effect: 'PreferNoSchedule' });
    return 'added toleration for PreferNoSchedule taints';
  }
  return undefined;
}
