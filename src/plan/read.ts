/**
 * Reads the live cluster for `capenter plan`: one LIST per kind, all in parallel, nothing else (no GET of single
 * objects, no watch, no write), so a ServiceAccount bound to `get`/`list` suffices. A kind whose API is not
 * served (a CRD not installed, e.g. EC2NodeClass on a kwok cluster) reads as none.
 */
import type { KubeObject } from '../apis/core.ts';
import type { KubeClient } from '../kube/client.ts';
import { isNotFound, KubeApiError } from '../kube/errors.ts';
import { Resources, type ResourceType } from '../kube/resources.ts';

/** What {@link readCluster} needs of a client (a `KubeClient`, or a recording wrapper in tests). */
export type ClusterReader = Pick<KubeClient, 'list' | 'server'>;

/**
 * The kinds `plan` reads: pods and nodes (the state), Karpenter's objects (NodePools, NodeClaims, NodeClasses),
 * DaemonSets (daemon overhead on replacements), PDBs (drain blocking), volumes (zonal PVs pin pods).
 */
export const PLAN_KINDS: readonly ResourceType[] = [
  Resources.Node,
  Resources.Pod,
  Resources.NodePool,
  Resources.NodeClaim,
  Resources.EC2NodeClass,
  Resources.KWOKNodeClass,
  Resources.DaemonSet,
  Resources.PodDisruptionBudget,
  Resources.PersistentVolumeClaim,
  Resources.PersistentVolume,
  Resources.StorageClass,
  Resources.Namespace,
] as ResourceType[];

/** Tries of one LIST answered 429 or 503 (a CRD just installed answers 429 "storage is (re)initializing"). */
export const LIST_TRIES = 5;

/** Options of {@link readCluster}: how to wait between tries (tests pass a fake). */
export interface ReadOptions {
  /** Waits `ms` milliseconds; default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Lists every kind of {@link PLAN_KINDS} (items carry `apiVersion` and `kind`). A LIST answered 429 or 503 is
 * tried again after the server's `retryAfterSeconds` (default 1 s), up to {@link LIST_TRIES} times.
 * @throws the client's connection error or `KubeApiError` (other than 404 "kind not served"); the caller names
 *   the server.
 */
export async function readCluster(client: ClusterReader, opts: ReadOptions = {}): Promise<KubeObject[]> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const lists = await Promise.all(
    PLAN_KINDS.map(async (rt) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return (await client.list(rt)).items as unknown as KubeObject[];
        } catch (err) {
          if (isNotFound(err)) return [];
          const busy = err instanceof KubeApiError && (err.code === 429 || err.code === 503);
          if (!busy || attempt >= LIST_TRIES) throw err;
          await sleep((err.retryAfterSeconds ?? 1) * 1000);
        }
      }
    }),
  );
  return lists.flat();
}
