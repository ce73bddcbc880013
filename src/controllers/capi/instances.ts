/**
 * The cloud instances of one KarpenterMachinePool, as its deletion sees them: it removes its finalizer only when no
 * instance of the pool is left, and terminates what remains when the Cluster itself is being deleted. Pool names
 * repeat across clusters, so instances are found by cluster *and* pool (on AWS: the tags
 * `sigs.k8s.io/cluster-api-provider-aws/cluster/<cluster>` and `karpenter.sh/nodepool`).
 * {@link cloudProviderInstances} adapts any capenter CloudProvider (kwok in the embedded setup; one provider per
 * workload cluster, so the cluster is implied).
 */
import { LabelNodePool } from '../../apis/labels.ts';
import type { CloudProvider } from '../../cloudprovider/types.ts';

/** Which pool: the KMP's namespace, the cluster, the NodePool name and the region. */
export interface PoolQuery {
  namespace: string;
  clusterName: string;
  nodePool: string;
  region: string;
}

/** The instances of a pool (see the module comment). */
export interface PoolInstances {
  /** Provider IDs of the pool's instances that are not terminated. */
  list(q: PoolQuery): Promise<string[]>;
  /** Terminates the given instances (idempotent). */
  terminate(q: PoolQuery, providerIDs: readonly string[]): Promise<void>;
}

/**
 * {@link PoolInstances} over capenter CloudProviders: `providerFor(namespace, clusterName)` returns the provider
 * that launches the workload cluster's nodes (`undefined`: none known, nothing listed).
 */
export function cloudProviderInstances(
  providerFor: (namespace: string, clusterName: string) => CloudProvider | undefined,
): PoolInstances {
  const claims = async (q: PoolQuery) => {
    const p = providerFor(q.namespace, q.clusterName);
    if (!p) return [];
    return (await p.list()).filter((nc) => nc.metadata.labels?.[LabelNodePool] === q.nodePool);
  };
  return {
    async list(q) {
      return (await claims(q)).map((nc) => nc.status?.providerID ?? '').filter((x) => x);
    },
    async terminate(q, ids) {
      const p = providerFor(q.namespace, q.clusterName);
      if (!p) return;
      const want = new Set(ids);
      for (const nc of await claims(q)) if (want.has(nc.status?.providerID ?? '')) await p.delete(nc);
    },
  };
}
