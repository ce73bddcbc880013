/**
 * The search over the NodeClaims opened so far in a run (the third step of the scheduler's order, after existing
 * nodes and in-flight NodeClaims, before opening a new NodeClaim). Internal to `scheduler.ts`.
 */
import { LabelHostname } from '../apis/labels.ts';
import type { TypeInfo } from './instancetypes.ts';
import {
  type Failure,
  fitRequirements,
  type NewNodeClaim,
  type PoolContext,
  type PricedType,
  type RequirementsFit,
} from './nodeclaim.ts';
import type { PodInfo } from './podinfo.ts';
import type { Topology } from './topology.ts';

/**
 * How many NodeClaims that can grow to take a pod are compared (cheapest current price first) before the one whose
 * price rises least takes it: growing the very cheapest often doubles it (c6a.large → c6a.xlarge) where another
 * NodeClaim would only have moved to a sibling type (c6a.xlarge → m5a.xlarge). A fixed window keeps the search
 * linear in the NodeClaims.
 */
const GROWTH_CANDIDATES = 4;

/**
 * Finds the planned NodeClaim a pod should join (capenter's packing rule, see the module doc):
 * 1. among the NodeClaims whose current cheapest option still holds the pod (no extra price), the tightest fit
 *    (least free cpu + memory share left in that option), ties by creation order;
 * 2. else, of the {@link GROWTH_CANDIDATES} NodeClaims with the lowest current price that can grow to hold it
 *    (growth rule in `nodeclaim.ts`; ties by creation order), the one whose price rises least (ties: the cheaper).
 * Speed: the NodeClaims' free cpu/memory (in their cheapest and in their largest option), price and flags live in
 * parallel typed arrays scanned by two small numeric loops ({@link scanZero}, {@link scanGrow}); the best row is
 * then checked for real: hostname topology (a map lookup), taints + requirements + other topology (evaluated once
 * per distinct NodePool+requirements per pod, {@link fitRequirements}; a failure excludes every NodeClaim with
 * those requirements), then {@link NewNodeClaim.fitPod}. A failed row is excluded and the scan repeats.
 */
export class PlanSearch {
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
  /** Scratch for {@link scanGrowTop}: row indexes of the cheapest growable NodeClaims. */
  private readonly top = new Int32Array(GROWTH_CANDIDATES);
  /** Scratch: the estimated price rise of each row of {@link top} (−1 once tried). */
  private readonly estimate = new Float64Array(GROWTH_CANDIDATES);
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
      // compacted at the start of the next place(), never here: a scan of place() holds row indices (`top`)
      // across update() calls, and compacting under it would point them at other NodeClaims or past the end
      this.dead++;
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
    if (this.dead > 64 && this.dead * 4 > this.rows) this.compact();
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
    // 2. of the GROWTH_CANDIDATES cheapest NodeClaims that can grow to take the pod, the one whose price rises least
    const top = this.top;
    const est = this.estimate;
    for (;;) {
      const count = scanGrowTop(
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
        top,
      );
      if (count === 0) return undefined;
      // the price rise each would see without narrowing its requirements (cheap; narrowing only adds to it)
      for (let q = 0; q < count; q++) {
        const plan = this.active[top[q]!]!;
        est[q] = plan.priceAfter(pod, undefined) - plan.price();
      }
      for (;;) {
        let q = -1;
        for (let j = 0; j < count; j++) if (est[j]! >= 0 && (q < 0 || est[j]! < est[q]!)) q = j;
        if (q < 0) break;
        est[q] = -1;
        const i = top[q]!;
        if (this.skip[i] === attempt || this.keyBad[this.keyOfRow[i]!] === 1) continue;
        if (blocked && blocked[this.seqOfRow[i]!] === 1) continue;
        const fit = this.eligible(i, pod, hostnameKeyed, blocked, note);
        this.skip[i] = attempt;
        if (!fit) continue;
        const plan = this.active[i]!;
        const r = plan.fitPod(pod, fit, this.explain, true);
        if ('need' in r) {
          plan.commit(pod, r, topology);
          this.update(plan);
          return plan;
        }
        if (note) note(`planned nodeclaim #${plan.seq} (${plan.pool.name}) growing: ${r.message}`);
        this.update(plan);
      }
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

/**
 * The rows with the lowest price (ties: lower row first) whose largest option still holds (c, m) and that may
 * grow, at most `out.length`, into `out` by price; returns how many.
 */
function scanGrowTop(
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
  out: Int32Array,
): number {
  const k = out.length;
  let count = 0;
  for (let i = 0; i < n; i++) {
    if (c > maxLeftCpu[i]! || m > maxLeftMem[i]!) continue;
    const p = price[i]!;
    if (count === k && p >= price[out[k - 1]!]!) continue;
    if (capped[i] === 1) continue;
    if (skip[i] === attempt || keyBad[keyOf[i]!] === 1 || blocked[seqOf[i]!] === 1) continue;
    // insertion into the sorted window (equal prices keep row order)
    let j = count < k ? count++ : k - 1;
    while (j > 0 && price[out[j - 1]!]! > p) {
      out[j] = out[j - 1]!;
      j--;
    }
    out[j] = i;
  }
  return count;
}
