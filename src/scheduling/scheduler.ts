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
 * 5. each NodeClaim keeps the instance types that satisfy its merged requirements and fit all its pods plus the
 *    daemon overhead, sorted by price, truncated to {@link MAX_INSTANCE_TYPES} (minValues re-checked).
 *
 * Deviations from upstream, for cost: pods needing their own node go first, so the nodes they force are filled
 * by the other pods instead of opening more; open NodeClaims are chosen by fit and price (upstream tries the one
 * with the fewest pods first); a NodeClaim only grows into larger types while they stay cost-efficient for its
 * requests (see `nodeclaim.ts`). Volume topology (zonal PersistentVolumes) is not considered.
 *
 * Speed: per-template pod data is derived once (`podinfo.ts` `PodInfoCache`); open NodeClaims are scanned as
 * typed arrays (see {@link PlanSearch}).
 *
 * Pure and deterministic: no clock, no I/O, no randomness; the same input gives the same output.
 */
import type { DaemonSet, Pod } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelCapacityType, LabelHostname, LabelInstanceType, LabelTopologyZone } from '../apis/labels.ts';
import { parseResources, QuantityParseError, type Resources } from '../apis/quantity.ts';
import { type DaemonOverhead, daemonOverhead, daemonSetPod } from './daemonoverhead.ts';
import { type ExistingCapacity, existingNodeCapacity, inFlightCapacity, isTerminal } from './existingnode.ts';
import type { TypeInfo } from './instancetypes.ts';
import {
  cheapestOffering,
  minValuesShortfall,
  providerKeys,
  ResourceIndex,
  typeInfos,
} from './instancetypes.ts';
import {
  type Failure,
  fitRequirements,
  MAX_INSTANCE_TYPES,
  type NewNodeClaim,
  openNewNodeClaim,
  PoolContext,
  type PricedType,
  type RequirementsFit,
} from './nodeclaim.ts';
import { nodeClaimTemplateRequirements } from './nodeclaimtemplate.ts';
import { type PodInfo, PodInfoCache, podKey, refreshPodInfo, resetPodInfo, resourceKey } from './podinfo.ts';
import { copyConstraints, podConstraints, relax } from './preferences.ts';
import { Requirement, type RequirementError, type Requirements } from './requirements.ts';
import { Topology } from './topology.ts';
import type {
  Explanation,
  NodeClaimPlan,
  Placement,
  PlacementTarget,
  SchedulingInput,
  SchedulingResult,
  Unschedulable,
} from './types.ts';

export { MAX_INSTANCE_TYPES } from './nodeclaim.ts';

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

/** Orders NodePools as the scheduler does: weight desc, then name. */
export function compareNodePools(a: NodePool, b: NodePool): number {
  return (b.spec.weight ?? 0) - (a.spec.weight ?? 0) || cmpStr(a.metadata.name, b.metadata.name);
}

/** Price (USD/hour) of a planned NodeClaim: its cheapest allowed offering. */
export function nodeClaimPrice(plan: NodeClaimPlan): number {
  return plan.cheapest.offering.priceUSDPerHour;
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

type Where = { kind: 'existing' | 'inflight'; cap: ExistingCapacity } | { kind: 'new'; plan: NewNodeClaim };

/** Runs the scheduling simulation. Never throws for bad objects: they become `InvalidPod` / messages. */
export function solve(input: SchedulingInput): SchedulingResult {
  const explain = input.explain === true;
  const unschedulable: Unschedulable[] = [];
  const explanations = new Map<string, Explanation>();
  const note = (pod: PodInfo | string, detail: string) => {
    if (!explain) return;
    const key = typeof pod === 'string' ? pod : pod.key;
    let e = explanations.get(key);
    if (!e) {
      e = { pod: key, decision: '', details: [] };
      explanations.set(key, e);
    }
    e.details.push(detail);
  };

  // Resource index over everything that will be compared.
  const index = new ResourceIndex();
  for (const types of Object.values(input.instanceTypes))
    for (const t of types) index.register(t.allocatable);

  // NodePools (static NodePools with spec.replicas are not provisioned dynamically).
  const poolErrors: string[] = [];
  const pools: PoolContext[] = [];
  const dynamicPools = input.nodePools.filter((np) => np.spec.replicas === undefined).sort(compareNodePools);
  const overheads = new Map<string, DaemonOverhead>();
  for (const np of dynamicPools) {
    try {
      const d = daemonOverhead(np, input.daemonSets);
      index.register(d.requests);
      overheads.set(np.metadata.name, d);
    } catch (e) {
      poolErrors.push(`nodepool "${np.metadata.name}": ${errorMessage(e)}`);
    }
  }
  const pendingPods: Pod[] = [];
  for (const pod of input.pods) {
    if (pod.spec?.nodeName) {
      unschedulable.push({
        pod,
        code: 'InvalidPod',
        message: `pod is already bound to node "${pod.spec.nodeName}"`,
      });
      continue;
    }
    pendingPods.push(pod);
  }
  // Pods of one template (Deployment replicas) share everything but their name: parse and derive once.
  // (Resources here, constraints in PodInfoCache.)
  const podKeys = new Map<Pod, string>();
  const parsedKeys = new Map<string, string | undefined>();
  for (const pod of pendingPods) {
    const key = resourceKey(pod);
    let err = parsedKeys.get(key);
    if (!parsedKeys.has(key)) {
      try {
        index.register(parseAllRequests(pod));
        err = undefined;
      } catch (e) {
        err = `invalid resources: ${errorMessage(e)}`;
      }
      parsedKeys.set(key, err);
    }
    if (err !== undefined) unschedulable.push({ pod, code: 'InvalidPod', message: err });
    else podKeys.set(pod, key);
  }
  for (const np of dynamicPools) {
    const d = overheads.get(np.metadata.name);
    if (!d) continue;
    try {
      const reqs = nodeClaimTemplateRequirements(np);
      const raw = input.instanceTypes[np.metadata.name] ?? [];
      const limits = np.spec.limits ? parseResources(np.spec.limits) : undefined;
      pools.push(
        new PoolContext(
          np,
          reqs,
          typeInfos(raw, index),
          providerKeys(raw),
          d,
          index,
          limits,
          input.nodePoolUsage?.[np.metadata.name],
        ),
      );
    } catch (e) {
      poolErrors.push(`nodepool "${np.metadata.name}": ${errorMessage(e)}`);
    }
  }

  // Topology domain universes (lazy, per key).
  const universeCache = new Map<string, Set<string>>();
  const universe = (key: string): ReadonlySet<string> => {
    let u = universeCache.get(key);
    if (u) return u;
    u = new Set();
    for (const pool of pools) {
      const r = pool.requirements.get(key);
      if (key === LabelTopologyZone || key === LabelCapacityType) {
        const zone = pool.requirements.get(LabelTopologyZone);
        const ct = pool.requirements.get(LabelCapacityType);
        for (const p of pool.types) {
          for (const o of p.t.offerings) {
            if ((zone && !zone.has(o.zone)) || (ct && !ct.has(o.capacityType))) continue;
            u.add(key === LabelTopologyZone ? o.zone : o.capacityType);
          }
        }
      } else if (r && !r.complement) {
        for (const v of r.values) if (r.has(v)) u.add(v);
      } else {
        for (const p of pool.types) {
          const v = p.t.it.labels[key];
          if (v !== undefined && (!r || r.has(v))) u.add(v);
        }
      }
    }
    for (const en of input.existingNodes) {
      const v = en.node.metadata.labels?.[key];
      if (v !== undefined) u.add(v);
    }
    universeCache.set(key, u);
    return u;
  };
  const topology = new Topology(universe, input.namespaces ?? {});

  // Pods.
  const infos: PodInfo[] = [];
  const infoCache = new PodInfoCache(index, topology);
  for (const pod of pendingPods) {
    const key = podKeys.get(pod);
    if (key === undefined) continue;
    try {
      infos.push(infoCache.build(pod, key));
    } catch (e) {
      unschedulable.push({ pod, code: 'InvalidPod', message: errorMessage(e) });
    }
  }

  // Existing capacity, and the pods bound to it for topology counts.
  const existing: ExistingCapacity[] = [];
  for (const en of input.existingNodes) {
    try {
      existing.push(existingNodeCapacity(en, index, input.daemonSets));
    } catch (e) {
      poolErrors.push(`node "${en.node.metadata.name ?? '?'}": ${errorMessage(e)}`);
    }
  }
  existing.sort((a, b) => Number(b.initialized) - Number(a.initialized) || cmpStr(a.name, b.name));
  for (const en of input.existingNodes) {
    if (en.markedForDeletion) continue;
    const labels = en.node.metadata.labels ?? {};
    const node = { hostname: labels['kubernetes.io/hostname'] ?? en.node.metadata.name ?? '?', labels };
    for (const p of en.pods) {
      if (isTerminal(p)) continue;
      try {
        const tp = { namespace: p.metadata.namespace ?? 'default', labels: p.metadata.labels ?? {} };
        const inverse = topology.inverseGroups(tp, podConstraints(p).podAntiAffinityRequired);
        topology.countExisting(tp, node, inverse);
      } catch {
        // a malformed bound pod does not stop scheduling
      }
    }
  }
  const inflight: ExistingCapacity[] = [];
  for (const inf of [...(input.inFlight ?? [])].sort((a, b) =>
    cmpStr(a.nodeClaim.metadata.name ?? '', b.nodeClaim.metadata.name ?? ''),
  )) {
    try {
      inflight.push(inFlightCapacity(inf, index));
    } catch (e) {
      poolErrors.push(`nodeclaim "${inf.nodeClaim.metadata.name ?? '?'}": ${errorMessage(e)}`);
    }
  }

  const allowPreferNoSchedule = pools.some((p) => p.taints.some((t) => t.effect === 'PreferNoSchedule'));
  const plans: NewNodeClaim[] = [];
  const where = new Map<PodInfo, Where>();
  const failures = new Map<PodInfo, Failure>();
  let hostnameSeq = 0;
  let minCpu = Number.POSITIVE_INFINITY;
  let minMemory = Number.POSITIVE_INFINITY;
  for (const p of infos) {
    minCpu = Math.min(minCpu, p.vec[0]!);
    minMemory = Math.min(minMemory, p.vec[1]!);
  }
  const search = new PlanSearch(topology, explain, minCpu, minMemory);

  const tryNew = (pod: PodInfo): Where | Failure => {
    for (const cap of existing) {
      const f = cap.canAdd(pod, topology, index, explain);
      if (!f) {
        cap.commit(pod, topology);
        return { kind: 'existing', cap };
      }
      if (explain) note(pod, `existing node ${cap.name}: ${f.message}`);
    }
    for (const cap of inflight) {
      const f = cap.canAdd(pod, topology, index, explain);
      if (!f) {
        cap.commit(pod, topology);
        return { kind: 'inflight', cap };
      }
      if (explain) note(pod, `in-flight nodeclaim ${cap.name}: ${f.message}`);
    }
    const found = search.place(pod, explain ? (d) => note(pod, d) : undefined);
    if (found) return { kind: 'new', plan: found };
    const reasons: Failure[] = [];
    for (const pool of pools) {
      const hostname = `hostname-placeholder-${String(hostnameSeq + 1).padStart(4, '0')}`;
      const r = openNewNodeClaim(pool, pod, topology, hostname);
      if ('pods' in r) {
        hostnameSeq++;
        r.seq = plans.length;
        plans.push(r);
        search.add(r);
        return { kind: 'new', plan: r };
      }
      const f = { code: r.code, message: `incompatible with nodepool "${pool.name}": ${r.message}` };
      reasons.push(f);
      if (explain) note(pod, f.message);
    }
    if (reasons.length === 0) {
      const extra = poolErrors.length ? ` (${poolErrors.join('; ')})` : '';
      return { code: 'NoNodePool', message: `no NodePool can provision new capacity${extra}` };
    }
    return { code: reasons[0]!.code, message: reasons.map((r) => r.message).join('; ') };
  };

  const trySchedule = (pod: PodInfo): boolean => {
    for (;;) {
      const r = tryNew(pod);
      if ('kind' in r) {
        where.set(pod, r);
        failures.delete(pod);
        return true;
      }
      failures.set(pod, r);
      let relaxed: string | undefined;
      try {
        if (pod.shared) {
          pod.constraints = copyConstraints(pod.constraints);
          pod.shared = false;
        }
        relaxed = relax(pod.constraints, allowPreferNoSchedule);
        if (relaxed) refreshPodInfo(pod, topology);
      } catch (e) {
        failures.set(pod, { code: 'InvalidPod', message: errorMessage(e) });
        return false;
      }
      if (!relaxed) return false;
      note(pod, `relaxed: ${relaxed}`);
    }
  };

  const ordered = [...infos].sort(comparePods);
  let queue = ordered;
  for (let pass = 0; pass < MAX_PASSES && queue.length > 0; pass++) {
    const failed: PodInfo[] = [];
    for (const pod of queue) {
      if (pass > 0) {
        resetPodInfo(pod, topology);
        note(pod, `retry pass ${pass + 1}`);
      }
      if (!trySchedule(pod)) failed.push(pod);
    }
    if (failed.length === queue.length) break;
    queue = failed;
  }

  // Finalize NodeClaims.
  const planIndex = new Map<NewNodeClaim, number>();
  const newNodeClaims: NodeClaimPlan[] = [];
  for (const plan of plans) {
    const final = finalizePlan(plan, index);
    if ('message' in final) {
      for (const pod of plan.pods) {
        where.delete(pod);
        failures.set(pod, { code: 'IncompatibleRequirements', message: final.message });
      }
      continue;
    }
    planIndex.set(plan, newNodeClaims.length);
    newNodeClaims.push(final);
  }

  const placements: Placement[] = [];
  for (const pod of ordered) {
    const w = where.get(pod);
    if (w) {
      let target: PlacementTarget;
      if (w.kind === 'new') target = { kind: 'new', index: planIndex.get(w.plan)! };
      else if (w.kind === 'existing') target = { kind: 'existing', node: w.cap.name };
      else target = { kind: 'inflight', nodeClaim: w.cap.name };
      placements.push({ pod: pod.pod, target });
      if (explain) {
        const e = explanations.get(pod.key) ?? { pod: pod.key, decision: '', details: [] };
        e.decision =
          target.kind === 'new'
            ? `new nodeclaim #${target.index} (nodepool ${newNodeClaims[target.index]!.nodePool}, cheapest ${newNodeClaims[target.index]!.cheapest.instanceType.name})`
            : target.kind === 'existing'
              ? `existing node ${target.node}`
              : `in-flight nodeclaim ${target.nodeClaim}`;
        explanations.set(pod.key, e);
      }
      continue;
    }
    const f = failures.get(pod) ?? { code: 'NoNodePool' as const, message: 'not scheduled' };
    unschedulable.push({ pod: pod.pod, code: f.code, message: f.message });
    if (explain) {
      const e = explanations.get(pod.key) ?? { pod: pod.key, decision: '', details: [] };
      e.decision = `unschedulable (${f.code}): ${f.message}`;
      explanations.set(pod.key, e);
    }
  }
  if (explain) {
    for (const u of unschedulable) {
      const key = podKey(u.pod);
      if (!explanations.has(key))
        explanations.set(key, { pod: key, decision: `unschedulable (${u.code}): ${u.message}`, details: [] });
    }
  }
  return {
    newNodeClaims,
    placements,
    unschedulable,
    explanations: [...explanations.values()],
  };
}

/**
 * Finds the planned NodeClaim a pod should join (capenter's packing rule, see the module doc):
 * 1. among the NodeClaims whose current cheapest option still holds the pod (no extra price), the tightest fit
 *    (least free cpu + memory share left in that option), ties by creation order;
 * 2. else the NodeClaim with the lowest current price that can grow to hold it (growth rule in `nodeclaim.ts`),
 *    ties by creation order.
 * Speed: the NodeClaims' free cpu/memory (in their cheapest and in their largest option), price and flags live in
 * parallel typed arrays scanned by two small numeric loops ({@link scanZero}, {@link scanGrow}); the best row is
 * then checked for real: hostname topology (a map lookup), taints + requirements + other topology (evaluated once
 * per distinct NodePool+requirements per pod, {@link fitRequirements}; a failure excludes every NodeClaim with
 * those requirements), then {@link NewNodeClaim.fitPod}. A failed row is excluded and the scan repeats.
 */
class PlanSearch {
  private attempt = 0;
  private readonly keyIds = new Map<PoolContext, Map<string, number>>();
  private fitStamp: number[] = [];
  private fitValue: (RequirementsFit | Failure | undefined)[] = [];
  /** Per requirements key: 1 when its requirements fit failed for the current pod (reset per pod). */
  private keyBad = new Uint8Array(16);
  /** NodeClaims that may still take a pod, in creation order, with their scan data in parallel typed arrays. */
  private active: NewNodeClaim[] = [];
  private readonly slot = new Map<NewNodeClaim, number>();
  private dead = 0;
  private rows = 0;
  private maxLeftCpu = new Float64Array(64);
  private maxLeftMem = new Float64Array(64);
  private cheapLeftCpu = new Float64Array(64);
  private cheapLeftMem = new Float64Array(64);
  private cheapInvCpu = new Float64Array(64);
  private cheapInvMem = new Float64Array(64);
  private price = new Float64Array(64);
  private capped = new Uint8Array(64);
  private keyOfRow = new Int32Array(64);
  private seqOfRow = new Int32Array(64);
  /** Per row: the attempt for which the row is out entirely / out of the no-extra-price phase. */
  private skip = new Uint32Array(64);
  private noZero = new Uint32Array(64);
  /**
   * Per {@link Topology.hostnameKey}: NodeClaims (by seq) known to be blocked by hostname topology for pods with
   * that key. Such a block is permanent within a run, so later pods with the same key skip them for free.
   */
  private readonly blocked = new Map<string, Uint8Array>();
  private noBlock = new Uint8Array(64);
  private seqLimit = 0;
  /** Per requirements key: {@link fitRequirements} results by pod template, for memoizable pods. */
  private readonly memo: (Map<number, RequirementsFit | Failure> | undefined)[] = [];
  private memoizable = false;
  private readonly basePrices = new WeakMap<readonly PricedType[], Map<TypeInfo, number>>();

  constructor(
    private readonly topology: Topology,
    private readonly explain: boolean,
    /** Smallest cpu / memory request of any pod of the run: a NodeClaim with less room is retired from scans. */
    private readonly minCpu: number,
    private readonly minMemory: number,
  ) {}

  /** Registers a newly opened NodeClaim. */
  add(plan: NewNodeClaim): void {
    this.seqLimit = Math.max(this.seqLimit, plan.seq + 1);
    if (this.noBlock.length < this.seqLimit) this.noBlock = new Uint8Array(this.seqLimit * 2);
    const i = this.rows;
    if (i >= this.price.length) this.resize(this.price.length * 2);
    this.active.push(plan);
    this.rows++;
    this.slot.set(plan, i);
    this.update(plan);
  }

  private resize(n: number): void {
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.maxLeftCpu = f64(this.maxLeftCpu);
    this.maxLeftMem = f64(this.maxLeftMem);
    this.cheapLeftCpu = f64(this.cheapLeftCpu);
    this.cheapLeftMem = f64(this.cheapLeftMem);
    this.cheapInvCpu = f64(this.cheapInvCpu);
    this.cheapInvMem = f64(this.cheapInvMem);
    this.price = f64(this.price);
    const u8 = new Uint8Array(n);
    u8.set(this.capped);
    this.capped = u8;
    const k = new Int32Array(n);
    k.set(this.keyOfRow);
    this.keyOfRow = k;
    const q = new Int32Array(n);
    q.set(this.seqOfRow);
    this.seqOfRow = q;
    const sk = new Uint32Array(n);
    sk.set(this.skip);
    this.skip = sk;
    const nz = new Uint32Array(n);
    nz.set(this.noZero);
    this.noZero = nz;
  }

  /** Refreshes the scan data of a NodeClaim after it changed (pod added, requirements narrowed, growth capped). */
  private update(plan: NewNodeClaim): void {
    const i = this.slot.get(plan);
    if (i === undefined) return;
    this.maxLeftCpu[i] = plan.maxLeft[0]!;
    this.maxLeftMem[i] = plan.maxLeft[1]!;
    this.cheapLeftCpu[i] = plan.cheapLeft[0]!;
    this.cheapLeftMem[i] = plan.cheapLeft[1]!;
    // 1 / allocatable of the cheapest option (0 when it has none), for the fit score
    this.cheapInvCpu[i] = plan.cheapAlloc[0]! > 0 ? 1 / plan.cheapAlloc[0]! : 0;
    this.cheapInvMem[i] = plan.cheapAlloc[1]! > 0 ? 1 / plan.cheapAlloc[1]! : 0;
    this.price[i] = plan.price();
    this.capped[i] = plan.growthCapped ? 1 : 0;
    this.keyOfRow[i] = plan.reqKey >= 0 ? plan.reqKey : this.keyOf(plan);
    this.seqOfRow[i] = plan.seq;
    const roomCpu = plan.growthCapped ? plan.cheapLeft[0]! : plan.maxLeft[0]!;
    const roomMem = plan.growthCapped ? plan.cheapLeft[1]! : plan.maxLeft[1]!;
    if (roomCpu < this.minCpu || roomMem < this.minMemory) {
      // can never take another pod of this run: retire it (its row can no longer match any pod)
      this.maxLeftCpu[i] = -1;
      this.maxLeftMem[i] = -1;
      this.cheapLeftCpu[i] = -1;
      this.cheapLeftMem[i] = -1;
      this.slot.delete(plan);
      this.dead++;
      if (this.dead > 64 && this.dead * 4 > this.rows) this.compact();
    }
  }

  private compact(): void {
    let j = 0;
    for (let i = 0; i < this.rows; i++) {
      const plan = this.active[i]!;
      if (!this.slot.has(plan)) continue;
      this.active[j] = plan;
      this.slot.set(plan, j);
      this.maxLeftCpu[j] = this.maxLeftCpu[i]!;
      this.maxLeftMem[j] = this.maxLeftMem[i]!;
      this.cheapLeftCpu[j] = this.cheapLeftCpu[i]!;
      this.cheapLeftMem[j] = this.cheapLeftMem[i]!;
      this.cheapInvCpu[j] = this.cheapInvCpu[i]!;
      this.cheapInvMem[j] = this.cheapInvMem[i]!;
      this.price[j] = this.price[i]!;
      this.capped[j] = this.capped[i]!;
      this.keyOfRow[j] = this.keyOfRow[i]!;
      this.seqOfRow[j] = this.seqOfRow[i]!;
      this.skip[j] = this.skip[i]!;
      this.noZero[j] = this.noZero[i]!;
      j++;
    }
    this.active.length = j;
    this.rows = j;
    this.dead = 0;
  }

  private keyOf(plan: NewNodeClaim): number {
    let m = this.keyIds.get(plan.pool);
    if (!m) {
      m = new Map();
      this.keyIds.set(plan.pool, m);
    }
    const sig = plan.requirements.signature();
    let id = m.get(sig);
    if (id === undefined) {
      id = this.fitStamp.length;
      m.set(sig, id);
      this.fitStamp.push(-1);
      this.fitValue.push(undefined);
      if (id >= this.keyBad.length) {
        const b = new Uint8Array(this.keyBad.length * 2);
        b.set(this.keyBad);
        this.keyBad = b;
      }
    }
    plan.reqKey = id;
    return id;
  }

  private fitFor(plan: NewNodeClaim, pod: PodInfo, note?: (d: string) => void): RequirementsFit | Failure {
    const k = plan.reqKey >= 0 ? plan.reqKey : this.keyOf(plan);
    if (this.fitStamp[k] === this.attempt) return this.fitValue[k]!;
    let fit: RequirementsFit | Failure | undefined;
    if (this.memoizable) {
      // unrelaxed template, no zone/other non-hostname topology: the answer never changes during the run
      let m = this.memo[k];
      if (!m) {
        m = new Map();
        this.memo[k] = m;
      }
      fit = m.get(pod.template!);
      if (!fit) {
        fit = fitRequirements(plan.pool, plan.requirements, pod, this.topology, this.explain);
        m.set(pod.template!, fit);
      }
    } else fit = fitRequirements(plan.pool, plan.requirements, pod, this.topology, this.explain);
    this.fitStamp[k] = this.attempt;
    this.fitValue[k] = fit;
    if ('code' in fit) {
      this.keyBad[k] = 1;
      if (note)
        note(
          `planned nodeclaims of nodepool "${plan.pool.name}" with ${plan.requirements.toString()}: ${fit.message}`,
        );
    }
    return fit;
  }

  /**
   * Whether the plan's current cheapest option keeps its price under the requirements this pod brings (always
   * when nothing narrows; when the pod pins e.g. a zone, the same type must be offered there at that price).
   */
  private keepsPrice(plan: NewNodeClaim, fit: RequirementsFit): boolean {
    if (!fit.base) return true;
    const cheapest = plan.options[plan.start];
    if (!cheapest) return false;
    let prices = this.basePrices.get(fit.base);
    if (!prices) {
      prices = new Map(fit.base.map((p) => [p.t, p.price]));
      this.basePrices.set(fit.base, prices);
    }
    const p = prices.get(cheapest.t);
    return p !== undefined && p <= cheapest.price;
  }

  /**
   * Hostname topology and the (cached) requirements part for the NodeClaim in row `i`; on failure the row (or,
   * for requirements, every row with the same requirements) is excluded for this pod.
   */
  private eligible(
    i: number,
    pod: PodInfo,
    hostnameKeyed: boolean,
    blocked: Uint8Array | undefined,
    note?: (d: string) => void,
  ): RequirementsFit | undefined {
    const plan = this.active[i]!;
    if (hostnameKeyed && this.topology.hostnameBlocked(pod, pod.groups, plan.hostname)) {
      if (blocked) blocked[plan.seq] = 1;
      else this.skip[i] = this.attempt;
      return undefined;
    }
    const fit = this.fitFor(plan, pod, note);
    return 'code' in fit ? undefined : fit;
  }

  /** Places `pod` on a planned NodeClaim (committed) and returns it, or undefined when none can take it. */
  place(pod: PodInfo, note?: (d: string) => void): NewNodeClaim | undefined {
    const attempt = ++this.attempt;
    const topology = this.topology;
    this.memoizable =
      pod.shared === true &&
      pod.template !== undefined &&
      !this.explain &&
      !topology.hasNonHostnameTopology(pod, pod.groups);
    this.keyBad.fill(0);
    let hostnameKeyed = topology.hasHostnameInverse(pod);
    for (const g of pod.groups) if (g.key === LabelHostname) hostnameKeyed = true;
    const hostKey = hostnameKeyed ? topology.hostnameKey(pod, pod.groups) : undefined;
    let blocked: Uint8Array | undefined;
    if (hostKey !== undefined) {
      blocked = this.blocked.get(hostKey);
      if (!blocked || blocked.length < this.seqLimit) {
        const b = new Uint8Array(Math.max(64, this.seqLimit * 2));
        if (blocked) b.set(blocked);
        blocked = b;
        this.blocked.set(hostKey, b);
      }
    }
    const c = pod.vec[0]!;
    const m = pod.vec[1]!;
    // 1. no extra price, tightest fit first
    for (;;) {
      const i = scanZero(
        this.rows,
        c,
        m,
        this.cheapLeftCpu,
        this.cheapLeftMem,
        this.cheapInvCpu,
        this.cheapInvMem,
        this.keyOfRow,
        this.keyBad,
        this.seqOfRow,
        blocked ?? this.noBlock,
        this.skip,
        this.noZero,
        attempt,
      );
      if (i < 0) break;
      const fit = this.eligible(i, pod, hostnameKeyed, blocked, note);
      if (!fit) continue;
      const plan = this.active[i]!;
      if (this.keepsPrice(plan, fit)) {
        const r = plan.fitPod(pod, fit, this.explain, false);
        if ('need' in r) {
          plan.commit(pod, r, topology);
          this.update(plan);
          return plan;
        }
        if (note) note(`planned nodeclaim #${plan.seq} (${plan.pool.name}): ${r.message}`);
      }
      this.noZero[i] = attempt;
    }
    // 2. grow the cheapest NodeClaim that can
    for (;;) {
      const i = scanGrow(
        this.rows,
        c,
        m,
        this.maxLeftCpu,
        this.maxLeftMem,
        this.price,
        this.capped,
        this.keyOfRow,
        this.keyBad,
        this.seqOfRow,
        blocked ?? this.noBlock,
        this.skip,
        attempt,
      );
      if (i < 0) return undefined;
      const fit = this.eligible(i, pod, hostnameKeyed, blocked, note);
      if (!fit) continue;
      const plan = this.active[i]!;
      const r = plan.fitPod(pod, fit, this.explain, true);
      if ('need' in r) {
        plan.commit(pod, r, topology);
        this.update(plan);
        return plan;
      }
      if (note) note(`planned nodeclaim #${plan.seq} (${plan.pool.name}) growing: ${r.message}`);
      this.skip[i] = attempt;
      this.update(plan);
    }
  }
}

/** Row with the least free cpu+memory share left after adding (c, m) in its cheapest option; -1 when none. */
function scanZero(
  n: number,
  c: number,
  m: number,
  leftCpu: Float64Array,
  leftMem: Float64Array,
  invCpu: Float64Array,
  invMem: Float64Array,
  keyOf: Int32Array,
  keyBad: Uint8Array,
  seqOf: Int32Array,
  blocked: Uint8Array,
  skip: Uint32Array,
  noZero: Uint32Array,
  attempt: number,
): number {
  let best = -1;
  let bestScore = Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const lc = leftCpu[i]!;
    const lm = leftMem[i]!;
    if (c > lc || m > lm) continue;
    const score = (lc - c) * invCpu[i]! + (lm - m) * invMem[i]!;
    if (score >= bestScore) continue;
    if (skip[i] === attempt || noZero[i] === attempt || keyBad[keyOf[i]!] === 1 || blocked[seqOf[i]!] === 1)
      continue;
    best = i;
    bestScore = score;
  }
  return best;
}

/** Row with the lowest price whose largest option still holds (c, m) and that may grow; -1 when none. */
function scanGrow(
  n: number,
  c: number,
  m: number,
  maxLeftCpu: Float64Array,
  maxLeftMem: Float64Array,
  price: Float64Array,
  capped: Uint8Array,
  keyOf: Int32Array,
  keyBad: Uint8Array,
  seqOf: Int32Array,
  blocked: Uint8Array,
  skip: Uint32Array,
  attempt: number,
): number {
  let best = -1;
  let bestPrice = Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    if (c > maxLeftCpu[i]! || m > maxLeftMem[i]!) continue;
    const p = price[i]!;
    if (p >= bestPrice || capped[i] === 1) continue;
    if (skip[i] === attempt || keyBad[keyOf[i]!] === 1 || blocked[seqOf[i]!] === 1) continue;
    best = i;
    bestPrice = p;
  }
  return best;
}

/** Parses every resource list of a pod (to register resource names and catch malformed quantities early). */
function parseAllRequests(pod: Pod): Resources {
  const out: Resources = {};
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    Object.assign(out, parseResources(c.resources?.limits), parseResources(c.resources?.requests));
  }
  Object.assign(out, parseResources(pod.spec?.overhead));
  if (!pod.spec?.containers) throw new QuantityParseError('spec.containers missing');
  return out;
}

/** Turns a plan into a {@link NodeClaimPlan}: fitting options by price, truncated, minValues re-checked. */
function finalizePlan(plan: NewNodeClaim, index: ResourceIndex): NodeClaimPlan | { message: string } {
  const options: PricedType[] = plan.fittingOptions(MAX_INSTANCE_TYPES);
  if (options.length === 0) return { message: 'no instance type fits the NodeClaim' };
  const mv = minValuesShortfall(
    options.map((p) => p.t.it),
    plan.requirements,
  );
  if (mv) return { message: `NodePool "${plan.pool.name}" could not meet minValues after truncation: ${mv}` };
  const reqs: Requirements = plan.requirements.clone();
  reqs.add(
    Requirement.in(
      LabelInstanceType,
      options.map((p) => p.t.it.name),
    ),
  );
  const cheapest = options[0]!;
  const offering = cheapestOffering(cheapest.t.offerings, reqs)!;
  return {
    nodePool: plan.pool.name,
    requirements: reqs.toNodeSelector(),
    instanceTypeOptions: options.map((p) => p.t.it),
    pods: plan.pods.map((p) => p.pod),
    requests: index.resources(plan.requests),
    daemonOverhead: { ...plan.pool.daemon.requests },
    cheapest: { instanceType: cheapest.t.it, offering },
  };
}

export type { DaemonSet, RequirementError };
/** The pod a DaemonSet would run, re-exported for callers that build inputs. */
export { daemonSetPod };
