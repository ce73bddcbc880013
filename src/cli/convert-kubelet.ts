/**
 * Kubelet placement for `capenter convert`: before v1, kubelet settings lived on the v1alpha5 Provisioner
 * (`spec.kubeletConfiguration`) or the v1beta1 NodePool (`spec.template.spec.kubelet`); v1 keeps them on the
 * EC2NodeClass (`spec.kubelet`). When pools sharing one class carry different kubelet settings, one class cannot
 * hold them all, so the class is split: one EC2NodeClass per distinct kubelet, the pools re-pointed. This mirrors
 * the "Kubelet Configuration" step of Karpenter's v1 migration guide (karpenter.sh/docs/upgrading/v1-migration:
 * "manually add more EC2NodeClasses and point their NodePools to them"). Pure.
 */
import type { KubeObject } from '../apis/core.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Annotation upstream's v1beta1→v1 NodePool conversion webhook writes with the v1beta1 kubelet as JSON
 * (`KubeletCompatibilityAnnotationKey`, kubernetes-sigs/karpenter pkg/apis/v1/labels.go, used by
 * nodepool_conversion.go). Karpenter v1.0 prefers it over the EC2NodeClass's kubelet; v1.1+ refuses to start
 * while any NodePool carries it.
 */
export const KubeletCompatibilityAnnotation = 'compatibility.karpenter.sh/v1beta1-kubelet-conversion';

/** One EC2NodeClass to emit for an input class: its name and the kubelet of the pools pointing to it. */
export interface ClassVariant {
  /** Name of the emitted EC2NodeClass (the input class's name for the first variant). */
  name: string;
  /** Kubelet settings (v1 `spec.kubelet`), or undefined when these pools set none. */
  kubelet: Obj | undefined;
  /** `Kind/name` of the pools (Provisioner or NodePool) using this variant, in input order. */
  pools: string[];
}

/** Result of {@link planKubeletSplit}. */
export interface KubeletPlan {
  /** Input class name → variants (only classes some pool references). */
  classes: Map<string, ClassVariant[]>;
  /** Pool `Kind/name` → name of the EC2NodeClass it must point to. */
  poolClass: Map<string, string>;
}

/** Canonical JSON (object keys sorted) so `{a,b}` and `{b,a}` compare equal. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObj(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** A pool's class reference and kubelet, or undefined when `o` is not a pre-v1 pool. */
function poolKubelet(o: KubeObject): { className: string; kubelet: Obj | undefined } | undefined {
  const spec = (o as Obj).spec;
  if (!isObj(spec)) return undefined;
  if (o.apiVersion === 'karpenter.sh/v1alpha5' && o.kind === 'Provisioner') {
    if (!isObj(spec.providerRef) || typeof spec.providerRef.name !== 'string') return undefined;
    let kubelet: Obj | undefined;
    if (isObj(spec.kubeletConfiguration)) {
      const { containerRuntime: _cr, ...rest } = spec.kubeletConfiguration;
      kubelet = rest;
    }
    return { className: spec.providerRef.name, kubelet };
  }
  if (o.apiVersion === 'karpenter.sh/v1beta1' && o.kind === 'NodePool') {
    const ts = isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec : undefined;
    if (!ts || !isObj(ts.nodeClassRef) || typeof ts.nodeClassRef.name !== 'string') return undefined;
    return {
      className: ts.nodeClassRef.name,
      kubelet: isObj(ts.kubelet) ? structuredClone(ts.kubelet) : undefined,
    };
  }
  return undefined;
}

/**
 * Groups the pre-v1 pools among `objs` by (class, kubelet): the first distinct kubelet of a class keeps the
 * class's name, every further one gets `<class>-<first pool of the group>` (with `-2`, `-3`… appended when
 * that name is taken by an input object or another variant). Pools without kubelet form a group of their own.
 */
export function planKubeletSplit(objs: readonly KubeObject[]): KubeletPlan {
  const taken = new Set(objs.map((o) => o.metadata?.name ?? ''));
  const classes = new Map<string, ClassVariant[]>();
  const keys = new Map<string, string[]>();
  const poolClass = new Map<string, string>();
  for (const o of objs) {
    const p = poolKubelet(o);
    if (!p) continue;
    const pool = `${o.kind}/${o.metadata?.name ?? '?'}`;
    const variants = classes.get(p.className) ?? [];
    const vkeys = keys.get(p.className) ?? [];
    const key = canonical(p.kubelet ?? null);
    let i = vkeys.indexOf(key);
    if (i < 0) {
      let name = p.className;
      if (variants.length > 0) {
        const base = `${p.className}-${o.metadata?.name ?? 'pool'}`;
        name = base;
        for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
        taken.add(name);
      }
      variants.push({ name, kubelet: p.kubelet, pools: [] });
      vkeys.push(key);
      i = variants.length - 1;
    }
    variants[i]?.pools.push(pool);
    poolClass.set(pool, variants[i]?.name ?? p.className);
    classes.set(p.className, variants);
    keys.set(p.className, vkeys);
  }
  return { classes, poolClass };
}
