/**
 * Stand-in for Cluster API's MachinePool controller (cluster-api `exp/internal/controllers/machinepool_controller*.go`,
 * v1.14) for MachinePools whose infrastructure is a KarpenterMachinePool, so the CAPI loop runs in the embedded
 * management cluster:
 * - owner reference MachinePool → KarpenterMachinePool and the `cluster.x-k8s.io/cluster-name` label on it;
 * - `status.initialization.infrastructureProvisioned` from the KMP's `status.ready` (v1.14.2 reads only
 *   `status.ready`); while it is false nothing else is copied ("Infrastructure provider is not yet ready");
 * - `spec.providerIDList` copied from the KMP and `status.replicas` from its `status.replicas`, except when the list
 *   is empty and `status.replicas` is not zero ("Retrieved empty spec.providerIDList from infrastructure provider but
 *   status.replicas is not zero": skipped for that pass);
 * - `reconcileNodeRefs` returns early while `spec.providerIDList` is empty and `spec.replicas` (webhook default 1)
 *   is not zero: `status.nodeRefs` then keeps whatever it listed (real CAPI's stale node refs);
 * - v1beta2 status without Machines: `readyReplicas = availableReplicas = status.replicas`;
 * - `status.phase`: `Running` when `spec.replicas` equals the ready replicas and the node refs; otherwise
 *   `Scaling` for a pool annotated `cluster.x-k8s.io/replicas-managed-by: external-autoscaler`, else
 *   `ScalingUp`/`ScalingDown`; `Provisioned` while the infrastructure is not ready;
 * - node refs: every workload Node whose provider ID is in the list gets CAPI's annotations
 *   (`cluster.x-k8s.io/cluster-name`, `-namespace`, `owner-kind: MachinePool`, `owner-name`) and loses the
 *   `node.cluster.x-k8s.io/uninitialized` taint; `status.nodeRefs` follows;
 * - retired nodes: a Node listed in `status.nodeRefs` whose provider ID left `providerIDList` is deleted (what makes
 *   capenter's "an ID leaves only when its node is gone" rule matter).
 * `staleTaintWrites: true` reproduces cluster-api#11401: the taint list written back comes from the Node as first
 * seen (still carrying `karpenter.sh/unregistered`), so registration's removal is undone.
 * Not simulated: Machines (a KMP sets no `infrastructureMachineKind`), conditions. Real CAPI findings:
 * shared/tools/realcapi/FINDINGS.md.
 */
import {
  AnnotationReplicasManagedBy,
  type KarpenterMachinePool,
  type MachinePool,
  NodeAnnotations,
  ReplicasManagedByExternalAutoscaler,
  refersToKMP,
  TaintUninitializedKey,
} from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { SharedInformers } from '../../kube/informer.ts';

/** Options of {@link CAPIMachinePoolStandIn}. */
export interface CAPIMachinePoolOptions {
  /** Management-cluster client and informers. */
  client: KubeClient;
  informers: SharedInformers;
  clock: Clock;
  /** The workload cluster's client for `namespace/clusterName` (from its kubeconfig Secret). */
  workload: (namespace: string, clusterName: string) => Promise<KubeClient>;
  /** Seconds between passes (default 1). */
  periodSeconds?: number;
  /** Reproduce cluster-api#11401 (stale taint list written back); default false. */
  staleTaintWrites?: boolean;
  /** Remove the uninitialized taint (default true; false simulates a CAPI that never does, cluster-api#9858). */
  removeUninitializedTaint?: boolean;
  onError?: (err: unknown, where: string) => void;
}

/** The MachinePool controller stand-in; see the module comment. */
export class CAPIMachinePoolStandIn {
  private readonly ac = new AbortController();
  private loop: Promise<void> | undefined;
  /** First-seen taint lists per node (for `staleTaintWrites`). */
  private readonly firstSeenTaints = new Map<string, Taint[]>();
  /** Passes run (diagnostics). */
  passes = 0;

  constructor(private readonly opts: CAPIMachinePoolOptions) {
    opts.informers.informerFor('MachinePool');
    opts.informers.informerFor('KarpenterMachinePool');
  }

  /** Starts the loop (informers must be started by the owner). */
  start(): void {
    this.loop ??= (async () => {
      while (!this.ac.signal.aborted) {
        try {
          await this.pass();
        } catch (err) {
          this.opts.onError?.(err, 'capi machinepool');
        }
        await this.opts.clock.sleep((this.opts.periodSeconds ?? 1) * 1000, this.ac.signal).catch(() => {});
      }
    })();
  }

  async stop(): Promise<void> {
    this.ac.abort();
    await this.loop;
  }

  /** One pass over every MachinePool backed by a KarpenterMachinePool. */
  async pass(): Promise<void> {
    this.passes++;
    const mps = this.opts.informers.informerFor('MachinePool').cache.list() as MachinePool[];
    await Promise.all(
      mps.map((mp) =>
        this.reconcile(mp).catch((err) => this.opts.onError?.(err, `MachinePool ${mp.metadata.name}`)),
      ),
    );
  }

  private async reconcile(mp: MachinePool): Promise<void> {
    const ref = mp.spec?.template?.spec?.infrastructureRef;
    const ns = mp.metadata.namespace ?? 'default';
    if (!ref || !refersToKMP(ref, ref.name) || mp.metadata.deletionTimestamp) return;
    const kmp = this.opts.informers.informerFor('KarpenterMachinePool').cache.getByName(ref.name, ns) as
      | KarpenterMachinePool
      | undefined;
    if (!kmp) return;
    const clusterName = mp.spec?.clusterName ?? '';
    const c = this.opts.client;
    if (!kmp.metadata.ownerReferences?.some((o) => o.kind === 'MachinePool' && o.name === mp.metadata.name))
      await this.adopt(mp, kmp);
    const infraReady = kmp.status?.ready === true;
    const ids = kmp.spec?.providerIDList ?? [];
    const kmpReplicas = kmp.status?.replicas ?? 0;
    const copy = infraReady && !(ids.length === 0 && kmpReplicas !== 0);
    if (copy && JSON.stringify(mp.spec?.providerIDList ?? []) !== JSON.stringify(ids))
      await c.patch(
        'MachinePool',
        mp.metadata.name as string,
        ns,
        { spec: { providerIDList: ids } },
        { type: 'merge' },
      );
    const cur = (mp.status ?? {}) as Record<string, unknown> & { nodeRefs?: Array<{ name: string }> };
    const specReplicas = mp.spec?.replicas ?? 1;
    const listed = copy ? ids : (mp.spec?.providerIDList ?? []);
    let refs = cur.nodeRefs ?? [];
    if (infraReady && !(listed.length === 0 && specReplicas !== 0)) {
      const synced = await this.syncNodeRefs(mp, new Set(listed), clusterName);
      if (synced) refs = synced;
    }
    const replicas = copy ? kmpReplicas : ((cur.replicas as number | undefined) ?? 0);
    const external =
      mp.metadata.annotations?.[AnnotationReplicasManagedBy] === ReplicasManagedByExternalAutoscaler;
    const phase = !infraReady
      ? 'Provisioned'
      : specReplicas === replicas && refs.length === replicas
        ? 'Running'
        : external
          ? 'Scaling'
          : replicas < specReplicas
            ? 'ScalingUp'
            : 'ScalingDown';
    const status = {
      replicas,
      readyReplicas: replicas,
      availableReplicas: replicas,
      nodeRefs: refs,
      phase,
      initialization: {
        bootstrapDataSecretCreated: !!mp.spec?.template?.spec?.bootstrap?.dataSecretName,
        infrastructureProvisioned: infraReady,
      },
    };
    if (Object.entries(status).some(([k, v]) => JSON.stringify(cur[k]) !== JSON.stringify(v)))
      await c.patchStatus('MachinePool', mp.metadata.name as string, ns, { status }, { type: 'merge' });
  }

  /**
   * `reconcileNodeRefs`: syncs the workload Nodes whose provider ID is in `want` (annotations, uninitialized taint),
   * deletes retired Nodes (in `status.nodeRefs`, no longer listed), and returns the new node refs sorted by name;
   * undefined when the workload cluster cannot be reached.
   */
  private async syncNodeRefs(
    mp: MachinePool,
    want: ReadonlySet<string>,
    clusterName: string,
  ): Promise<Array<{ apiVersion: string; kind: string; name: string; uid?: string }> | undefined> {
    const ns = mp.metadata.namespace ?? 'default';
    let wl: KubeClient;
    try {
      wl = await this.opts.workload(ns, clusterName);
    } catch {
      return undefined;
    }
    const nodes = (await wl.list('Node')).items as Node[];
    const refs: Array<{ apiVersion: string; kind: string; name: string; uid?: string }> = [];
    for (const node of nodes) {
      const id = node.spec?.providerID ?? '';
      const name = node.metadata.name as string;
      if (!this.firstSeenTaints.has(name))
        this.firstSeenTaints.set(name, structuredClone(node.spec?.taints ?? []));
      if (!want.has(id)) continue;
      refs.push({
        apiVersion: 'v1',
        kind: 'Node',
        name,
        ...(node.metadata.uid ? { uid: node.metadata.uid } : {}),
      });
      await this.syncNode(wl, node, mp);
    }
    // Retired nodes: listed before, no longer in providerIDList.
    const prevRefs = ((mp.status as { nodeRefs?: Array<{ name: string }> } | undefined)?.nodeRefs ?? []).map(
      (r) => r.name,
    );
    for (const name of prevRefs) {
      const node = nodes.find((n) => n.metadata.name === name);
      if (node && !want.has(node.spec?.providerID ?? '')) await wl.tryDelete('Node', name);
    }
    return refs.sort((x, y) => x.name.localeCompare(y.name));
  }

  /**
   * Makes `mp` the controller owner of `kmp` (appended to its owner references, `blockOwnerDeletion`) and labels
   * it with the cluster name, as CAPI's MachinePool controller does for its infrastructure object.
   */
  private async adopt(mp: MachinePool, kmp: KarpenterMachinePool): Promise<void> {
    const ns = mp.metadata.namespace ?? 'default';
    const clusterName = mp.spec?.clusterName ?? '';
    const c = this.opts.client;
    await c.patch(
      'KarpenterMachinePool',
      kmp.metadata.name as string,
      ns,
      {
        metadata: {
          labels: { [NodeAnnotations.clusterName]: clusterName },
          ownerReferences: [
            ...(kmp.metadata.ownerReferences ?? []),
            {
              apiVersion: mp.apiVersion,
              kind: 'MachinePool',
              name: mp.metadata.name as string,
              uid: mp.metadata.uid as string,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
      },
      { type: 'merge' },
    );
  }

  /**
   * Writes the MachinePool's node annotations (cluster name and namespace, owner kind and name) on a Node of
   * `mp`, and removes its `node.cluster.x-k8s.io/uninitialized` taint (unless `removeUninitializedTaint` is
   * false), in one merge patch; with `staleTaintWrites`, the taints written are based on those first seen and
   * no resourceVersion is sent (cluster-api#11401). Conflicts and a Node gone are ignored.
   */
  private async syncNode(wl: KubeClient, node: Node, mp: MachinePool): Promise<void> {
    const ns = mp.metadata.namespace ?? 'default';
    const clusterName = mp.spec?.clusterName ?? '';
    const name = node.metadata.name as string;
    const a = node.metadata.annotations ?? {};
    const annotations = {
      [NodeAnnotations.clusterName]: clusterName,
      [NodeAnnotations.clusterNamespace]: ns,
      [NodeAnnotations.ownerKind]: 'MachinePool',
      [NodeAnnotations.ownerName]: mp.metadata.name as string,
    };
    const needAnn = Object.entries(annotations).some(([k, v]) => a[k] !== v);
    const taints = node.spec?.taints ?? [];
    const hasUninit = taints.some((t) => t.key === TaintUninitializedKey);
    const removeTaint = (this.opts.removeUninitializedTaint ?? true) && hasUninit;
    if (!needAnn && !removeTaint) return;
    const base = this.opts.staleTaintWrites ? (this.firstSeenTaints.get(name) ?? taints) : taints;
    const newTaints = removeTaint ? base.filter((t) => t.key !== TaintUninitializedKey) : undefined;
    try {
      await wl.patch(
        'Node',
        name,
        undefined,
        {
          metadata: {
            annotations,
            ...(this.opts.staleTaintWrites ? {} : { resourceVersion: node.metadata.resourceVersion }),
          },
          ...(newTaints ? { spec: { taints: newTaints } } : {}),
        },
        { type: 'merge' },
      );
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }
}
