/**
 * Taints and tolerations, as kube-scheduler's TaintToleration plugin and upstream Karpenter
 * `pkg/scheduling/taints.go`.
 */
import type { Taint, Toleration } from '../apis/core.ts';
import { TaintUnregistered } from '../apis/labels.ts';

/** Options for {@link tolerates}. */
export interface TolerateOptions {
  /**
   * When true, `PreferNoSchedule` taints must be tolerated too (Karpenter treats them as a preference that is
   * relaxed last, upstream `Preferences.toleratePreferNoScheduleTaints`). Default false: kube-scheduler ignores them.
   */
  preferNoSchedule?: boolean;
}

/**
 * True when toleration `t` tolerates taint `taint` (core/v1 `Toleration.ToleratesTaint`): empty effect
 * matches every effect; empty key with `Exists` matches every key; `Exists` ignores the value; `Equal`
 * (the default operator) compares values (empty equals empty).
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  const op = t.operator ?? 'Equal';
  if (op === 'Exists') return true;
  if (!t.key && op === 'Equal') return false;
  return (t.value ?? '') === (taint.value ?? '');
}

/** Taints a pod never needs to tolerate: `karpenter.sh/unregistered` is removed when the node registers. */
export function isIgnoredTaint(taint: Taint): boolean {
  return taint.key === TaintUnregistered.key;
}

/** The effects kube-scheduler's TaintToleration filter enforces: `NoSchedule` and `NoExecute`. */
export const HardTaintEffects: ReadonlySet<string> = new Set(['NoSchedule', 'NoExecute']);

/**
 * The first taint of `taints` whose effect is in `effects` (default {@link HardTaintEffects}) that no toleration
 * of `tolerations` tolerates, or `undefined` (kube-scheduler `TolerationsTolerateTaintsWithFilter`). Every
 * taint counts as given: callers drop the ones they consider transient first (see `predicates.ts`).
 */
export function firstUntoleratedTaint(
  tolerations: readonly Toleration[] | undefined,
  taints: readonly Taint[] | undefined,
  effects: ReadonlySet<string> = HardTaintEffects,
): Taint | undefined {
  if (!taints) return undefined;
  for (const taint of taints) {
    if (!effects.has(taint.effect)) continue;
    if (!tolerations?.some((t) => toleratesTaint(t, taint))) return taint;
  }
  return undefined;
}

/** NoSchedule, NoExecute and PreferNoSchedule: the effects Karpenter's scheduler asks pods to tolerate. */
export const WITH_PREFER: ReadonlySet<string> = new Set(['NoSchedule', 'NoExecute', 'PreferNoSchedule']);

/**
 * Returns `undefined` when `tolerations` tolerate every `NoSchedule`/`NoExecute` taint in `taints`
 * (and `PreferNoSchedule` when `opts.preferNoSchedule`), else a message naming the first untolerated taint.
 * `karpenter.sh/unregistered` is ignored. Startup taints must not be passed here (they need no toleration).
 */
export function untoleratedTaint(
  tolerations: readonly Toleration[] | undefined,
  taints: readonly Taint[] | undefined,
  opts: TolerateOptions = {},
): string | undefined {
  if (!taints) return undefined;
  const effects = opts.preferNoSchedule ? WITH_PREFER : HardTaintEffects;
  for (const taint of taints) {
    if (isIgnoredTaint(taint) || !effects.has(taint.effect)) continue;
    if (!tolerations?.some((t) => toleratesTaint(t, taint)))
      return `did not tolerate taint ${formatTaint(taint)}`;
  }
  return undefined;
}

/** True when every relevant taint is tolerated (see {@link untoleratedTaint}). */
export function tolerates(
  tolerations: readonly Toleration[] | undefined,
  taints: readonly Taint[] | undefined,
  opts: TolerateOptions = {},
): boolean {
  return untoleratedTaint(tolerations, taints, opts) === undefined;
}

/** `key=value:Effect` (or `key:Effect`), as kubectl prints taints. */
export function formatTaint(t: Taint): string {
  return t.value ? `${t.key}=${t.value}:${t.effect}` : `${t.key}:${t.effect}`;
}
