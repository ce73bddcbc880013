/**
 * Cluster state: what the controllers know about nodes, NodeClaims, pods and NodePools, kept current by
 * informers and joined into {@link StateNode}s. Mirrors kubernetes-sigs/karpenter `pkg/controllers/state`
 * (`cluster.go`, `statenode.go`):
 * - a StateNode is a Node joined with its NodeClaim by provider ID (or the NodeClaim's `status.nodeName`);
 *   a NodeClaim without a Node yet is in-flight; a Node without a NodeClaim is unmanaged;
 * - pods bound to each node and their summed requests (DaemonSet pods separately);
 * - `markedForDeletion`: marked by a controller ({@link Cluster.markForDeletion}), NodeClaim or Node being
 *   deleted, or the Node carrying the `karpenter.sh/disrupted` taint;
 * - pod nominations (pod → NodeClaim/Node, with a TTL, upstream 20 s = 2 × the max batch window);
 * - {@link Cluster.synced}: informers synced AND every NodeClaim/Node the API server lists is in state
 *   (upstream `Synced`), so a restarted controller never provisions from a partial view;
 * - NodePool usage (summed capacity) for `spec.limits`, a change counter and the consolidation state.
 *
 * Informer events update state synchronously, then {@link Cluster.onChange} listeners run. Objects held or
 * returned are the informers' cached instances: treat them as read-only.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type {
  DaemonSet,
  KubeObject,
  Node,
  PersistentVolumeClaim,
  Pod,
  PodDisruptionBudget,
} from '../apis/core.ts';
import type { Condition, NodeClaim, NodeClassReference, NodePool } from '../apis/karpenter.ts';
import { LabelNodeInitialized, LabelNodePool, TaintDisrupted } from '../apis/labels.ts';
import { isOwnedByDaemonSet, isTerminal } from '../apis/pod.ts';
import { parseResources, type Resources } from '../apis/quantity.ts';
import type { InstanceType, NodeClassKind } from '../cloudprovider/types.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { Informer, SharedInformers } from '../kube/informer.ts';
import type { ResourceRef } from '../kube/resources.ts';
import type { Namespace, PersistentVolume, StorageClass } from '../kube/types.ts';
import { usageByPool } from '../scheduling/limits.ts';
import { addInto, podRequests } from '../scheduling/resources.ts';
import type { CSINode, VolumeObjects } from '../scheduling/volumetopology.ts';
import { podKey } from './pods.ts';
import { PodSchedulingTimes } from './podscheduling.ts';

/** Seconds a pod nomination lives (upstream: twice the 10 s max batch window). */
export const NOMINATION_TTL_SECONDS = 20;
/** The consolidation state is forced to change after this many seconds without changes (upstream 5 min). */
export const CONSOLIDATION_STATE_TTL_SECONDS = 300;

/** How a pod's nomination ended (see {@link Cluster.endedNomination}). */
export interface EndedNomination {
  target: NominationTarget;
  /** Why, in words (`its NodeClaim is marked for deletion`, `expired`, `not restored: …`). */
  reason: string;
  /** When, ms since epoch on the cluster's clock. */
  at: number;
}

/** Where a pod was nominated to go. */
export interface NominationTarget {
  kind: 'nodeclaim' | 'node';
  name: string;
}

/**
 * NodeClaim annotation written at creation: the UIDs (comma-separated) of the pods the NodeClaim was planned
 * for. A restarted controller restores their nominations from it while the NodeClaim is not initialized, so
 * it does not re-pack (and possibly re-provision) them. capenter-specific.
 */
export const AnnotationNominatedPods = 'capenter.dev/nominated-pods';

/**
 * A live nomination of a pending pod. `until` is ms since epoch on the cluster's clock; a nomination onto a
 * NodeClaim whose Node is not initialized yet is extended (the TTL counts from initialization).
 */
export interface Nomination {
  target: NominationTarget;
  until: number;
  /** The TTL the nomination was made with, in seconds. */
  ttlSeconds: number;
}

/**
 * One node as the controllers see it: a Node, its NodeClaim, or both.
 * `pods`/`podRequests` cover non-terminal pods bound to the node (DaemonSet pods included);
 * `daemonSetPods`/`daemonSetRequests` only those owned by a DaemonSet. Requests are internal units.
 */
export interface StateNode {
  /** Stable key: the provider ID, else `nodeclaim/<name>` (not launched yet), else `node/<name>`. */
  key: string;
  /** Node name, else NodeClaim name. */
  name: string;
  node?: Node;
  nodeClaim?: NodeClaim;
  providerID?: string;
  /** Value of the `karpenter.sh/nodepool` label (NodeClaim first, then Node). */
  nodePool?: string;
  /** Has a NodeClaim (Karpenter manages it). */
  managed: boolean;
  /** A NodeClaim whose Node has not registered yet. */
  inFlight: boolean;
  /** Unmanaged: the Node exists. Managed: the Node exists and is initialized (label or NodeClaim condition). */
  initialized: boolean;
  markedForDeletion: boolean;
  /** True while a pod nomination onto this node is live (disruption leaves it alone). */
  nominated: boolean;
  pods: Pod[];
  daemonSetPods: Pod[];
  podRequests: Resources;
  daemonSetRequests: Resources;
}

/** Plain arrays of everything in state at one instant, for the pure scheduler and the disruption simulation. */
export interface ClusterSnapshot {
  /** ms since epoch (cluster clock). */
  takenAt: number;
  stateNodes: StateNode[];
  /** Every non-terminal pod (bound or not). */
  pods: Pod[];
  nodePools: NodePool[];
  nodeClaims: NodeClaim[];
  nodes: Node[];
  daemonSets: DaemonSet[];
  podDisruptionBudgets: PodDisruptionBudget[];
  /** NodeClass objects of the watched kinds. */
  nodeClasses: KubeObject[];
  /** Namespace labels by name (with `kubernetes.io/metadata.name`). */
  namespaces: Record<string, Record<string, string>>;
  /** Live nominations by pod key (`namespace/name`). */
  nominations: Map<string, Nomination>;
  /** Claims, PersistentVolumes and StorageClasses, for volume topology (`scheduling/volumetopology.ts`). */
  volumes?: VolumeObjects;
}

/** A change delivered to {@link Cluster.onChange} listeners after state was updated. */
export interface ClusterChange {
  kind:
    | 'Node'
    | 'NodeClaim'
    | 'Pod'
    | 'NodePool'
    | 'DaemonSet'
    | 'PodDisruptionBudget'
    | 'NodeClass'
    | 'Namespace'
    | 'Storage';
  type: 'add' | 'update' | 'delete';
  object: KubeObject;
  old?: KubeObject;
}

/** Constructor dependencies of {@link Cluster}. */
export interface ClusterOptions {
  client: KubeClient;
  /** Shared informers; the Cluster registers its handlers, the operator starts them. */
  informers: SharedInformers;
  clock: Clock;
  logger?: Logger;
  /** NodeClass kinds to watch, usually `cloudProvider.supportedNodeClasses()` (none when omitted). */
  nodeClassKinds?: readonly NodeClassKind[];
  /**
   * Registers `karpenter_cluster_state_synced`, `karpenter_cluster_state_node_count` and
   * `karpenter_cluster_state_unsynced_time_seconds` when given.
   */
  registry?: Registry;
}

interface PodEntry {
  pod: Pod;
  requests: Resources;
}

/** Condition `type` of `obj.status.conditions`, if present. */
export function conditionOf(obj: KubeObject | undefined, type: string): Condition | undefined {
  const conds = (obj?.status as { conditions?: Condition[] } | undefined)?.conditions;
  return Array.isArray(conds) ? conds.find((c) => c.type === type) : undefined;
}

/** Key of a NodeClass in state: `<group>/<kind>/<name>`. */
export function nodeClassKey(ref: NodeClassReference): string {
  return `${ref.group}/${ref.kind}/${ref.name}`;
}

function hasTaint(node: Node | undefined, key: string, effect: string): boolean {
  return (node?.spec?.taints ?? []).some((t) => t.key === key && t.effect === effect);
}

/** The pods bound to one node (non-terminal) and their summed requests (resource name → quantity, as {@link Resources}). */
interface BoundPods {
  pods: Pod[];
  daemonSetPods: Pod[];
  requests: Resources;
  daemonSetRequests: Resources;
}

/** The cluster state. Construct once per process; see the module comment. */
export class Cluster {
  private readonly opts: ClusterOptions;
  private readonly log: Logger | undefined;
  private readonly nodeClaims = new Map<string, NodeClaim>();
  private readonly nodes = new Map<string, Node>();
  private readonly nodeNameByProviderID = new Map<string, string>();
  private readonly pods = new Map<string, PodEntry>();
  private readonly podsByNode = new Map<string, Set<string>>();
  private readonly nodePools = new Map<string, NodePool>();
  private readonly daemonSets = new Map<string, DaemonSet>();
  private readonly pdbs = new Map<string, PodDisruptionBudget>();
  private readonly nodeClasses = new Map<string, KubeObject>();
  private readonly namespaces = new Map<string, Record<string, string>>();
  private readonly claims = new Map<string, PersistentVolumeClaim>();
  private readonly persistentVolumes = new Map<string, PersistentVolume>();
  private readonly storageClasses = new Map<string, StorageClass>();
  private readonly csiNodes = new Map<string, CSINode>();
  private readonly nominations = new Map<string, Nomination>();
  /** Why the last nomination of each pod ended (pod key → {@link EndedNomination}); at most 10,000 kept. */
  private readonly endedNominations = new Map<string, EndedNomination>();
  /** pod uid → pod key. */
  private readonly podKeyByUid = new Map<string, string>();
  /** pod uid → NodeClaim name, from {@link AnnotationNominatedPods}. */
  private readonly annotatedNominations = new Map<string, string>();
  private readonly nodeNominatedUntil = new Map<string, number>();
  /** Parsed `status.allocatable` per cached Node object. */
  private readonly allocatableCache = new WeakMap<Node, Resources>();
  /**
   * The non-terminal pods bound to each node name and their summed requests, built on first use and dropped
   * when a pod of that node changes: {@link fitsBesideBound} runs for every nominated pod and
   * {@link buildStateNode} for every node on each snapshot, and summing the bound pods each time was
   * O(nominations × pods per node) (at 10,000 pods a fifth of the operator's CPU).
   */
  private readonly boundByNode = new Map<string, BoundPods>();
  private readonly marked = new Set<string>();
  /** uids of NodeClaims seen deleted, so a late optimistic add cannot resurrect them. */
  private readonly deletedNodeClaimUids = new Set<string>();
  private readonly listeners = new Set<(c: ClusterChange) => void>();
  /**
   * When each pending pod was first seen, first decided and first found schedulable (upstream's `podAcks`,
   * `podsSchedulingAttempted`, `podsSchedulableTimes`); a deleted pod is forgotten.
   */
  readonly podScheduling = new PodSchedulingTimes();
  private readonly informerList: Array<Informer<ResourceRef>> = [];
  private readonly unregister: Array<() => void> = [];
  private changes = 0;
  private consolidationMs: number;
  private readonly syncedGauge: Gauge | undefined;
  private readonly nodeCountGauge: Gauge | undefined;
  private readonly unsyncedGauge: Gauge | undefined;
  /** Cluster-clock ms when {@link synced} first answered false since it last answered true; 0 while synced. */
  private unsyncedSince = 0;

  constructor(opts: ClusterOptions) {
    this.opts = opts;
    this.log = opts.logger?.child({ component: 'cluster-state' });
    this.consolidationMs = opts.clock.now();
    if (opts.registry) {
      this.syncedGauge = gauge(
        opts.registry,
        'karpenter_cluster_state_synced',
        "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer have the same representation as Karpenter's cluster state",
      );
      this.nodeCountGauge = gauge(
        opts.registry,
        'karpenter_cluster_state_node_count',
        'Current count of nodes in cluster state',
      );
      this.unsyncedGauge = gauge(
        opts.registry,
        'karpenter_cluster_state_unsynced_time_seconds',
        'The time for which cluster state is not synced',
      );
    }
    const inf = opts.informers;
    this.watch<Node>(inf.informerFor('Node') as unknown as Informer<ResourceRef>, 'Node', {
      set: (n) => this.setNode(n),
      del: (n) => this.deleteNode(n),
    });
    this.watch<NodeClaim>(inf.informerFor('NodeClaim') as unknown as Informer<ResourceRef>, 'NodeClaim', {
      set: (nc) => this.setNodeClaim(nc),
      del: (nc) => this.deleteNodeClaim(nc),
    });
    this.watch<Pod>(inf.informerFor('Pod') as unknown as Informer<ResourceRef>, 'Pod', {
      set: (p) => this.setPod(p),
      del: (p) => this.deletePod(p),
    });
    this.watch<NodePool>(inf.informerFor('NodePool') as unknown as Informer<ResourceRef>, 'NodePool', {
      set: (np) => void this.nodePools.set(np.metadata.name, np),
      del: (np) => void this.nodePools.delete(np.metadata.name),
    });
    this.watch<DaemonSet>(inf.informerFor('DaemonSet') as unknown as Informer<ResourceRef>, 'DaemonSet', {
      set: (ds) => void this.daemonSets.set(objKey(ds), ds),
      del: (ds) => void this.daemonSets.delete(objKey(ds)),
    });
    this.watch<PodDisruptionBudget>(
      inf.informerFor('PodDisruptionBudget') as unknown as Informer<ResourceRef>,
      'PodDisruptionBudget',
      { set: (p) => void this.pdbs.set(objKey(p), p), del: (p) => void this.pdbs.delete(objKey(p)) },
    );
    this.watch<Namespace>(inf.informerFor('Namespace') as unknown as Informer<ResourceRef>, 'Namespace', {
      set: (ns) => {
        const name = ns.metadata.name ?? '';
        this.namespaces.set(name, { ...(ns.metadata.labels ?? {}), 'kubernetes.io/metadata.name': name });
      },
      del: (ns) => void this.namespaces.delete(ns.metadata.name ?? ''),
    });
    this.watch<PersistentVolumeClaim>(
      inf.informerFor('PersistentVolumeClaim') as unknown as Informer<ResourceRef>,
      'Storage',
      { set: (c) => void this.claims.set(objKey(c), c), del: (c) => void this.claims.delete(objKey(c)) },
    );
    this.watch<PersistentVolume>(
      inf.informerFor('PersistentVolume') as unknown as Informer<ResourceRef>,
      'Storage',
      {
        set: (v) => void this.persistentVolumes.set(objKey(v), v),
        del: (v) => void this.persistentVolumes.delete(objKey(v)),
      },
    );
    this.watch<StorageClass>(inf.informerFor('StorageClass') as unknown as Informer<ResourceRef>, 'Storage', {
      set: (sc) => void this.storageClasses.set(objKey(sc), sc),
      del: (sc) => void this.storageClasses.delete(objKey(sc)),
    });
    this.watch<CSINode>(inf.informerFor('CSINode') as unknown as Informer<ResourceRef>, 'Storage', {
      set: (c) => void this.csiNodes.set(objKey(c), c),
      del: (c) => void this.csiNodes.delete(objKey(c)),
    });
    for (const k of opts.nodeClassKinds ?? []) {
      const rt = opts.client.registry.forKind(`${k.kind}.${k.group}`);
      if (!rt) {
        this.log?.warn({ kind: k.kind, group: k.group }, 'NodeClass kind is not registered; not watched');
        continue;
      }
      this.watch<KubeObject>(inf.informerFor(rt) as unknown as Informer<ResourceRef>, 'NodeClass', {
        set: (o) =>
          void this.nodeClasses.set(
            nodeClassKey({ group: rt.group, kind: rt.kind, name: o.metadata?.name ?? '' }),
            o,
          ),
        del: (o) =>
          void this.nodeClasses.delete(
            nodeClassKey({ group: rt.group, kind: rt.kind, name: o.metadata?.name ?? '' }),
          ),
      });
    }
  }

  private watch<T extends KubeObject>(
    informer: Informer<ResourceRef>,
    kind: ClusterChange['kind'],
    h: { set: (o: T) => void; del: (o: T) => void },
  ): void {
    this.informerList.push(informer);
    this.unregister.push(
      informer.on({
        add: (o) => {
          h.set(o as T);
          this.changed({ kind, type: 'add', object: o });
        },
        update: (old, o) => {
          h.set(o as T);
          this.changed({ kind, type: 'update', object: o, old });
        },
        delete: (o) => {
          h.del(o as T);
          this.changed({ kind, type: 'delete', object: o });
        },
      }),
    );
  }

  /** Detaches the informer handlers (the informers themselves keep running). */
  close(): void {
    for (const u of this.unregister.splice(0)) u();
    this.listeners.clear();
  }

  // ------------------------------------------------------------------------------------------ updates

  private setNode(n: Node): void {
    const name = n.metadata.name ?? '';
    const old = this.nodes.get(name);
    const oldID = old?.spec?.providerID;
    if (oldID && oldID !== n.spec?.providerID && this.nodeNameByProviderID.get(oldID) === name)
      this.nodeNameByProviderID.delete(oldID);
    this.nodes.set(name, n);
    if (n.spec?.providerID) this.nodeNameByProviderID.set(n.spec.providerID, name);
  }

  private deleteNode(n: Node): void {
    const name = n.metadata.name ?? '';
    const stored = this.nodes.get(name);
    this.nodes.delete(name);
    const id = stored?.spec?.providerID ?? n.spec?.providerID;
    if (id && this.nodeNameByProviderID.get(id) === name) this.nodeNameByProviderID.delete(id);
    this.nodeNominatedUntil.delete(name);
    this.marked.delete(name);
  }

  private setNodeClaim(nc: NodeClaim): void {
    const name = nc.metadata.name ?? '';
    const uid = nc.metadata.uid;
    if (uid && this.deletedNodeClaimUids.has(uid)) return;
    const cur = this.nodeClaims.get(name);
    // Never go back to an older version (an optimistic add racing the watch).
    if (cur && cur.metadata.uid === uid && olderVersion(nc, cur)) return;
    this.nodeClaims.set(name, nc);
    if (!cur) for (const podUid of nominatedPodUids(nc)) this.annotatedNominations.set(podUid, name);
  }

  private deleteNodeClaim(nc: NodeClaim): void {
    const name = nc.metadata.name ?? '';
    const cur = this.nodeClaims.get(name);
    if (cur && nc.metadata.uid && cur.metadata.uid && cur.metadata.uid !== nc.metadata.uid) return;
    this.nodeClaims.delete(name);
    for (const podUid of nominatedPodUids(cur ?? nc))
      if (this.annotatedNominations.get(podUid) === name) this.annotatedNominations.delete(podUid);
    if (nc.metadata.uid) {
      this.deletedNodeClaimUids.add(nc.metadata.uid);
      if (this.deletedNodeClaimUids.size > 10_000) {
        const first = this.deletedNodeClaimUids.values().next().value;
        if (first !== undefined) this.deletedNodeClaimUids.delete(first);
      }
    }
    this.nodeNominatedUntil.delete(name);
    this.marked.delete(name);
  }

  private setPod(p: Pod): void {
    const key = podKey(p);
    const old = this.pods.get(key);
    if (old?.pod.spec?.nodeName) {
      this.boundByNode.delete(old.pod.spec.nodeName);
      if (old.pod.spec.nodeName !== p.spec?.nodeName) this.podsByNode.get(old.pod.spec.nodeName)?.delete(key);
    }
    let requests: Resources = {};
    try {
      requests = podRequests(p);
    } catch (err) {
      this.log?.warn({ pod: key, err: (err as Error).message }, 'pod has malformed resource requests');
    }
    this.pods.set(key, { pod: p, requests });
    if (p.metadata.uid) this.podKeyByUid.set(p.metadata.uid, key);
    const nodeName = p.spec?.nodeName;
    if (nodeName) {
      this.boundByNode.delete(nodeName);
      let s = this.podsByNode.get(nodeName);
      if (!s) {
        s = new Set();
        this.podsByNode.set(nodeName, s);
      }
      s.add(key);
      this.nominations.delete(key);
      this.endedNominations.delete(key);
      if (p.metadata.uid) this.annotatedNominations.delete(p.metadata.uid);
    }
  }

  private deletePod(p: Pod): void {
    const key = podKey(p);
    const old = this.pods.get(key);
    this.pods.delete(key);
    const uid = old?.pod.metadata.uid ?? p.metadata.uid;
    if (uid) {
      if (this.podKeyByUid.get(uid) === key) this.podKeyByUid.delete(uid);
      this.annotatedNominations.delete(uid);
    }
    const nodeName = old?.pod.spec?.nodeName ?? p.spec?.nodeName;
    if (nodeName) {
      this.boundByNode.delete(nodeName);
      const s = this.podsByNode.get(nodeName);
      s?.delete(key);
      if (s && s.size === 0) this.podsByNode.delete(nodeName);
    }
    this.nominations.delete(key);
    this.endedNominations.delete(key);
    this.podScheduling.clear(key);
  }

  private changed(c: ClusterChange): void {
    this.changes++;
    if (c.kind !== 'Pod' || podChangeMatters(c)) this.consolidationMs = this.opts.clock.now();
    for (const l of this.listeners) {
      try {
        l(c);
      } catch (err) {
        this.log?.error({ err: (err as Error).message }, 'cluster state listener failed');
      }
    }
  }

  /**
   * Records a NodeClaim this process just created (or updated) before the watch delivers it, so the next
   * scheduling pass counts it as in-flight (upstream `UpdateNodeClaim` after create). A later watch event
   * with the same or a newer version replaces it; a NodeClaim already seen deleted is ignored.
   */
  updateNodeClaim(nc: NodeClaim): void {
    const had = this.nodeClaims.has(nc.metadata.name ?? '');
    this.setNodeClaim(nc);
    this.changed({ kind: 'NodeClaim', type: had ? 'update' : 'add', object: nc });
  }

  /** Listens to every state change (after it was applied). Returns an unsubscribe function. */
  onChange(listener: (c: ClusterChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Number of changes applied so far (monotonic). */
  get changeCount(): number {
    return this.changes;
  }

  // ------------------------------------------------------------------------------------------ sync

  /** True once every informer the Cluster uses has listed once. */
  informersSynced(): boolean {
    return this.informerList.every((i) => i.hasSynced());
  }

  /**
   * True when the informers have synced and every NodeClaim and Node the API server lists right now is in
   * state (upstream `Cluster.Synced`). Never throws: an API error means "not synced" (logged).
   */
  async synced(): Promise<boolean> {
    let ok = false;
    try {
      if (!this.informersSynced()) return false;
      const [ncs, nodes] = await Promise.all([
        this.opts.client.list('NodeClaim'),
        this.opts.client.list('Node'),
      ]);
      ok =
        ncs.items.every((nc) => this.nodeClaims.has(nc.metadata.name ?? '')) &&
        nodes.items.every((n) => this.nodes.has(n.metadata.name ?? ''));
      return ok;
    } catch (err) {
      this.log?.error({ err: (err as Error).message }, 'checking cluster state sync');
      return false;
    } finally {
      this.syncedGauge?.set(ok ? 1 : 0);
      this.nodeCountGauge?.set(this.stateNodeCount());
      // upstream controllers/state/cluster.go Synced: seconds since the first unsynced answer, 0 once synced
      const now = this.opts.clock.now();
      if (ok) this.unsyncedSince = 0;
      else if (this.unsyncedSince === 0) this.unsyncedSince = now;
      this.unsyncedGauge?.set(ok ? 0 : (now - this.unsyncedSince) / 1000);
    }
  }

  /** Resolves once {@link synced} is true, polling every `intervalMs` on the cluster clock; false when aborted. */
  async waitForSync(signal?: AbortSignal, intervalMs = 250): Promise<boolean> {
    while (!signal?.aborted) {
      if (await this.synced()) return true;
      await this.opts.clock.sleep(intervalMs, signal);
    }
    return false;
  }

  private stateNodeCount(): number {
    let n = this.nodeClaims.size;
    const claimed = new Set<string>();
    for (const nc of this.nodeClaims.values()) {
      const nn = this.nodeNameFor(nc);
      if (nn) claimed.add(nn);
    }
    for (const name of this.nodes.keys()) if (!claimed.has(name)) n++;
    return n;
  }

  // ------------------------------------------------------------------------------------------ nominations

  /**
   * Nominates a pending pod to a NodeClaim or Node for `ttlSeconds` (default {@link NOMINATION_TTL_SECONDS}):
   * while live, provisioning does not plan capacity for the pod again and counts its requests on the target.
   * Also marks the target StateNode nominated (disruption leaves it alone).
   */
  nominate(pod: Pod, target: NominationTarget, ttlSeconds = NOMINATION_TTL_SECONDS): void {
    const until = this.opts.clock.now() + ttlSeconds * 1000;
    this.nominations.set(podKey(pod), { target: { ...target }, until, ttlSeconds });
    this.nodeNominatedUntil.set(target.name, Math.max(until, this.nodeNominatedUntil.get(target.name) ?? 0));
  }

  /**
   * The live nomination of a pod (by object or `namespace/name`), or undefined when none, expired, or its
   * target is gone or marked for deletion (the nomination is then dropped). A pod listed in the
   * {@link AnnotationNominatedPods} of a NodeClaim that is not initialized is nominated to it.
   */
  nominationFor(pod: Pod | string): Nomination | undefined {
    const key = typeof pod === 'string' ? pod : podKey(pod);
    const n = this.nominations.get(key) ?? this.restoreNomination(key);
    if (!n) return undefined;
    const why = this.nominationEnds(n, key);
    if (why) {
      this.endNomination(key, n, why);
      return undefined;
    }
    return n;
  }

  /**
   * The live nomination of a pending pod (by object or `namespace/name`) onto a NodeClaim that is not initialized
   * yet, or undefined: provisioning leaves such a pod out (its capacity is on the way; the provisioning input's
   * `heldPods` applies the same rule to a snapshot). Once the NodeClaim initializes, the pod is simulated again in
   * every pass, as upstream re-simulates every pending pod.
   */
  inFlightNominationFor(pod: Pod | string): Nomination | undefined {
    const n = this.nominationFor(pod);
    if (n?.target.kind !== 'nodeclaim') return undefined;
    const nc = this.nodeClaims.get(n.target.name);
    return nc && this.nodeClaimInitialized(nc) ? undefined : n;
  }

  /**
   * Why the last nomination of the pod `key` (`namespace/name`) ended, while the pod is pending: for the
   * launcher's warning when it launches for a pod another in-flight NodeClaim was created for. Undefined when
   * none ended in this process (a restarted controller knows only what it saw since).
   */
  endedNomination(key: string): EndedNomination | undefined {
    return this.endedNominations.get(key);
  }

  private endNomination(key: string, n: Nomination, reason: string): void {
    this.nominations.delete(key);
    this.endedNominations.delete(key);
    this.endedNominations.set(key, { target: { ...n.target }, reason, at: this.opts.clock.now() });
    if (this.endedNominations.size > 10_000) {
      const first = this.endedNominations.keys().next().value;
      if (first !== undefined) this.endedNominations.delete(first);
    }
  }

  /** A nomination from a NodeClaim's {@link AnnotationNominatedPods}, recorded, or undefined. */
  private restoreNomination(key: string): Nomination | undefined {
    const pod = this.pods.get(key)?.pod;
    const uid = pod?.metadata.uid;
    if (!pod || !uid || pod.spec?.nodeName) return undefined;
    const annotated = this.annotatedNominations.get(uid);
    if (!annotated) return undefined;
    // One restoration per pod: once it expires the scheduler decides again.
    this.annotatedNominations.delete(uid);
    // Several NodeClaims may list the pod (one being deleted, the one launched after it): the live, uninitialized
    // one wins, whichever the watch delivered last.
    const live = (c: NodeClaim | undefined): boolean =>
      !!c &&
      !c.metadata.deletionTimestamp &&
      !this.marked.has(c.metadata.name ?? '') &&
      !this.nodeClaimInitialized(c);
    let ncName = annotated;
    if (!live(this.nodeClaims.get(annotated)))
      for (const [name, c] of this.nodeClaims)
        if (name !== annotated && live(c) && nominatedPodUids(c).includes(uid)) {
          ncName = name;
          break;
        }
    const nc = this.nodeClaims.get(ncName);
    if (!nc || this.nodeClaimInitialized(nc)) {
      const reason = nc
        ? 'not restored: its NodeClaim is initialized'
        : 'not restored: its NodeClaim is gone';
      this.endNomination(
        key,
        { target: { kind: 'nodeclaim', name: ncName }, until: 0, ttlSeconds: 0 },
        reason,
      );
      return undefined;
    }
    this.nominate(pod, { kind: 'nodeclaim', name: ncName });
    return this.nominations.get(key);
  }

  /** True when the NodeClaim's Node carries `karpenter.sh/initialized=true` or its `Initialized` condition is True. */
  nodeClaimInitialized(nc: NodeClaim): boolean {
    const nodeName = this.nodeNameFor(nc);
    const node = nodeName ? this.nodes.get(nodeName) : undefined;
    return (
      !!node &&
      (node.metadata.labels?.[LabelNodeInitialized] === 'true' ||
        conditionOf(nc, 'Initialized')?.status === 'True')
    );
  }

  /**
   * A nomination stays valid while its target exists and is not marked for deletion, and: onto a NodeClaim
   * whose Node is not initialized, always (extended); otherwise until its TTL, and only while the pods bound
   * to the target leave room for the pod (`podKey`) — once kube-scheduler has filled the node with others,
   * the pod needs new capacity now, as upstream's re-simulation of every pending pod would find. Returns why
   * it ends, or undefined while it is valid.
   */
  private nominationEnds(n: Nomination, podKey: string): string | undefined {
    const now = this.opts.clock.now();
    if (n.target.kind === 'nodeclaim') {
      const nc = this.nodeClaims.get(n.target.name);
      if (!nc) return 'its NodeClaim is gone';
      if (nc.metadata.deletionTimestamp) return 'its NodeClaim is being deleted';
      if (this.marked.has(n.target.name)) return 'its NodeClaim is marked for deletion';
      // The pod cannot bind before the Node is initialized: keep the nomination until then.
      if (!this.nodeClaimInitialized(nc)) {
        n.until = Math.max(n.until, now + n.ttlSeconds * 1000);
        this.nodeNominatedUntil.set(
          n.target.name,
          Math.max(n.until, this.nodeNominatedUntil.get(n.target.name) ?? 0),
        );
        return undefined;
      }
      if (n.until <= now) return 'expired after its NodeClaim initialized';
      const nodeName = this.nodeNameFor(nc);
      return !nodeName || this.fitsBesideBound(nodeName, podKey)
        ? undefined
        : 'its node is full with other pods';
    }
    if (n.until <= now) return 'expired';
    const node = this.nodes.get(n.target.name);
    if (!node) return 'its node is gone';
    if (this.isNodeMarked(node, this.nodeClaimForNode(node))) return 'its node is marked for deletion';
    return this.fitsBesideBound(n.target.name, podKey) ? undefined : 'its node is full with other pods';
  }

  /** The non-terminal pods bound to `nodeName` and their summed requests (cached; see {@link boundByNode}). */
  private boundPods(nodeName: string): BoundPods {
    let b = this.boundByNode.get(nodeName);
    if (b) return b;
    b = { pods: [], daemonSetPods: [], requests: {}, daemonSetRequests: {} };
    for (const k of this.podsByNode.get(nodeName) ?? []) {
      const e = this.pods.get(k);
      if (!e || isTerminal(e.pod)) continue;
      b.pods.push(e.pod);
      addInto(b.requests, e.requests);
      if (isOwnedByDaemonSet(e.pod)) {
        b.daemonSetPods.push(e.pod);
        addInto(b.daemonSetRequests, e.requests);
      }
    }
    this.boundByNode.set(nodeName, b);
    return b;
  }

  /** True when the pod `podKey` fits in the allocatable of Node `nodeName` minus its bound pods' requests. */
  private fitsBesideBound(nodeName: string, podKey: string): boolean {
    const node = this.nodes.get(nodeName);
    const want = this.pods.get(podKey)?.requests;
    if (!node || !want) return true;
    let alloc = this.allocatableCache.get(node);
    if (!alloc) {
      try {
        alloc = parseResources(node.status?.allocatable ?? node.status?.capacity);
      } catch {
        return true;
      }
      this.allocatableCache.set(node, alloc);
    }
    const used = this.boundPods(nodeName).requests;
    for (const [r, q] of Object.entries(want)) {
      if (!(q > 0)) continue;
      const cap = alloc[r];
      if (cap === undefined) continue; // not reported: no evidence the pod cannot fit
      if ((used[r] ?? 0) + q > cap) return false; // `pods: 1` is part of the requests
    }
    return true;
  }

  /** True while a nomination onto the node/NodeClaim named `name` is live. */
  isNominated(name: string): boolean {
    return (this.nodeNominatedUntil.get(name) ?? 0) > this.opts.clock.now();
  }

  // ------------------------------------------------------------------------------------------ deletion marks

  /** Marks nodes/NodeClaims (by name) for deletion: the scheduler stops placing pods there. */
  markForDeletion(...names: string[]): void {
    for (const n of names) this.marked.add(n);
    this.consolidationMs = this.opts.clock.now();
    this.changes++;
  }

  /** Removes marks set by {@link markForDeletion}. */
  unmarkForDeletion(...names: string[]): void {
    for (const n of names) this.marked.delete(n);
    this.consolidationMs = this.opts.clock.now();
    this.changes++;
  }

  private isNodeMarked(node: Node | undefined, nc: NodeClaim | undefined): boolean {
    return (
      (!!node && (this.marked.has(node.metadata.name ?? '') || !!node.metadata.deletionTimestamp)) ||
      hasTaint(node, TaintDisrupted.key, TaintDisrupted.effect) ||
      (!!nc && (this.marked.has(nc.metadata.name ?? '') || !!nc.metadata.deletionTimestamp))
    );
  }

  // ------------------------------------------------------------------------------------------ consolidation

  /** Records that something relevant to consolidation changed (upstream `MarkUnconsolidated`). */
  markUnconsolidated(): void {
    this.consolidationMs = this.opts.clock.now();
  }

  /**
   * ms timestamp of the last change relevant to consolidation; forced forward when older than
   * {@link CONSOLIDATION_STATE_TTL_SECONDS} so waiters re-check now and then (upstream `ConsolidationState`).
   */
  consolidationState(): number {
    const now = this.opts.clock.now();
    if (now - this.consolidationMs >= CONSOLIDATION_STATE_TTL_SECONDS * 1000) this.consolidationMs = now;
    return this.consolidationMs;
  }

  // ------------------------------------------------------------------------------------------ queries

  private nodeNameFor(nc: NodeClaim): string | undefined {
    const id = nc.status?.providerID;
    if (id) {
      const n = this.nodeNameByProviderID.get(id);
      if (n) return n;
    }
    const nn = nc.status?.nodeName;
    if (nn) {
      const node = this.nodes.get(nn);
      if (node && (!id || !node.spec?.providerID || node.spec.providerID === id)) return nn;
    }
    return undefined;
  }

  private nodeClaimForNode(node: Node): NodeClaim | undefined {
    const id = node.spec?.providerID;
    for (const nc of this.nodeClaims.values()) {
      if (id && nc.status?.providerID === id) return nc;
      if (nc.status?.nodeName === node.metadata.name && (!id || !nc.status?.providerID)) return nc;
    }
    return undefined;
  }

  /** The NodeClaim by name. */
  getNodeClaim(name: string): NodeClaim | undefined {
    return this.nodeClaims.get(name);
  }

  /** The Node by name. */
  getNode(name: string): Node | undefined {
    return this.nodes.get(name);
  }

  /** Every Node (cached instances: read-only). */
  listNodes(): Node[] {
    return [...this.nodes.values()];
  }

  /** The NodeClass kinds this Cluster watches (the provider's supported node classes), in registration order. */
  nodeClassKinds(): readonly NodeClassKind[] {
    return this.opts.nodeClassKinds ?? [];
  }

  /** Every watched NodeClass of `group`/`kind` (cached instances: read-only). */
  listNodeClasses(group: string, kind: string): KubeObject[] {
    const prefix = `${group}/${kind}/`;
    return [...this.nodeClasses].filter(([k]) => k.startsWith(prefix)).map(([, o]) => o);
  }

  /** The NodePool by name. */
  getNodePool(name: string): NodePool | undefined {
    return this.nodePools.get(name);
  }

  /** The pod by `namespace/name`. */
  getPod(key: string): Pod | undefined {
    return this.pods.get(key)?.pod;
  }

  /** The NodeClass an object references, when its kind is watched and it exists. */
  getNodeClass(ref: NodeClassReference): KubeObject | undefined {
    return this.nodeClasses.get(nodeClassKey(ref));
  }

  /** True when NodeClass kind `group`/`kind` is watched by this Cluster. */
  watchesNodeClass(group: string, kind: string): boolean {
    return (this.opts.nodeClassKinds ?? []).some((k) => k.group === group && k.kind === kind);
  }

  /** Every NodePool. */
  listNodePools(): NodePool[] {
    return [...this.nodePools.values()];
  }

  /** Every NodeClaim (cached instances: read-only). */
  listNodeClaims(): NodeClaim[] {
    return [...this.nodeClaims.values()];
  }

  /**
   * Every pod that has not finished (not `Succeeded`/`Failed`), as `snapshot().pods` without the rest of a
   * snapshot (cached instances: read-only).
   */
  listPods(): Pod[] {
    const pods: Pod[] = [];
    for (const { pod } of this.pods.values()) if (!isTerminal(pod)) pods.push(pod);
    return pods;
  }

  /** Every DaemonSet. */
  listDaemonSets(): DaemonSet[] {
    return [...this.daemonSets.values()];
  }

  /** Every non-terminal pod that is not bound to a node. */
  pendingPods(): Pod[] {
    const out: Pod[] = [];
    for (const { pod } of this.pods.values()) if (!pod.spec?.nodeName && !isTerminal(pod)) out.push(pod);
    return out;
  }

  /** Resource requests of a known pod (internal units), computed once per pod spec. */
  podRequests(pod: Pod): Resources {
    const e = this.pods.get(podKey(pod));
    if (e && e.pod.spec === pod.spec) return e.requests;
    try {
      return podRequests(pod);
    } catch {
      return {};
    }
  }

  /** Every StateNode, sorted by key. */
  stateNodes(): StateNode[] {
    const now = this.opts.clock.now();
    const out: StateNode[] = [];
    const claimedNodes = new Set<string>();
    for (const nc of this.nodeClaims.values()) {
      const nodeName = this.nodeNameFor(nc);
      const node = nodeName ? this.nodes.get(nodeName) : undefined;
      if (node) claimedNodes.add(node.metadata.name ?? '');
      out.push(this.buildStateNode(node, nc, now));
    }
    for (const node of this.nodes.values()) {
      if (claimedNodes.has(node.metadata.name ?? '')) continue;
      out.push(this.buildStateNode(node, undefined, now));
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private buildStateNode(node: Node | undefined, nc: NodeClaim | undefined, now: number): StateNode {
    const providerID = nc?.status?.providerID || node?.spec?.providerID || undefined;
    const name = node?.metadata.name ?? nc?.metadata.name ?? '';
    const key = providerID ?? (node ? `node/${name}` : `nodeclaim/${name}`);
    const podNode = node?.metadata.name ?? nc?.status?.nodeName;
    const bound = podNode ? this.boundPods(podNode) : undefined;
    const nodePool = nc?.metadata.labels?.[LabelNodePool] ?? node?.metadata.labels?.[LabelNodePool];
    const initialized = nc
      ? !!node &&
        (node.metadata.labels?.[LabelNodeInitialized] === 'true' ||
          conditionOf(nc, 'Initialized')?.status === 'True')
      : !!node;
    const nominated =
      (this.nodeNominatedUntil.get(name) ?? 0) > now ||
      (!!nc && (this.nodeNominatedUntil.get(nc.metadata.name ?? '') ?? 0) > now);
    const sn: StateNode = {
      key,
      name,
      managed: !!nc,
      inFlight: !!nc && !node,
      initialized,
      markedForDeletion: this.isNodeMarked(node, nc),
      nominated,
      pods: bound ? [...bound.pods] : [],
      daemonSetPods: bound ? [...bound.daemonSetPods] : [],
      podRequests: bound ? { ...bound.requests } : {},
      daemonSetRequests: bound ? { ...bound.daemonSetRequests } : {},
    };
    if (node) sn.node = node;
    if (nc) sn.nodeClaim = nc;
    if (providerID) sn.providerID = providerID;
    if (nodePool) sn.nodePool = nodePool;
    return sn;
  }

  /**
   * Resources used per NodePool against `spec.limits` by everything in state (`scheduling/limits.ts`
   * `usageByPool`: the capacity of each NodeClaim of the NodePool — with `instanceTypes`, not-yet-launched
   * NodeClaims count their largest option — plus the `status.capacity` of labelled Nodes that have no NodeClaim).
   */
  nodePoolUsage(instanceTypes?: ReadonlyMap<string, InstanceType>): Record<string, Resources> {
    return usageByPool(this.stateNodes(), instanceTypes);
  }

  /** Everything in state now, as plain arrays (cached instances: read-only). Drops expired nominations. */
  snapshot(): ClusterSnapshot {
    const nominations = new Map<string, Nomination>();
    if (this.annotatedNominations.size > 0)
      for (const k of [...this.annotatedNominations.keys()].map((uid) => this.podKeyByUid.get(uid)))
        if (k && !this.nominations.has(k)) this.restoreNomination(k);
    for (const [k, n] of [...this.nominations]) {
      const pod = this.pods.get(k)?.pod;
      if (!pod || pod.spec?.nodeName) {
        this.nominations.delete(k);
        continue;
      }
      const why = this.nominationEnds(n, k);
      if (why) {
        this.endNomination(k, n, why);
        continue;
      }
      nominations.set(k, n);
    }
    const pods = this.listPods();
    const namespaces: Record<string, Record<string, string>> = {};
    for (const [k, v] of this.namespaces) namespaces[k] = v;
    return {
      takenAt: this.opts.clock.now(),
      stateNodes: this.stateNodes(),
      pods,
      nodePools: [...this.nodePools.values()],
      nodeClaims: [...this.nodeClaims.values()],
      nodes: [...this.nodes.values()],
      daemonSets: [...this.daemonSets.values()],
      podDisruptionBudgets: [...this.pdbs.values()],
      nodeClasses: [...this.nodeClasses.values()],
      namespaces,
      nominations,
      volumes: {
        persistentVolumeClaims: [...this.claims.values()],
        persistentVolumes: [...this.persistentVolumes.values()],
        storageClasses: [...this.storageClasses.values()],
        csiNodes: [...this.csiNodes.values()],
      },
    };
  }
}

/** Pod UIDs of a NodeClaim's {@link AnnotationNominatedPods} annotation. */
export function nominatedPodUids(nc: NodeClaim): string[] {
  const v = nc.metadata.annotations?.[AnnotationNominatedPods];
  return v ? v.split(',').filter((x) => x !== '') : [];
}

function objKey(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/** True when `a` is known to be older than `b` (numeric resourceVersions, as both API servers use). */
function olderVersion(a: KubeObject, b: KubeObject): boolean {
  const ra = Number(a.metadata?.resourceVersion);
  const rb = Number(b.metadata?.resourceVersion);
  return Number.isFinite(ra) && Number.isFinite(rb) && ra < rb;
}

/** Pod changes that matter to consolidation: add/delete, binding, phase or deletion changes. */
function podChangeMatters(c: ClusterChange): boolean {
  if (c.type !== 'update' || !c.old) return true;
  const a = c.old as Pod;
  const b = c.object as Pod;
  return (
    a.spec?.nodeName !== b.spec?.nodeName ||
    a.status?.phase !== b.status?.phase ||
    !!a.metadata.deletionTimestamp !== !!b.metadata.deletionTimestamp
  );
}

function gauge(registry: Registry, name: string, help: string): Gauge {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Gauge;
  return new Gauge({ name, help, registers: [registry] });
}
