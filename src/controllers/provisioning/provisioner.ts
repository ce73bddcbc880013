/**
 * The provisioner (upstream kubernetes-sigs/karpenter `pkg/controllers/provisioning/provisioner.go`): a
 * singleton loop that waits for a batch window, checks that cluster state is synced, simulates scheduling of the
 * pending pods against existing nodes, in-flight NodeClaims and the NodePools (`scheduling/solve`), and creates
 * one NodeClaim per planned node. Pods placed on existing or in-flight capacity, and the pods of each created
 * NodeClaim, are nominated (state + `Nominated` Event, rate-limited as upstream); pods that cannot be placed get a `FailedScheduling`
 * Warning. Never creates from a partial view: a pass is skipped until state is synced, and each created
 * NodeClaim enters state at once, so the next pass counts it in-flight. NodePool limits are checked again right
 * before each create against current usage.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { KubeObject, Pod } from '../../apis/core.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import type { CloudProvider, InstanceType } from '../../cloudprovider/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { objectRef } from '../../kube/logger.ts';
import type { PreferencePolicy } from '../../scheduling/preferencepolicy.ts';
import { solve } from '../../scheduling/scheduler.ts';
import type {
  MinValuesPolicy,
  NodeClaimPlan,
  SchedulingInput,
  SchedulingResult,
  Unschedulable,
} from '../../scheduling/types.ts';
import type { Cluster } from '../../state/cluster.ts';
import { NOMINATION_TTL_SECONDS } from '../../state/cluster.ts';
import { isProvisionable, podKey, provisionableReason } from '../../state/pods.ts';
import { type Controller, errorMessage, SingletonController } from '../runtime/index.ts';
import { BATCH_IDLE_DURATION, BATCH_MAX_DURATION, Batcher } from './batcher.ts';
import {
  buildSchedulingInput,
  instanceTypeIndex,
  nodePoolUsability,
  type SelectedPods,
  selectPods,
} from './input.ts';
import { NodeClaimLauncher } from './launcher.ts';
import {
  ignoredPodsGauge,
  minValuesRelaxedLabel,
  nodeClaimsCreatedCounter,
  ProvisionedReason,
  pendingPodsByEffectiveZoneGauge,
  queueDepthGauge,
  schedulingDecisionHistogram,
  schedulingDurationHistogram,
  unfinishedWorkGauge,
  unschedulablePodsGauge,
} from './metrics.ts';
import { type NodePoolHash, templateHash } from './nodeclaim.ts';

/** Records Events (the `EventRecorder` of `kube/events.ts` fits). */
export interface EventPublisher {
  publish(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<unknown>;
}

/** Tunables of the {@link Provisioner}. */
export interface ProvisionerOptions {
  /** Batch idle seconds (default 1). */
  batchIdleSeconds?: number;
  /** Batch max seconds (default 10). */
  batchMaxSeconds?: number;
  /** Seconds a nomination lives (default 20). */
  nominationTTLSeconds?: number;
  /** The NodePool hash stamped on NodeClaims; default {@link templateHash}. Inject the NodePool controller's. */
  nodePoolHash?: (nodePool: NodePool) => NodePoolHash;
  /** Parallel NodeClaim creates for NodePools without limits (default 10). */
  createConcurrency?: number;
  /** Monotonic ms source for durations (default `performance.now`). */
  now?: () => number;
  /** Upstream `--preference-policy` (default `Respect`; `scheduling/preferencepolicy.ts`). */
  preferencePolicy?: PreferencePolicy;
  /**
   * Upstream `--min-values-policy` (default `Strict`): `BestEffort` lets the scheduler lower `minValues` a new
   * NodeClaim cannot meet; such NodeClaims carry `karpenter.sh/nodeclaim-min-values-relaxed: "true"`
   * (`scheduling/types.ts` `MinValuesPolicy`).
   */
  minValuesPolicy?: MinValuesPolicy;
}

/** Constructor dependencies of {@link Provisioner}. */
export interface ProvisionerDeps {
  client: KubeClient;
  cluster: Cluster;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  recorder: EventPublisher;
  registry: Registry;
  options?: ProvisionerOptions;
  /**
   * The NodeClaim launcher shared with the disruption orchestrator (limits checked against one state and one set
   * of in-flight creates); default: a launcher of this provisioner's own.
   */
  launcher?: NodeClaimLauncher;
}

/** A plan that was not created, with why. */
export interface SkippedPlan {
  plan: NodeClaimPlan;
  reason: string;
}

/** What one provisioning pass did. */
export interface ProvisioningResult {
  /** False when the pass stopped because cluster state was not synced (nothing else was done). */
  synced: boolean;
  /** Pod selection of the pass (absent when nothing was pending). */
  selection?: SelectedPods;
  input?: SchedulingInput;
  result?: SchedulingResult;
  /** NodeClaims created, as returned by the API server, with their plans. */
  created: Array<{ plan: NodeClaimPlan; nodeClaim: NodeClaim }>;
  skipped: SkippedPlan[];
  /** NodePools left out, with why. */
  skippedNodePools: Array<{ nodePool: string; reason: string }>;
}

/** Seconds a `FailedScheduling` event for the same pod and message is not repeated (upstream DedupeTimeout). */
const FAILED_SCHEDULING_DEDUPE_SECONDS = 300;
/** Seconds a `NoCompatibleInstanceTypes` event for the same NodePool is not repeated (upstream DedupeTimeout). */
const NO_COMPATIBLE_INSTANCE_TYPES_DEDUPE_SECONDS = 60;
/** Seconds a `Nominated` event for the same pod and target is not repeated. */
const NOMINATED_DEDUPE_SECONDS = 120;
/**
 * `Nominated` events are rate-limited across pods by a token bucket of 5 per second, burst 10 (upstream
 * `PodNominationRateLimiter` in `pkg/controllers/provisioning/scheduling/events.go`): after the per-pod dedupe, an
 * event without a token is dropped. At 10,000 pending pods one event each would take 50 s of the client's 200 QPS,
 * queued before the NodeClaim writes.
 */
const NOMINATED_EVENTS_PER_SECOND = 5;
const NOMINATED_EVENTS_BURST = 10;
const CONTROLLER = 'provisioner';

/** First five instance type names, then ` and N other(s)` (upstream `instanceTypeList`). */
export function instanceTypeList(names: readonly string[]): string {
  if (names.length <= 5) return names.join(', ');
  return `${names.slice(0, 5).join(', ')} and ${names.length - 5} other(s)`;
}

/** The provisioning controller. Also usable pass by pass ({@link Provisioner.provision}) in tests and the CLI. */
export class Provisioner implements Controller {
  readonly name = CONTROLLER;
  readonly batcher: Batcher;
  private readonly deps: ProvisionerDeps;
  private readonly log: Logger;
  private readonly loop: SingletonController;
  /** Creates every NodeClaim (also the disruption replacements when the operator shares it). */
  readonly launcher: NodeClaimLauncher;
  private readonly now: () => number;
  private readonly eventSeen = new Map<string, number>();
  /** Tokens of the `Nominated` rate limiter and when they were last refilled (ms, clock). */
  private nominationTokens = NOMINATED_EVENTS_BURST;
  private nominationRefilled: number | undefined;
  private readonly metrics;
  /**
   * Observers of every pass that scheduled pods (the dashboard's decision log): called with the pass's result after
   * its NodeClaims were created; a throwing listener is logged and skipped.
   */
  readonly passListeners = new Set<(r: ProvisioningResult) => void>();

  constructor(deps: ProvisionerDeps) {
    this.deps = deps;
    const o = deps.options ?? {};
    this.log = deps.logger.child({ controller: CONTROLLER, namespace: '', name: '' });
    this.batcher = new Batcher({
      clock: deps.clock,
      idleSeconds: o.batchIdleSeconds ?? BATCH_IDLE_DURATION,
      maxSeconds: o.batchMaxSeconds ?? BATCH_MAX_DURATION,
    });
    this.launcher =
      deps.launcher ??
      new NodeClaimLauncher({
        client: deps.client,
        cluster: deps.cluster,
        cloudProvider: deps.cloudProvider,
        logger: this.log,
        nodePoolHash: o.nodePoolHash ?? templateHash,
      });
    this.now = o.now ?? (() => performance.now());
    this.metrics = {
      duration: schedulingDurationHistogram(deps.registry),
      queueDepth: queueDepthGauge(deps.registry),
      unfinishedWork: unfinishedWorkGauge(deps.registry),
      ignored: ignoredPodsGauge(deps.registry),
      unschedulable: unschedulablePodsGauge(deps.registry),
      byZone: pendingPodsByEffectiveZoneGauge(deps.registry),
      created: nodeClaimsCreatedCounter(deps.registry),
      decision: schedulingDecisionHistogram(deps.registry),
    };
    this.loop = new SingletonController({
      name: CONTROLLER,
      clock: deps.clock,
      logger: deps.logger,
      reconcile: (signal) => this.reconcile(signal),
    });
  }

  /** Opens or extends the batch window (pod/node events call this; `key` dedupes, e.g. a pod UID). */
  trigger(key?: string): void {
    this.batcher.trigger(key);
  }

  /** Runs batch → pass → batch ... until `signal` aborts. Never rejects. */
  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  private async reconcile(signal: AbortSignal): Promise<{ requeueAfter: number }> {
    if (!(await this.batcher.wait(signal))) return { requeueAfter: 0 };
    if (signal.aborted) return { requeueAfter: 0 };
    const res = await this.provision();
    if (!res.synced) {
      // Upstream requeues immediately; we re-arm the batch so the pending pods are looked at again.
      this.batcher.trigger();
      return { requeueAfter: 1 };
    }
    return { requeueAfter: 0 };
  }

  /**
   * One provisioning pass without the batch wait: sync check, scheduling simulation, NodeClaim creation,
   * nominations and events. Throws only for unexpected errors (API errors of single creates are logged and
   * reported in `skipped`).
   */
  async provision(): Promise<ProvisioningResult> {
    const out: ProvisioningResult = { synced: true, created: [], skipped: [], skippedNodePools: [] };
    const { cluster } = this.deps;
    // Cheap exit before any API call: nothing pending and no node is being deleted.
    const anyPending = cluster.pendingPods().some((p) => isProvisionable(p));
    const anyDeleting =
      !anyPending && cluster.stateNodes().some((sn) => sn.markedForDeletion && sn.pods.length);
    if (!anyPending && !anyDeleting) {
      this.metrics.unschedulable.set({ controller: CONTROLLER }, 0);
      return out;
    }
    if (!(await cluster.synced())) {
      this.log.debug('waiting on cluster sync');
      out.synced = false;
      return out;
    }
    const start = this.now();
    const scheduled = await this.schedule(out);
    this.metrics.duration.observe({ controller: CONTROLLER }, (this.now() - start) / 1000);
    if (!scheduled) return out;
    const { result, input } = scheduled;
    this.metrics.unschedulable.set({ controller: CONTROLLER }, result.unschedulable.length);
    if (result.newNodeClaims.length > 0)
      this.log.info(
        {
          Pods:
            input.pods.slice(0, 5).map(podKey).join(', ') +
            (input.pods.length > 5 ? ` and ${input.pods.length - 5} other(s)` : ''),
          nodeclaims: result.newNodeClaims.length,
          duration: `${Math.round(this.now() - start)}ms`,
        },
        'found provisionable pod(s)',
      );
    this.nominateExisting(result);
    await this.createNodeClaims(result, input, out);
    await this.recordUnschedulable(result, input, out);
    for (const l of this.passListeners) {
      try {
        l(out);
      } catch (err) {
        this.log.warn({ err: String(err) }, 'pass listener failed');
      }
    }
    return out;
  }

  /** Builds the scheduler input from state and solves it; `undefined` when there is nothing to schedule. */
  private async schedule(
    out: ProvisioningResult,
  ): Promise<{ input: SchedulingInput; result: SchedulingResult } | undefined> {
    const { cluster, cloudProvider } = this.deps;
    const supported = cloudProvider.supportedNodeClasses();
    const pre = cluster.snapshot();
    const usable: NodePool[] = [];
    const instanceTypes: Record<string, InstanceType[]> = {};
    for (const np of pre.nodePools) {
      const u = nodePoolUsability(np, pre, supported);
      if (!u.ok) {
        out.skippedNodePools.push({ nodePool: np.metadata.name, reason: u.reason });
        continue;
      }
      try {
        const types = await cloudProvider.instanceTypes(np);
        if (types.length === 0) {
          out.skippedNodePools.push({ nodePool: np.metadata.name, reason: 'no instance types resolved' });
          continue;
        }
        instanceTypes[np.metadata.name] = types;
        usable.push(np);
      } catch (err) {
        out.skippedNodePools.push({
          nodePool: np.metadata.name,
          reason: `unable to resolve instance types: ${errorMessage(err)}`,
        });
      }
    }
    for (const s of out.skippedNodePools)
      this.log.debug({ nodepool: s.nodePool, reason: s.reason }, 'skipping nodepool');
    // Fresh snapshot after the async lookups: nodes first, then pods (upstream order, to never overshoot).
    const snapshot = cluster.snapshot();
    const selection = selectPods(snapshot);
    out.selection = selection;
    this.metrics.ignored.set(selection.rejected);
    if (selection.pods.length === 0) {
      this.markDecisions(selection, undefined);
      this.metrics.unschedulable.set({ controller: CONTROLLER }, 0);
      this.metrics.byZone.reset();
      return undefined;
    }
    const livePools = usable
      .map((np) => snapshot.nodePools.find((x) => x.metadata.name === np.metadata.name) ?? np)
      .filter((np) => !np.metadata.deletionTimestamp);
    const input = buildSchedulingInput({
      snapshot,
      pods: selection.pods,
      nodePools: livePools,
      instanceTypes,
    });
    if (this.deps.options?.preferencePolicy === 'Ignore') input.preferencePolicy = 'Ignore';
    if (this.deps.options?.minValuesPolicy === 'BestEffort') input.minValuesPolicy = 'BestEffort';
    const schedulingId = randomUUID();
    const simulation = { controller: CONTROLLER, scheduling_id: schedulingId };
    this.metrics.queueDepth.set(simulation, input.pods.length);
    this.metrics.unfinishedWork.set(simulation, 0);
    let result: SchedulingResult;
    try {
      result = solve(input);
    } finally {
      this.metrics.queueDepth.remove(simulation);
      this.metrics.unfinishedWork.remove(simulation);
    }
    // upstream: the controller's series are replaced by each simulation
    this.metrics.byZone.reset();
    for (const [zone, n] of Object.entries(result.pendingPodsByEffectiveZone ?? {}))
      this.metrics.byZone.set({ controller: CONTROLLER, zone }, n);
    // Messages with numbers need the explaining run; do it only when some event would actually be written.
    if (
      result.unschedulable.some((u) =>
        this.eventDue(`fs|${u.pod.metadata.uid ?? podKey(u.pod)}`, FAILED_SCHEDULING_DEDUPE_SECONDS, false),
      )
    ) {
      const explained = solve({ ...input, explain: true });
      result = { ...result, unschedulable: explained.unschedulable };
    }
    out.input = input;
    out.result = result;
    this.noCompatibleInstanceTypes(result, livePools);
    this.markDecisions(selection, result);
    return { input, result };
  }

  /**
   * Upstream `NewScheduler` (`scheduling/scheduler.go`): a NodePool whose requirements filter out all of its
   * instance types is logged and gets a Warning `NoCompatibleInstanceTypes` Event (`scheduling/events.go`:
   * deduplicated by NodePool UID for 1 min; the message names minValues when only they ruled the types out).
   */
  private noCompatibleInstanceTypes(result: SchedulingResult, pools: readonly NodePool[]): void {
    for (const n of result.noCompatibleInstanceTypes ?? []) {
      const np = pools.find((p) => p.metadata.name === n.nodePool);
      if (!np) continue;
      this.log.info(
        { NodePool: objectRef(n.nodePool), minValuesIncompatible: n.minValues },
        'skipping, nodepool requirements filtered out all instance types',
      );
      if (!this.eventDue(`nct|${np.metadata.uid ?? n.nodePool}`, NO_COMPATIBLE_INSTANCE_TYPES_DEDUPE_SECONDS))
        continue;
      void this.deps.recorder.publish(
        np,
        'Warning',
        'NoCompatibleInstanceTypes',
        n.minValues
          ? 'NodePool requirements filtered out all compatible available instance types due to minValues incompatibility'
          : 'NodePool requirements filtered out all compatible available instance types',
      );
    }
  }

  /**
   * Marks this pass's decisions in cluster state (upstream `MarkPodSchedulingDecisions`, called by
   * `provisioner.go` for pods failing validation and after `Solve`): pods rejected by validation and pods left
   * unschedulable failed, placed pods are schedulable; observes each acknowledged pod's first decision in
   * `karpenter_pods_scheduling_decision_duration_seconds`. Pods of deleting nodes are bound and left out, as
   * upstream skips scheduled pods.
   */
  private markDecisions(selection: SelectedPods, result: SchedulingResult | undefined): void {
    const bound = selection.fromDeletingNodes;
    const failed = selection.ignored.filter((i) => !provisionableReason(i.pod)).map((i) => podKey(i.pod));
    for (const u of result?.unschedulable ?? []) if (!bound.has(podKey(u.pod))) failed.push(podKey(u.pod));
    const schedulable: string[] = [];
    for (const pl of result?.placements ?? [])
      if (!bound.has(podKey(pl.pod))) schedulable.push(podKey(pl.pod));
    const now = this.deps.clock.now();
    for (const seconds of this.deps.cluster.podScheduling.markDecisions(failed, schedulable, now))
      this.metrics.decision.observe(seconds);
  }

  private nominateExisting(result: SchedulingResult): void {
    const ttl = this.deps.options?.nominationTTLSeconds ?? NOMINATION_TTL_SECONDS;
    let claimOfNode: Map<string, string | undefined> | undefined;
    for (const pl of result.placements) {
      if (pl.target.kind === 'new') continue;
      if (pl.target.kind === 'existing') {
        const node = this.deps.cluster.getNode(pl.target.node);
        claimOfNode ??= this.nodeClaimsByNode();
        const nc = node ? claimOfNode.get(pl.target.node) : undefined;
        this.deps.cluster.nominate(pl.pod, { kind: 'node', name: pl.target.node }, ttl);
        const where = [nc ? `nodeclaim/${nc}` : undefined, `node/${pl.target.node}`]
          .filter(Boolean)
          .join(', ');
        this.nominatedEvent(pl.pod, where);
      } else {
        this.deps.cluster.nominate(pl.pod, { kind: 'nodeclaim', name: pl.target.nodeClaim }, ttl);
        this.nominatedEvent(pl.pod, `nodeclaim/${pl.target.nodeClaim}`);
      }
    }
  }

  /**
   * Node name → name of its NodeClaim (undefined for a Node without one), from one pass over the state nodes
   * (building them per placement was quadratic in pods: 8 s of a 10,000-pod start).
   */
  private nodeClaimsByNode(): Map<string, string | undefined> {
    const out = new Map<string, string | undefined>();
    for (const sn of this.deps.cluster.stateNodes()) {
      const name = sn.node?.metadata.name;
      if (name !== undefined && !out.has(name)) out.set(name, sn.nodeClaim?.metadata.name);
    }
    return out;
  }

  private async createNodeClaims(
    result: SchedulingResult,
    input: SchedulingInput,
    out: ProvisioningResult,
  ): Promise<void> {
    const byPool = new Map<string, NodeClaimPlan[]>();
    for (const plan of result.newNodeClaims) {
      const l = byPool.get(plan.nodePool) ?? [];
      l.push(plan);
      byPool.set(plan.nodePool, l);
    }
    const index = instanceTypeIndex(input.instanceTypes);
    const concurrency = Math.max(1, this.deps.options?.createConcurrency ?? 10);
    const tasks: Array<Promise<void>> = [];
    for (const [poolName, plans] of byPool) {
      const pool =
        this.deps.cluster.getNodePool(poolName) ??
        input.nodePools.find((np) => np.metadata.name === poolName);
      if (pool?.spec.limits) {
        // Sequential: each create is checked against usage that includes the previous one.
        tasks.push(
          (async () => {
            for (const plan of plans) await this.createOne(plan, index, out);
          })(),
        );
      } else {
        for (let i = 0; i < plans.length; i += concurrency) {
          const chunk = plans.slice(i, i + concurrency);
          tasks.push(
            (async () => {
              for (const plan of chunk) await this.createOne(plan, index, out);
            })(),
          );
        }
      }
    }
    await Promise.all(tasks);
  }

  private async createOne(
    plan: NodeClaimPlan,
    index: Map<string, InstanceType>,
    out: ProvisioningResult,
  ): Promise<void> {
    const { recorder } = this.deps;
    const ttl = this.deps.options?.nominationTTLSeconds ?? NOMINATION_TTL_SECONDS;
    const res = await this.launcher.launch(plan, { instanceTypes: index, nominationTTLSeconds: ttl });
    if (!res.ok) {
      out.skipped.push({ plan, reason: res.reason });
      const pool = this.deps.cluster.getNodePool(plan.nodePool);
      if (res.code === 'limits' && pool) {
        this.log.info({ nodepool: plan.nodePool, pods: plan.pods.length }, res.reason);
        if (this.eventDue(`lim|${plan.nodePool}|${res.over}`, FAILED_SCHEDULING_DEDUPE_SECONDS))
          void recorder.publish(
            pool,
            'Warning',
            'NodePoolLimitsExceeded',
            `Not launching a NodeClaim for ${plan.pods.length} pod(s): ${res.over}`,
          );
      }
      return;
    }
    const created = res.nodeClaim;
    out.created.push({ plan, nodeClaim: created });
    this.metrics.created.inc({
      reason: ProvisionedReason,
      nodepool: plan.nodePool,
      min_values_relaxed: minValuesRelaxedLabel(created),
    });
    const itReq = created.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type');
    this.log.info(
      {
        NodePool: objectRef(plan.nodePool),
        NodeClaim: objectRef(created.metadata.name),
        requests: created.spec.resources?.requests,
        'instance-types': instanceTypeList(itReq?.values ?? []),
      },
      'created nodeclaim',
    );
    const name = created.metadata.name ?? '';
    for (const pod of plan.pods) {
      this.deps.cluster.nominate(pod, { kind: 'nodeclaim', name }, ttl);
      this.nominatedEvent(pod, `nodeclaim/${name}`);
    }
  }

  private async recordUnschedulable(
    result: SchedulingResult,
    _input: SchedulingInput,
    out: ProvisioningResult,
  ): Promise<void> {
    const failed: Unschedulable[] = [...result.unschedulable];
    for (const s of out.skipped)
      for (const pod of s.plan.pods) failed.push({ pod, code: 'NodePoolLimitsExceeded', message: s.reason });
    for (const u of failed) {
      const msg = `Failed to schedule pod, ${u.message}`;
      const key = `fs|${u.pod.metadata.uid ?? podKey(u.pod)}`;
      if (!this.eventDue(key, FAILED_SCHEDULING_DEDUPE_SECONDS)) continue;
      void this.deps.recorder.publish(u.pod, 'Warning', 'FailedScheduling', msg);
    }
    if (failed.length > 0)
      this.log.info(
        {
          pods: failed
            .slice(0, 5)
            .map((u) => `${podKey(u.pod)}: ${u.code}`)
            .join('; '),
          count: failed.length,
        },
        'could not schedule pod(s)',
      );
  }

  private nominatedEvent(pod: Pod, where: string): void {
    if (!this.eventDue(`nom|${pod.metadata.uid ?? podKey(pod)}|${where}`, NOMINATED_DEDUPE_SECONDS)) return;
    if (!this.nominationTokenTaken()) return;
    void this.deps.recorder.publish(pod, 'Normal', 'Nominated', `Pod should schedule on: ${where}`);
  }

  /** Takes a token of the `Nominated` event rate limiter (see {@link NOMINATED_EVENTS_PER_SECOND}); false when none is left. */
  private nominationTokenTaken(): boolean {
    const now = this.deps.clock.now();
    const elapsed = this.nominationRefilled === undefined ? 0 : Math.max(0, now - this.nominationRefilled);
    this.nominationRefilled = now;
    this.nominationTokens = Math.min(
      NOMINATED_EVENTS_BURST,
      this.nominationTokens + (elapsed / 1000) * NOMINATED_EVENTS_PER_SECOND,
    );
    if (this.nominationTokens < 1) return false;
    this.nominationTokens -= 1;
    return true;
  }

  /** True (and remembered, unless `record` is false) when `key` was not published within `seconds`. */
  private eventDue(key: string, seconds: number, record = true): boolean {
    const now = this.deps.clock.now();
    const last = this.eventSeen.get(key);
    if (last !== undefined && now - last < seconds * 1000) return false;
    if (record) {
      this.eventSeen.set(key, now);
      if (this.eventSeen.size > 20_000) {
        for (const [k, t] of this.eventSeen)
          if (now - t >= FAILED_SCHEDULING_DEDUPE_SECONDS * 1000) this.eventSeen.delete(k);
      }
    }
    return true;
  }
}
