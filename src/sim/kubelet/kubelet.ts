/**
 * kubelet stand-in: makes Nodes and their pods behave as if a kubelet ran on each node.
 * - Node: `Ready=True` (with the usual pressure conditions, `nodeInfo`, `addresses`) after a delay from when
 *   the node is first seen (default 0–2 s, derived from the node name so it is deterministic);
 *   `status.capacity/allocatable` are left as given. No heartbeats.
 * - Startup taints: keys listed in `startupTaintRemoval` are removed that many seconds after first seen
 *   on the node, as a CNI/CAPI agent would (e.g. `node.cluster.x-k8s.io/uninitialized: 5`).
 * - Pods bound to a Ready node (or `hostNetwork` pods on any node) become `Running` with PodReadyToStartContainers,
 *   Initialized, ContainersReady, Ready and PodScheduled `True` after `podStartDelaySeconds`.
 * - Pods being deleted (graceful deletion, see the API server's `podGracefulDeletion`) are removed with
 *   `gracePeriodSeconds: 0` once their grace period (optionally capped) has passed on the clock.
 * - Pods annotated {@link AnnotationRunSeconds} whose `restartPolicy` is not `Always` finish after that
 *   many seconds of running: `Succeeded`, or `Failed` when {@link AnnotationExitCode} is non-zero.
 * A node annotated {@link AnnotationKubeletStopped}`: "true"` is left alone (simulates a dead kubelet).
 * Not simulated: admission (OutOfcpu), probes, restarts, NoExecute taint eviction, images, volumes.
 */
import type { Node, NodeCondition, Pod, PodCondition } from '../../apis/core.ts';
import { objectKey } from '../../kube/client.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ResourceRef } from '../../kube/resources.ts';
import { type ReconcileResult, runWorkers, WorkQueue } from '../../kube/workqueue.ts';
import {
  ensureIndex,
  fnv32a,
  isPodTerminal,
  rfc3339,
  SimController,
  type SimControllerOptions,
} from '../workloads/controller.ts';

/** Pod annotation: seconds a pod runs before it finishes (only when `restartPolicy` is not `Always`). */
export const AnnotationRunSeconds = 'sim.capenter.dev/run-seconds';
/** Pod annotation: exit code of a finishing pod (default 0 → `Succeeded`; non-zero → `Failed`). */
export const AnnotationExitCode = 'sim.capenter.dev/exit-code';
/** Node annotation: `"true"` makes the kubelet stand-in ignore the node (no Ready, no pods started). */
export const AnnotationKubeletStopped = 'sim.capenter.dev/kubelet-stopped';

/** Options of {@link KubeletStandIn}. */
export interface KubeletOptions extends SimControllerOptions {
  /** Only nodes whose `spec.providerID` starts with this prefix (e.g. `kwok://`); default: every node. */
  providerIDPrefix?: string;
  /**
   * Seconds from first seeing a node until it reports Ready: a number, or a function of the node.
   * Default: 0–2 s, a deterministic function of the node name.
   */
  readyDelaySeconds?: number | ((node: Node) => number);
  /** Startup taint key → seconds after first seen on a node until it is removed. Default none. */
  startupTaintRemoval?: Record<string, number>;
  /** Seconds from a pod being bound (and the node Ready) until it runs (default 1). */
  podStartDelaySeconds?: number;
  /** Upper bound on a pod's termination grace period in seconds (default: none, the pod's grace period). */
  maxTerminationSeconds?: number;
  /** `status.nodeInfo.kubeletVersion` (default `v1.32.0`). */
  kubeletVersion?: string;
}

const IndexNodeName = 'spec.nodeName';

/** Default Ready delay: 0–2 s from a hash of the node name. */
export function defaultReadyDelaySeconds(node: Node): number {
  return (fnv32a(node.metadata.name ?? '') % 2001) / 1000;
}

/** The kubelet stand-in controller (nodes and pods). Construct, `start()`, `stop()`. */
export class KubeletStandIn extends SimController {
  private readonly pods: Informer<'Pod'>;
  private readonly nodes: Informer<'Node'>;
  private readonly prefix: string | undefined;
  private readonly readyDelay: (node: Node) => number;
  private readonly taintDelays: Record<string, number>;
  private readonly startDelay: number;
  private readonly maxTermination: number | undefined;
  private readonly kubeletVersion: string;
  /** node name → ms first seen */
  private readonly nodeSeen = new Map<string, number>();
  /** `node\0taintKey` → ms first seen */
  private readonly taintSeen = new Map<string, number>();
  /** pod key → ms first seen bound (and runnable) */
  private readonly podSeen = new Map<string, number>();
  /** pod uid → ms when it may be removed */
  private readonly terminating = new Map<string, number>();
  /** node name → next pod IP suffix */
  private readonly ipCounters = new Map<string, number>();
  /**
   * Node names, worked by a worker of their own: each node has its own kubelet, so a node's `Ready` never waits
   * behind the pods of other nodes in the pod queue (at 10,000 pods a new node waited 15 s there).
   */
  private readonly nodeQueue: WorkQueue<string>;
  private nodeLoop: Promise<void> | undefined;

  constructor(opts: KubeletOptions) {
    super('kubelet', opts, 4);
    this.pods = opts.informers.informerFor('Pod');
    this.nodes = opts.informers.informerFor('Node');
    ensureIndex(this.pods.cache, IndexNodeName, (p: Pod) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    this.prefix = opts.providerIDPrefix;
    const rd = opts.readyDelaySeconds;
    this.readyDelay = typeof rd === 'function' ? rd : rd !== undefined ? () => rd : defaultReadyDelaySeconds;
    this.taintDelays = { ...(opts.startupTaintRemoval ?? {}) };
    this.startDelay = opts.podStartDelaySeconds ?? 1;
    this.nodeQueue = new WorkQueue<string>({ clock: opts.clock, name: 'kubelet-nodes' });
    this.maxTermination = opts.maxTerminationSeconds;
    this.kubeletVersion = opts.kubeletVersion ?? 'v1.32.0';
  }

  protected informersUsed(): Array<Informer<ResourceRef>> {
    return [this.pods, this.nodes] as Array<Informer<ResourceRef>>;
  }

  /** True when this kubelet runs `node`. */
  manages(node: Node): boolean {
    if (node.metadata.annotations?.[AnnotationKubeletStopped] === 'true') return false;
    if (this.prefix === undefined || this.prefix === '') return true;
    return (node.spec?.providerID ?? '').startsWith(this.prefix);
  }

  protected register(): Array<() => void> {
    const podKey = (p: Pod) => `pod:${objectKey(p)}`;
    const offPods = this.pods.on({
      add: (p) => {
        if (p.spec.nodeName) this.queue.add(podKey(p));
      },
      update: (_o, p) => {
        if (p.spec.nodeName) this.queue.add(podKey(p));
      },
      delete: (p) => {
        this.podSeen.delete(objectKey(p));
        if (p.metadata.uid) this.terminating.delete(p.metadata.uid);
      },
    });
    const offNodes = this.nodes.on({
      add: (n) => {
        this.nodeQueue.add(n.metadata.name ?? '');
        // pods bound before the node appeared
        for (const p of this.pods.cache.byIndex(IndexNodeName, n.metadata.name ?? ''))
          this.queue.add(podKey(p));
      },
      update: (o, n) => {
        this.nodeQueue.add(n.metadata.name ?? '');
        if (isReady(n) !== isReady(o) || this.manages(n) !== this.manages(o))
          for (const p of this.pods.cache.byIndex(IndexNodeName, n.metadata.name ?? ''))
            this.queue.add(podKey(p));
      },
      delete: (n) => {
        const name = n.metadata.name ?? '';
        this.nodeSeen.delete(name);
        this.ipCounters.delete(name);
        for (const k of [...this.taintSeen.keys()])
          if (k.startsWith(`${name}\u0000`)) this.taintSeen.delete(k);
      },
    });
    return [offPods, offNodes];
  }

  /** Starts the pod workers and the node worker (see {@link nodeQueue}) once the informers have synced. */
  override start(): void {
    super.start();
    if (this.nodeLoop) return;
    const used = this.informersUsed();
    this.nodeLoop = (async () => {
      try {
        await Promise.all(used.map((i) => i.waitForSync()));
      } catch {
        return; // stopped before sync
      }
      await runWorkers(
        this.nodeQueue,
        1,
        (name) => this.reconcileNode(name),
        (name, err) => this.onError(err, `${this.name} node:${name}`),
      );
    })();
  }

  /** Stops the node worker and the pod workers. */
  override async stop(): Promise<void> {
    this.nodeQueue.shutDown();
    await super.stop();
    await this.nodeLoop;
  }

  protected async reconcile(key: string): Promise<ReconcileResult | undefined> {
    if (key.startsWith('pod:')) return this.reconcilePod(key.slice(4));
    return undefined;
  }

  // ---------------------------------------------------------------- nodes

  private async reconcileNode(name: string): Promise<ReconcileResult | undefined> {
    const node = this.nodes.cache.get(name);
    if (!node || !this.manages(node) || node.metadata.deletionTimestamp) return undefined;
    const now = this.clock.now();
    let seen = this.nodeSeen.get(name);
    if (seen === undefined) {
      seen = now;
      this.nodeSeen.set(name, seen);
    }
    let nextDue = Number.POSITIVE_INFINITY;

    // startup taints removed by their agents
    const remove = new Set<string>();
    for (const t of node.spec?.taints ?? []) {
      const delay = this.taintDelays[t.key];
      if (delay === undefined) continue;
      const k = `${name}\u0000${t.key}`;
      let at = this.taintSeen.get(k);
      if (at === undefined) {
        at = now;
        this.taintSeen.set(k, at);
      }
      const due = at + delay * 1000;
      if (now >= due) remove.add(t.key);
      else nextDue = Math.min(nextDue, due);
    }
    if (remove.size > 0) {
      const taints = (node.spec?.taints ?? []).filter((t) => !remove.has(t.key));
      await this.client.patch('Node', name, undefined, {
        metadata: { resourceVersion: node.metadata.resourceVersion },
        spec: { taints: taints.length > 0 ? taints : null },
      });
      for (const k of remove) this.taintSeen.delete(`${name}\u0000${k}`);
      return undefined; // the update event brings us back for the rest
    }

    if (!isReady(node)) {
      const due = seen + Math.max(0, this.readyDelay(node)) * 1000;
      if (now >= due) {
        await this.client.patchStatus('Node', name, undefined, this.readyStatusPatch(node, now));
        return undefined;
      }
      nextDue = Math.min(nextDue, due);
    }
    return Number.isFinite(nextDue) ? { requeueAfter: Math.max(0.001, (nextDue - now) / 1000) } : undefined;
  }

  private readyStatusPatch(node: Node, now: number): Record<string, unknown> {
    const ts = rfc3339(now);
    const mine: NodeCondition[] = [
      cond(
        'MemoryPressure',
        'False',
        'KubeletHasSufficientMemory',
        'kubelet has sufficient memory available',
      ),
      cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
    ].map((c) => ({ ...c, lastHeartbeatTime: ts, lastTransitionTime: ts }));
    const types = new Set(mine.map((c) => c.type));
    const conditions = [...(node.status?.conditions ?? []).filter((c) => !types.has(c.type)), ...mine];
    const status: Record<string, unknown> = { conditions };
    const labels = node.metadata.labels ?? {};
    const name = node.metadata.name ?? '';
    if (!node.status?.addresses)
      status.addresses = [
        { type: 'InternalIP', address: nodeIP(name) },
        { type: 'Hostname', address: labels['kubernetes.io/hostname'] ?? name },
      ];
    if (!node.status?.nodeInfo) {
      const id = fnv32a(name).toString(16).padStart(8, '0');
      status.nodeInfo = {
        architecture: labels['kubernetes.io/arch'] ?? 'amd64',
        operatingSystem: labels['kubernetes.io/os'] ?? 'linux',
        kubeletVersion: this.kubeletVersion,
        kubeProxyVersion: this.kubeletVersion,
        containerRuntimeVersion: 'containerd://1.7.22',
        osImage: 'capenter simulated node',
        kernelVersion: '6.1.0-sim',
        machineID: id.repeat(4),
        systemUUID: id.repeat(4),
        bootID: id.repeat(4),
      };
    }
    if (!node.status?.daemonEndpoints) status.daemonEndpoints = { kubeletEndpoint: { Port: 10250 } };
    return { metadata: { resourceVersion: node.metadata.resourceVersion }, status };
  }

  // ---------------------------------------------------------------- pods

  private async reconcilePod(key: string): Promise<ReconcileResult | undefined> {
    const pod = this.pods.cache.get(key);
    if (!pod?.spec.nodeName) return undefined;
    const node = this.nodes.cache.get(pod.spec.nodeName);
    if (!node || !this.manages(node)) return undefined;
    const now = this.clock.now();

    if (pod.metadata.deletionTimestamp) return this.terminate(pod, now);
    if (isPodTerminal(pod)) return undefined;

    const phase = pod.status?.phase ?? 'Pending';
    if (phase === 'Pending') {
      if (!isReady(node) && !pod.spec.hostNetwork) return undefined; // node update brings us back
      let seen = this.podSeen.get(key);
      if (seen === undefined) {
        seen = now;
        this.podSeen.set(key, seen);
      }
      const due = seen + this.startDelay * 1000;
      if (now < due) return { requeueAfter: (due - now) / 1000 };
      await this.writePodStatus(pod, this.runningStatus(pod, node, now));
      this.podSeen.delete(key);
      return this.finishDelay(pod, now);
    }
    if (phase === 'Running') {
      const res = this.finishDelay(pod, now);
      if (res?.requeueAfter !== undefined && res.requeueAfter > 0) return res;
      if (res) {
        await this.writePodStatus(pod, this.finishedStatus(pod, now));
      }
    }
    return undefined;
  }

  /** For pods with a run time: `requeueAfter` until it is up (0 when due); undefined when the pod runs forever. */
  private finishDelay(pod: Pod, now: number): ReconcileResult | undefined {
    const run = Number(pod.metadata.annotations?.[AnnotationRunSeconds]);
    if (!Number.isFinite(run) || run < 0) return undefined;
    if ((pod.spec.restartPolicy ?? 'Always') === 'Always') return undefined;
    const started = Date.parse(String(pod.status?.startTime ?? ''));
    const start = Number.isFinite(started) ? started : now;
    const due = start + run * 1000;
    return { requeueAfter: Math.max(0, (due - now) / 1000) };
  }

  private async terminate(pod: Pod, now: number): Promise<ReconcileResult | undefined> {
    const uid = pod.metadata.uid ?? '';
    let due = this.terminating.get(uid);
    if (due === undefined) {
      let grace = pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
      if (this.maxTermination !== undefined) grace = Math.min(grace, this.maxTermination);
      if (isPodTerminal(pod)) grace = 0;
      due = now + Math.max(0, grace) * 1000;
      this.terminating.set(uid, due);
    }
    if (now < due) return { requeueAfter: (due - now) / 1000 };
    try {
      await this.client.delete('Pod', pod.metadata.name ?? '', pod.metadata.namespace, {
        gracePeriodSeconds: 0,
        ...(uid ? { preconditions: { uid } } : {}),
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
    return undefined;
  }

  private runningStatus(pod: Pod, node: Node, now: number): Record<string, unknown> {
    const ts = rfc3339(now);
    const name = node.metadata.name ?? '';
    const hostIP =
      (node.status?.addresses as Array<{ type: string; address: string }> | undefined)?.find(
        (a) => a.type === 'InternalIP',
      )?.address ?? nodeIP(name);
    const podIP = pod.spec.hostNetwork ? hostIP : this.nextPodIP(name);
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    const conditions: PodCondition[] = [
      { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: ts },
      { type: 'Initialized', status: 'True', lastTransitionTime: ts },
      { type: 'Ready', status: 'True', lastTransitionTime: ts },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: ts },
      {
        type: 'PodScheduled',
        status: 'True',
        lastTransitionTime: scheduled?.status === 'True' ? (scheduled.lastTransitionTime ?? ts) : ts,
      },
    ];
    const containerID = (c: string) =>
      `containerd://${fnv32a(`${pod.metadata.uid}/${c}`).toString(16).padStart(8, '0')}`;
    return {
      phase: 'Running',
      conditions,
      hostIP,
      hostIPs: [{ ip: hostIP }],
      podIP,
      podIPs: [{ ip: podIP }],
      startTime: ts,
      initContainerStatuses: (pod.spec.initContainers ?? []).map((c) =>
        c.restartPolicy === 'Always'
          ? containerStatus(c.name, c.image, containerID(c.name), { running: { startedAt: ts } }, true)
          : containerStatus(
              c.name,
              c.image,
              containerID(c.name),
              { terminated: { exitCode: 0, reason: 'Completed', startedAt: ts, finishedAt: ts } },
              false,
            ),
      ),
      containerStatuses: pod.spec.containers.map((c) =>
        containerStatus(c.name, c.image, containerID(c.name), { running: { startedAt: ts } }, true),
      ),
    };
  }

  private finishedStatus(pod: Pod, now: number): Record<string, unknown> {
    const ts = rfc3339(now);
    const code = Number(pod.metadata.annotations?.[AnnotationExitCode] ?? 0) || 0;
    const started = String(pod.status?.startTime ?? ts);
    const conditions = (pod.status?.conditions ?? []).map((c) =>
      c.type === 'Ready' || c.type === 'ContainersReady' || c.type === 'PodReadyToStartContainers'
        ? { ...c, status: 'False' as const, reason: 'PodCompleted', lastTransitionTime: ts }
        : c,
    );
    return {
      ...pod.status,
      phase: code === 0 ? 'Succeeded' : 'Failed',
      conditions,
      containerStatuses: pod.spec.containers.map((c) => ({
        ...containerStatus(c.name, c.image, undefined, {}, false),
        started: false,
        state: {
          terminated: {
            exitCode: code,
            reason: code === 0 ? 'Completed' : 'Error',
            startedAt: started,
            finishedAt: ts,
          },
        },
      })),
    };
  }

  private async writePodStatus(pod: Pod, status: Record<string, unknown>): Promise<void> {
    try {
      await this.client.patchNoResult(
        'Pod',
        pod.metadata.name ?? '',
        pod.metadata.namespace,
        { metadata: { resourceVersion: pod.metadata.resourceVersion }, status },
        { subresource: 'status' },
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw err; // conflict: retried with backoff on a fresher cache
    }
  }

  private nextPodIP(node: string): string {
    const n = (this.ipCounters.get(node) ?? 1) + 1;
    this.ipCounters.set(node, n);
    const h = fnv32a(`${node}/pods`);
    return `100.${64 + ((h >>> 16) & 63)}.${(h >>> 8) & 255}.${2 + (n % 252)}`;
  }
}

function cond(type: string, status: 'True' | 'False', reason: string, message: string): NodeCondition {
  return { type, status, reason, message };
}

function containerStatus(
  name: string,
  image: string | undefined,
  containerID: string | undefined,
  state: Record<string, unknown>,
  ready: boolean,
): Record<string, unknown> {
  return {
    name,
    image: image ?? '',
    imageID: image ? `${image}@sha256:${'0'.repeat(64)}` : '',
    ...(containerID ? { containerID } : {}),
    ready,
    started: ready,
    restartCount: 0,
    state,
  };
}

/** True when the node has `Ready=True`. */
function isReady(node: Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** A stable private IP for a node name (10.x.y.z). */
export function nodeIP(name: string): string {
  const h = fnv32a(name);
  return `10.${(h >>> 16) & 255}.${(h >>> 8) & 255}.${1 + ((h & 255) % 254)}`;
}
