/**
 * Object helpers shared by the controllers: finalizer lists, taint matching and merging, and the
 * `karpenter.sh/nodepool` / `karpenter.sh/capacity-type` label getters (upstream `pkg/utils`).
 */
import type { KubeObject, Taint } from '../../apis/core.ts';
import { LabelNodePool } from '../../apis/labels.ts';

/** True when two taints have the same key and effect (core/v1 `Taint.MatchTaint`). */
export function matchTaint(a: Pick<Taint, 'key' | 'effect'>, b: Pick<Taint, 'key' | 'effect'>): boolean {
  return a.key === b.key && a.effect === b.effect;
}

/** Adds `extra` taints not already present (by key+effect) to `taints` (upstream `Taints.Merge`). */
export function mergeTaints(taints: readonly Taint[], extra: readonly Taint[] | undefined): Taint[] {
  const out = [...taints];
  for (const t of extra ?? []) if (!out.some((x) => matchTaint(x, t))) out.push({ ...t });
  return out;
}

/** `karpenter.sh/nodepool` label of an object, or `""`. */
export function nodePoolOf(obj: KubeObject): string {
  return obj.metadata?.labels?.[LabelNodePool] ?? '';
}

/** `karpenter.sh/capacity-type` label of an object, or `""`. */
export function capacityTypeOf(obj: KubeObject): string {
  return obj.metadata?.labels?.['karpenter.sh/capacity-type'] ?? '';
}

/** Adds `f` to a finalizer list copy (no duplicates). */
export function withFinalizer(list: readonly string[] | undefined, f: string): string[] {
  const out = [...(list ?? [])];
  if (!out.includes(f)) out.push(f);
  return out;
}

/** Removes `f` from a finalizer list copy. */
export function withoutFinalizer(list: readonly string[] | undefined, f: string): string[] {
  return (list ?? []).filter((x) => x !== f);
}
