/**
 * NodePool static-drift hash (`karpenter.sh/nodepool-hash`) and its version (`karpenter.sh/nodepool-hash-version`).
 * Hashed, as upstream `NodePool.Hash()` (kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`, hashstructure with
 * SlicesAsSets, IgnoreZeroValue): `spec.template` metadata labels and annotations, taints, startupTaints,
 * nodeClassRef, terminationGracePeriod and expireAfter. NOT hashed: requirements (requirement drift is checked
 * separately), disruption, limits, weight. Taint order does not matter; empty values equal absent ones.
 * The value is our own (decimal of the first 64 bits of a SHA-256 over canonical JSON), not upstream's number.
 */
import { createHash } from 'node:crypto';
import type { Taint } from '../../apis/core.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion, LabelNodePool } from '../../apis/labels.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';

/** Current hash version; bump when the hashed fields or their defaults change (upstream `NodePoolHashVersion`). */
export const NodePoolHashVersion = 'v3';

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

/**
 * Hash step (upstream `pkg/controllers/nodepool/hash`): when the NodePool's hash version differs from
 * {@link NodePoolHashVersion}, re-stamp its NodeClaims (version always; hash only when they carry no `Drifted`
 * condition, so drifted ones stay drifted); then annotate the NodePool with the current hash and version.
 * Returns the NodeClaim names updated. Throws on API errors other than NotFound.
 */
export async function reconcileHash(client: KubeClient, nodePool: NodePool): Promise<string[]> {
  const name = nodePool.metadata.name;
  const hash = nodePoolHash(nodePool);
  const updated: string[] = [];
  if (nodePool.metadata.annotations?.[AnnotationNodePoolHashVersion] !== NodePoolHashVersion) {
    const claims = (await client.list('NodeClaim', { labelSelector: { [LabelNodePool]: name } })).items;
    for (const nc of claims as NodeClaim[]) {
      if (nc.metadata.annotations?.[AnnotationNodePoolHashVersion] === NodePoolHashVersion) continue;
      const drifted = (nc.status?.conditions ?? []).some((c) => c.type === 'Drifted');
      const annotations: Record<string, string> = { [AnnotationNodePoolHashVersion]: NodePoolHashVersion };
      if (!drifted) annotations[AnnotationNodePoolHash] = hash;
      try {
        await client.patch(
          'NodeClaim',
          nc.metadata.name as string,
          undefined,
          { metadata: { annotations } },
          { type: 'merge' },
        );
        updated.push(nc.metadata.name as string);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
  if (!hashIsCurrent(nodePool)) {
    await client.patch(
      'NodePool',
      name,
      undefined,
      {
        metadata: {
          annotations: {
            [AnnotationNodePoolHash]: hash,
            [AnnotationNodePoolHashVersion]: NodePoolHashVersion,
          },
        },
      },
      { type: 'merge' },
    );
  }
  return updated;
}
