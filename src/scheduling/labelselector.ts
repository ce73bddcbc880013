/**
 * Label selector matching (metav1.LabelSelector), as `k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelectorAsSelector`.
 */
import type { LabelSelector } from '../apis/core.ts';

/**
 * True when `labels` match `selector`. An empty selector (`{}`) matches everything; an undefined selector
 * matches nothing (as pod affinity terms and topology spread constraints treat a nil selector).
 */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const v = labels[e.key];
    switch (e.operator) {
      case 'In':
        if (v === undefined || !(e.values ?? []).includes(v)) return false;
        break;
      case 'NotIn':
        if (v !== undefined && (e.values ?? []).includes(v)) return false;
        break;
      case 'Exists':
        if (v === undefined) return false;
        break;
      case 'DoesNotExist':
        if (v !== undefined) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** A canonical string for a selector (cache/group keys). */
export function selectorKey(selector: LabelSelector | undefined): string {
  if (!selector) return 'nil';
  const ml = Object.entries(selector.matchLabels ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const me = (selector.matchExpressions ?? [])
    .map((e) => `${e.key} ${e.operator} ${[...(e.values ?? [])].sort().join(',')}`)
    .sort();
  return JSON.stringify([ml, me]);
}
