/**
 * The scheduling simulation (upstream Karpenter `pkg/controllers/provisioning/scheduling/scheduler.go`):
 * given pending pods, existing capacity, NodePools and their instance types, decide where each pod goes —
 * an existing node, an in-flight NodeClaim, or a new NodeClaim — and which NodeClaims to create.
 *
 * Algorithm:
 * 1. pods are sorted: pods that need a node of their own first (hostname self anti-affinity, see
 *    `podinfo.ts` `needsOwnNode`), then cpu desc, memory desc, creation timestamp, namespace/name (first-fit
 *    decreasing);
 * 2. each pod tries, in order: existing nodes (initialized first, then by name), in-flight NodeClaims (by name),
 *    the NodeClaims opened so far in this run ({@link PlanSearch}: the tightest one that holds it at no extra
 *    price, else the cheapest one that can grow to hold it), then a new NodeClaim from each NodePool by weight desc
 *    (ties by name) whose remaining `spec.limits` still admit some instance type;
 * 3. when a pod fits nowhere its preferences are relaxed one at a time (`preferences.ts`) and it is tried again;
 * 4. pods that still failed are retried with their full preferences while a pass makes progress (pods with
 *    affinity to other pods of the batch);
 * 5. a repacking post-pass (`repack.ts`) moves pods that no hostname topology concerns to another NodeClaim when
 *    their own one then shrinks to a cheaper type by more than the other one grows;
 * 6. each NodeClaim keeps the instance types that satisfy its merged requirements and fit all its pods plus the
 *    daemon overhead, sorted by price, truncated to {@link MAX_INSTANCE_TYPES} (minValues re-checked).
 *
 * Deviations from upstream, for cost: pods needing their own node go first, so the nodes they force are filled
 * by the other pods instead of opening more; open NodeClaims are chosen by fit and price (upstream tries the one
 * with the fewest pods first); a NodeClaim only grows into larger types while they stay cost-efficient for its
 * requests (see `nodeclaim.ts`); the repacking post-pass (step 5); a zonal spread pins the cheapest of its equally
 * counted zones (`topology.ts`). Volume topology (zonal PersistentVolumes) is not considered.
 *
 * Structure: {@link solve} = `runstate.ts` `prepareRun` (indexes, NodePools, pod infos with invalid pods set aside
 * as values, topology, existing and in-flight capacity) → {@link Scheduler} (steps 1–5) → {@link finalise}.
 * Explanations go to an `explain.ts` recorder that does nothing unless `input.explain`.
 *
 * Speed: per-template pod data is derived once (`podinfo.ts` `PodInfoCache`); open NodeClaims are scanned as
 * typed arrays (`plansearch.ts` `PlanSearch`).
 *
 * Pure and deterministic: no clock, no I/O, no randomness; the same input gives the same output.
 */
import type { DaemonSet } from '../apis/core.ts';
import type { Offering } from '../apis/instancetype.ts';
import {
  LabelCapacityReservationID,
  LabelCapacityType,
  LabelInstanceType,
  LabelTopologyZone,
} from '../apis/labels.ts';
import { daemonSetPod } from './daemonoverhead.ts';
import type { ExistingCapacity } from './existingnode.ts';
import { type ExplanationRecorder, ExplanationTrace, NoExplanations } from './explain.ts';
import {
  byPriceThenName,
  cheapestOffering,
  minValuesShortfall,
  type ResourceIndex,
  relaxMinValues,
} from './instancetypes.ts';
import {
  type Failure,
  MAX_INSTANCE_TYPES,
  type NewNodeClaim,
  openNewNodeClaim,
  type PricedType,
} from './nodeclaim.ts';
import { PlanSearch } from './plansearch.ts';
import { type PodInfo, podKey, refreshPodInfo, resetPodInfo } from './podinfo.ts';
import { withPreferencePolicy } from './preferencepolicy.ts';
import { copyConstraints, relax } from './preferences.ts';
import { repack } from './repack.ts';
import type { RequirementError, Requirements } from './requirements.ts';
import { ReservationLedger, reserveOffering } from './reservations.ts';
import { sumResources } from './resources.ts';
import { prepareRun, type RunState } from './runstate.ts';
import type { Topology } from './topology.ts';
import type {
  NodeClaimPlan,
  Placement,
  PlacementTarget,
  SchedulingInput,
  SchedulingResult,
  Unschedulable,
} from './types.ts';
import { withVolumeTopology } from './volumetopology.ts';

export { MAX_INSTANCE_TYPES } from './nodeclaim.ts';
export { compareNodePools } from './runstate.ts';

/** How many times failed pods are retried with their full preferences while progress is made. */
const MAX_PASSES = 8;

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Orders pods as the scheduler does: pods that need a node of their own first ({@link PodInfo.ownNode}: hostname
 * self anti-affinity), then cpu desc, memory desc, creation timestamp asc, namespace/name.
 */
export function comparePods(a: PodInfo, b: PodInfo): number {
  return (
    Number(b.ownNode) - Number(a.ownNode) ||
    b.vec[0]! - a.vec[0]! ||
    b.vec[1]! - a.vec[1]! ||
    cmpStr(a.pod.metadata.creationTimestamp ?? '', b.pod.metadata.creationTimestamp ?? '') ||
    cmpStr(a.key, b.key)
  );
}

/** Price (USD/hour) of a planned NodeClaim: its cheapest allowed offering. */
export function nodeClaimPrice(plan: NodeClaimPlan): number {
  return plan.cheapest.offering.priceUSDPerHour;
}

type Where = { kind: 'existing' | 'inflight'; cap: ExistingCapacity } | { kind: 'new'; plan: NewNodeClaim };

/**
 * Runs the scheduling simulation in three parts: {@link prepareRun} (indexes, NodePools, pod infos, topology,
 * existing and in-flight capacity), a {@link Scheduler} that places the pods (upstream's order: existing nodes,
 * in-flight NodeClaims, then new NodeClaims), and {@link finalise} (instance-type options, placements,
 * unschedulable pods). Explanations go to an {@link ExplanationTrace} when `input.explain`, else nowhere.
 * Never throws for bad objects: they become `InvalidPod` / messages.
 */
export function solve(input: SchedulingInput): SchedulingResult {
  const prefs = withPreferencePolicy(input);
  const base = prefs ? prefs.input : input;
  const volumes = withVolumeTopology(base);
  const result = volumes ? volumes.restore(solveRun(volumes.input)) : solveRun(base);
  return prefs ? prefs.restore(result) : result;
}

/** {@link solve} once volume topology is in the pods' node affinity. */
function solveRun(input: SchedulingInput): SchedulingResult {
  const recorder = input.explain === true ? new ExplanationTrace() : NoExplanations;
  const run = prepareRun(input);
  const byZone: Record<string, number> = {};
  for (const pod of run.pods) {
    const z = effectiveZone(pod, run.topology);
    byZone[z] = (byZone[z] ?? 0) + 1;
  }
  const scheduler = new Scheduler(run, recorder);
  scheduler.scheduleAll();
  scheduler.repack();
  const result = finalise(run, scheduler, recorder);
  if (run.pods.length > 0) result.pendingPodsByEffectiveZone = byZone;
  return result;
}

/**
 * The zone a pod can go to, before the run places anything (upstream `computeEffectiveZoneFromPod`,
 * `scheduling/scheduler.go`): the intersection of its zone requirement (node selector and required node affinity,
 * volume zones included since `withVolumeTopology` folds them in) with the zones its own topology groups allow now
 * ({@link Topology.validDomains}). One zone → its name; several → `flexible`; none → `none`. A pod with neither a
 * zone requirement (`In`) nor a zone-keyed group is `flexible`. Pure.
 */
export function effectiveZone(pod: PodInfo, topology: Topology): string {
  const tsc = topology.validDomains(pod, pod.groups, pod.strict, LabelTopologyZone);
  if (!tsc.satisfiable) return 'none';
  const req = pod.strict.get(LabelTopologyZone);
  const zonal = req && req.operator() === 'In' ? [...req.values] : tsc.domains ? [...tsc.domains] : undefined;
  if (!zonal) return 'flexible';
  const matched = zonal.filter((z) => (!req || req.has(z)) && (!tsc.domains || tsc.domains.has(z)));
  return matched.length === 1 ? matched[0]! : matched.length === 0 ? 'none' : 'flexible';
}

/**
 * Places the pods of a run, one at a time in {@link comparePods} order, as upstream's `Scheduler.add`: try
 * existing nodes, then in-flight NodeClaims, then the NodeClaims opened in this run, then a new NodeClaim from
 * each NodePool by weight; when a pod fits nowhere, relax one preference and try again; pods that still fail are
 * retried with their full preferences while a pass makes progress.
 */
export class Scheduler {
  /** NodeClaims opened in this run, in creation order. */
  readonly plans: NewNodeClaim[] = [];
  /** Where each placed pod went. */
  readonly where = new Map<PodInfo, Where>();
  /** The last failure of each pod not (yet) placed. */
  readonly failures = new Map<PodInfo, Failure>();
  /** The run's pods in scheduling order. */
  readonly ordered: PodInfo[];
  private readonly search: PlanSearch;
  private hostnameSeq = 0;

  constructor(
    private readonly run: RunState,
    private readonly recorder: ExplanationRecorder,
  ) {
    this.ordered = [...run.pods].sort(comparePods);
    this.search = new PlanSearch(run.topology, recorder.detailed, run.minCpu, run.minMemory);
  }

  /** Schedules every pod: a first pass, then up to {@link MAX_PASSES} − 1 retries of the failed ones. */
  scheduleAll(): void {
    let queue = this.ordered;
    for (let pass = 0; pass < MAX_PASSES && queue.length > 0; pass++) {
      const failed: PodInfo[] = [];
      for (const pod of queue) {
        if (pass > 0) {
          resetPodInfo(pod, this.run.topology);
          this.recorder.note(pod.key, `retry pass ${pass + 1}`);
        }
        if (!this.schedule(pod)) failed.push(pod);
      }
      if (failed.length === queue.length) break;
      queue = failed;
    }
  }

  /** The repacking post-pass (`repack.ts`): moves pods no hostname topology concerns to where they cost less. */
  repack(): void {
    repack(this.plans, this.run.topology, (pod, to) => {
      this.where.set(pod, { kind: 'new', plan: to });
      this.recorder.note(pod.key, `repacked onto new nodeclaim ${to.hostname} (lower total price)`);
    });
  }

  /** Places `pod`, relaxing its preferences one at a time until it fits or none is left. */
  private schedule(pod: PodInfo): boolean {
    for (;;) {
      const r = this.place(pod);
      if ('kind' in r) {
        this.where.set(pod, r);
        this.failures.delete(pod);
        return true;
      }
      this.failures.set(pod, r);
      if (pod.shared) {
        pod.constraints = copyConstraints(pod.constraints);
        pod.shared = false;
      }
      const relaxed = relax(pod.constraints, this.run.allowPreferNoSchedule);
      if (!relaxed) return false;
      refreshPodInfo(pod, this.run.topology);
      this.recorder.note(pod.key, `relaxed: ${relaxed}`);
    }
  }

  /** One attempt with the pod's current constraints, in upstream's order. */
  private place(pod: PodInfo): Where | Failure {
    return (
      this.tryCapacity(pod, 'existing', this.run.existing) ??
      this.tryCapacity(pod, 'inflight', this.run.inflight) ??
      this.tryOpenNodeClaims(pod) ??
      this.tryNewNodeClaim(pod)
    );
  }

  /** The first existing node / in-flight NodeClaim (in their order) that takes the pod, committed. */
  private tryCapacity(
    pod: PodInfo,
    kind: 'existing' | 'inflight',
    capacity: readonly ExistingCapacity[],
  ): Where | undefined {
    const { topology, index } = this.run;
    const what = kind === 'existing' ? 'existing node' : 'in-flight nodeclaim';
    const guard = kind === 'existing' ? this.run.consolidateAfterDestinations : undefined;
    const guarded = guard?.podKeys.has(pod.key) === true;
    for (const cap of capacity) {
      if (guarded && guard.nodes.has(cap.name)) {
        this.recorder.note(
          pod.key,
          `${what} ${cap.name}: consolidateAfter has not elapsed (not a destination)`,
        );
        continue;
      }
      const f = cap.canAdd(pod, topology, index, this.recorder.detailed);
      if (!f) {
        cap.commit(pod, topology);
        return { kind, cap };
      }
      this.recorder.note(pod.key, `${what} ${cap.name}: ${f.message}`);
    }
    return undefined;
  }

  /** A NodeClaim opened earlier in this run that takes the pod ({@link PlanSearch}). */
  private tryOpenNodeClaims(pod: PodInfo): Where | undefined {
    const note = this.recorder.detailed ? (d: string) => this.recorder.note(pod.key, d) : undefined;
    const found = this.search.place(pod, note);
    return found ? { kind: 'new', plan: found } : undefined;
  }

  /** A new NodeClaim from the first NodePool (by weight) that can hold the pod, else why none can. */
  private tryNewNodeClaim(pod: PodInfo): Where | Failure {
    const reasons: Failure[] = [];
    for (const pool of this.run.pools) {
      const hostname = `hostname-placeholder-${String(this.hostnameSeq + 1).padStart(4, '0')}`;
      const r = openNewNodeClaim(pool, pod, this.run.topology, hostname);
      if ('pods' in r) {
        this.hostnameSeq++;
        r.seq = this.plans.length;
        this.plans.push(r);
        this.search.add(r);
        return { kind: 'new', plan: r };
      }
      const f = { code: r.code, message: `incompatible with nodepool "${pool.name}": ${r.message}` };
      reasons.push(f);
      this.recorder.note(pod.key, f.message);
    }
    if (reasons.length === 0) {
      const errors = this.run.poolErrors;
      const extra = errors.length ? ` (${errors.join('; ')})` : '';
      return { code: 'NoNodePool', message: `no NodePool can provision new capacity${extra}` };
    }
    return { code: reasons[0]!.code, message: reasons.map((r) => r.message).join('; ') };
  }
}

/** The decision line of a placed pod in `--explain`. */
function describeTarget(target: PlacementTarget, plans: readonly NodeClaimPlan[]): string {
  if (target.kind === 'existing') return `existing node ${target.node}`;
  if (target.kind === 'inflight') return `in-flight nodeclaim ${target.nodeClaim}`;
  const plan = plans[target.index]!;
  return `new nodeclaim #${target.index} (nodepool ${plan.nodePool}, cheapest ${plan.cheapest.instanceType.name})`;
}

/**
 * The finaliser: turns the scheduler's NodeClaims into {@link NodeClaimPlan}s (a NodeClaim left with no fitting
 * instance type or short of `minValues` fails its pods), then lists placements in scheduling order and the
 * unschedulable pods (invalid ones first).
 */
export function finalise(run: RunState, s: Scheduler, recorder: ExplanationRecorder): SchedulingResult {
  const planIndex = new Map<NewNodeClaim, number>();
  const newNodeClaims: NodeClaimPlan[] = [];
  const ledger = new ReservationLedger(run.pools.map((p) => p.types.map((pt) => pt.t.it)));
  for (const plan of s.plans) {
    const final = finalizePlan(plan, run.index, ledger);
    if ('message' in final) {
      for (const pod of plan.pods) {
        s.where.delete(pod);
        s.failures.set(pod, { code: 'IncompatibleRequirements', message: final.message });
      }
      continue;
    }
    planIndex.set(plan, newNodeClaims.length);
    newNodeClaims.push(final);
  }
  const placements: Placement[] = [];
  const unschedulable: Unschedulable[] = [...run.invalid];
  for (const pod of s.ordered) {
    const w = s.where.get(pod);
    if (!w) {
      const f = s.failures.get(pod) ?? { code: 'NoNodePool' as const, message: 'not scheduled' };
      unschedulable.push({ pod: pod.pod, code: f.code, message: f.message });
      recorder.decide(pod.key, `unschedulable (${f.code}): ${f.message}`);
      continue;
    }
    let target: PlacementTarget;
    if (w.kind === 'new') target = { kind: 'new', index: planIndex.get(w.plan)! };
    else if (w.kind === 'existing') target = { kind: 'existing', node: w.cap.name };
    else target = { kind: 'inflight', nodeClaim: w.cap.name };
    placements.push({ pod: pod.pod, target });
    if (recorder.detailed) recorder.decide(pod.key, describeTarget(target, newNodeClaims));
  }
  for (const u of run.invalid) recorder.decide(podKey(u.pod), `unschedulable (${u.code}): ${u.message}`);
  const result: SchedulingResult = {
    newNodeClaims,
    placements,
    unschedulable,
    explanations: recorder.explanations(),
  };
  const none = run.pools.flatMap((p) => {
    const why = p.noCompatibleInstanceTypes();
    return why ? [{ nodePool: p.name, minValues: why.minValues }] : [];
  });
  if (none.length > 0) result.noCompatibleInstanceTypes = none;
  return result;
}

/**
 * The plan's options and requirements after capacity-reservation accounting ({@link reserveOffering}): options
 * re-priced under the narrowed requirements (a used-up reservation no longer prices them), or a message naming the
 * used-up reservations when no option is left.
 */
function withReservation(
  reqs: Requirements,
  fitting: readonly PricedType[],
  ledger: ReservationLedger,
): { reqs: Requirements; options: PricedType[] } | { message: string } {
  const choice = reserveOffering(
    ledger,
    reqs,
    (function* offerings() {
      for (const p of fitting) yield p.t.offerings;
    })(),
    (r) => cheapestAmong(fitting, r),
  );
  if (choice.reservationID === undefined && !choice.usedUp && !choice.reqs.has(LabelCapacityReservationID))
    return { reqs, options: fitting as PricedType[] };
  const options: PricedType[] = [];
  for (const p of choice.usedUp ? [] : fitting) {
    const o = cheapestOffering(p.t.offerings, choice.reqs);
    if (o) options.push({ t: p.t, price: o.priceUSDPerHour });
  }
  if (options.length === 0) {
    const used = ledger.usedUp().join(', ');
    return {
      message:
        `no instance left in capacity reservation(s) [${used}] in this scheduling pass and no other offering meets ` +
        `${LabelCapacityReservationID} ${reqs.get(LabelCapacityReservationID)?.toString() ?? 'Exists'} / ` +
        `${LabelCapacityType} ${reqs.get(LabelCapacityType)?.toString() ?? 'Exists'}`,
    };
  }
  return { reqs: choice.reqs, options: options.sort(byPriceThenName) };
}

/**
 * The cheapest offering under `reqs` among `types`' available offerings (ties: first type in order). `types` are
 * sorted by `price`, each priced under requirements `reqs` narrows (a lower bound of its price under `reqs`), so
 * the scan stops at the first type whose bound cannot beat the best found.
 */
function cheapestAmong(types: readonly PricedType[], reqs: Requirements): Offering | undefined {
  let best: Offering | undefined;
  for (const p of types) {
    if (best && p.price >= best.priceUSDPerHour) break;
    const o = cheapestOffering(p.t.offerings, reqs);
    if (o && (!best || o.priceUSDPerHour < best.priceUSDPerHour)) best = o;
  }
  return best;
}

/**
 * Turns a plan into a {@link NodeClaimPlan}: fitting options by price, truncated, minValues re-checked (upstream
 * `InstanceTypes.Truncate`). Under `MIN_VALUES_POLICY=BestEffort` a shortfall after truncation lowers the
 * `minValues` to what the kept types offer and marks the plan relaxed (capenter deviation: upstream skips the
 * check and keeps the NodeClaim's original `minValues` unannotated, leaving it unmet by its own instance types).
 */
function finalizePlan(
  plan: NewNodeClaim,
  index: ResourceIndex,
  ledger: ReservationLedger,
): NodeClaimPlan | { message: string } {
  const fitting: PricedType[] = plan.fittingOptions(MAX_INSTANCE_TYPES);
  if (fitting.length === 0) return { message: 'no instance type fits the NodeClaim' };
  const held = withReservation(plan.requirements, fitting, ledger);
  if ('message' in held) return held;
  const options = held.options;
  const its = options.map((p) => p.t.it);
  let planned = held.reqs;
  let relaxed = plan.minValuesRelaxed;
  const mv = minValuesShortfall(its, planned);
  if (mv && !plan.pool.relaxMinValues)
    return { message: `NodePool "${plan.pool.name}" could not meet minValues after truncation: ${mv}` };
  if (mv) {
    planned = relaxMinValues(its, planned) ?? planned;
    relaxed = true;
  }
  // the NodeClaim's requirements: `planned` and `instance-type In <options>` (their intersection: the options already
  // meet `planned`'s instance-type requirement, so the list is the options' names, sorted, with its minValues)
  const typeReq = planned.get(LabelInstanceType);
  const names = plan.pool.sortedTypeNames(options).filter((n) => !typeReq || typeReq.has(n));
  if (names.length === 0)
    return { message: `no instance type of NodePool "${plan.pool.name}" meets the NodeClaim's requirements` };
  const cheapest = options[0]!;
  const offering = cheapestOffering(cheapest.t.offerings, planned)!;
  const daemon = plan.pool.minDaemonRequests(options);
  return {
    nodePool: plan.pool.name,
    requirements: planned.toNodeSelector({
      key: LabelInstanceType,
      operator: 'In',
      values: names,
      ...(typeReq?.minValues !== undefined ? { minValues: typeReq.minValues } : {}),
    }),
    instanceTypeOptions: its,
    pods: plan.pods.map((p) => p.pod),
    requests: sumResources(index.resources(plan.requests), daemon),
    daemonOverhead: daemon,
    cheapest: {
      instanceType: cheapest.t.it,
      offering,
      daemonOverhead: { ...plan.pool.daemon(cheapest.t).requests },
    },
    ...(relaxed ? { minValuesRelaxed: true } : {}),
  };
}

export type { DaemonSet, RequirementError };
/** The pod a DaemonSet would run, re-exported for callers that build inputs. */
export { daemonSetPod };
