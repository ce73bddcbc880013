/**
 * A NodeClaim being planned in this scheduling run (upstream `nodeclaim.go`): the NodePool's template, the
 * pods packed so far, their merged requirements and the instance types that still satisfy the requirements
 * and fit every pod plus the daemon overhead. Adding a pod narrows the options; when none would remain the pod
 * goes elsewhere.
 *
 * Speed: options are shared per requirement signature ({@link PoolContext.optionsFor}); within a plan, types
 * that stopped fitting are pruned lazily (requests only grow), and a Pareto frontier of allocatable vectors
 * rejects pods that no option could hold in O(frontier) without scanning all options.
 *
 * Packing quality (capenter addition, not upstream): a plan may grow into larger instance types only while its
 * cheapest option stays cost-efficient for its own mix of requests — the cheapest option's price per "copy of
 * the plan's requests" must stay within {@link GROWTH_EFFICIENCY} of the best type of the NodePool for that mix.
 * This stops a NodeClaim from growing past the largest efficient type (e.g. 192-vCPU c6a.48xlarge) into huge
 * special types (u7i, x2iedn) that would hold everything at several times the price.
 */
import type { Taint } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { WellKnownLabels } from '../apis/labels.ts';
import { formatResource, type Resources } from '../apis/quantity.ts';
import type { DaemonOverhead, DaemonOverheadGroups } from './daemonoverhead.ts';
import { HostPortUsage } from './hostports.ts';
import {
  addOfferingDomains,
  byPriceThenName,
  cheapestOffering,
  instanceTypeIncompatibility,
  isOfferingKey,
  minValuesShortfall,
  type ResourceIndex,
  relaxMinValues,
  type TypeInfo,
  vectorFits,
} from './instancetypes.ts';
import { limitUse, remainingLimits, withinRemaining } from './limits.ts';
import type { PodInfo } from './podinfo.ts';
import { Requirement, type Requirements } from './requirements.ts';
import { formatRequests } from './resources.ts';
import { untoleratedTaint } from './taints.ts';
import type { Topology } from './topology.ts';
import type { Unschedulable } from './types.ts';

/**
 * Upstream core `MaxInstanceTypes` (kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/
 * nodeclaimtemplate.go`, 600 since v1.8): a NodeClaim lists at most this many instance types, the cheapest. The
 * aws provider cuts further to 60 per CreateFleet (`src/cloudprovider/aws/provider.ts` `MAX_INSTANCE_TYPES`).
 */
export const MAX_INSTANCE_TYPES = 600;
/** See the module doc: max ratio of the cheapest option's cost per unit of the plan's mix to the best type's. */
export const GROWTH_EFFICIENCY = 1.1;

/** A type priced under some requirements. */
export interface PricedType {
  t: TypeInfo;
  price: number;
}

/** Options of a requirement signature, shared by every plan with those requirements. */
interface OptionSet {
  base: PricedType[];
  frontier: Float64Array[];
  domains: Map<string, Set<string>>;
  /** {@link PoolContext.domainRank} by `key \0 domain`. */
  ranks: Map<string, number>;
}

/** A failure as a value: the Unschedulable code and its message. */
export interface Failure {
  code: Unschedulable['code'];
  message: string;
}

/** Pareto frontier (non-dominated allocatable vectors) of a list of types. */
export function paretoFrontier(types: readonly PricedType[]): Float64Array[] {
  const sorted = [...types].map((p) => p.t.alloc).sort((a, b) => b[0]! - a[0]! || b[1]! - a[1]!);
  const out: Float64Array[] = [];
  for (const v of sorted) {
    let dominated = false;
    for (const f of out) {
      if (vectorFits(v, f)) {
        dominated = true;
        break;
      }
    }
    if (!dominated) out.push(v);
  }
  return out;
}

/** Everything the scheduler knows about one NodePool during a run. */
export class PoolContext {
  readonly name: string;
  readonly weight: number;
  readonly taints: Taint[];
  readonly hasMinValues: boolean;
  /**
   * `MIN_VALUES_POLICY=BestEffort` (set by `runstate.ts` from `SchedulingInput.minValuesPolicy`): a new
   * NodeClaim whose options cannot meet `minValues` lowers them instead of failing (upstream `relaxMinValues` in
   * `addToNewNodeClaim`; pods joining an open NodeClaim are held to its lowered values, as upstream's
   * `addToInflightNode` passes `false`). Default false (`Strict`).
   */
  relaxMinValues = false;
  /** Host ports of every DaemonSet that runs on some type of the NodePool (a pod binding one is refused). */
  readonly daemonHostPorts: DaemonOverhead['hostPorts'];
  /** Limits minus usage; undefined when the NodePool has no limits. Mutated as NodeClaims are planned. */
  remaining: Resources | undefined;
  private readonly cache = new Map<string, OptionSet>();
  /** The daemon overhead of each of {@link types}. */
  private readonly daemonOf = new Map<TypeInfo, DaemonOverhead>();
  /** False when no DaemonSet runs on any of the NodePool's types (every overhead is empty). */
  private readonly hasDaemons: boolean;
  /**
   * The NodePool's types compatible with its template requirements, priced and sorted. Their `alloc` is the
   * type's allocatable minus ITS daemon overhead (upstream `filterInstanceTypesByRequirements` adds each daemon
   * overhead group to the requests of its own types; subtracting it once per (NodePool, type) here is the same
   * test), so plans' requests hold only their pods' requests.
   */
  readonly types: PricedType[];

  constructor(
    readonly nodePool: NodePool,
    /** Template requirements (see `nodeclaimtemplate.ts`). */
    readonly requirements: Requirements,
    types: readonly TypeInfo[],
    /** Label keys the provider defines on instance types. */
    readonly keys: ReadonlySet<string>,
    /** Daemon overhead per instance type (`daemonoverhead.ts` `daemonOverheadGroups`) over `types`. */
    daemon: DaemonOverheadGroups,
    index: ResourceIndex,
    limits: Resources | undefined,
    usage: Resources | undefined,
  ) {
    this.name = nodePool.metadata.name;
    this.weight = nodePool.spec.weight ?? 0;
    this.taints = nodePool.spec.template.spec.taints ?? [];
    this.hasMinValues = [...requirements.values()].some((r) => r.minValues !== undefined);
    this.daemonHostPorts = daemon.groups.flatMap((g) => g.hostPorts);
    this.hasDaemons = daemon.groups.length > 0;
    if (limits) this.remaining = remainingLimits(limits, usage);
    const vecs = new Map(daemon.groups.map((g) => [g, index.vector(g.requests)]));
    const own = types.map((t) => {
      const d = daemon.byType.get(t.it) ?? NO_DAEMONS;
      const v = vecs.get(d);
      const mine = v?.some((x) => x !== 0) ? { ...t, alloc: t.alloc.map((a, i) => a - v[i]!) } : t;
      this.daemonOf.set(mine, d);
      return { t: mine, price: 0 };
    });
    this.types = this.price(own, requirements);
  }

  /**
   * Upstream `NewScheduler`'s pre-filter (`filterInstanceTypesByRequirements` with an empty pod): `undefined` when
   * some of {@link types} (template-compatible, with an available offering) has room for its daemon overhead and,
   * under `MIN_VALUES_POLICY=Strict`, those types meet the template's `minValues`; else why not (`minValues`: true
   * when only `minValues` ruled them out).
   */
  noCompatibleInstanceTypes(): { minValues: boolean } | undefined {
    const fitting = this.types.filter((p) => p.t.alloc.every((a) => a >= 0));
    if (fitting.length === 0) return { minValues: false };
    if (!this.hasMinValues || this.relaxMinValues) return undefined;
    const short = minValuesShortfall(
      fitting.map((p) => p.t.it),
      this.requirements,
    );
    return short === undefined ? undefined : { minValues: true };
  }

  /** The daemon overhead of one of this NodePool's types (as in {@link types}; empty for any other). */
  daemon(t: TypeInfo): DaemonOverhead {
    return this.daemonOf.get(t) ?? NO_DAEMONS;
  }

  /**
   * Upstream `NodeClaim.addDaemonRequests`: the component-wise minimum daemon overhead over `options` (internal
   * units, `pods` = daemon pods), the part of a NodeClaim's `spec.resources.requests` that is not its pods'.
   */
  minDaemonRequests(options: readonly PricedType[]): Resources {
    if (!this.hasDaemons) return {};
    let out: Resources | undefined;
    let keys: string[] = [];
    for (const p of options) {
      const r = this.daemon(p.t).requests;
      if (!out) {
        out = { ...r };
        keys = Object.keys(out);
      } else for (const k of keys) out[k] = Math.min(out[k]!, r[k] ?? 0);
    }
    for (const k of Object.keys(out ?? {})) if (!out![k]) delete out![k];
    return out ?? {};
  }

  /** {@link types}' distinct names, sorted, and each name's index among them (built on first use). */
  private byName: { names: string[]; rank: Map<string, number> } | undefined;

  /**
   * The distinct names of `options` in sorted (UTF-16 code unit) order, as a NodeClaim's instance-type requirement
   * lists them: marks each name's rank among the NodePool's types and reads the marks in order, O(types) instead of
   * sorting up to 600 strings per NodeClaim. A name that is not one of the NodePool's types (none is) falls back to a
   * sort.
   */
  sortedTypeNames(options: readonly PricedType[]): string[] {
    if (!this.byName) {
      const names = [...new Set(this.types.map((p) => p.t.it.name))].sort();
      this.byName = { names, rank: new Map(names.map((n, i) => [n, i])) };
    }
    const { names, rank } = this.byName;
    const marks = new Uint8Array(names.length);
    for (const p of options) {
      const r = rank.get(p.t.it.name);
      if (r === undefined) return [...new Set(options.map((o) => o.t.it.name))].sort();
      marks[r] = 1;
    }
    const out: string[] = [];
    for (let i = 0; i < marks.length; i++) if (marks[i] === 1) out.push(names[i]!);
    return out;
  }

  /** Filters `types` by `reqs` and prices them under `reqs` (cheapest compatible available offering), sorted. */
  price(types: readonly PricedType[], reqs: Requirements): PricedType[] {
    const out: PricedType[] = [];
    for (const p of types) {
      if (instanceTypeIncompatibility(p.t.it, reqs, this.keys)) continue;
      const o = cheapestOffering(p.t.offerings, reqs);
      if (o) out.push({ t: p.t, price: o.priceUSDPerHour });
    }
    return out.sort(byPriceThenName);
  }

  /** The (cached) options of the NodePool under `reqs` (which must include the template requirements). */
  optionsFor(reqs: Requirements): OptionSet {
    const sig = reqs.signature();
    let hit = this.cache.get(sig);
    if (!hit) {
      const base = this.price(this.types, reqs);
      hit = { base, frontier: paretoFrontier(base), domains: new Map(), ranks: new Map() };
      this.cache.set(sig, hit);
    }
    return hit;
  }

  private readonly narrowCache = new Map<string, Requirements>();

  /**
   * `current` ∩ `extra` (topology pins such as `zone In [a]`), shared between calls with the same inputs (the
   * result is never mutated by the scheduler: plans clone before narrowing further).
   */
  narrowed(current: Requirements, extra: readonly Requirement[]): Requirements {
    let key = current.signature();
    for (const r of extra) key += `\u0004${r.key}\u0005${[...r.values].join('\u0006')}\u0005${r.complement}`;
    let hit = this.narrowCache.get(key);
    if (!hit) {
      hit = current.clone().add(...extra);
      this.narrowCache.set(key, hit);
    }
    return hit;
  }

  /**
   * Price rank of pinning a NodeClaim with requirements `reqs` to `domain` of `key` (a topology spread's tie-break,
   * `topology.ts`): the cheapest price (USD/hour) of the NodePool's types under `reqs` ∩ `key In [domain]`,
   * Infinity when none is offered there. Cached with the option set of `reqs`.
   */
  domainRank(reqs: Requirements, key: string, domain: string): number {
    const ranks = this.optionsFor(reqs).ranks;
    const k = `${key}\u0000${domain}`;
    let r = ranks.get(k);
    if (r === undefined) {
      const base = this.optionsFor(this.narrowed(reqs, [Requirement.in(key, [domain])])).base;
      r = base[0]?.price ?? Number.POSITIVE_INFINITY;
      ranks.set(k, r);
    }
    return r;
  }

  /** Domains of `key` the NodePool's types offer under `reqs` (cached with the option set). */
  domains(reqs: Requirements, key: string): ReadonlySet<string> {
    const r = reqs.get(key);
    if (r && !r.complement) return new Set([...r.values].filter((v) => r.has(v)));
    const set = this.optionsFor(reqs);
    let d = set.domains.get(key);
    if (!d) {
      d = domainsOf(set.base, reqs, key);
      set.domains.set(key, d);
    }
    return d;
  }

  /** True when the type's capacity stays within the remaining limits (upstream `filterByRemainingResources`). */
  withinLimits(t: TypeInfo): boolean {
    return !this.remaining || withinRemaining(this.remaining, t.it.capacity);
  }

  /** Upstream `subtractMax`: a new NodeClaim counts the largest capacity among its options against the limits. */
  subtractMax(options: readonly PricedType[]): void {
    if (!this.remaining) return;
    for (const k of Object.keys(this.remaining)) {
      let max = 0;
      for (const p of options) max = Math.max(max, limitUse(k, p.t.it.capacity));
      this.remaining[k]! -= max;
    }
  }
}

/**
 * Domains of `key` offered by `types` under `reqs` (offering keys — zone, capacity type and the provider's offering
 * labels such as aws `topology.k8s.aws/zone-id` — from the offerings `reqs` allows; labels otherwise).
 */
function domainsOf(types: readonly PricedType[], reqs: Requirements, key: string): Set<string> {
  const r = reqs.get(key);
  if (r && !r.complement) return new Set([...r.values].filter((v) => r.has(v)));
  const out = new Set<string>();
  for (const p of types) {
    if (isOfferingKey(p.t.offerings, key)) {
      addOfferingDomains(p.t.offerings, reqs, key, out);
    } else {
      const v = p.t.it.labels[key];
      if (v !== undefined && (!r || r.has(v))) out.add(v);
    }
  }
  return out;
}

/** The state of an addition computed by {@link NewNodeClaim.canAdd}, applied by {@link NewNodeClaim.commit}. */
export interface PendingAdd {
  requirements: Requirements;
  /** The new base (requirement-compatible options) when the requirements narrowed. */
  narrowed?: PricedType[];
  need: Float64Array;
  firstFit: number;
}

/**
 * The part of adding a pod that depends only on the NodePool and the NodeClaim's requirements, not on the
 * NodeClaim itself: computed once per pod for every NodeClaim with the same requirements
 * ({@link fitRequirements}).
 */
export interface RequirementsFit {
  /** The NodeClaim's requirements ∩ the pod's ∩ what topology pins (the same object when nothing narrowed). */
  requirements: Requirements;
  /** The NodePool's options under the narrowed requirements, by price (undefined when nothing narrowed). */
  base?: PricedType[];
}

/**
 * Taints, requirement compatibility and (non-hostname) topology of `pod` against a NodeClaim of `pool` whose
 * requirements are `current` (upstream `NodeClaim.Add` minus resources): the narrowed requirements and
 * options, or the failure.
 */
export function fitRequirements(
  pool: PoolContext,
  current: Requirements,
  pod: PodInfo,
  topology: Topology,
  explain: boolean,
): RequirementsFit | Failure {
  const taint = untoleratedTaint(pod.constraints.tolerations, pool.taints, { preferNoSchedule: true });
  if (taint) return { code: 'Untolerated', message: taint };
  const incompatible = current.compatible(pod.requirements, WellKnownLabels);
  if (incompatible) return { code: 'IncompatibleRequirements', message: incompatible };
  let reqs = current;
  if (!subsumes(reqs, pod.requirements)) reqs = reqs.clone().addAll(pod.requirements);
  const merged = reqs;
  const topo = topology.requirementsFor(
    pod,
    pod.groups,
    pod.strict,
    {
      kind: 'new',
      hostname: '',
      requirements: merged,
      domains: (key) => pool.domains(merged, key),
      rank: (key, d) => pool.domainRank(merged, key, d),
    },
    explain,
    true,
  );
  if (!topo.ok) return { code: topoCode(topo.reason), message: topo.reason };
  if (topo.requirements.length) {
    const extra = topo.requirements.filter((r) => !reqs.get(r.key)?.subsetOf(r));
    if (extra.length) {
      if (reqs === current) reqs = pool.narrowed(current, extra);
      else reqs.add(...extra);
    }
  }
  if (reqs === current) return { requirements: reqs };
  return { requirements: reqs, base: pool.optionsFor(reqs).base };
}

/** One planned NodeClaim. */
export class NewNodeClaim {
  readonly pods: PodInfo[] = [];
  readonly hostPorts = new HostPortUsage();
  requirements: Requirements;
  /** Requirement-compatible options (within limits at creation), sorted by price. */
  base: PricedType[];
  /** `base` minus types known not to fit, from index `start`. */
  options: PricedType[];
  start = 0;
  frontier: Float64Array[];
  requests: Float64Array;
  /** True when `MIN_VALUES_POLICY=BestEffort` lowered some `minValues` of {@link requirements} (see {@link PoolContext.relaxMinValues}). */
  minValuesRelaxed = false;
  /** Set once the plan refused to grow into an inefficient type: it then only takes pods that fit its cheapest option. */
  growthCapped = false;
  /** Types admitted by the NodePool limits when the plan was opened (undefined: no limits). */
  limited: Set<TypeInfo> | undefined;
  private maxAlloc: Float64Array;
  /** Creation order in the run (set by the scheduler; ties are broken by it). */
  seq = 0;
  /** The scheduler's id for (NodePool, requirements signature); -1 after the requirements changed. */
  reqKey = -1;
  /** Scheduler scratch: the pod attempt for which this plan is ruled out / cannot take the pod at no extra price. */
  skipStamp = 0;
  noZeroStamp = 0;
  /** Allocatable of the current cheapest option minus requests (all -1 when no option is left). Cache for scans. */
  cheapLeft: Float64Array;
  /** Allocatable of the current cheapest option (zeros when none). */
  cheapAlloc: Float64Array;
  /** Component-wise max allocatable over the remaining options minus requests. */
  maxLeft: Float64Array;

  constructor(
    readonly pool: PoolContext,
    readonly hostname: string,
    requirements: Requirements,
    base: PricedType[],
    frontier: Float64Array[],
  ) {
    this.requirements = requirements;
    this.base = base;
    this.options = base;
    this.frontier = frontier;
    const n = frontier[0]?.length ?? base[0]?.t.alloc.length ?? 0;
    this.requests = new Float64Array(n);
    this.hostPorts.add(pool.daemonHostPorts);
    this.maxAlloc = componentMax(frontier, n);
    this.cheapLeft = new Float64Array(n);
    this.cheapAlloc = new Float64Array(n);
    this.maxLeft = new Float64Array(n);
    this.refreshCaches();
  }

  /** Recomputes {@link cheapLeft}, {@link cheapAlloc} and {@link maxLeft} after requests or options changed. */
  private refreshCaches(): void {
    const c = this.options[this.start];
    for (let i = 0; i < this.requests.length; i++) {
      const r = this.requests[i]!;
      this.maxLeft[i] = this.maxAlloc[i]! - r;
      this.cheapAlloc[i] = c ? c.t.alloc[i]! : 0;
      this.cheapLeft[i] = c ? c.t.alloc[i]! - r : -1;
    }
  }

  /** Current cheapest price (USD/hour) among the options that fit (Infinity when none). */
  price(): number {
    return this.options[this.start]?.price ?? Number.POSITIVE_INFINITY;
  }

  /** Domains this plan could still land in for `key` (from its requirements and the NodePool's types). */
  domains(key: string): ReadonlySet<string> {
    return this.pool.domains(this.requirements, key);
  }

  /** Free cpu (millicores) in the current cheapest option; -1 when no option is left. */
  cpuSlack(): number {
    const c = this.options[this.start];
    return c ? c.t.alloc[0]! - this.requests[0]! : -1;
  }

  /**
   * Slack left in the current cheapest option if `pod` joined without changing it (lower = tighter fit), or
   * -1 when the pod would not fit the current cheapest option. Resources only; cheap.
   */
  slackIfFits(pod: PodInfo): number {
    const cheapest = this.options[this.start];
    if (!cheapest) return -1;
    const a = cheapest.t.alloc;
    let slack = 0;
    for (let i = 0; i < a.length; i++) {
      const left = a[i]! - this.requests[i]! - pod.vec[i]!;
      if (left < 0) return -1;
      if (i < 2 && a[i]! > 0) slack += left / a[i]!;
    }
    return slack;
  }

  /**
   * Whether `pod` can join; on success the pending change for {@link commit}. Checks, cheapest first: resources
   * against the frontier, hostname topology, taints, requirements, other topology, host ports, the remaining
   * options, minValues, growth. The same as {@link fitRequirements} followed by {@link fitPod}.
   * @param grow when false the pod must fit the current cheapest option at no extra price (no growth).
   */
  canAdd(pod: PodInfo, topology: Topology, explain: boolean, grow = true): PendingAdd | Failure {
    if (!this.mayHold(pod)) return explain ? this.noFit(pod) : NO_FIT;
    if (topology.hostnameBlocked(pod, pod.groups, this.hostname))
      return explain
        ? { code: 'TopologyUnsatisfiable', message: 'hostname topology forbids this NodeClaim' }
        : TOPO;
    if ((!grow || this.growthCapped) && this.slackIfFits(pod) < 0) return explain ? this.noGrowth() : NO_FIT;
    const fit = fitRequirements(this.pool, this.requirements, pod, topology, explain);
    if ('code' in fit) return fit;
    return this.fitPod(pod, fit, explain, grow);
  }

  /** True when `pod` fits what some remaining option could hold (necessary, not sufficient). Cheap. */
  mayHold(pod: PodInfo): boolean {
    const n = this.requests.length;
    for (let i = 0; i < n; i++) if (this.requests[i]! + pod.vec[i]! > this.maxAlloc[i]!) return false;
    return true;
  }

  /**
   * The NodeClaim-specific part of {@link canAdd} once the requirements part (`fit`, from {@link fitRequirements}
   * for this plan's NodePool and requirements) succeeded: host ports, options that fit the grown requests, price,
   * growth rule, minValues. Hostname topology is NOT checked here (see {@link Topology.hostnameBlocked}).
   */
  fitPod(pod: PodInfo, fit: RequirementsFit, explain: boolean, grow = true): PendingAdd | Failure {
    const n = this.requests.length;
    const need = scratch(n);
    for (let i = 0; i < n; i++) {
      const v = this.requests[i]! + pod.vec[i]!;
      if (v > this.maxAlloc[i]!) return explain ? this.noFit(pod) : NO_FIT;
      need[i] = v;
    }
    const current = this.options[this.start];
    if (!grow || this.growthCapped) {
      if (!current || !vectorFits(need, current.t.alloc)) return explain ? this.noGrowth() : NO_FIT;
    }
    if (!this.frontier.some((f) => vectorFits(need, f))) return explain ? this.noFit(pod) : NO_FIT;
    if (pod.hostPorts.length) {
      const c = this.hostPorts.conflict(pod.hostPorts);
      if (c) return { code: 'IncompatibleRequirements', message: c };
    }
    const reqs = fit.requirements;
    if (fit.base) {
      let base = fit.base;
      if (this.limited) {
        const limited = this.limited;
        base = base.filter((p) => limited.has(p.t));
      }
      if (base.length === 0)
        return {
          code: 'IncompatibleRequirements',
          message: `no instance type of this NodeClaim satisfies ${reqs.toString()}`,
        };
      let f = 0;
      while (f < base.length && !vectorFits(need, base[f]!.t.alloc)) f++;
      if (f >= base.length) return explain ? this.noFit(pod) : NO_FIT;
      const first = base[f]!;
      if (!grow || this.growthCapped) {
        if (!current || first.price > current.price) return explain ? this.noGrowth() : NO_FIT;
      } else if (this.pods.length > 0 && (!current || first.price > current.price)) {
        if (!this.canGrowInto(base, f, need, base)) return explain ? this.noGrowth() : NO_FIT;
      }
      if (this.pool.hasMinValues) {
        const mv = minValuesShortfall(
          base
            .slice(f)
            .filter((p) => vectorFits(need, p.t.alloc))
            .map((p) => p.t.it),
          reqs,
        );
        if (mv) return { code: 'IncompatibleRequirements', message: mv };
      }
      return { requirements: reqs, narrowed: base, need: need.slice(), firstFit: f };
    }
    let i = this.start;
    while (i < this.options.length && !vectorFits(need, this.options[i]!.t.alloc)) i++;
    if (i >= this.options.length) return explain ? this.noFit(pod) : NO_FIT;
    if (this.pool.hasMinValues) {
      const fitting = this.options.slice(i).filter((p) => vectorFits(need, p.t.alloc));
      const mv = minValuesShortfall(
        fitting.map((p) => p.t.it),
        reqs,
      );
      if (mv) return { code: 'IncompatibleRequirements', message: mv };
    }
    if (i !== this.start && this.pods.length > 0 && !this.canGrowInto(this.options, i, need, this.base)) {
      this.growthCapped = true;
      return explain ? this.noGrowth() : NO_FIT;
    }
    return { requirements: reqs, need: need.slice(), firstFit: i };
  }

  private noFit(pod: PodInfo): Failure {
    const full = this.requests.slice();
    for (let i = 0; i < full.length; i++) full[i] = this.requests[i]! + pod.vec[i]!;
    return { code: 'NoInstanceTypeFits', message: this.noFitMessage(full, pod) };
  }

  private noGrowth(): Failure {
    return {
      code: 'NoInstanceTypeFits',
      message: this.growthCapped
        ? 'NodeClaim reached its cost-efficient size'
        : 'would need a larger (more expensive) instance type',
    };
  }

  /** Applies a successful {@link canAdd}. */
  commit(pod: PodInfo, add: PendingAdd, topology: Topology): void {
    this.pods.push(pod);
    this.requests = add.need;
    if (add.narrowed) {
      if (this.requirements !== add.requirements) this.reqKey = -1;
      this.requirements = add.requirements;
      this.base = add.narrowed;
      this.options = add.narrowed;
      this.start = add.firstFit;
      this.frontier = this.limited
        ? paretoFrontier(this.base.filter((p) => vectorFits(add.need, p.t.alloc)))
        : this.pool.optionsFor(this.requirements).frontier.filter((f) => vectorFits(add.need, f));
    } else {
      this.start = add.firstFit;
      this.frontier = this.frontier.filter((f) => vectorFits(add.need, f));
    }
    this.maxAlloc = componentMax(this.frontier, this.requests.length);
    this.refreshCaches();
    if (pod.hostPorts.length) this.hostPorts.add(pod.hostPorts);
    topology.record(pod, pod.inverse, {
      kind: 'new',
      hostname: this.hostname,
      requirements: this.requirements,
    });
  }

  /** Cost of `p` per "copy" of requests `need` (price × the tightest dimension's share). */
  private static unitCost(p: PricedType, need: Float64Array): number {
    let share = 0;
    for (let i = 0; i < need.length; i++) {
      const v = need[i]!;
      if (v <= 0) continue;
      const a = p.t.alloc[i]!;
      if (a <= 0) return Number.POSITIVE_INFINITY;
      share = Math.max(share, v / a);
    }
    return p.price * share;
  }

  /**
   * Growth rule (see the module doc): some option from index `from` that fits `need` must cost at most
   * {@link GROWTH_EFFICIENCY} × the best cost per copy of `need` over `base`.
   */
  private canGrowInto(
    options: readonly PricedType[],
    from: number,
    need: Float64Array,
    base: readonly PricedType[],
  ) {
    let best = Number.POSITIVE_INFINITY;
    for (const p of costFrontier(base)) best = Math.min(best, NewNodeClaim.unitCost(p, need));
    const limit = GROWTH_EFFICIENCY * best;
    for (let i = from; i < options.length; i++) {
      const p = options[i]!;
      if (vectorFits(need, p.t.alloc) && NewNodeClaim.unitCost(p, need) <= limit) return true;
    }
    return false;
  }

  /**
   * Price (USD/hour) of the cheapest option that would hold the requests plus `add` minus `sub` (each optional),
   * from the requirement-compatible options ({@link base}); Infinity when none does or when that price would be
   * `cap` or more (the scan stops there). Used by `repack.ts`.
   */
  priceAfter(add: PodInfo | undefined, sub: PodInfo | undefined, cap = Number.POSITIVE_INFINITY): number {
    const n = this.requests.length;
    const need = scratch(n);
    for (let i = 0; i < n; i++)
      need[i] = this.requests[i]! + (add ? add.vec[i]! : 0) - (sub ? sub.vec[i]! : 0);
    const list = sub ? this.base : this.options;
    const from = sub ? 0 : this.start;
    if (this.limited) {
      // option lists of plans under limits are their own (filtered) arrays: scan them as they are, uncached
      for (let i = from; i < list.length; i++) {
        const p = list[i]!;
        if (p.price >= cap) break;
        if (vectorFits(need, p.t.alloc)) return p.price;
      }
      return Number.POSITIVE_INFINITY;
    }
    for (const p of undominated(list, from)) {
      if (p.price >= cap) break;
      if (vectorFits(need, p.t.alloc)) return p.price;
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * Takes `pod` off this NodeClaim (`repack.ts`): requests shrink, and the options are again every
   * requirement-compatible type that holds them. The requirements stay as narrowed (still valid), topology and
   * host ports are untouched: only pods no topology group concerns and without host ports are moved.
   */
  remove(pod: PodInfo): void {
    const at = this.pods.indexOf(pod);
    if (at < 0) return;
    this.pods.splice(at, 1);
    const need = this.requests.slice();
    for (let i = 0; i < need.length; i++) need[i] = need[i]! - pod.vec[i]!;
    this.requests = need;
    this.options = this.base;
    this.start = 0;
    while (this.start < this.base.length && !vectorFits(need, this.base[this.start]!.t.alloc)) this.start++;
    this.frontier = this.limited
      ? paretoFrontier(this.base.filter((p) => vectorFits(need, p.t.alloc)))
      : this.pool.optionsFor(this.requirements).frontier.filter((f) => vectorFits(need, f));
    this.maxAlloc = componentMax(this.frontier, need.length);
    this.refreshCaches();
  }

  /** The remaining options that fit the current requests, in price order (at most `limit`). */
  fittingOptions(limit = Number.POSITIVE_INFINITY): PricedType[] {
    const out: PricedType[] = [];
    for (let i = this.start; i < this.options.length && out.length < limit; i++) {
      const p = this.options[i]!;
      if (vectorFits(this.requests, p.t.alloc)) out.push(p);
    }
    return out;
  }

  /** `no instance type has enough resources: ...` with the closest type's allocatable. */
  noFitMessage(need: Float64Array, pod: PodInfo): string {
    return noFitMessage(this.base, need, pod, this.pool, this.requests.length);
  }
}

/**
 * Builds the "no instance type has enough resources" message with numbers, and names each requested resource that
 * no allowed type has at all (e.g. `vpc.amazonaws.com/efa` when none of them supports EFA).
 */
export function noFitMessage(
  base: readonly PricedType[],
  need: Float64Array,
  pod: PodInfo,
  pool: PoolContext,
  dims: number,
): string {
  let best: PricedType | undefined;
  let bestScore = -1;
  for (const p of base) {
    let score = Number.POSITIVE_INFINITY;
    for (let i = 0; i < dims; i++) if (need[i]! > 0) score = Math.min(score, p.t.alloc[i]! / need[i]!);
    if (score > bestScore) {
      bestScore = score;
      best = p;
    }
  }
  const daemon = best ? formatRequests(pool.daemon(best.t).requests) : '';
  let msg = `no instance type has enough resources: pod needs ${formatRequests(pod.requests)}`;
  if (best) {
    if (daemon) msg += ` (+ daemon overhead ${daemon})`;
    const a = best.t.it.allocatable;
    const cpu = a.cpu !== undefined ? `${Math.round(a.cpu)}m` : '?';
    const mem = a.memory !== undefined ? `${Math.floor(a.memory / 2 ** 20)}Mi` : '?';
    msg += `; largest allowed type ${best.t.it.name} has ${cpu}/${mem}/${a.pods ?? '?'} pods allocatable`;
  } else {
    msg += '; no instance type is allowed';
  }
  const missing = Object.keys(pod.requests)
    .filter((name) => (pod.requests[name] ?? 0) > 0 && !base.some((p) => (p.t.it.allocatable[name] ?? 0) > 0))
    .sort();
  if (best && missing.length > 0) msg += `; no allowed instance type has ${missing.join(', ')}`;
  return msg;
}

const undominatedCache = new WeakMap<readonly PricedType[], Map<number, PricedType[]>>();

/**
 * `list` (sorted by price) from index `from` without the types some earlier kept type dominates (allocatable at
 * least as large in every resource, price no higher): the first type of the result that fits a request vector
 * has the same price as the first of `list[from..]` that fits. Cached per list and start.
 */
function undominated(list: readonly PricedType[], from: number): readonly PricedType[] {
  let byStart = undominatedCache.get(list);
  if (!byStart) {
    byStart = new Map();
    undominatedCache.set(list, byStart);
  }
  let hit = byStart.get(from);
  if (!hit) {
    hit = [];
    for (let i = from; i < list.length; i++) {
      const p = list[i]!;
      if (!hit.some((k) => vectorFits(p.t.alloc, k.t.alloc))) hit.push(p);
    }
    byStart.set(from, hit);
  }
  return hit;
}

const costFrontiers = new WeakMap<readonly PricedType[], PricedType[]>();

/**
 * The types of `base` not dominated in price per unit of allocatable (USD/hour per millicore, per byte, per pod,
 * ...): a dominated type never has the lowest cost per copy of any request vector, so the growth rule only needs
 * these. Cached per options array.
 */
function costFrontier(base: readonly PricedType[]): readonly PricedType[] {
  let hit = costFrontiers.get(base);
  if (hit) return hit;
  const rows = base.map((p) => ({
    p,
    per: Array.from(p.t.alloc, (a) => (a > 0 ? p.price / a : Number.POSITIVE_INFINITY)),
  }));
  // Lexicographic order: a type can only be dominated by one sorted before it (equal vectors: the first is kept).
  rows.sort((a, b) => {
    for (let k = 0; k < a.per.length; k++) {
      const d = a.per[k]! - b.per[k]!;
      if (d !== 0 && !Number.isNaN(d)) return d;
    }
    return 0;
  });
  const kept: { p: PricedType; per: number[] }[] = [];
  for (const r of rows) {
    const dominated = kept.some((f) => f.per.every((v, k) => v <= r.per[k]!));
    if (!dominated) kept.push(r);
  }
  hit = kept.map((r) => r.p);
  costFrontiers.set(base, hit);
  return hit;
}

function componentMax(vs: readonly Float64Array[], n: number): Float64Array {
  const out = new Float64Array(n);
  for (const v of vs) for (let i = 0; i < n; i++) if (v[i]! > out[i]!) out[i] = v[i]!;
  return out;
}

/** True when `reqs` is at least as narrow as `pod` on every key the pod constrains. */
export function subsumes(reqs: Requirements, pod: Requirements): boolean {
  for (const r of pod.values()) {
    const cur = reqs.get(r.key);
    if (!cur) return false;
    if (!cur.subsetOf(r)) return false;
    if (r.minValues !== undefined && (cur.minValues ?? 0) < r.minValues) return false;
  }
  return true;
}

const NO_DAEMONS: DaemonOverhead = { requests: {}, daemonSets: [], hostPorts: [] };
const NO_FIT: Failure = { code: 'NoInstanceTypeFits', message: 'does not fit' };
const TOPO: Failure = { code: 'TopologyUnsatisfiable', message: 'topology' };
let scratchBuf = new Float64Array(8);
/** A reused buffer of length n (callers copy it before keeping it). */
function scratch(n: number): Float64Array {
  if (scratchBuf.length !== n) scratchBuf = new Float64Array(n);
  return scratchBuf;
}

/** Maps a topology failure message to its Unschedulable code. */
export function topoCode(reason: string): Failure['code'] {
  return reason.includes('affinity') ? 'AffinityUnsatisfiable' : 'TopologyUnsatisfiable';
}

/**
 * Opens a new NodeClaim of `pool` for `pod` (upstream `addToNewNodeClaim` for one template), or says why not.
 * On success the pod is already committed to the returned plan.
 */
export function openNewNodeClaim(
  pool: PoolContext,
  pod: PodInfo,
  topology: Topology,
  hostname: string,
): NewNodeClaim | Failure {
  const taint = untoleratedTaint(pod.constraints.tolerations, pool.taints, { preferNoSchedule: true });
  if (taint) return { code: 'Untolerated', message: taint };
  if (pod.hostPorts.length && pool.daemonHostPorts.length) {
    const usage = new HostPortUsage();
    usage.add(pool.daemonHostPorts);
    const c = usage.conflict(pod.hostPorts);
    if (c) return { code: 'IncompatibleRequirements', message: `${c} by a DaemonSet` };
  }
  const incompatible = pool.requirements.compatible(pod.requirements, WellKnownLabels);
  if (incompatible) return { code: 'IncompatibleRequirements', message: incompatible };
  let reqs = pool.requirements;
  if (!subsumes(reqs, pod.requirements)) reqs = reqs.clone().addAll(pod.requirements);
  let opts = pool.optionsFor(reqs);
  if (opts.base.length === 0)
    return { code: 'IncompatibleRequirements', message: unmetRequirement(pool, pod) };
  const topo = topology.requirementsFor(pod, pod.groups, pod.strict, {
    kind: 'new',
    hostname,
    requirements: reqs,
    domains: (key) => pool.domains(reqs, key),
    rank: (key, d) => pool.domainRank(reqs, key, d),
  });
  if (!topo.ok) return { code: topoCode(topo.reason), message: topo.reason };
  const extra = topo.requirements.filter((r) => !reqs.get(r.key)?.subsetOf(r));
  if (extra.length) {
    reqs = reqs.clone().add(...extra);
    opts = pool.optionsFor(reqs);
    if (opts.base.length === 0)
      return {
        code: 'TopologyUnsatisfiable',
        message: `no instance type is offered in the domain topology requires (${reqs.toString()})`,
      };
  }
  let base = opts.base;
  let frontier = opts.frontier;
  if (pool.remaining) {
    base = base.filter((p) => pool.withinLimits(p.t));
    if (base.length === 0) {
      return {
        code: 'NodePoolLimitsExceeded',
        message: `all available instance types exceed limits for nodepool (remaining ${Object.entries(
          pool.remaining,
        )
          .map(([k, v]) => `${k} ${formatResource(k, Math.max(0, v))}`)
          .join(', ')})`,
      };
    }
    frontier = paretoFrontier(base);
  }
  const n = pod.vec.length;
  const need = Float64Array.from(pod.vec);
  if (!frontier.some((f) => vectorFits(need, f))) {
    return { code: 'NoInstanceTypeFits', message: noFitMessage(base, need, pod, pool, n) };
  }
  let firstFit = 0;
  while (!vectorFits(need, base[firstFit]!.t.alloc)) firstFit++;
  let relaxed = false;
  if (pool.hasMinValues || pool.remaining) {
    const fitting = base.slice(firstFit).filter((p) => vectorFits(need, p.t.alloc));
    if (pool.hasMinValues) {
      const its = fitting.map((p) => p.t.it);
      const mv = minValuesShortfall(its, reqs);
      if (mv && !pool.relaxMinValues) return { code: 'IncompatibleRequirements', message: mv };
      if (mv) {
        reqs = relaxMinValues(its, reqs) ?? reqs;
        relaxed = true;
      }
    }
    pool.subtractMax(fitting);
  }
  const plan = new NewNodeClaim(pool, hostname, reqs, base, frontier);
  plan.minValuesRelaxed = relaxed;
  if (pool.remaining) plan.limited = new Set(base.map((p) => p.t));
  plan.commit(pod, { requirements: reqs, need, firstFit }, topology);
  return plan;
}

/** Names the pod requirement no instance type of the pool meets (for messages). */
function unmetRequirement(pool: PoolContext, pod: PodInfo): string {
  const unmet: string[] = [];
  for (const r of pod.requirements.values()) {
    const single = pool.requirements.clone().add(r);
    if (pool.price(pool.types, single).length === 0) unmet.push(`${r.key} ${single.get(r.key)!.toString()}`);
  }
  if (unmet.length) return `no instance type of nodepool "${pool.name}" meets ${unmet.join(' and ')}`;
  return `no instance type of nodepool "${pool.name}" meets all of ${pod.requirements.toString()} together`;
}
