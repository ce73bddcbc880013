/**
 * Tiered, PDB-safe drain for Node termination, after kubernetes-sigs/karpenter
 * `pkg/controllers/node/termination/terminator/{terminator.go,eviction.go}` and `pkg/utils/pod`:
 *
 * - pods past their delete time (the node's termination deadline minus the pod's own
 *   `terminationGracePeriodSeconds`) are DELETEd with the remaining seconds as grace period, regardless of PDBs and
 *   `karpenter.sh/do-not-disrupt` ({@link podDeleteTime});
 * - evictable pods ({@link isEvictable}) are evicted through the Eviction API in tiers: non-critical non-DaemonSet,
 *   non-critical DaemonSet, critical non-DaemonSet, critical DaemonSet (critical = priority class
 *   `system-cluster-critical` / `system-node-critical`); a tier starts only when every pod of the previous tiers
 *   is gone (terminating and `do-not-disrupt` pods hold the next tier, upstream `groupPodsByPriority` over the
 *   pods waiting eviction);
 * - a 429 (PDB) is retried with per-pod exponential backoff (1 s → 10 s) and reported as a Warning Event
 *   `FailedDraining` on the Node; 404/409 mean the pod is gone;
 * - the node is drained once no pod is waiting eviction ({@link isWaitingEviction}): pods protected by
 *   `karpenter.sh/do-not-disrupt` (`"true"`, or a Go duration not yet elapsed since the pod started; see
 *   `apis/donotdisrupt.ts`) are not evicted, they keep the node waiting until their protection ends or their
 *   delete time; pods
 *   tolerating `karpenter.sh/disrupted:NoSchedule`, static/mirror pods, terminal pods and pods stuck terminating
 *   (more than 1 minute past their deletionTimestamp) do not hold the drain.
 */
import type { KubeObject, Pod, Toleration } from '../../../apis/core.ts';
import {
  type DoNotDisruptState,
  doNotDisruptState,
  isDoNotDisruptActive,
} from '../../../apis/donotdisrupt.ts';
import { TaintDisrupted } from '../../../apis/labels.ts';
import { isActive, isOwnedByDaemonSet, isOwnedByNode, isTerminal } from '../../../apis/pod.ts';
import type { KubeClient } from '../../../kube/client.ts';

/** Outcome of one drain pass: pods still on the Node (0 = drained) and what was done. */
export interface DrainResult {
  /** Pods still waiting eviction (0 = drained). */
  remaining: number;
  /** `namespace/name` of pods evicted in this pass. */
  evicted: string[];
  /** `namespace/name` of pods deleted (deadline) in this pass. */
  deleted: string[];
  /** Evictions refused now (PDB 429 and the like), as `namespace/name: message`. */
  blocked: string[];
  /** The tier evicted from in this pass (0..3, see {@link drainTier}), when any pod was evictable. */
  tier?: number;
}

/** Priority classes upstream treats as critical (drained last). */
export const CriticalPriorityClasses: readonly string[] = ['system-cluster-critical', 'system-node-critical'];
/** Seconds after its deletionTimestamp a terminating pod counts as stuck (upstream `IsStuckTerminating`: 1 min). */
export const StuckTerminatingSeconds = 60;
/** Kubernetes' default `terminationGracePeriodSeconds`. */
export const DefaultPodTerminationGracePeriodSeconds = 30;

function tolerates(tols: readonly Toleration[] | undefined, key: string, effect: string): boolean {
  return (tols ?? []).some((t) => {
    const keyOk = t.operator === 'Exists' ? !t.key || t.key === key : t.key === key && !t.value;
    return keyOk && (!t.effect || t.effect === effect);
  });
}

/** True when the pod tolerates `karpenter.sh/disrupted:NoSchedule` (upstream leaves such pods running). */
export function toleratesDisrupted(pod: Pod): boolean {
  return tolerates(pod.spec?.tolerations, TaintDisrupted.key, TaintDisrupted.effect);
}

/**
 * True while the pod's `karpenter.sh/do-not-disrupt` protects it at `nowMs` (ms since the epoch): `"true"`, or a
 * Go duration not yet elapsed since its `status.startTime`; an invalid value protects nothing (upstream
 * `IsDoNotDisruptActive`; see `apis/donotdisrupt.ts`).
 */
export function hasDoNotDisrupt(pod: Pod, nowMs: number): boolean {
  return isDoNotDisruptActive(pod, nowMs);
}

/** True when the pod has been terminating for more than {@link StuckTerminatingSeconds} (ms clock `nowMs`). */
export function isStuckTerminating(pod: Pod, nowMs: number): boolean {
  const del = Date.parse(pod.metadata.deletionTimestamp ?? '');
  return Number.isFinite(del) && nowMs - del > StuckTerminatingSeconds * 1000;
}

/**
 * True while the drain must wait for the pod to leave the Node (upstream `IsWaitingEviction`): not terminal, not
 * stuck terminating, not tolerating the disrupted taint, not static. Pure.
 */
export function isWaitingEviction(pod: Pod, nowMs: number): boolean {
  return (
    !isTerminal(pod) && !isStuckTerminating(pod, nowMs) && !toleratesDisrupted(pod) && !isOwnedByNode(pod)
  );
}

/**
 * True when the drain may evict the pod at `nowMs` (upstream `IsEvictable`): active (not terminal, not
 * terminating), not tolerating the disrupted taint, not static, not protected by `karpenter.sh/do-not-disrupt`
 * ({@link hasDoNotDisrupt}). Pure.
 */
export function isEvictable(pod: Pod, nowMs: number): boolean {
  return (
    !isTerminal(pod) &&
    !pod.metadata.deletionTimestamp &&
    !toleratesDisrupted(pod) &&
    !isOwnedByNode(pod) &&
    !hasDoNotDisrupt(pod, nowMs)
  );
}

/**
 * Compatibility predicate kept from the basic drain: true when the drain must remove `pod` before the Node goes
 * away (waiting eviction, ignoring the stuck-terminating rule). DaemonSet pods are drained too (last tiers).
 */
export function isDrainable(pod: Pod): boolean {
  return !isTerminal(pod) && !toleratesDisrupted(pod) && !isOwnedByNode(pod);
}

/** Drain tier of a pod: 0 non-critical non-daemon, 1 non-critical daemon, 2 critical non-daemon, 3 critical daemon. */
export function drainTier(pod: Pod): number {
  const critical = CriticalPriorityClasses.includes(pod.spec?.priorityClassName ?? '');
  return (critical ? 2 : 0) + (isOwnedByDaemonSet(pod) ? 1 : 0);
}

/**
 * When (ms since the epoch) the pod must be deleted so it still gets its full `terminationGracePeriodSeconds`
 * (default 30) before the node's termination deadline `deadlineMs` (upstream `podDeleteTimeWithGracePeriod`).
 */
export function podDeleteTime(pod: Pod, deadlineMs: number): number {
  const tgp = pod.spec?.terminationGracePeriodSeconds ?? DefaultPodTerminationGracePeriodSeconds;
  return deadlineMs - tgp * 1000;
}

/** What one drain pass should do, computed purely from the pods on the node. */
export interface DrainPlan {
  /** Pods to DELETE now with `graceSeconds` (past their delete time). */
  delete: Array<{ pod: Pod; graceSeconds: number }>;
  /** Pods of the first non-empty tier, to evict now. */
  evict: Pod[];
  /** The tier of `evict`. */
  tier?: number;
  /** Pods the drain is still waiting for (0 = drained). */
  waiting: Pod[];
  /**
   * Pods whose eviction was decided by their `karpenter.sh/do-not-disrupt` annotation (evictable but for it; any
   * value but absent), with its reading at `nowMs`: the controller publishes upstream's Events for them.
   */
  doNotDisrupt: Array<{ pod: Pod; state: DoNotDisruptState }>;
}

/**
 * Plans one drain pass over `pods` (those bound to the node) at `nowMs`, with the node's termination deadline
 * `deadlineMs` (undefined: no `terminationGracePeriod`, nothing is force-deleted). Pure.
 */
export function planDrain(pods: readonly Pod[], nowMs: number, deadlineMs: number | undefined): DrainPlan {
  const plan: DrainPlan = { delete: [], evict: [], waiting: [], doNotDisrupt: [] };
  const deleting = new Set<Pod>();
  if (deadlineMs !== undefined) {
    for (const pod of pods) {
      if (!isWaitingEviction(pod, nowMs) || pod.metadata.deletionTimestamp) continue;
      if (nowMs >= podDeleteTime(pod, deadlineMs)) {
        plan.delete.push({ pod, graceSeconds: Math.max(0, Math.floor((deadlineMs - nowMs) / 1000)) });
        deleting.add(pod);
      }
    }
  }
  // tiers group every pod the drain waits for (terminating ones and do-not-disrupt ones included), so a tier
  // is evicted only once every pod of the earlier tiers is gone, not merely asked to leave (upstream PR #1478)
  const tiers: Pod[][] = [[], [], [], []];
  for (const pod of pods) {
    if (!deleting.has(pod) && isActive(pod) && !toleratesDisrupted(pod) && !isOwnedByNode(pod)) {
      const state = doNotDisruptState(pod, nowMs);
      if (state.state !== 'none') plan.doNotDisrupt.push({ pod, state });
    }
    if (isWaitingEviction(pod, nowMs)) tiers[drainTier(pod)]?.push(pod);
  }
  const first = tiers.findIndex((t) => t.length > 0);
  if (first >= 0) {
    plan.evict = (tiers[first] ?? []).filter((p) => !deleting.has(p) && isEvictable(p, nowMs));
    plan.tier = first;
  }
  plan.waiting = pods.filter((p) => isWaitingEviction(p, nowMs));
  return plan;
}

/** `namespace/name`. */
export function podID(pod: Pod): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? ''}`;
}

/** Hooks the {@link Drainer} reports through (Events and metrics live in the controller). */
export interface DrainHooks {
  /** An eviction request returned `code` (200, 429, 404, ...). */
  onEvictionRequest?(code: number): void;
  /** A pod was evicted. */
  onEvicted?(pod: Pod): void;
  /** A pod was deleted at `graceSeconds` because the node's deadline is near. */
  onDeleted?(pod: Pod, graceSeconds: number): void;
  /** An eviction was refused (429 PDB, 500 several PDBs, ...). */
  onBlocked?(pod: Pod, message: string, httpStatus: number): void;
  /** The pod's `karpenter.sh/do-not-disrupt` annotation was read as `state` ({@link DrainPlan.doNotDisrupt}). */
  onDoNotDisrupt?(pod: Pod, state: DoNotDisruptState): void;
}

/** Options of {@link Drainer}. */
export interface DrainerOptions {
  client: KubeClient;
  /** ms since the epoch. */
  now: () => number;
  /** First retry delay after a refused eviction, seconds (default 1). */
  baseBackoffSeconds?: number;
  /** Max retry delay, seconds (default 10). */
  maxBackoffSeconds?: number;
}

/**
 * Executes drain passes and remembers per-pod eviction backoff across passes (upstream's eviction queue with its
 * exponential rate limiter). One instance per controller.
 */
export class Drainer {
  private readonly backoff = new Map<string, { failures: number; nextAt: number }>();

  constructor(private readonly opts: DrainerOptions) {}

  /**
   * One pass over the pods bound to `nodeName` (see {@link planDrain}) with the node's termination deadline
   * `deadlineMs` (ms since the epoch, or undefined). Connection errors throw; API refusals are reported in the
   * result and through `hooks`.
   */
  async drain(
    nodeName: string,
    deadlineMs: number | undefined,
    hooks: DrainHooks = {},
  ): Promise<DrainResult> {
    const client = this.opts.client;
    const pods = (await client.list('Pod', { fieldSelector: `spec.nodeName=${nodeName}` })).items.filter(
      (p) => p.spec?.nodeName === nodeName,
    );
    const now = this.opts.now();
    const plan = planDrain(pods, now, deadlineMs);
    const out: DrainResult = {
      remaining: plan.waiting.length,
      evicted: [],
      deleted: [],
      blocked: [],
    };
    if (plan.tier !== undefined) out.tier = plan.tier;
    for (const { pod, state } of plan.doNotDisrupt) hooks.onDoNotDisrupt?.(pod, state);
    for (const { pod, graceSeconds } of plan.delete) {
      if (
        await client.tryDelete('Pod', pod.metadata.name as string, pod.metadata.namespace, {
          gracePeriodSeconds: graceSeconds,
        })
      ) {
        out.deleted.push(podID(pod));
        hooks.onDeleted?.(pod, graceSeconds);
      }
    }
    await Promise.all(
      plan.evict.map(async (pod) => {
        const key = pod.metadata.uid ?? podID(pod);
        const b = this.backoff.get(key);
        if (b && b.nextAt > now) {
          out.blocked.push(`${podID(pod)}: waiting to retry eviction`);
          return;
        }
        const r = await client.evict(pod);
        hooks.onEvictionRequest?.(r.ok ? 200 : r.httpStatus);
        if (r.ok || r.code === 'NotFound' || r.code === 'Conflict') {
          this.backoff.delete(key);
          if (r.ok) {
            out.evicted.push(podID(pod));
            hooks.onEvicted?.(pod);
          }
          return;
        }
        const failures = (b?.failures ?? 0) + 1;
        const base = this.opts.baseBackoffSeconds ?? 1;
        const delay = Math.min(this.opts.maxBackoffSeconds ?? 10, base * 2 ** (failures - 1));
        this.backoff.set(key, { failures, nextAt: now + delay * 1000 });
        out.blocked.push(`${podID(pod)}: ${r.message}`);
        hooks.onBlocked?.(pod, r.message, r.httpStatus);
      }),
    );
    if (this.backoff.size > 10_000) this.backoff.clear();
    return out;
  }

  /** Forgets the backoff of pods that no longer exist (call when a node finished draining). */
  forget(pods: readonly KubeObject[]): void {
    for (const p of pods) this.backoff.delete(p.metadata?.uid ?? '');
  }
}

/**
 * One drain pass without remembered backoff (kept for callers of the basic drain). `force` deletes every waiting
 * pod at once with grace period 0 (the node's deadline has passed).
 */
export async function drainNode(client: KubeClient, nodeName: string, force: boolean): Promise<DrainResult> {
  const drainer = new Drainer({ client, now: () => Date.now() });
  return drainer.drain(nodeName, force ? 0 : undefined);
}
