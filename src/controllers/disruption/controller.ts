/**
 * `disruption`: the voluntary disruption controller, after kubernetes-sigs/karpenter
 * `pkg/controllers/disruption/controller.go`. A singleton loop (every 10 s, at once again after a command ran):
 * 1. wait until cluster state is synced; remove stale `karpenter.sh/disrupted` taints from nodes that no command
 *    of this process is disrupting and that are not being deleted (left by a restart or a failure);
 * 2. build the pure core's input from state ({@link buildDisruptionInput}) and call `computeDisruption`;
 *    update `karpenter_voluntary_disruption_eligible_nodes`, `karpenter_nodepools_allowed_disruptions`, publish
 *    `DisruptionBlocked` Events for nodes blocked by pods, PDBs, annotations or budgets (deduplicated, 15 min) and
 *    the pod Events of `karpenter.sh/do-not-disrupt` durations (`DoNotDisruptUntil`,
 *    `DoNotDisruptGracePeriodElapsed`, `InvalidDoNotDisruptAnnotation`);
 *    write the NodeClaim conditions `Consolidatable` / `Drifted` (`nodeclaim/disruption/conditions.ts`);
 * 3. for the chosen (non-`Expired`) command: a consolidation replace publishes upstream's `ConsolidationCandidate`;
 *    emptiness/consolidation wait 15 s and re-validate on a fresh snapshot (`validation.ts`; a single-node
 *    consolidation that fails publishes `ConsolidationRejected`, see `consolidationevents.ts`); then the {@link Orchestrator} taints, launches replacements, waits for them and deletes the
 *    candidates.
 * `Expired` commands are left to the expiration controller (`nodeclaim/expiration`), which deletes expired
 * NodeClaims directly, as upstream v1.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { KubeObject } from '../../apis/core.ts';
import { doNotDisruptEvent } from '../../apis/donotdisrupt.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { TaintDisrupted } from '../../apis/labels.ts';
import type { CloudProvider } from '../../cloudprovider/types.ts';
import { balancedApprovalMessage, balancedApprovals } from '../../disruption/balanced.ts';
import { allowedDisruptions, budgetMapping } from '../../disruption/budgets.ts';
import { buildClusterView, type ClusterView, doNotDisruptReadings } from '../../disruption/candidates.ts';
import {
  type BudgetReason,
  type Command,
  computeDisruption,
  type DisruptionFeatureGates,
  type DisruptionInput,
  type DisruptionOptions,
  type DisruptionResult,
  type DisruptionStats,
  defaultMethods,
  PassContext,
} from '../../disruption/index.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Clock } from '../../kube/clock.ts';
import { type Cluster, conditionOf } from '../../state/cluster.ts';
import { syncDisruptionConditions } from '../nodeclaim/disruption/conditions.ts';
import { NodeClaimLauncher } from '../provisioning/launcher.ts';
import type { NodePoolHash } from '../provisioning/nodeclaim.ts';
import {
  type Controller,
  errorMessage,
  matchTaint,
  type Recorder,
  SingletonController,
} from '../runtime/index.ts';
import {
  consolidationCandidateMessage,
  consolidationRejectedMessage,
  publishesCandidateEvents,
  validationFailureKind,
} from './consolidationevents.ts';
import { buildDisruptionInput } from './input.ts';
import {
  consolidationType,
  type DisruptionMetrics,
  disruptionMetrics,
  reasonLabel,
  recordConsolidationMoves,
  recordConsolidationTimeouts,
} from './metrics.ts';
import {
  AnnotationReplacementFor,
  Orchestrator,
  ReplacementTimeoutSeconds,
  replacementsToDelete,
} from './orchestration.ts';
import { chosenCommand, needsValidation, ValidationSeconds, validateCommand } from './validation.ts';

/** Seconds between passes when nothing was done (upstream `pollingPeriod`). */
export const DisruptionPollSeconds = 10;
/** Seconds before the same `DisruptionBlocked` Event is published again for a node. */
export const BlockedEventDedupeSeconds = 900;
/**
 * Seconds before a NodePool's `DisruptionBlocked` Event for one disruption reason is published again (upstream
 * `NodePoolBlockedForDisruptionReason`: 1 min, "a NodePool's disruption budget can change every minute").
 */
export const NodePoolBlockedEventDedupeSeconds = 60;

/**
 * Seconds an `Unconsolidatable` Event of a Node or NodeClaim suppresses the next one for that object, whatever its
 * message (upstream `disruption/events/events.go` `Unconsolidatable`: DedupeValues UID, DedupeTimeout 15 min).
 */
export const UnconsolidatableEventDedupeSeconds = 900;

/** Constructor options of {@link DisruptionController}. */
export interface DisruptionControllerOptions {
  client: KubeClient;
  cluster: Cluster;
  cloudProvider: CloudProvider;
  clock: Clock;
  logger: Logger;
  recorder: Recorder;
  registry: Registry;
  /** Seconds between idle passes (default 10). */
  pollSeconds?: number;
  /** Seconds to wait before re-validating a command (default 15). */
  validationSeconds?: number;
  /** Seconds to wait for replacements to initialize (default 600). */
  replacementTimeoutSeconds?: number;
  featureGates?: DisruptionFeatureGates;
  /** Tunables of the pure core. */
  coreOptions?: DisruptionOptions;
  /** NodePool hash stamped on replacements (default: `templateHash`, as provisioning); unused with `launcher`. */
  nodePoolHash?: (np: NodePool) => NodePoolHash;
  /**
   * Launches the replacements: pass the provisioner's (`Provisioner.launcher`) so replacements and new
   * capacity are checked against the NodePool limits together (the operator does); default: a launcher of its own.
   */
  launcher?: NodeClaimLauncher;
  /** Write the NodeClaim conditions `Consolidatable` / `Drifted` each pass (default true). */
  syncConditions?: boolean;
}

/** What one pass saw and did (the last one is kept in {@link DisruptionController.lastPass}). */
export interface DisruptionPass {
  at: number;
  result: DisruptionResult;
  /** The pure core's input of the pass (instance types and prices by NodePool; read-only, for observers). */
  input?: DisruptionInput;
  /** The command the pass chose (before validation). */
  chosen?: Command;
  /** The command executed (after validation), if any. */
  executed?: Command;
  /** Why the chosen command was dropped at validation or launch. */
  abandoned?: string;
}

const BudgetReasons: readonly BudgetReason[] = ['Empty', 'Drifted', 'Underutilized'];

/** True for blocked reasons worth a `DisruptionBlocked` Event (pods, PDBs, annotations, budgets). */
export function isBlockingReason(reason: string): boolean {
  return /^pod |PodDisruptionBudget|do-not-disrupt|budget/i.test(reason);
}

/** The disruption controller; see the module doc. */
export class DisruptionController implements Controller {
  readonly name = 'disruption';
  readonly orchestrator: Orchestrator;
  private readonly loop: SingletonController;
  private readonly metrics: DisruptionMetrics;
  private readonly published = new Map<string, number>();
  /** The last pass (for logs, tests and `capenter` diagnostics). */
  lastPass: DisruptionPass | undefined;
  /** Observers of every pass. */
  readonly passListeners = new Set<(p: DisruptionPass) => void>();

  constructor(private readonly opts: DisruptionControllerOptions) {
    this.metrics = disruptionMetrics(opts.registry);
    this.orchestrator = new Orchestrator({
      client: opts.client,
      cluster: opts.cluster,
      clock: opts.clock,
      logger: opts.logger,
      recorder: opts.recorder,
      registry: opts.registry,
      metrics: this.metrics,
      launcher:
        opts.launcher ??
        new NodeClaimLauncher({
          client: opts.client,
          cluster: opts.cluster,
          cloudProvider: opts.cloudProvider,
          logger: opts.logger,
          ...(opts.nodePoolHash ? { nodePoolHash: opts.nodePoolHash } : {}),
        }),
      ...(opts.replacementTimeoutSeconds !== undefined
        ? { replacementTimeoutSeconds: opts.replacementTimeoutSeconds }
        : {}),
    });
    this.loop = new SingletonController({
      name: this.name,
      clock: opts.clock,
      logger: opts.logger,
      reconcile: (signal) => this.reconcile(signal),
    });
  }

  /** Runs passes until `signal` aborts; waits for in-flight commands to stop. */
  async start(signal: AbortSignal): Promise<void> {
    await this.opts.cluster.waitForSync(signal);
    await this.loop.start(signal);
    await this.orchestrator.idle();
  }

  /** Wakes the loop for a pass now. */
  trigger(): void {
    this.loop.trigger();
  }

  /** The pure core's input for the current state (exposed for diagnostics and tests). */
  async input(): Promise<DisruptionInput> {
    return buildDisruptionInput(this.opts.cluster.snapshot(), {
      cloudProvider: this.opts.cloudProvider,
      ...(this.opts.featureGates ? { featureGates: this.opts.featureGates } : {}),
      options: { ...this.opts.coreOptions, clockMs: () => this.opts.clock.now() },
      onInstanceTypeError: (np, msg) =>
        this.opts.logger.warn(
          { controller: this.name, nodepool: np, err: msg },
          'unable to resolve instance types',
        ),
    });
  }

  /** One pass (see the module doc). Returns the seconds until the next one. */
  async reconcile(signal: AbortSignal): Promise<{ requeueAfter: number }> {
    const poll = this.opts.pollSeconds ?? DisruptionPollSeconds;
    const log = this.opts.logger.child({ controller: this.name });
    if (!(await this.opts.cluster.synced())) return { requeueAfter: 1 };
    await this.cleanupStaleTaints();
    const input = await this.input();
    const stats: DisruptionStats = { simulations: 0 };
    const started = performance.now();
    const result = computeDisruption(input, stats);
    recordConsolidationMoves(this.metrics, stats.consolidationMoves);
    recordConsolidationTimeouts(this.metrics, stats.consolidationTimeouts);
    for (const t of stats.consolidationTimeouts ?? [])
      log.debug({ consolidation_type: t }, 'abandoning consolidation due to timeout');
    // upstream labels the evaluation by the disruption reason (`empty`, `underutilized`, `drifted`, …)
    const evaluated = chosenCommand(result);
    this.metrics.evaluationDuration.observe(
      {
        reason: evaluated ? reasonLabel(evaluated.reason) : 'none',
        consolidation_type: consolidationType(stats.method ?? ''),
      },
      (performance.now() - started) / 1000,
    );
    const view = buildClusterView(input);
    this.recordGauges(input, view);
    this.publishBlocked(input, result, view);
    this.publishDoNotDisrupt(input, view);
    if (this.opts.syncConditions ?? true) {
      try {
        await syncDisruptionConditions(this.opts.client, this.opts.clock, input);
      } catch (err) {
        log.warn({ err: errorMessage(err) }, 'unable to update NodeClaim disruption conditions');
      }
    }
    const pass: DisruptionPass = { at: input.now, result, input };
    const chosen = chosenCommand(result);
    if (!chosen) return this.finish(pass, poll);
    pass.chosen = chosen;
    this.publishBalancedApprovals(chosen, input, view);
    if (publishesCandidateEvents(chosen))
      this.publishPerCandidate(chosen, input, 'ConsolidationCandidate', (n) =>
        consolidationCandidateMessage(chosen, n),
      );
    let command: Command | undefined = chosen;
    if (needsValidation(chosen)) {
      await this.opts.clock.sleep((this.opts.validationSeconds ?? ValidationSeconds) * 1000, signal);
      if (signal.aborted) return this.finish(pass, poll);
      const fresh = await this.input();
      const v = validateCommand(chosen, computeDisruption(fresh));
      if (!v.command) {
        if (chosen.method === 'SingleNodeConsolidation') {
          const kind = validationFailureKind(chosen, fresh);
          this.publishPerCandidate(chosen, input, 'ConsolidationRejected', (n) =>
            consolidationRejectedMessage(chosen, n, kind),
          );
        }
        log.info(
          { method: chosen.method, reason: v.reason },
          'abandoning disruption command after validation',
        );
        pass.abandoned = `validation: ${v.reason}`;
        this.metrics.failedValidations.inc(
          { consolidation_type: consolidationType(chosen.method) },
          chosen.candidates.length,
        );
        return this.finish(pass, 0);
      }
      command = v.command;
    }
    const busy = command.candidates.filter((c) => this.orchestrator.disruptingNodes().has(c.name));
    if (busy.length > 0) {
      pass.abandoned = `already disrupting ${busy.map((c) => c.name).join(', ')}`;
      return this.finish(pass, poll);
    }
    const ok = await this.orchestrator.execute(command, signal);
    if (!ok) {
      pass.abandoned = 'rolled back at launch';
      return this.finish(pass, poll);
    }
    pass.executed = command;
    return this.finish(pass, 0);
  }

  private finish(pass: DisruptionPass, requeueAfter: number): { requeueAfter: number } {
    this.lastPass = pass;
    for (const l of this.passListeners) {
      try {
        l(pass);
      } catch (err) {
        this.opts.logger.warn({ controller: this.name, err: errorMessage(err) }, 'pass listener failed');
      }
    }
    return { requeueAfter };
  }

  /**
   * Nodes tainted `karpenter.sh/disrupted` that no command of this process disrupts and that are not being deleted
   * were left by a command of a previous process (a restart between launch and termination) or a failure. When
   * the command's replacements (NodeClaims annotated {@link AnnotationReplacementFor} with the candidate) are still
   * live, the command is finished the way the orchestrator would have: all initialized → the candidate's NodeClaim
   * is deleted; any still launching and younger than the replacement timeout → left as they are until a later
   * pass; otherwise rolled back: the taint removed, the replacements not initialized deleted, an initialized one
   * deleted only when keeping it beside the candidate would leave the NodePool over its limits (the replacement
   * launch had sized it without the candidate; see `replacementsToDelete`). Without replacements the taint is
   * removed.
   */
  async cleanupStaleTaints(): Promise<void> {
    const { cluster, client, clock } = this.opts;
    const log = this.opts.logger.child({ controller: this.name });
    const active = this.orchestrator.disruptingNodes();
    const timeoutMs = (this.opts.replacementTimeoutSeconds ?? ReplacementTimeoutSeconds) * 1000;
    const stateNodes = cluster.stateNodes();
    for (const sn of stateNodes) {
      const node = sn.node;
      if (!node || active.has(sn.name)) continue;
      if (node.metadata.deletionTimestamp || sn.nodeClaim?.metadata.deletionTimestamp) continue;
      if (!(node.spec?.taints ?? []).some((t) => matchTaint(t, TaintDisrupted))) continue;
      const claim = sn.nodeClaim?.metadata.name;
      const replacements = claim
        ? stateNodes
            .map((x) => x.nodeClaim)
            .filter(
              (nc): nc is NodeClaim =>
                !!nc &&
                !nc.metadata.deletionTimestamp &&
                (nc.metadata.annotations?.[AnnotationReplacementFor] ?? '').split(',').includes(claim),
            )
        : [];
      try {
        if (replacements.length > 0 && claim) {
          const initialized = replacements.every((nc) => conditionOf(nc, 'Initialized')?.status === 'True');
          if (initialized) {
            await client.tryDelete('NodeClaim', claim);
            log.info(
              { node: sn.name, replacements: replacements.map((nc) => nc.metadata.name) },
              "deleted the candidate of a previous process's disruption command (replacements initialized)",
            );
            continue;
          }
          const oldest = Math.min(
            ...replacements.map((nc) => Date.parse(nc.metadata.creationTimestamp ?? '') || clock.now()),
          );
          if (clock.now() - oldest < timeoutMs) continue; // still launching: look again next pass
          const names = replacements.map((nc) => nc.metadata.name as string);
          const doomed = replacementsToDelete(stateNodes, names, (n) => cluster.getNodePool(n));
          for (const name of doomed) await client.tryDelete('NodeClaim', name);
          log.info(
            { node: sn.name, replacements: names, deleted: doomed },
            "rolled back a previous process's disruption command (replacements never initialized)",
          );
        }
        await this.orchestrator.setTaint(sn.name, false);
        cluster.unmarkForDeletion(sn.name, claim ?? sn.name);
        log.info({ node: sn.name }, 'removed stale disrupted taint');
      } catch (err) {
        log.warn({ node: sn.name, err: errorMessage(err) }, 'cleaning up a stale disrupted taint failed');
      }
    }
  }

  private recordGauges(input: DisruptionInput, view: ClusterView): void {
    // upstream (helpers.go BuildDisruptionBudgetMapping) labels the reason as the API spells it (`Underutilized`),
    // unlike the eligible-nodes gauge, and reports the budget before the disrupting nodes are taken off
    for (const reason of BudgetReasons) {
      for (const np of input.nodePools) {
        const pool = np.metadata.name;
        const c = view.poolCounts.get(pool) ?? { nodes: 0, disrupting: 0 };
        this.metrics.allowedDisruptions.set(
          { nodepool: pool, reason },
          allowedDisruptions(np, c.nodes, reason, input.now),
        );
        this.metrics.nodesConsumingBudgets.set({ nodepool: pool, reason }, c.disrupting);
      }
    }
    const ctx = new PassContext(input, view, new Set());
    for (const m of defaultMethods()) {
      let eligible = 0;
      for (const c of view.candidates.values()) {
        if (c.ineligible) continue;
        const tgp =
          c.nodeClaim.spec.terminationGracePeriod ?? c.nodePool.spec.template.spec.terminationGracePeriod;
        if (c.podsBlock && !(m.class === 'eventual' && tgp !== undefined)) continue;
        if (m.shouldDisrupt(c, ctx) === undefined) eligible++;
      }
      this.metrics.eligibleNodes.set({ reason: m.reason.toLowerCase() }, eligible);
    }
  }

  /**
   * Publishes upstream's pod Events for the `karpenter.sh/do-not-disrupt` readings of the candidate check
   * (`doNotDisruptReadings`): `DoNotDisruptUntil`, `DoNotDisruptGracePeriodElapsed` (Normal) and
   * `InvalidDoNotDisruptAnnotation` (Warning), with upstream's messages; repeats are dropped by the recorder's
   * dedupe window (upstream dedupes on pod UID and message).
   */
  private publishDoNotDisrupt(input: DisruptionInput, view: ClusterView): void {
    for (const { pod, state } of doNotDisruptReadings(view.candidates.values(), input.now)) {
      const e = doNotDisruptEvent(state);
      if (e) void this.opts.recorder.publish(pod, e.type, e.reason, e.message);
    }
  }

  /**
   * Upstream's `ConsolidationApproved` Events for a consolidation command of Balanced NodePools (balanced.go
   * `ApproveCommand` / `EmitMultiNodeEvents`): one candidate → on its Node and NodeClaim; several → on each
   * Balanced NodePool; message `score S >= threshold T (k: K, savings X%, disruption Y%)`. Rejections publish
   * nothing (upstream: "rejection volume under Balanced is high enough to bury approvals").
   */
  private publishBalancedApprovals(cmd: Command, input: DisruptionInput, view: ClusterView): void {
    if (cmd.method !== 'SingleNodeConsolidation' && cmd.method !== 'MultiNodeConsolidation') return;
    if (!cmd.candidates.some((c) => c.nodePool.spec.disruption?.consolidationPolicy === 'Balanced')) return;
    const totals = new PassContext(input, view, new Set()).nodePoolTotals();
    for (const a of balancedApprovals(cmd, totals)) {
      const msg = balancedApprovalMessage(a);
      if (cmd.candidates.length === 1) {
        const c = cmd.candidates[0]!;
        const dn = input.nodes.find((n) => n.node.metadata.name === c.name);
        for (const o of [dn?.node, dn?.nodeClaim])
          if (o) void this.opts.recorder.publish(o, 'Normal', 'ConsolidationApproved', msg);
        continue;
      }
      const np = input.nodePools.find((p) => p.metadata.name === a.nodePool);
      if (np) void this.opts.recorder.publish(np, 'Normal', 'ConsolidationApproved', msg);
    }
  }

  /**
   * Publishes `reason` (Normal) with `message(candidate name)` on each candidate's Node and NodeClaim, as upstream's
   * `EmitCandidateEvents` / `EmitRejectedEvents` (`./consolidationevents.ts`); repeats are dropped by the
   * recorder's dedupe window (upstream dedupes on object UID and command for 2 minutes).
   */
  private publishPerCandidate(
    cmd: Command,
    input: DisruptionInput,
    reason: string,
    message: (node: string) => string,
  ): void {
    for (const c of cmd.candidates) {
      const dn = input.nodes.find((n) => n.node.metadata.name === c.name);
      const msg = message(c.name);
      for (const o of [dn?.node, dn?.nodeClaim])
        if (o) void this.opts.recorder.publish(o, 'Normal', reason, msg);
    }
  }

  private publishBlocked(input: DisruptionInput, result: DisruptionResult, view: ClusterView): void {
    const now = input.now;
    const due = (key: string, seconds = BlockedEventDedupeSeconds): boolean => {
      const last = this.published.get(key);
      if (last !== undefined && now - last < seconds * 1000) return false;
      this.published.set(key, now);
      return true;
    };
    if (this.published.size > 20_000) this.published.clear();
    const byName = new Map(input.nodes.map((dn) => [dn.node.metadata.name ?? '', dn]));
    for (const b of result.blocked) {
      if (!isBlockingReason(b.reason) || !due(`${b.node}|${b.reason}`)) continue;
      const dn = byName.get(b.node);
      if (!dn) continue;
      const objs: KubeObject[] = [dn.node];
      if (dn.nodeClaim) objs.push(dn.nodeClaim);
      for (const o of objs) void this.opts.recorder.publish(o, 'Normal', 'DisruptionBlocked', b.reason);
    }
    for (const reason of BudgetReasons) {
      for (const [pool, n] of budgetMapping(input.nodePools, view.poolCounts, reason, now)) {
        const counts = view.poolCounts.get(pool);
        if (n > 0 || !counts || counts.nodes === 0) continue;
        const np = input.nodePools.find((p) => p.metadata.name === pool);
        const msg = `No allowed disruptions for disruption reason ${reason} due to blocking budget`;
        if (np && due(`nodepool/${pool}|${msg}`, NodePoolBlockedEventDedupeSeconds))
          void this.opts.recorder.publish(np, 'Normal', 'DisruptionBlocked', msg);
      }
    }
    for (const u of result.unconsolidatable ?? []) {
      const dn = byName.get(u.node);
      if (!dn) continue;
      for (const o of [dn.node, dn.nodeClaim]) {
        // upstream dedupes on the object's UID alone: one Unconsolidatable Event per object per 15 minutes
        const id = `${o?.kind ?? ''}/${o?.metadata.uid ?? o?.metadata.name ?? ''}`;
        if (o && due(`unconsolidatable|${id}`, UnconsolidatableEventDedupeSeconds))
          void this.opts.recorder.publish(o, 'Normal', 'Unconsolidatable', u.message);
      }
    }
  }
}
