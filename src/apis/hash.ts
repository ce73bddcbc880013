/**
 * NodePool static-drift hash (`karpenter.sh/nodepool-hash`) and its version (`karpenter.sh/nodepool-hash-version`).
 * Hashed, as upstream `NodePool.Hash()` (kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`, hashstructure with
 * SlicesAsSets, IgnoreZeroValue): `spec.template` metadata labels and annotations, taints, startupTaints,
 * nodeClassRef, terminationGracePeriod and expireAfter. NOT hashed: requirements (requirement drift is checked
 * separately), disruption, limits, weight. Taint order does not matter; empty values equal absent ones.
 * The value is our own (decimal of the first 64 bits of a SHA-256 over canonical JSON), not upstream's number.
 * Pure: no I/O (node:crypto hashing only), so the pure decision cores may import it. The controller that stamps
 * the annotations is `controllers/nodepool/hash.ts`.
 */
import { createHash } from 'node:crypto';
import type { Taint } from './core.ts';
import type { NodePool } from './karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion } from './labels.ts';

/**
 * Current hash version; bump when the hashed fields or their defaults change (upstream `NodePoolHashVersion`).
 * capenter's own string, never upstream's (`v3`): the value above is not upstream's number, so a NodeClaim that
 * upstream Karpenter stamped `v3` must not be compared with it. After a switch from upstream, the hash controller
 * (`controllers/nodepool/hash.ts`) sees the other version and re-stamps the NodeClaims instead of drifting them,
 * as upstream does when its own hash version changes.
 */
export const NodePoolHashVersion = 'capenter-v1';

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) {
    const items = v.map(canonical).filter((x) => x !== undefined);
    return items.length === 0 ? undefined : items;
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const c = canonical((v as Record<string, unknown>)[k]);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  if (v === '' || v === 0 || v === false || v === null) return undefined;
  return v;
}

function taintSet(ts: Taint[] | undefined): string[] | undefined {
  return ts?.map((t) => JSON.stringify(canonical({ key: t.key, value: t.value, effect: t.effect }))).sort();
}

/** The NodePool's template hash, a decimal string. Pure. */
export function nodePoolHash(nodePool: NodePool): string {
  const t = nodePool.spec.template;
  const hashed = canonical({
    metadata: { labels: t.metadata?.labels, annotations: t.metadata?.annotations },
    spec: {
      taints: taintSet(t.spec.taints),
      startupTaints: taintSet(t.spec.startupTaints),
      nodeClassRef: t.spec.nodeClassRef,
      terminationGracePeriod: t.spec.terminationGracePeriod,
      expireAfter: t.spec.expireAfter,
    },
  });
  const digest = createHash('sha256')
    .update(JSON.stringify(hashed ?? {}))
    .digest();
  return digest.readBigUInt64BE(0).toString(10);
}

/** True when the NodePool's hash annotations are current. */
export function hashIsCurrent(nodePool: NodePool): boolean {
  const a = nodePool.metadata.annotations ?? {};
  return (
    a[AnnotationNodePoolHash] === nodePoolHash(nodePool) &&
    a[AnnotationNodePoolHashVersion] === NodePoolHashVersion
  );
}
