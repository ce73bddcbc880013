/**
 * kube-scheduler stand-in: binds pending pods to nodes where they fit, through the `pods/binding`
 * subresource, and marks the others `PodScheduled=False` / `Unschedulable` with kube-scheduler's message
 * (`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {…}.`), which is the
 * signal capenter's provisioner reacts to. Predicates and scoring: see `filters.ts`.
 *
 * Queueing follows kube-scheduler's idea in a simple form: a pod is tried when it appears or its spec,
 * labels or annotations change (a status-only update, such as our own condition write, is no retry, as in
 * kube-scheduler's `isPodUpdated`); unschedulable pods are tried again on cluster events that may make them
 * fit (a node added or changed that could host the pod on its own — the node-local queueing hints, see
 * `retryFor` — or whose labels changed when the pod has topology constraints, a bound pod deleted or
 * finished, a pod bound when someone waits for pod affinity) and every `retryIntervalSeconds`, each after its
 * backoff (1 s doubled per failed attempt, at most 10 s). As kube-scheduler since 1.33 (`SchedulerPopFromBackoffQ`,
 * beta and on by default; the real control plane of `test:cluster` runs 1.34), pods waiting out their backoff are
 * tried at once when nothing else is queued: backoff orders retries behind other work, it does not idle the
 * scheduler.
 *
 * Scheduling cycles: one worker takes every key ready in the queue and decides those pods in memory, one
 * after the other in kube-scheduler's PrioritySort order ({@link queueOrder}: priority, then age), against
 * one node snapshot that accounts each pod just placed ("assumed" until the informer shows it bound), so the
 * accounting stays exact as with one pod at a time. kube-scheduler's cycles take microseconds and its API
 * calls are asynchronous; here the API round trips would dominate, so writes leave the cycle: Bindings go
 * out concurrently (up to 32 in flight), and failed attempts are written by a few status writers, coalesced
 * per pod (a pod tried again while its write waits gets one write with its latest message; a message
 * already written is not written again). A pod's first `PodScheduled=False` (what the provisioner waits for)
 * has 8 writers; newer messages for pods already marked have one, so at 10,000 pending pods the intermediate
 * messages coalesce instead of costing a write and an Event per pod per new node (kube-scheduler itself
 * writes through a client limited to 50 QPS). The end state of the conditions is kube-scheduler's; only
 * intermediate messages may be skipped.
 *
 * Queue order versus Karpenter's plan: the provisioner packs pods largest first, kube-scheduler does not
 * know that plan. Measured on the provisioning benchmark, ordering pending pods largest first did not make
 * the placement match the plan better (nodes come up in their own order and MostAllocated then fills an
 * m-family node with large pods), so the stand-in keeps kube-scheduler's PrioritySort; pods left over are
 * re-planned by the provisioner (a nomination ends once its node is full of other pods, `state/cluster.ts`).
 *
 * Deviation: with no nodes at all kube-scheduler reports reason `SchedulerError`; the stand-in reports
 * `Unschedulable` (message "no nodes available to schedule pods") so a provisioner also starts from an
 * empty cluster. No preemption, no volume checks, no extenders, no client QPS limit.
 */
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import type { TimerHandle } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { EventRecorder } from '../../kube/events.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../kube/workqueue.ts';
import {
  ensureIndex,
  isPodTerminal,
  rfc3339,
  SimController,
  type SimControllerOptions,
  withCondition,
} from '../workloads/controller.ts';
import {
  addPodToNodeInfo,
  buildNodeInfo,
  CountIndex,
  filterNode,
  fitErrorMessage,
  type NodeInfo,
  nodeCouldHost,
  pickNode,
  prepare,
  type ScoringStrategy,
} from './filters.ts';
import type { SchedulingRules, VolumeTopologyResult } from './rules.ts';

/** Options of {@link KubeSchedulerStandIn}. */
export interface KubeSchedulerOptions extends SimControllerOptions {
  /** The scheduling rules the filters evaluate (the declared face, `rules.ts`). */
  rules: SchedulingRules;
  /** `spec.schedulerName` values handled (default `['default-scheduler']`; an unset name counts as default). */
  schedulerNames?: string[];
  /** NodeResourcesFit scoring (default `MostAllocated`: bin-packing, as Karpenter users configure). */
  scoring?: ScoringStrategy;
  /** Seconds between retries of unschedulable pods without a cluster event (default 30). */
  retryIntervalSeconds?: number;
  /** Record `Scheduled` / `FailedScheduling` Events like kube-scheduler (default true). */
  events?: boolean;
}

const IndexNodeName = 'spec.nodeName';
/** Concurrent Binding requests (more wait for a slot). */
const MAX_INFLIGHT_WRITES = 32;
/** Concurrent status writers for unschedulable pods (fewer than bindings, so bindings are not queued behind them). */
const MAX_STATUS_WRITERS = 8;
/**
 * Concurrent writers of a newer message for pods already marked `PodScheduled=False` (intermediate messages:
 * with one writer, a pod retried while its write waits gets one write with its latest message, and a pod bound
 * meanwhile none; first marks, which the provisioner waits for, have their own writers).
 */
const MAX_REMARK_WRITERS = 1;

/** Wanted status writes of one kind, oldest first, and the writers draining them. */
interface StatusQueue {
  wanted: Map<string, { reason: string; message: string; event: boolean }>;
  writers: number;
  readonly max: number;
}

/** The kube-scheduler stand-in controller. Construct, `start()`, and `stop()` when done. */
export class KubeSchedulerStandIn extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly nodes: Informer<'Node'>;
  private readonly namespaces: Informer<'Namespace'>;
  /** Claims, PersistentVolumes, StorageClasses (VolumeBinding / VolumeZone through the rules' `volumeTopology`). */
  private readonly storage: Array<Informer<ResourceRef>>;
  /** Failed scheduling attempts per pending pod, and when the last one failed (ms, clock): the pod's backoff. */
  private readonly attempts = new Map<string, number>();
  private readonly lastFailure = new Map<string, number>();
  /**
   * Pods an event moved back while their backoff runs (kube-scheduler's backoffQ), by key → when it ends (ms,
   * clock); queued when their backoff ends ({@link backoffTimer}), or earlier by {@link popBackoff}.
   */
  private readonly backoffQ = new Map<string, number>();
  /** Fires when the earliest backoff in {@link backoffQ} ends. */
  private backoffTimer: TimerHandle | undefined;
  /** True while a scheduling cycle runs (the single worker is busy). */
  private inCycle = false;
  private readonly names: ReadonlySet<string>;
  private readonly scoring: ScoringStrategy;
  private readonly retrySeconds: number;
  private readonly recorder: EventRecorder | undefined;
  /** Pods we bound that the cache still shows unbound: key → pod with nodeName. */
  private readonly assumed = new Map<string, Pod>();
  /** Keys of pending pods (unbound, not deleting, ours). */
  private readonly pending = new Set<string>();
  /** Keys of pending pods with required pod affinity (retried when a pod gets bound). */
  private readonly waitingForAffinity = new Set<string>();
  private readonly nodeInfos = new Map<string, NodeInfo>();
  /** Topology groups whose per-node counts are cached on the node infos (see `filters.ts` `CountIndex`). */
  private readonly counts: CountIndex;
  private readonly rules: SchedulingRules;
  /** Writes (Bindings, status updates) in flight. */
  private readonly inflight = new Set<Promise<void>>();
  /** Latest unwritten outcome per pending pod (see {@link wantStatus}): first marks, and newer messages. */
  private readonly firstMarks: StatusQueue = { wanted: new Map(), writers: 0, max: MAX_STATUS_WRITERS };
  private readonly remarks: StatusQueue = { wanted: new Map(), writers: 0, max: MAX_REMARK_WRITERS };
  /** Pods whose status write is in flight. */
  private readonly statusWriting = new Set<string>();
  /** Last reason + message written per pending pod (skips rewriting what the cache will show shortly). */
  private readonly written = new Map<string, string>();
  /** Writes waiting for a slot (see {@link limit}). */
  private readonly writeWaiters: Array<() => void> = [];
  /** Bindings done (diagnostics). */
  bindings = 0;
  /** `PodScheduled=False` condition writes done (diagnostics). */
  statusWrites = 0;

  constructor(opts: KubeSchedulerOptions) {
    super('kube-scheduler', opts, 1);
    this.rules = opts.rules;
    this.counts = new CountIndex(opts.rules);
    this.names = new Set(opts.schedulerNames ?? ['default-scheduler']);
    this.scoring = opts.scoring ?? 'MostAllocated';
    this.retrySeconds = opts.retryIntervalSeconds ?? 30;
    this.pods = opts.informers.informerFor('Pod');
    this.nodes = opts.informers.informerFor('Node');
    this.namespaces = opts.informers.informerFor('Namespace');
    this.storage = [
      opts.informers.informerFor('PersistentVolumeClaim'),
      opts.informers.informerFor('PersistentVolume'),
      opts.informers.informerFor('StorageClass'),
    ] as Array<Informer<ResourceRef>>;
    ensureIndex(this.pods.cache, IndexNodeName, (p: Pod) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    this.recorder =
      opts.events === false
        ? undefined
        : new EventRecorder(opts.client, {
            clock: opts.clock,
            component: 'default-scheduler',
            onError: (e) => this.onError(e, 'kube-scheduler event'),
          });
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.nodes, this.namespaces, ...this.storage] as Array<Informer<ResourceRef>>;
  }

  private isOurs(p: Pod): boolean {
    return this.names.has(p.spec.schedulerName ?? 'default-scheduler');
  }

  private isPending(p: Pod): boolean {
    return !p.spec.nodeName && !p.metadata.deletionTimestamp && !isPodTerminal(p) && this.isOurs(p);
  }

  protected register(): Array<() => void> {
    const onPod = (p: Pod, o?: Pod): void => {
      const key = objectKey(p);
      if (this.isPending(p) && !this.assumed.has(key)) {
        this.pending.add(key);
        if (p.spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length)
          this.waitingForAffinity.add(key);
        // like kube-scheduler's isPodUpdated: a status-only update (e.g. our own condition write) is no retry
        if (!o || !this.isPending(o) || podSchedulingView(o) !== podSchedulingView(p)) this.queue.add(key);
      } else {
        this.pending.delete(key);
        this.backoffQ.delete(key);
        this.waitingForAffinity.delete(key);
        this.firstMarks.wanted.delete(key);
        this.remarks.wanted.delete(key);
        this.written.delete(key);
      }
      if (p.spec.nodeName) this.assumed.delete(key);
    };
    const offPods = this.pods.on({
      add: (p) => {
        onPod(p);
        if (p.spec.nodeName) {
          this.invalidate(p.spec.nodeName);
          this.retryAffinityWaiters();
        }
      },
      update: (o, p) => {
        onPod(p, o);
        if (o.spec.nodeName) this.invalidate(o.spec.nodeName);
        if (p.spec.nodeName) this.invalidate(p.spec.nodeName);
        if (!o.spec.nodeName && p.spec.nodeName) this.retryAffinityWaiters();
        // capacity freed: a bound pod finished
        if (p.spec.nodeName && !isPodTerminal(o) && isPodTerminal(p)) this.retryAll();
      },
      delete: (p) => {
        const key = objectKey(p);
        this.pending.delete(key);
        this.backoffQ.delete(key);
        this.attempts.delete(key);
        this.lastFailure.delete(key);
        this.firstMarks.wanted.delete(key);
        this.remarks.wanted.delete(key);
        this.written.delete(key);
        this.waitingForAffinity.delete(key);
        const assumedOn = this.assumed.get(key)?.spec.nodeName;
        if (assumedOn) this.invalidate(assumedOn);
        this.assumed.delete(key);
        if (p.spec.nodeName) {
          this.invalidate(p.spec.nodeName);
          if (!isPodTerminal(p)) this.retryAll();
        }
      },
    });
    const offNodes = this.nodes.on({
      add: (n) => {
        this.invalidate(n.metadata.name ?? '');
        this.retryFor(n);
      },
      update: (o, n) => {
        this.invalidate(n.metadata.name ?? '');
        if (schedulingView(o) === schedulingView(n)) return;
        this.retryFor(n, JSON.stringify(o.metadata.labels) !== JSON.stringify(n.metadata.labels));
      },
      delete: (n) => {
        this.invalidate(n.metadata.name ?? '');
      },
    });
    const offNs = this.namespaces.on({
      update: (o, n) => {
        if (JSON.stringify(o.metadata?.labels) !== JSON.stringify(n.metadata?.labels)) this.retryAll();
      },
    });
    const offStorage = this.storage.map((i) =>
      i.on({ add: () => this.retryAll(), update: () => this.retryAll() }),
    );
    return [offPods, offNodes, offNs, ...offStorage];
  }

  /**
   * Queues every pending pod (a cycle orders them by {@link queueOrder}). As kube-scheduler's scheduling queue, a
   * pod that failed is moved back only once its backoff has passed (1 s doubled per failed attempt, at most 10 s:
   * `podInitialBackoffSeconds` / `podMaxBackoffSeconds`), so a pod created by the event itself — the DaemonSet pod
   * of a new node — is tried before pods that have been failing since before the node existed; pods still in
   * backoff are tried as soon as nothing else is queued ({@link popBackoff}).
   */
  private retryAll(only?: (pod: Pod) => boolean): void {
    const now = this.clock.now();
    for (const k of this.pending) {
      if (only) {
        const pod = this.pods.cache.get(k);
        if (pod && !only(pod)) continue;
      }
      const n = this.attempts.get(k) ?? 0;
      const until = n > 0 ? (this.lastFailure.get(k) ?? 0) + Math.min(1000 * 2 ** (n - 1), 10_000) : 0;
      if (until > now) this.backoffQ.set(k, until);
      else {
        this.backoffQ.delete(k);
        this.queue.add(k);
      }
    }
    this.popBackoff();
    this.armBackoffTimer();
  }

  /** (Re)arms {@link backoffTimer} for the earliest backoff end; at it, the pods whose backoff ended are queued. */
  private armBackoffTimer(): void {
    if (this.backoffTimer) this.clock.clearTimeout(this.backoffTimer);
    this.backoffTimer = undefined;
    let first = Number.POSITIVE_INFINITY;
    for (const until of this.backoffQ.values()) first = Math.min(first, until);
    if (!Number.isFinite(first)) return;
    this.backoffTimer = this.clock.setTimeout(
      () => {
        this.backoffTimer = undefined;
        const now = this.clock.now();
        for (const [k, until] of this.backoffQ)
          if (until <= now) {
            this.backoffQ.delete(k);
            this.queue.add(k);
          }
        this.armBackoffTimer();
      },
      Math.max(0, first - this.clock.now()),
    );
  }

  /**
   * kube-scheduler's `SchedulerPopFromBackoffQ` (1.33+, on by default): when no pod is ready and no cycle runs,
   * the scheduler does not idle until backoffs end but takes the pods in backoff now (all of them in the next
   * cycle, which orders them by {@link queueOrder}; kube-scheduler pops them one by one, earliest backoff first).
   * Only pods moved back by an event wait in backoff here; pods whose write failed are retried by the rate limiter
   * (kube-scheduler's error backoff, which is never popped early).
   */
  private popBackoff(): void {
    if (this.inCycle || this.backoffQ.size === 0 || this.queue.len() > 0) return;
    const keys = [...this.backoffQ.keys()];
    this.backoffQ.clear();
    for (const k of keys) this.queue.add(k);
  }

  /**
   * kube-scheduler's queueing hints for a Node added or updated: queues the pending pods that `node` could host
   * on its own ({@link nodeCouldHost}); the others would only fail again with a new message, each costing a
   * status write and an Event. A node that cannot host a pod cannot make it fit elsewhere either: it adds
   * capacity and topology domains, and a new domain only tightens a spread constraint. When its labels
   * changed (`relabeled`), the topology domains of the node and its pods moved, so pods with a topology spread
   * or pod (anti-)affinity are queued as well, and every pod when a pod bound there has a required
   * anti-affinity (its domain moved).
   */
  private retryFor(node: Node, relabeled = false): void {
    if (
      relabeled &&
      this.pods.cache
        .byIndex(IndexNodeName, node.metadata.name ?? '')
        .some((p) => requiredTerms(p.spec.affinity?.podAntiAffinity) > 0)
    ) {
      this.retryAll();
      return;
    }
    const empty = buildNodeInfo(this.rules, node, []);
    this.retryAll((pod) => (relabeled && hasPodTopology(pod)) || nodeCouldHost(this.rules, pod, empty));
  }

  private retryAffinityWaiters(): void {
    for (const k of this.waitingForAffinity) this.queue.add(k);
  }

  /**
   * Drops the node info of `name` (its pods or spec changed): rebuilt by the next {@link snapshot}. At once, not at
   * the next cycle, so an info never holds superseded versions of its pods after the scheduler has nothing left to
   * do (at 10,000 pods, a second copy of every bound pod).
   */
  private invalidate(name: string): void {
    this.nodeInfos.delete(name);
  }

  /** Up-to-date node infos (recomputed for nodes whose pods or spec changed), sorted by name. */
  private snapshot(): NodeInfo[] {
    const out: NodeInfo[] = [];
    for (const node of this.nodes.cache.list()) {
      const name = node.metadata.name ?? '';
      let info = this.nodeInfos.get(name);
      if (!info || info.node !== node) {
        const pods = this.pods.cache.byIndex(IndexNodeName, name).filter((p) => !isPodTerminal(p));
        for (const a of this.assumed.values()) {
          if (a.spec.nodeName !== name) continue;
          const cached = this.pods.cache.get(objectKey(a));
          if (cached && !cached.spec.nodeName) pods.push(a);
        }
        info = buildNodeInfo(this.rules, node, pods);
        this.nodeInfos.set(name, info);
      }
      out.push(info);
    }
    for (const name of [...this.nodeInfos.keys()])
      if (!this.nodes.cache.get(name)) this.nodeInfos.delete(name);
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * One scheduling cycle over `key` and every other key ready in the queue (kube-scheduler pops one pod at a
   * time, but its cycles take microseconds; here the API round trips dominate, so the pods of a cycle are
   * decided in memory against one snapshot and their writes go out concurrently). Results of the extra keys
   * are applied here with the same semantics as {@link runWorkers}; the result for `key` is returned.
   */
  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const keys = [key];
    for (let k = this.queue.tryGet(); k !== undefined; k = this.queue.tryGet()) keys.push(k);
    for (const k of keys) this.backoffQ.delete(k);
    let results = new Map<string, ReconcileResult | Error | undefined>();
    this.inCycle = true;
    try {
      results = await this.scheduleCycle(keys);
    } finally {
      this.inCycle = false;
      for (const k of keys) {
        if (k === key) continue;
        const r = results.get(k);
        if (r instanceof Error) {
          this.queue.addRateLimited(k);
          this.onError(r, `kube-scheduler ${k}`);
        } else {
          this.queue.forget(k);
          if (r?.requeueAfter !== undefined) this.queue.addAfter(k, r.requeueAfter);
        }
        this.queue.done(k);
      }
      this.popBackoff();
    }
    const own = results.get(key);
    if (own instanceof Error) throw own;
    return own;
  }

  /** Decides every pod of `keys` in queue order, starts their writes and waits for the status writes. */
  private async scheduleCycle(
    keys: readonly string[],
  ): Promise<Map<string, ReconcileResult | Error | undefined>> {
    const results = new Map<string, ReconcileResult | Error | undefined>();
    const pods: Pod[] = [];
    for (const key of keys) {
      const pod = this.pods.cache.get(key);
      if (pod && this.isPending(pod) && !this.assumed.has(key)) pods.push(pod);
    }
    if (pods.length === 0) return results;
    pods.sort(queueOrder);
    const nodes = this.snapshot();
    const nsLabels = (ns: string) => this.namespaces.cache.get(ns)?.metadata?.labels;
    const mark = (pod: Pod, reason: string, message: string, event: boolean, after?: number) => {
      if (after !== undefined) results.set(objectKey(pod), { requeueAfter: after });
      if (reason === 'Unschedulable') {
        const k = objectKey(pod);
        this.attempts.set(k, (this.attempts.get(k) ?? 0) + 1);
        this.lastFailure.set(k, this.clock.now());
      }
      this.wantStatus(pod, reason, message, event);
    };
    let volumes: ((pod: Pod) => VolumeTopologyResult) | undefined;
    // Pods of one shape (namespace, spec, labels, annotations: the replicas of a Deployment) get the same verdict
    // against the same snapshot, so once one fails the others fail with the same message without running the
    // filters again, until a pod is placed in this cycle (a placement changes the snapshot; with a topology
    // spread or pod affinity it can make room). Exact, and at 10,000 pending pods most of a failing cycle's work.
    const failedShapes = new Map<string, string>();
    for (const pod of pods) {
      const key = objectKey(pod);
      const gates = (pod.spec as { schedulingGates?: unknown[] }).schedulingGates;
      if (Array.isArray(gates) && gates.length > 0) {
        mark(pod, 'SchedulingGated', 'Scheduling is blocked due to non-empty scheduling gates', false);
        continue;
      }
      const shape = this.rules.hasClaimVolumes(pod) ? undefined : podSchedulingView(pod);
      const known = shape === undefined ? undefined : failedShapes.get(shape);
      if (known !== undefined) {
        mark(pod, 'Unschedulable', known, true, this.retrySeconds);
        continue;
      }
      let withVolumes = pod;
      if (this.rules.hasClaimVolumes(pod)) {
        volumes ??= this.rules.volumeTopology({
          persistentVolumeClaims: this.storage[0]!.cache.list() as PersistentVolumeClaim[],
          persistentVolumes: this.storage[1]!.cache.list() as PersistentVolume[],
          storageClasses: this.storage[2]!.cache.list() as StorageClass[],
        });
        const v = volumes(pod);
        if ('problem' in v) {
          mark(pod, 'Unschedulable', v.problem, true, this.retrySeconds);
          continue;
        }
        withVolumes = v.pod;
      }
      const state = prepare(this.rules, withVolumes, nodes, nsLabels, this.counts);
      const feasible: NodeInfo[] = [];
      const failures: string[][] = [];
      for (const n of nodes) {
        const r = filterNode(this.rules, state, n);
        if (r.length === 0) feasible.push(n);
        else failures.push(r);
      }
      const target = pickNode(this.rules, state, feasible, this.scoring);
      if (target === undefined) {
        // the reasons are counted only for the message of a pod that fits nowhere
        const reasons = new Map<string, number>();
        for (const r of failures) for (const x of r) reasons.set(x, (reasons.get(x) ?? 0) + 1);
        const message = fitErrorMessage(nodes.length, reasons);
        if (shape !== undefined) failedShapes.set(shape, message);
        mark(pod, 'Unschedulable', message, true, this.retrySeconds);
        continue;
      }
      failedShapes.clear();
      // assume the pod on the node, then bind asynchronously (kube-scheduler's binding cycle)
      const bound: Pod = { ...pod, spec: { ...pod.spec, nodeName: target } };
      this.assumed.set(key, bound);
      this.pending.delete(key);
      this.attempts.delete(key);
      this.lastFailure.delete(key);
      this.waitingForAffinity.delete(key);
      const info = this.nodeInfos.get(target);
      if (info) addPodToNodeInfo(this.rules, info, bound, state.requests);
      void this.limit(() => this.bind(pod, target));
      this.retryAffinityWaiters();
    }
    return results;
  }

  /**
   * Records the latest outcome of a failed attempt for `pod` and makes sure a writer picks it up. Writes are
   * coalesced per pod: a pod tried several times while its write waits gets one write with the last message.
   */
  private wantStatus(pod: Pod, reason: string, message: string, event: boolean): void {
    const key = objectKey(pod);
    if (this.written.get(key) === `${reason}\u0000${message}`) return;
    this.firstMarks.wanted.delete(key);
    this.remarks.wanted.delete(key);
    const marked =
      this.written.has(key) ||
      (pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False') ?? false);
    const q = marked ? this.remarks : this.firstMarks;
    q.wanted.set(key, { reason, message, event });
    while (q.writers < q.max && q.wanted.size > q.writers) {
      q.writers++;
      const p: Promise<void> = this.statusWriter(q).finally(() => {
        q.writers--;
        this.inflight.delete(p);
      });
      this.inflight.add(p);
    }
  }

  /** Writes the statuses wanted in `q` (oldest first, skipping pods whose previous write is still in flight) until none is left. */
  private async statusWriter(q: StatusQueue): Promise<void> {
    for (;;) {
      let next: [string, { reason: string; message: string; event: boolean }] | undefined;
      for (const e of q.wanted) {
        if (this.statusWriting.has(e[0])) continue;
        next = e;
        break;
      }
      if (!next) return;
      const [key, want] = next;
      q.wanted.delete(key);
      const pod = this.pods.cache.get(key);
      if (!pod || !this.isPending(pod) || this.assumed.has(key)) continue;
      this.statusWriting.add(key);
      try {
        const changed = await this.setUnschedulable(pod, want.reason, want.message);
        if (changed) {
          this.statusWrites++;
          this.written.set(key, `${want.reason}\u0000${want.message}`);
        }
        if (changed && want.event && this.recorder)
          void this.recorder.publish(pod, 'Warning', 'FailedScheduling', want.message);
      } catch (err) {
        this.onError(err, `kube-scheduler status ${key}`);
        this.queue.addRateLimited(key);
      } finally {
        this.statusWriting.delete(key);
      }
    }
  }

  /**
   * Runs `fn` once fewer than {@link MAX_INFLIGHT_WRITES} writes are in flight (first come, first served).
   * The returned promise settles when `fn` does; `fn` must not reject.
   */
  private async limit(fn: () => Promise<void>): Promise<void> {
    if (this.inflight.size >= MAX_INFLIGHT_WRITES) await new Promise<void>((r) => this.writeWaiters.push(r));
    const p: Promise<void> = fn().finally(() => {
      this.inflight.delete(p);
      this.writeWaiters.shift()?.();
    });
    this.inflight.add(p);
    return p;
  }

  /** POSTs the Binding; on failure forgets the assumed pod and retries it. Never rejects. */
  private async bind(pod: Pod, target: string): Promise<void> {
    const key = objectKey(pod);
    const ns = encodeURIComponent(pod.metadata.namespace ?? 'default');
    const name = encodeURIComponent(pod.metadata.name ?? '');
    try {
      await this.client.request('POST', `/api/v1/namespaces/${ns}/pods/${name}/binding`, {
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
          target: { apiVersion: 'v1', kind: 'Node', name: target },
        },
        discardBody: true,
      });
    } catch (err) {
      this.assumed.delete(key);
      this.invalidate(target);
      if (isConflict(err) || isNotFound(err)) return; // bound elsewhere or deleted meanwhile
      this.onError(err, `kube-scheduler bind ${key} to ${target}`);
      const cur = this.pods.cache.get(key);
      if (cur && this.isPending(cur)) this.pending.add(key);
      this.queue.addRateLimited(key);
      return;
    }
    this.bindings++;
    if (this.recorder)
      void this.recorder.publish(
        pod,
        'Normal',
        'Scheduled',
        `Successfully assigned ${pod.metadata.namespace}/${pod.metadata.name} to ${target}`,
      );
  }

  /** Stops the worker and waits for bindings in flight. */
  override async stop(): Promise<void> {
    if (this.backoffTimer) this.clock.clearTimeout(this.backoffTimer);
    this.backoffTimer = undefined;
    this.backoffQ.clear();
    await super.stop();
    while (this.inflight.size > 0 || this.writeWaiters.length > 0) {
      await Promise.all([...this.inflight]);
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * Sets `PodScheduled=False` with `reason`/`message` through the status subresource; no write when
   * unchanged. Resolves true when the condition was written.
   */
  private async setUnschedulable(pod: Pod, reason: string, message: string): Promise<boolean> {
    const conditions = withCondition(
      pod.status?.conditions,
      { type: 'PodScheduled', status: 'False', reason, message },
      rfc3339(this.clock.now()),
    );
    if (!conditions) return false;
    try {
      await this.client.patchNoResult(
        'Pod',
        pod.metadata.name ?? '',
        pod.metadata.namespace,
        { metadata: { resourceVersion: pod.metadata.resourceVersion }, status: { conditions } },
        { subresource: 'status' },
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (isConflict(err)) {
        this.queue.addAfter(objectKey(pod), 0.05);
        return false;
      }
      throw err;
    }
  }
}

/** kube-scheduler's PrioritySort: higher `spec.priority` first, then older (`creationTimestamp`) first. */
export function queueOrder(a: Pod, b: Pod): number {
  return (
    (b.spec.priority ?? 0) - (a.spec.priority ?? 0) ||
    (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '')
  );
}

/**
 * {@link podSchedulingView} per pod object. Informer objects are replaced, never changed, on an update, so a
 * pod's view is computed once per version instead of at every cycle that tries it (at 10,000 pending pods, each
 * node event queues them all again: 1.7 of 32 CPU-s of `capenter start` went to the stringify). The cached
 * string also keeps its hash, so the failed-shape lookup no longer hashes a 1-KB key per attempt.
 */
const schedulingViews = new WeakMap<Pod, string>();

/**
 * The parts of a pod that decide where it fits (kube-scheduler retries a pending pod when they change): its
 * namespace, spec, labels and annotations as one JSON string, equal for the replicas of one template.
 */
function podSchedulingView(p: Pod): string {
  let v = schedulingViews.get(p);
  if (v === undefined) {
    v = `${p.metadata.namespace ?? ''}\u0000${JSON.stringify([p.spec, p.metadata.labels, p.metadata.annotations])}`;
    schedulingViews.set(p, v);
  }
  return v;
}

/** Number of required terms of a pod (anti-)affinity. */
function requiredTerms(
  a: { requiredDuringSchedulingIgnoredDuringExecution?: unknown[] } | undefined,
): number {
  return a?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0;
}

/** True when `pod` has a topology spread constraint or a required pod affinity or anti-affinity. */
function hasPodTopology(pod: Pod): boolean {
  const a = pod.spec.affinity;
  return (
    (pod.spec.topologySpreadConstraints?.length ?? 0) > 0 ||
    requiredTerms(a?.podAffinity) > 0 ||
    requiredTerms(a?.podAntiAffinity) > 0
  );
}

/** The parts of a node that decide where pods fit (changes trigger a retry of pending pods). */
function schedulingView(n: Node): string {
  return JSON.stringify([
    n.metadata.labels,
    n.spec?.taints,
    n.spec?.unschedulable,
    n.status?.allocatable,
    n.status?.conditions?.find((c) => c.type === 'Ready')?.status,
  ]);
}
