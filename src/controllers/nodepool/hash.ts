/**
 * NodePool hash controller step (upstream `pkg/controllers/nodepool/hash`): stamps `karpenter.sh/nodepool-hash`
 * and `karpenter.sh/nodepool-hash-version` on NodePools and their NodeClaims. The pure hash itself lives in
 * `apis/hash.ts`; it is re-exported here so existing imports keep working.
 */

import { hashIsCurrent, NodePoolHashVersion, nodePoolHash } from '../../apis/hash.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion, LabelNodePool } from '../../apis/labels.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';

export { hashIsCurrent, NodePoolHashVersion, nodePoolHash } from '../../apis/hash.ts';

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
