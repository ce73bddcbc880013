/**
 * Access to workload clusters from the management cluster, as CAPI controllers do: through the Secret
 * `<cluster>-kubeconfig` (key `value`, a kubeconfig YAML) in the Cluster's namespace. One client and one set of
 * informers (NodeClaims, Nodes) per workload cluster, rebuilt when the Secret changes; informer events are handed
 * to `onChange` with the NodePool name the object belongs to, so the KMP controller can requeue its pool.
 * Source: cluster-api `util/secret` (`KubeconfigSecretName`, key `value`).
 */
import type { Logger } from 'pino';
import type { KubeObject, Node } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { LabelNodePool } from '../../apis/labels.ts';
import { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { SharedInformers } from '../../kube/informer.ts';
import type { Secret } from '../../kube/types.ts';
import { errorMessage } from '../runtime/index.ts';

/** Name of CAPI's kubeconfig Secret for a cluster. */
export function kubeconfigSecretName(clusterName: string): string {
  return `${clusterName}-kubeconfig`;
}

/** Thrown when a workload cluster's kubeconfig Secret is missing or unusable (names the Secret, never its data). */
export class WorkloadKubeconfigError extends Error {
  readonly code = 'WorkloadKubeconfigUnavailable' as const;
}

/** A connected workload cluster. */
export interface WorkloadCluster {
  client: KubeClient;
  informers: SharedInformers;
  /** Key of the Secret version the client was built from. */
  secretVersion: string;
}

/** Options of {@link WorkloadClusters}. */
export interface WorkloadClustersOptions {
  /** Management-cluster client (reads the kubeconfig Secrets). */
  management: KubeClient;
  clock: Clock;
  logger: Logger;
  /** Called on NodeClaim/Node events of a workload cluster: `(namespace, clusterName, nodePoolName)`. */
  onChange?: (namespace: string, clusterName: string, nodePool: string) => void;
}

/** Workload-cluster clients keyed by `namespace/cluster`. */
export class WorkloadClusters {
  private readonly byKey = new Map<string, WorkloadCluster>();
  private readonly connecting = new Map<string, Promise<WorkloadCluster>>();

  constructor(private readonly opts: WorkloadClustersOptions) {}

  /**
   * The workload cluster of `namespace/clusterName`, connecting (live read of the kubeconfig Secret) on first use
   * and reconnecting when the Secret's resourceVersion changed.
   * @throws WorkloadKubeconfigError when the Secret is missing or has no `value`.
   */
  async get(namespace: string, clusterName: string): Promise<WorkloadCluster> {
    const key = `${namespace}/${clusterName}`;
    const secretName = kubeconfigSecretName(clusterName);
    const secret = (await this.opts.management.tryGet('Secret', secretName, namespace)) as Secret | undefined;
    if (!secret)
      throw new WorkloadKubeconfigError(
        `Secret ${namespace}/${secretName} not found; CAPI writes it once the control plane is up (key "value": a kubeconfig)`,
      );
    const version = secret.metadata.resourceVersion ?? '';
    const have = this.byKey.get(key);
    if (have && have.secretVersion === version) return have;
    const pending = this.connecting.get(key);
    if (pending) return pending;
    const p = this.connect(key, namespace, clusterName, secret, version);
    this.connecting.set(key, p);
    try {
      return await p;
    } finally {
      this.connecting.delete(key);
    }
  }

  private async connect(
    key: string,
    namespace: string,
    clusterName: string,
    secret: Secret,
    version: string,
  ): Promise<WorkloadCluster> {
    const raw = secret.data?.value;
    const yaml = raw ? Buffer.from(raw, 'base64').toString('utf8') : (secret.stringData?.value ?? '');
    if (!yaml.trim())
      throw new WorkloadKubeconfigError(
        `Secret ${namespace}/${secret.metadata.name} has no data.value (expected a kubeconfig)`,
      );
    let client: KubeClient;
    try {
      client = KubeClient.fromKubeconfig(yaml, { clock: this.opts.clock, userAgent: 'capenter-capi' });
    } catch (err) {
      throw new WorkloadKubeconfigError(
        `Secret ${namespace}/${secret.metadata.name} holds an unusable kubeconfig: ${errorMessage(err)}`,
      );
    }
    const informers = new SharedInformers(client, {
      clock: this.opts.clock,
      onError: (err, phase) =>
        this.opts.logger.debug({ cluster: key, phase, err: errorMessage(err) }, 'workload informer error'),
    });
    const notify = (o: KubeObject): void => {
      const np = o.metadata?.labels?.[LabelNodePool];
      if (np) this.opts.onChange?.(namespace, clusterName, np);
    };
    const handlers = { add: notify, update: (_: KubeObject, o: KubeObject) => notify(o), delete: notify };
    informers.informerFor('NodeClaim').on(handlers as never);
    informers.informerFor('Node').on(handlers as never);
    informers.start();
    try {
      await informers.waitForSync(30_000);
    } catch (err) {
      // not kept: the next reconcile connects afresh, so these informers would list and watch for nobody
      await informers.stop();
      client.close();
      throw err;
    }
    const old = this.byKey.get(key);
    const wc: WorkloadCluster = { client, informers, secretVersion: version };
    this.byKey.set(key, wc);
    if (old) void this.close(old);
    return wc;
  }

  /** NodeClaims of `nodePool` from the informer cache. */
  static nodeClaims(wc: WorkloadCluster, nodePool: string): NodeClaim[] {
    return (wc.informers.informerFor('NodeClaim').cache.list() as NodeClaim[]).filter(
      (n) => n.metadata.labels?.[LabelNodePool] === nodePool,
    );
  }

  /** Every Node from the informer cache. */
  static nodes(wc: WorkloadCluster): Node[] {
    return wc.informers.informerFor('Node').cache.list() as Node[];
  }

  private async close(wc: WorkloadCluster): Promise<void> {
    await wc.informers.stop();
    wc.client.close();
  }

  /** Stops every informer and closes every client. */
  async stop(): Promise<void> {
    const all = [...this.byKey.values()];
    this.byKey.clear();
    await Promise.all(all.map((w) => this.close(w)));
  }
}
