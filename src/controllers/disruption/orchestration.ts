/**
 * Executes disruption commands, after kubernetes-sigs/karpenter `pkg/controllers/disruption/controller.go`
 * (`executeCommand`) and `orchestration/queue.go`:
 * 1. create the replacement NodeClaims through the provisioner's {@link NodeClaimLauncher} (upstream: disruption
 *    launches through `provisioner.CreateNodeClaims`): the NodePool limits are checked right before each create
 *    against cluster state with in-flight NodeClaims and the provisioner's creates on the wire (the candidates do
 *    not count, as in the simulation); a replacement over the limit rolls the command back. Nominate the moving
 *    pods to them; Events `DisruptionLaunching`;
 * 2. taint the candidates `karpenter.sh/disrupted:NoSchedule` and mark them for deletion in cluster state (so
 *    provisioning reschedules their pods and later passes count them against budgets). Upstream taints before
 *    launching and marks after; here the taint itself counts as a mark (it survives a restart), so both come after
 *    the replacements are in cluster state: a provisioning pass in between would otherwise see the candidates'
 *    pods without the capacity coming for them and launch for them a second time;
 * 3. stamp condition `DisruptionReason` on their NodeClaims;
 * 4. asynchronously wait until every replacement is `Initialized` (Events `DisruptionWaitingReadiness`), at most
 *    `replacementTimeoutSeconds` (upstream 10 min) — on timeout, a replacement deleted, or a failed launch: roll back
 *    (untaint, unmark, delete the replacements that are not initialized — an initialized one stays unless it leaves
 *    its NodePool over its limits, see {@link replacementsToDelete}; `karpenter_voluntary_disruption_queue_failures_total`);
 * 5. delete the candidates' NodeClaims (the termination controllers drain them); Events `DisruptionTerminating`,
 *    `karpenter_nodeclaims_disrupted_total{reason, nodepool, capacity_type}`.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Node, Taint } from '../../apis/core.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { ConditionDisruptionReason, TaintDisrupted } from '../../apis/labels.ts';
import type { Command } from '../../disruption/index.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { isConflict, isNotFound } from '../../kube/errors.ts';
import { objectRef } from '../../kube/logger.ts';
import { exceeds, poolUsage } from '../../scheduling/limits.ts';
import { type Cluster, conditionOf, type StateNode } from '../../state/cluster.ts';
import { podKey } from '../../state/pods.ts';
import { NodeClaimDependents } from '../nodeclaim/lifecycle/context.ts';
import { lifecycleMetrics } from '../nodeclaim/metrics.ts';
import type { NodeClaimLauncher } from '../provisioning/launcher.ts';
import { minValuesRelaxedLabel, nodeClaimsCreatedCounter } from '../provisioning/metrics.ts';
import { instanceTypeList } from '../provisioning/provisioner.ts';
import {
  ConditionSet,
  capacityTypeOf,
  errorMessage,
  matchTaint,
  nodePoolOf,
  type Recorder,
} from '../runtime/index.ts';
import { consolidationType, type DisruptionMetrics, reasonLabel } from './metrics.ts';

/**
 * Annotation on a replacement NodeClaim: the comma-separated NodeClaim names of the candidates it replaces. A
 * process that restarts mid-command finds the command's replacements by it (see the disruption controller's
 * cleanup of stale `karpenter.sh/disrupted` taints).
 */
export const AnnotationReplacementFor = 'capenter.dev/replacement-for';

/** Seconds to wait for replacements to initialize before rolling back (upstream `maxRetryDuration`, 10 min). */
export const ReplacementTimeoutSeconds = 600;
/** Seconds between readiness checks of the replacements. */
export const ReplacementPollSeconds = 1;
/** Seconds a finished command's nodes still count as disrupted by this process (state catching up). */
export const FinishedGraceSeconds = 60;

/** Dependencies of {@link Orchestrator}. */
export interface OrchestratorDeps {
  client: KubeClient;
  cluster: Cluster;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  registry: Registry;
  metrics: DisruptionMetrics;
  /** Creates the replacements under the NodePool limits (the provisioner's, so both share in-flight creates). */
  launcher: NodeClaimLauncher;
  replacementTimeoutSeconds?: number;
}

/** Where a command stands, for observers (tests, logs). */
export type CommandPhase = 'started' | 'launched' | 'terminating' | 'done' | 'rolledBack';

/** One executed command, as the orchestrator tracks it. */
export interface InFlightCommand {
  id: number;
  command: Command;
  /** Candidate node names. */
  nodes: string[];
  /** Replacement NodeClaim names (after launch). */
  replacements: string[];
  phase: CommandPhase;
  startedAt: number;
  /** Why it was rolled back. */
  failure?: string;
}

/** `Drifted` → `Drifted`; upstream title-cases the reason in Event messages. */
function title(reason: string): string {
  return reason.charAt(0).toUpperCase() + reason.slice(1);
}

/** Runs commands; see the module doc. */
export class Orchestrator {
  private readonly inflight = new Map<number, InFlightCommand>();
  private readonly tasks = new Set<Promise<void>>();
  private readonly disrupting = new Set<string>();
  /** Node name → when (clock ms) its command finished; cluster state may lag the deletion for a moment. */
  private readonly finished = new Map<string, number>();
  private seq = 0;
  /** Observers of phase changes. */
  readonly listeners = new Set<(c: InFlightCommand) => void>();

  constructor(private readonly deps: OrchestratorDeps) {}

  /**
   * Node names of every command in flight (tainted by this process), plus those whose command finished less than
   * {@link FinishedGraceSeconds} ago (their deletion may not have reached cluster state yet).
   */
  disruptingNodes(): ReadonlySet<string> {
    const now = this.deps.clock.now();
    const out = new Set(this.disrupting);
    for (const [n, at] of this.finished) {
      if (now - at < FinishedGraceSeconds * 1000) out.add(n);
      else this.finished.delete(n);
    }
    return out;
  }

  /** Commands in flight. */
  commands(): InFlightCommand[] {
    return [...this.inflight.values()];
  }

  /** Resolves when every started command finished (done or rolled back). */
  async idle(): Promise<void> {
    while (this.tasks.size > 0) await Promise.all([...this.tasks]);
  }

  private emit(c: InFlightCommand, phase: CommandPhase): void {
    c.phase = phase;
    for (const l of this.listeners) l(c);
  }

  /**
   * Starts `command`: launches, taints and marks synchronously (resolves after that), then waits for the
   * replacements and deletes the candidates in the background (`signal` aborts the wait, leaving the taints for the
   * controller's cleanup). Returns false when it was rolled back at once (launch failure, candidate gone).
   */
  async execute(command: Command, signal: AbortSignal): Promise<boolean> {
    const { cluster, clock } = this.deps;
    const log = this.deps.logger.child({ controller: 'disruption', method: command.method });
    const c: InFlightCommand = {
      id: ++this.seq,
      command,
      nodes: command.candidates.map((x) => x.name),
      replacements: [],
      phase: 'started',
      startedAt: clock.now(),
    };
    this.inflight.set(c.id, c);
    for (const n of c.nodes) this.disrupting.add(n);
    this.emit(c, 'started');
    const ncNames = command.candidates.map((x) => x.nodeClaim.metadata.name as string);
    try {
      // a pending pod the replacements were sized for that the provisioner has launched for since (the command
      // was computed on an older snapshot): launching would buy its capacity twice; the next pass recomputes
      for (const plan of command.replacements)
        for (const pod of plan.pods) {
          const key = podKey(pod);
          if (cluster.getPod(key)?.spec?.nodeName) continue; // a moving pod
          const n = cluster.nominationFor(key);
          if (n?.target.kind === 'nodeclaim')
            throw new Error(
              `pending pod ${key} of a replacement is nominated to nodeclaim ${n.target.name} since the command was computed`,
            );
        }
      for (const cand of command.candidates) {
        const node = cluster.getNode(cand.name);
        if (!node || node.metadata.deletionTimestamp)
          throw new Error(`candidate node ${cand.name} is gone or deleting`);
      }
      const counter = nodeClaimsCreatedCounter(this.deps.registry);
      const candidateClaims = new Set(ncNames);
      for (const plan of command.replacements) {
        const res = await this.deps.launcher.launch(plan, {
          excludeFromUsage: candidateClaims,
          refuseClaimedPods: true,
          annotations: { [AnnotationReplacementFor]: ncNames.join(',') },
        });
        if (!res.ok) throw new Error(`replacement in NodePool ${plan.nodePool}: ${res.reason}`);
        const created = res.nodeClaim;
        const name = created.metadata.name as string;
        c.replacements.push(name);
        for (const pod of plan.pods) cluster.nominate(pod, { kind: 'nodeclaim', name });
        counter.inc({
          reason: reasonLabel(command.reason),
          nodepool: plan.nodePool,
          min_values_relaxed: minValuesRelaxedLabel(created),
        });
        void this.deps.recorder.publish(
          created,
          'Normal',
          'DisruptionLaunching',
          `Launching NodeClaim: ${title(command.reason)}`,
        );
        log.info({ nodeclaim: name, nodepool: plan.nodePool }, 'launched replacement nodeclaim');
      }
      // Only now, with the replacements in cluster state, may provisioning see the candidates as deleting: it
      // then places their pods on the in-flight replacements. Tainted or marked before (the taint counts as a
      // mark), a provisioning pass in between launched a second NodeClaim for the same pods.
      for (const cand of command.candidates) {
        if (!(await this.setTaint(cand.name, true)))
          throw new Error(`candidate node ${cand.name} is gone or deleting`);
      }
      cluster.markForDeletion(...c.nodes, ...ncNames);
      for (const cand of command.candidates) await this.stampReason(cand.nodeClaim, command.reason);
    } catch (err) {
      await this.rollback(c, `launching: ${errorMessage(err)}`);
      return false;
    }
    const decisionLabels = {
      decision: command.decision,
      reason: reasonLabel(command.reason),
      consolidation_type: consolidationType(command.method),
    };
    for (const nodepool of new Set(command.candidates.map((cand) => nodePoolOf(cand.nodeClaim))))
      this.deps.metrics.decisionsByNodePool.inc({ nodepool, ...decisionLabels });
    this.deps.metrics.decisions.inc(decisionLabels);
    log.info(
      {
        ...disruptionLogValues(command, c.id),
        reason: command.reason,
        candidates: c.nodes,
        replacements: c.replacements,
        savingsUSDPerHour: Number(command.savingsUSDPerHour.toFixed(4)),
      },
      'disrupting node(s)',
    );
    this.emit(c, 'launched');
    const task = this.waitAndTerminate(c, signal).catch(async (err: unknown) => {
      await this.rollback(c, errorMessage(err)).catch(() => {});
    });
    const tracked = task.finally(() => this.tasks.delete(tracked));
    this.tasks.add(tracked);
    return true;
  }

  private async waitAndTerminate(c: InFlightCommand, signal: AbortSignal): Promise<void> {
    const { cluster, clock } = this.deps;
    const timeout = (this.deps.replacementTimeoutSeconds ?? ReplacementTimeoutSeconds) * 1000;
    const waitingNoted = new Set<string>();
    for (;;) {
      if (signal.aborted) return this.forget(c);
      let ready = true;
      for (const name of c.replacements) {
        const nc = cluster.getNodeClaim(name) ?? (await this.deps.client.tryGet('NodeClaim', name));
        if (!nc || nc.metadata.deletionTimestamp) {
          await this.rollback(c, `replacement nodeclaim ${name} was deleted`);
          return;
        }
        if (conditionOf(nc, 'Initialized')?.status !== 'True') {
          ready = false;
          if (!waitingNoted.has(name)) {
            waitingNoted.add(name);
            void this.deps.recorder.publish(
              nc,
              'Normal',
              'DisruptionWaitingReadiness',
              'Waiting on readiness to continue disruption',
            );
          }
        }
      }
      if (ready) break;
      if (clock.now() - c.startedAt >= timeout) {
        await this.rollback(c, `timed out after ${timeout / 1000}s waiting for replacements to initialize`);
        return;
      }
      await clock.sleep(ReplacementPollSeconds * 1000, signal);
    }
    this.emit(c, 'terminating');
    const disrupted = lifecycleMetrics(this.deps.registry).disrupted;
    for (const cand of c.command.candidates) {
      const ncName = cand.nodeClaim.metadata.name as string;
      const msg = `Disrupting Node: ${title(c.command.reason)}`;
      if (await this.deps.client.tryDelete('NodeClaim', ncName)) {
        disrupted.inc({
          reason: reasonLabel(c.command.reason),
          nodepool: nodePoolOf(cand.nodeClaim),
          capacity_type: capacityTypeOf(cand.nodeClaim),
        });
        void this.deps.recorder.publish(cand.node, 'Normal', 'DisruptionTerminating', msg);
        void this.deps.recorder.publish(cand.nodeClaim, 'Normal', 'DisruptionTerminating', msg);
      }
    }
    this.emit(c, 'done');
    this.forget(c);
  }

  private forget(c: InFlightCommand): void {
    this.inflight.delete(c.id);
    const now = this.deps.clock.now();
    for (const n of c.nodes) {
      this.disrupting.delete(n);
      if (c.phase === 'done') this.finished.set(n, now);
    }
  }

  /**
   * Undoes a command: untaint and unmark the candidates, delete its replacements that are not initialized (and those
   * {@link replacementsToDelete} names).
   */
  private async rollback(c: InFlightCommand, why: string): Promise<void> {
    const { cluster, client } = this.deps;
    const doomed = replacementsToDelete(cluster.stateNodes(), c.replacements, (n) => cluster.getNodePool(n));
    this.deps.logger.warn(
      {
        controller: 'disruption',
        candidates: c.nodes,
        replacements: c.replacements,
        deleted: doomed,
        reason: why,
      },
      'rolling back disruption command',
    );
    c.failure = why;
    for (const name of doomed) await client.tryDelete('NodeClaim', name).catch(() => false);
    for (const n of c.nodes) await this.setTaint(n, false).catch(() => false);
    for (const cand of c.command.candidates)
      await this.stampReason(cand.nodeClaim, undefined).catch(() => {});
    cluster.unmarkForDeletion(
      ...c.nodes,
      ...c.command.candidates.map((x) => x.nodeClaim.metadata.name as string),
    );
    this.deps.metrics.queueFailures.inc({
      decision: c.command.decision,
      reason: reasonLabel(c.command.reason),
      consolidation_type: consolidationType(c.command.method),
    });
    this.emit(c, 'rolledBack');
    this.forget(c);
  }

  /**
   * Adds (`on`) or removes the disrupted taint on Node `name`. Adding returns false when the Node is gone or being
   * deleted; removing skips deleting Nodes. Retries conflicts.
   */
  async setTaint(name: string, on: boolean): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const node = (await this.deps.client.tryGet('Node', name)) as Node | undefined;
      if (!node || node.metadata.deletionTimestamp) return !on;
      const taints: Taint[] = node.spec?.taints ?? [];
      const has = taints.some((t) => matchTaint(t, TaintDisrupted));
      if (has === on) return true;
      const next = on
        ? [...taints, { key: TaintDisrupted.key, effect: TaintDisrupted.effect }]
        : taints.filter((t) => !matchTaint(t, TaintDisrupted));
      try {
        await this.deps.client.patch(
          'Node',
          name,
          undefined,
          { metadata: { resourceVersion: node.metadata.resourceVersion }, spec: { taints: next } },
          { type: 'merge' },
        );
        return true;
      } catch (err) {
        if (isNotFound(err)) return !on;
        if (!isConflict(err)) throw err;
      }
    }
    throw new Error(`node ${name}: too many conflicts updating the ${TaintDisrupted.key} taint`);
  }

  /** Sets (reason) or clears (undefined) the NodeClaim's `DisruptionReason` condition; best effort. */
  private async stampReason(nc: NodeClaim, reason: string | undefined): Promise<void> {
    const name = nc.metadata.name as string;
    for (let attempt = 0; attempt < 3; attempt++) {
      const fresh = await this.deps.client.tryGet('NodeClaim', name);
      if (!fresh || fresh.metadata.deletionTimestamp) return;
      const conds = new ConditionSet(fresh, NodeClaimDependents, this.deps.clock);
      if (reason)
        conds.setTrue(ConditionDisruptionReason, reason, reason); // upstream queue.go: SetTrueWithReason(reason, reason)
      else if (conds.get(ConditionDisruptionReason)) conds.clear(ConditionDisruptionReason);
      else return;
      try {
        await this.deps.client.patchStatus(
          'NodeClaim',
          name,
          undefined,
          {
            metadata: { resourceVersion: fresh.metadata.resourceVersion },
            status: { conditions: conds.list() },
          },
          { type: 'merge' },
        );
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err)) throw err;
      }
    }
  }
}

/**
 * The replacements (NodeClaim names) a rolled-back command deletes, given cluster state `stateNodes`: every one not
 * initialized (a launch that failed or never joined); an initialized one only when keeping it beside the candidates
 * (untainted again) leaves its NodePool over `spec.limits` (the replacement was sized with the candidates left out).
 * Upstream leaves the replacements of a failed command in place (`pkg/controllers/disruption/orchestration/queue.go`):
 * an initialized replacement is a live node that may already run pods, so deleting it is a disruption no budget
 * covered; kept, consolidation reclaims it under the NodePool's budgets. Pure.
 */
export function replacementsToDelete(
  stateNodes: readonly StateNode[],
  replacements: readonly string[],
  nodePool: (name: string) => NodePool | undefined,
): string[] {
  const byClaim = new Map(
    stateNodes.flatMap((sn) => (sn.nodeClaim ? [[sn.nodeClaim.metadata.name, sn]] : [])),
  );
  const live = (name: string) => {
    const sn = byClaim.get(name);
    return sn?.nodeClaim && !sn.nodeClaim.metadata.deletionTimestamp && sn.initialized ? sn : undefined;
  };
  // first every replacement that is not a live, initialized node; then the initialized ones, against the limits
  const out = replacements.filter((name) => !live(name));
  for (const name of replacements) {
    const sn = live(name);
    const pool = sn?.nodePool ? nodePool(sn.nodePool) : undefined;
    if (!sn?.nodePool || !pool?.spec.limits) continue;
    const counted = stateNodes.filter(
      (x) => !x.nodeClaim?.metadata.deletionTimestamp && !out.includes(x.nodeClaim?.metadata.name ?? ''),
    );
    let over: string | undefined;
    try {
      over = exceeds(pool, poolUsage(sn.nodePool, counted), {});
    } catch {
      over = 'spec.limits is malformed';
    }
    if (over) out.push(name);
  }
  return out;
}

/**
 * The fields of upstream's `disrupting node(s)` line (kubernetes-sigs/karpenter `pkg/controllers/disruption/queue.go`
 * `StartCommand`, `types.go` `Command.String`/`LogValues`): `command`
 * (`<reason>/<id>: <decision>: nodepools=[a,b]: [node, ...] -> [N replacement(s)] (savings: $0.12)`), `decision`,
 * `disrupted-node-count`, `replacement-node-count`, `pod-count`, `disrupted-nodes`
 * (`[{Node: {name}, NodeClaim: {name}, instance-type, capacity-type}]`) and `replacement-nodes`
 * (`[{capacity-type[, instance-types]}]`, `instance-types` only for a single replacement). `id` is capenter's
 * in-flight command number (upstream uses a UUID).
 */
export function disruptionLogValues(command: Command, id: number | string): Record<string, unknown> {
  const sources = command.candidates.map((c) => c.name).join(', ');
  const pools = [...new Set(command.candidates.map((c) => c.nodePool.metadata.name ?? ''))].join(',');
  const n = command.replacements.length;
  const savings = `(savings: $${command.savingsUSDPerHour.toFixed(2)})`;
  const head = `${command.reason}/${id}: ${command.decision}: nodepools=[${pools}]: [${sources}]`;
  const capacityType = (values: readonly string[]): string =>
    values.includes('reserved') ? 'reserved' : values.includes('spot') ? 'spot' : 'on-demand';
  return {
    command:
      n > 0
        ? `${head} -> [${n} ${n === 1 ? 'replacement' : 'replacements'}] ${savings}`
        : `${head} ${savings}`,
    decision: command.decision,
    'disrupted-node-count': command.candidates.length,
    'replacement-node-count': n,
    'pod-count': command.candidates.reduce((acc, c) => acc + c.reschedulablePods.length, 0),
    'disrupted-nodes': command.candidates.map((c) => ({
      Node: objectRef(c.name),
      NodeClaim: objectRef(c.nodeClaim.metadata.name),
      'instance-type': c.node.metadata.labels?.['node.kubernetes.io/instance-type'] ?? '',
      'capacity-type': c.node.metadata.labels?.['karpenter.sh/capacity-type'] ?? '',
    })),
    'replacement-nodes': command.replacements.map((r) => {
      const ct = r.requirements.find((q) => q.key === 'karpenter.sh/capacity-type');
      const values = ct?.operator === 'In' ? (ct.values ?? []) : ['spot', 'on-demand'];
      return {
        'capacity-type': capacityType(values),
        ...(n === 1
          ? { 'instance-types': instanceTypeList(r.instanceTypeOptions.map((it) => it.name)) }
          : {}),
      };
    }),
  };
}
