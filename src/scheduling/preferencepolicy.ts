/**
 * Upstream Karpenter's `--preference-policy` (`Respect`, the default, or `Ignore`), and the pod form the
 * scheduler uses to ignore preferences: with `Ignore`, preferred node affinity, preferred pod (anti-)affinity
 * and `ScheduleAnyway` topology spread are dropped and `PreferNoSchedule` taints are tolerated, as if the pods
 * had only their required terms (upstream `pkg/controllers/provisioning/scheduling` `PreferencePolicy`).
 *
 * Also the form consolidation uses to prove that preferences never cost money (see `disruption/context.ts`):
 * a candidate whose pods fit the remaining nodes once their preferences are ignored is deleted, since the real
 * kube-scheduler would place them there rather than leave them pending.
 *
 * Pure.
 */
import type { Pod } from '../apis/core.ts';
import type { PreferencePolicy, SchedulingInput, SchedulingResult } from './types.ts';

export type { PreferencePolicy } from './types.ts';

/** The values `--preference-policy` accepts. */
export const PreferencePolicies: readonly PreferencePolicy[] = ['Respect', 'Ignore'];

/** True when the pod has any preference (preferred affinity terms, ScheduleAnyway spread). */
export function hasPreferences(pod: Pod): boolean {
  const a = pod.spec?.affinity;
  return (
    (a?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (a?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (a?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (pod.spec?.topologySpreadConstraints ?? []).some((c) => c.whenUnsatisfiable === 'ScheduleAnyway')
  );
}

/** The pod with its preferences dropped and `PreferNoSchedule` tolerated (the same object when it has none). */
export function withoutPreferences(pod: Pod): Pod {
  const a = pod.spec?.affinity;
  const spec = { ...pod.spec };
  if (a) {
    const affinity = { ...a };
    if (a.nodeAffinity) {
      const { preferredDuringSchedulingIgnoredDuringExecution: _p, ...rest } = a.nodeAffinity;
      affinity.nodeAffinity = rest;
    }
    if (a.podAffinity) {
      const { preferredDuringSchedulingIgnoredDuringExecution: _p, ...rest } = a.podAffinity;
      affinity.podAffinity = rest;
    }
    if (a.podAntiAffinity) {
      const { preferredDuringSchedulingIgnoredDuringExecution: _p, ...rest } = a.podAntiAffinity;
      affinity.podAntiAffinity = rest;
    }
    spec.affinity = affinity;
  }
  if (spec.topologySpreadConstraints)
    spec.topologySpreadConstraints = spec.topologySpreadConstraints.filter(
      (c) => c.whenUnsatisfiable !== 'ScheduleAnyway',
    );
  spec.tolerations = [...(spec.tolerations ?? []), { operator: 'Exists', effect: 'PreferNoSchedule' }];
  return { ...pod, spec };
}

/** A run with preferences ignored, and how to map the result back to the caller's pods. */
export interface PreferenceRun {
  input: SchedulingInput;
  restore(result: SchedulingResult): SchedulingResult;
}

/**
 * With `input.preferencePolicy === 'Ignore'`, the input with {@link withoutPreferences} applied to every pending
 * pod that has preferences; `undefined` otherwise (nothing to do).
 */
export function withPreferencePolicy(input: SchedulingInput): PreferenceRun | undefined {
  if (input.preferencePolicy !== 'Ignore' || !input.pods.some(hasPreferences)) return undefined;
  const original = new Map<Pod, Pod>();
  const pods = input.pods.map((p) => {
    if (!hasPreferences(p)) return p;
    const q = withoutPreferences(p);
    original.set(q, p);
    return q;
  });
  const back = (p: Pod) => original.get(p) ?? p;
  return {
    input: { ...input, pods },
    restore: (result) => ({
      ...result,
      newNodeClaims: result.newNodeClaims.map((n) => ({ ...n, pods: n.pods.map(back) })),
      placements: result.placements.map((p) => ({ ...p, pod: back(p.pod) })),
      unschedulable: result.unschedulable.map((u) => ({ ...u, pod: back(u.pod) })),
    }),
  };
}
