/**
 * Topology: topology spread constraints, pod affinity and pod anti-affinity (including the inverse
 * anti-affinity of pods already placed), as upstream Karpenter
 * `pkg/controllers/provisioning/scheduling/topology.go` and `topologygroup.go`.
 *
 * A {@link TopologyGroup} counts the pods matching one selector (+ namespaces) per domain of one topology key.
 * Groups are shared by every pod with the same constraint (a Deployment's replicas share one group). Counts
 * start from the pods bound to existing nodes and grow as the scheduler places pods ({@link Topology.record}).
 *
 * Rules (upstream semantics):
 * - spread: a domain d is allowed when `count(d) + (pod matches selector ? 1 : 0) − min ≤ maxSkew`, where min is
 *   the smallest count over the eligible domains (all domains of the key that the pod's own node affinity allows;
 *   0 when fewer than `minDomains` are eligible; always 0 for `kubernetes.io/hostname`, since a new node can
 *   always be created). A new NodeClaim is pinned to the allowed domain with the lowest count, then the lowest
 *   price rank (the candidate's cheapest type offered there, when it gives one), then name. Upstream keeps every
 *   allowed domain in the NodeClaim's requirements and launches the cheapest offering among them; pinning the
 *   cheapest of the equally counted domains keeps that outcome (a zone offering only old, dearer types, e.g.
 *   us-east-1e, is not chosen while an equally counted zone offers cheaper ones).
 *   `ScheduleAnyway` constraints are enforced like `DoNotSchedule` until relaxed (see `preferences.ts`).
 * - affinity: allowed domains are those with a matching pod; if none exists anywhere and the pod matches its own
 *   selector, any domain is allowed (a new NodeClaim is pinned to one, so later replicas follow it).
 * - anti-affinity: allowed domains are those without a matching pod. Preferred (anti-)affinity terms are enforced
 *   as required until relaxed.
 * - inverse anti-affinity: a pod matching the required anti-affinity term of an already placed pod may not go to
 *   that pod's domain.
 * Counting: pods are recorded in a domain only once it is known (a single value); for anti-affinity every domain
 * the pod might land in is recorded. Selectors are widened by `matchLabelKeys` / `mismatchLabelKeys`
 * (`predicates.ts` `selectorWithLabelKeys`). A spread's eligible domains and counted nodes follow its
 * `nodeAffinityPolicy` / `nodeTaintsPolicy` (`spreaddomains.ts`).
 */
import type {
  LabelSelector,
  PodAffinityTerm,
  Taint,
  Toleration,
  TopologySpreadConstraint,
} from '../apis/core.ts';
import { LabelHostname } from '../apis/labels.ts';
import { selectorKey, selectorMatches } from './labelselector.ts';
import { selectorWithLabelKeys } from './predicates.ts';
import type { PodConstraints } from './preferences.ts';
import { formatValues, Requirement, type Requirements } from './requirements.ts';
import { spreadNodeEligible } from './spreaddomains.ts';

/** What a group constrains. */
export type TopologyKind = 'spread' | 'affinity' | 'anti-affinity' | 'inverse-anti-affinity';

/** A pod as the topology sees it. */
export interface TopologyPod {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  /** Optional precomputed {@link selectKeyOf} (saves recomputing it for every candidate). */
  selectKey?: string;
}

/** Cache key of a pod for "which groups select it": namespace + sorted labels. */
export function selectKeyOf(pod: TopologyPod): string {
  return `${pod.namespace}\u0000${JSON.stringify(Object.entries(pod.labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
}

/** One counted constraint (see module doc). */
export class TopologyGroup {
  /** Pods per domain. */
  readonly counts = new Map<string, number>();

  constructor(
    readonly id: string,
    readonly kind: TopologyKind,
    readonly key: string,
    readonly selector: LabelSelector | undefined,
    /** Namespaces whose pods count; `null` = all namespaces. */
    readonly namespaces: ReadonlySet<string> | null,
    readonly maxSkew = 1,
    readonly minDomains?: number,
    /** Spread with nodeAffinityPolicy Honor: existing pods count only on nodes matching one of these. */
    readonly nodeFilter?: readonly Requirements[],
    /** Spread with nodeTaintsPolicy Honor: the pod's tolerations; only nodes whose taints they tolerate count. */
    readonly taintFilter?: readonly Toleration[],
  ) {}

  private readonly memo = new Map<string, boolean>();

  /** True when a pod in `ns` with `labels` is counted by (or, for inverse groups, blocked by) this group. */
  selects(pod: TopologyPod): boolean {
    if (pod.selectKey !== undefined) {
      const hit = this.memo.get(pod.selectKey);
      if (hit !== undefined) return hit;
    }
    const v =
      (!this.namespaces || this.namespaces.has(pod.namespace)) && selectorMatches(this.selector, pod.labels);
    if (pod.selectKey !== undefined) this.memo.set(pod.selectKey, v);
    return v;
  }

  count(domain: string): number {
    return this.counts.get(domain) ?? 0;
  }

  record(domain: string, n = 1): void {
    this.counts.set(domain, (this.counts.get(domain) ?? 0) + n);
  }

  /** True when a node with these labels (and taints) passes the node filters (`spreaddomains.ts`). */
  nodeFilterMatches(labels: Readonly<Record<string, string>>, taints?: readonly Taint[]): boolean {
    return spreadNodeEligible(this, { labels, ...(taints ? { taints } : {}) });
  }
}

/** Where the scheduler is trying to put a pod. */
export type TopologyCandidate =
  | { kind: 'node'; hostname: string; labels: Readonly<Record<string, string>> }
  | {
      kind: 'new';
      hostname: string;
      requirements: Requirements;
      /** Domains the NodeClaim could still land in for `key` (from its requirements and instance-type offerings). */
      domains: (key: string) => ReadonlySet<string>;
      /**
       * Optional price rank of pinning the NodeClaim to `domain` of `key` (lower is cheaper, e.g. the cheapest
       * type offered there, USD/hour): breaks ties between equally counted spread domains (see module doc).
       */
      rank?: (key: string, domain: string) => number;
    };

/** Where a pod was placed, for {@link Topology.record}. */
export type TopologyPlacement =
  | { kind: 'node'; hostname: string; labels: Readonly<Record<string, string>> }
  | { kind: 'new'; hostname: string; requirements: Requirements };

/** Result of {@link Topology.requirementsFor}. */
export type TopologyResult = { ok: true; requirements: Requirement[] } | { ok: false; reason: string };

const OK_NONE: TopologyResult = Object.freeze({
  ok: true,
  requirements: Object.freeze([]) as unknown as Requirement[],
});

/** All topology groups of one scheduling run. */
export class Topology {
  private readonly groups = new Map<string, TopologyGroup>();
  private readonly selectsCache = new Map<string, { counting: TopologyGroup[]; inverse: TopologyGroup[] }>();

  /**
   * @param universe every known domain of a topology key (from NodePools, instance-type offerings and existing
   *   nodes); never called for hostname (its min count is always 0).
   * @param namespaceLabels labels of each namespace, for `namespaceSelector`.
   */
  constructor(
    private readonly universe: (key: string, filtered?: TopologyGroup) => ReadonlySet<string>,
    private readonly namespaceLabels: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
  ) {}

  /** Every group (for tests and explanations). */
  allGroups(): TopologyGroup[] {
    return [...this.groups.values()];
  }

  private namespacesOf(term: PodAffinityTerm, ownNs: string): ReadonlySet<string> | null {
    const out = new Set<string>(term.namespaces ?? []);
    if (term.namespaceSelector) {
      const sel = term.namespaceSelector;
      if (!sel.matchLabels && !sel.matchExpressions?.length) return null;
      for (const [ns, labels] of Object.entries(this.namespaceLabels))
        if (selectorMatches(sel, labels)) out.add(ns);
    }
    if (!term.namespaces?.length && !term.namespaceSelector) out.add(ownNs);
    return out;
  }

  private getOrCreate(g: TopologyGroup): TopologyGroup {
    const existing = this.groups.get(g.id);
    if (existing) return existing;
    this.groups.set(g.id, g);
    this.selectsCache.clear();
    return g;
  }

  private spreadGroup(
    pod: TopologyPod,
    tsc: TopologySpreadConstraint,
    nodeFilter: readonly Requirements[] | undefined,
    tolerations: readonly Toleration[],
  ): TopologyGroup {
    const selector = selectorWithLabelKeys(tsc.labelSelector, pod.labels, tsc.matchLabelKeys);
    const honor = (tsc.nodeAffinityPolicy ?? 'Honor') === 'Honor' ? nodeFilter : undefined;
    const taints = tsc.nodeTaintsPolicy === 'Honor' ? tolerations : undefined;
    const filterSig = `${honor ? honor.map((r) => r.signature()).join('|') : ''}|${taints ? JSON.stringify(taints) : ''}`;
    const id = `spread|${tsc.topologyKey}|${selectorKey(selector)}|${pod.namespace}|${tsc.maxSkew}|${tsc.minDomains ?? ''}|${filterSig}`;
    return this.getOrCreate(
      new TopologyGroup(
        id,
        'spread',
        tsc.topologyKey,
        selector,
        new Set([pod.namespace]),
        tsc.maxSkew,
        tsc.minDomains,
        honor,
        taints,
      ),
    );
  }

  private affinityGroup(
    kind: 'affinity' | 'anti-affinity' | 'inverse-anti-affinity',
    pod: TopologyPod,
    term: PodAffinityTerm,
  ) {
    const selector = selectorWithLabelKeys(
      term.labelSelector,
      pod.labels,
      term.matchLabelKeys,
      term.mismatchLabelKeys,
    );
    const ns = this.namespacesOf(term, pod.namespace);
    const id = `${kind}|${term.topologyKey}|${selectorKey(selector)}|${ns ? [...ns].sort().join(',') : '*'}`;
    return this.getOrCreate(new TopologyGroup(id, kind, term.topologyKey, selector, ns));
  }

  /**
   * The groups a pod's CURRENT constraints put it in (spread, affinity, anti-affinity; preferred terms
   * included until relaxed). Creates missing groups. `nodeFilter` = the pod's required node-affinity
   * alternatives (for spread `nodeAffinityPolicy: Honor`).
   */
  ownedGroups(pod: TopologyPod, c: PodConstraints, nodeFilter?: readonly Requirements[]): TopologyGroup[] {
    const out: TopologyGroup[] = [];
    for (const tsc of c.topologySpread) out.push(this.spreadGroup(pod, tsc, nodeFilter, c.tolerations));
    for (const t of c.podAffinityRequired) out.push(this.affinityGroup('affinity', pod, t));
    for (const t of c.podAffinityPreferred) out.push(this.affinityGroup('affinity', pod, t.podAffinityTerm));
    for (const t of c.podAntiAffinityRequired) out.push(this.affinityGroup('anti-affinity', pod, t));
    for (const t of c.podAntiAffinityPreferred)
      out.push(this.affinityGroup('anti-affinity', pod, t.podAffinityTerm));
    return out;
  }

  /** The inverse anti-affinity groups a pod owns (its REQUIRED anti-affinity terms). Creates missing groups. */
  inverseGroups(pod: TopologyPod, terms: readonly PodAffinityTerm[]): TopologyGroup[] {
    return terms.map((t) => this.affinityGroup('inverse-anti-affinity', pod, t));
  }

  /**
   * For moving a placed `pod` to another NodeClaim (`repack.ts`): the non-hostname topology keys of every group of
   * the run that concerns it (it owns them — `owned`, `ownInverse` — or they count it or are blocked by it); the
   * move keeps every count when both NodeClaims are pinned to the same single domain of each. Groups keyed on
   * `kubernetes.io/hostname` are allowed only where a move is checked by {@link hostnameBlocked} on the target and
   * re-counted by {@link record} (−1 at the source, +1 at the target): the pod's own spread, anti-affinity and
   * inverse anti-affinity, and others' inverse anti-affinity. Undefined when some other group concerns it (a
   * hostname affinity, or another pod's hostname spread or preferred anti-affinity counting it).
   */
  trackedKeys(
    pod: TopologyPod,
    owned: readonly TopologyGroup[],
    ownInverse: readonly TopologyGroup[],
  ): Set<string> | undefined {
    const { counting, inverse } = this.selecting(pod);
    const keys = new Set<string>();
    for (const list of [owned, ownInverse, counting, inverse])
      for (const g of list) {
        if (g.key !== LabelHostname) keys.add(g.key);
        else if (g.kind === 'affinity' || (list === counting && !owned.includes(g))) return undefined;
      }
    return keys;
  }

  private selecting(pod: TopologyPod): { counting: TopologyGroup[]; inverse: TopologyGroup[] } {
    const key = pod.selectKey ?? selectKeyOf(pod);
    let hit = this.selectsCache.get(key);
    if (!hit) {
      hit = { counting: [], inverse: [] };
      for (const g of this.groups.values()) {
        if (!g.selects(pod)) continue;
        (g.kind === 'inverse-anti-affinity' ? hit.inverse : hit.counting).push(g);
      }
      this.selectsCache.set(key, hit);
    }
    return hit;
  }

  /**
   * Counts a pod that is already bound to an existing node (at the start of a run): in every group selecting it,
   * and in the inverse groups built from its own required anti-affinity terms.
   */
  countExisting(
    pod: TopologyPod,
    node: { hostname: string; labels: Readonly<Record<string, string>>; taints?: readonly Taint[] },
    inverse: TopologyGroup[],
  ) {
    for (const g of this.selecting(pod).counting) {
      if (!g.nodeFilterMatches(node.labels, node.taints)) continue;
      const d = g.key === LabelHostname ? node.hostname : node.labels[g.key];
      if (d !== undefined) g.record(d);
    }
    for (const g of inverse) {
      const d = g.key === LabelHostname ? node.hostname : node.labels[g.key];
      if (d !== undefined) g.record(d);
    }
  }

  /** True when some group of the pod, or an inverse group selecting it, has a key other than hostname. */
  hasNonHostnameTopology(pod: TopologyPod, owned: readonly TopologyGroup[]): boolean {
    for (const g of owned) if (g.key !== LabelHostname) return true;
    for (const g of this.selecting(pod).inverse) if (g.key !== LabelHostname) return true;
    return false;
  }

  /** True when an inverse anti-affinity group on hostname selects this pod. */
  hasHostnameInverse(pod: TopologyPod): boolean {
    return this.selecting(pod).inverse.some((g) => g.key === LabelHostname);
  }

  /**
   * A key that identifies what {@link hostnameBlocked} decides for this pod (its hostname-keyed groups and, for
   * spread, whether it counts itself), when that decision can only go from allowed to blocked as pods are placed
   * (spread, anti-affinity, inverse anti-affinity; counts never decrease within a run). Undefined when a
   * hostname-keyed pod affinity is involved (not monotone) or no hostname group applies.
   */
  hostnameKey(pod: TopologyPod, owned: readonly TopologyGroup[]): string | undefined {
    // cached per (owned groups array, pod selection), valid until a new group appears
    const ck = pod.selectKey;
    let byPod = ck !== undefined ? this.hostnameKeyCache.get(owned) : undefined;
    const hit = ck !== undefined ? byPod?.get(ck) : undefined;
    if (hit && hit.groups === this.groups.size) return hit.key;
    let key = '';
    for (const g of owned) {
      if (g.key !== LabelHostname) continue;
      if (g.kind === 'affinity') return undefined;
      key += `${g.id}\u0002${g.kind === 'spread' && g.selects(pod) ? 1 : 0}\u0003`;
    }
    for (const g of this.selecting(pod).inverse) if (g.key === LabelHostname) key += `${g.id}\u0003`;
    const out = key === '' ? undefined : key;
    if (ck !== undefined) {
      if (!byPod) {
        byPod = new Map();
        this.hostnameKeyCache.set(owned, byPod);
      }
      byPod.set(ck, { groups: this.groups.size, key: out });
    }
    return out;
  }

  private readonly hostnameKeyCache = new WeakMap<
    readonly TopologyGroup[],
    Map<string, { groups: number; key: string | undefined }>
  >();

  /**
   * Fast pre-check of the hostname-keyed constraints for a node/NodeClaim named `hostname` (no allocation):
   * true when some spread, affinity, anti-affinity or inverse anti-affinity on `kubernetes.io/hostname` forbids it.
   */
  hostnameBlocked(pod: TopologyPod, owned: readonly TopologyGroup[], hostname: string): boolean {
    for (const g of owned) {
      if (g.key !== LabelHostname) continue;
      const c = g.count(hostname);
      if (g.kind === 'spread') {
        if (c + (g.selects(pod) ? 1 : 0) > g.maxSkew) return true;
      } else if (g.kind === 'anti-affinity') {
        if (c > 0) return true;
      } else if (g.kind === 'affinity' && c === 0) {
        for (const v of g.counts.values()) if (v > 0) return true;
        if (!g.selects(pod)) return true;
      }
    }
    for (const g of this.selecting(pod).inverse)
      if (g.key === LabelHostname && g.count(hostname) > 0) return true;
    return false;
  }

  /**
   * The topology requirements for placing `pod` on `candidate`: for a node, whether its domains are allowed; for a
   * new NodeClaim, the `In [domains]` requirements that narrow it (spread and bootstrap affinity pin one domain).
   * @param owned the pod's groups ({@link ownedGroups}).
   * @param podReqs the pod's strict requirements (eligible domains for spread minimums).
   * @param skipHostname skip the groups keyed on `kubernetes.io/hostname` (the caller checks those per NodeClaim
   *   with {@link hostnameBlocked}, which decides them identically); the result then holds for every NodeClaim
   *   with the candidate's requirements.
   */
  requirementsFor(
    pod: TopologyPod,
    owned: readonly TopologyGroup[],
    podReqs: Requirements,
    candidate: TopologyCandidate,
    explain = true,
    skipHostname = false,
  ): TopologyResult {
    const { inverse } = this.selecting(pod);
    if (owned.length === 0 && inverse.length === 0) return OK_NONE;
    const narrowed = new Map<string, Set<string>>();
    const domainsFor = (key: string): ReadonlySet<string> => {
      const n = narrowed.get(key);
      if (n) return n;
      if (candidate.kind === 'node') {
        const d = key === LabelHostname ? candidate.hostname : candidate.labels[key];
        return new Set(d === undefined ? [] : [d]);
      }
      if (key === LabelHostname) return new Set([candidate.hostname]);
      return candidate.domains(key);
    };
    for (let gi = 0; gi < owned.length + inverse.length; gi++) {
      const g = gi < owned.length ? owned[gi]! : inverse[gi - owned.length]!;
      if (skipHostname && g.key === LabelHostname) continue;
      const options = domainsFor(g.key);
      const allowed = this.allowed(
        g,
        pod,
        podReqs,
        options,
        candidate.kind === 'new',
        candidate.kind === 'new' ? candidate.rank : undefined,
      );
      if (allowed.size === 0) {
        return {
          ok: false,
          reason: explain
            ? this.describeFailure(g, options)
            : g.kind === 'spread'
              ? 'topology spread'
              : 'pod affinity',
        };
      }
      narrowed.set(g.key, allowed);
    }
    if (narrowed.size === 0) return OK_NONE;
    const reqs: Requirement[] = [];
    if (candidate.kind === 'new') {
      for (const [key, values] of narrowed) if (key !== LabelHostname) reqs.push(Requirement.in(key, values));
    }
    return { ok: true, requirements: reqs };
  }

  /**
   * The domains of `key` where `pod` may go now under its own topology groups on `key` (upstream
   * `Topology.GetTopologyZoneConstraints`, `scheduling/topology.go`): every domain the group allows, not the one a
   * new NodeClaim would be pinned to; intersected over the groups. The candidates are the known domains of `key`
   * that `podReqs` allows. `domains` is undefined when no group of the pod is keyed on `key`; `satisfiable` is false
   * when a group allows none.
   */
  validDomains(
    pod: TopologyPod,
    owned: readonly TopologyGroup[],
    podReqs: Requirements,
    key: string,
  ): { satisfiable: boolean; domains?: Set<string> } {
    const req = podReqs.get(key);
    let out: Set<string> | undefined;
    for (const g of owned) {
      if (g.key !== key) continue;
      const known = this.universe(key, g.nodeFilter || g.taintFilter ? g : undefined);
      const options = out ?? new Set([...known].filter((d) => !req || req.has(d)));
      const allowed = this.allowed(g, pod, podReqs, options, false);
      if (allowed.size === 0) return { satisfiable: false };
      out = allowed;
    }
    return out ? { satisfiable: true, domains: out } : { satisfiable: true };
  }

  /** Per group and pod-domain requirement (shared per pod template): the eligible domains, valid while the group's domain count is unchanged. */
  private readonly eligibleCache = new WeakMap<
    TopologyGroup,
    Map<Requirement | undefined, { size: number; eligible: string[] }>
  >();

  private eligibleMin(g: TopologyGroup, podReqs: Requirements): { min: number; eligible: string[] } {
    if (g.key === LabelHostname) return { min: 0, eligible: [] };
    const podDomains = podReqs.get(g.key);
    let byReq = this.eligibleCache.get(g);
    if (!byReq) {
      byReq = new Map();
      this.eligibleCache.set(g, byReq);
    }
    let hit = byReq.get(podDomains);
    if (!hit || hit.size !== g.counts.size) {
      const eligible: string[] = [];
      const universe = new Set<string>(this.universe(g.key, g.nodeFilter || g.taintFilter ? g : undefined));
      for (const d of g.counts.keys()) universe.add(d);
      for (const d of universe) if (!podDomains || podDomains.has(d)) eligible.push(d);
      hit = { size: g.counts.size, eligible };
      byReq.set(podDomains, hit);
    }
    const eligible = hit.eligible;
    let min = Number.POSITIVE_INFINITY;
    for (const d of eligible) min = Math.min(min, g.count(d));
    if (!Number.isFinite(min)) min = 0;
    if (g.minDomains !== undefined && eligible.length < g.minDomains) min = 0;
    return { min, eligible };
  }

  private allowed(
    g: TopologyGroup,
    pod: TopologyPod,
    podReqs: Requirements,
    options: ReadonlySet<string>,
    pin: boolean,
    rank?: (key: string, domain: string) => number,
  ): Set<string> {
    const sorted = [...options].sort();
    switch (g.kind) {
      case 'spread': {
        const self = g.selects(pod) ? 1 : 0;
        const { min } = this.eligibleMin(g, podReqs);
        const ok = sorted.filter((d) => g.count(d) + self - min <= g.maxSkew);
        if (!pin || g.key === LabelHostname || ok.length <= 1) return new Set(ok);
        let best = ok[0]!;
        let bestRank = rank ? rank(g.key, best) : 0;
        for (const d of ok) {
          const c = g.count(d);
          const b = g.count(best);
          if (c > b) continue;
          const r = rank && d !== best ? rank(g.key, d) : bestRank;
          if (c < b || r < bestRank) {
            best = d;
            bestRank = r;
          }
        }
        return new Set([best]);
      }
      case 'affinity': {
        const withPods = sorted.filter((d) => g.count(d) > 0);
        if (withPods.length > 0) {
          if (!pin || g.key === LabelHostname) return new Set(withPods);
          let best = withPods[0]!;
          for (const d of withPods) if (g.count(d) > g.count(best)) best = d;
          return new Set([best]);
        }
        let any = false;
        for (const v of g.counts.values()) if (v > 0) any = true;
        if (any || !g.selects(pod)) return new Set();
        return pin && g.key !== LabelHostname && sorted.length > 0 ? new Set([sorted[0]!]) : new Set(sorted);
      }
      case 'anti-affinity': {
        const free = sorted.filter((d) => g.count(d) === 0);
        return pin && g.key !== LabelHostname && free.length > 1 ? new Set([free[0]!]) : new Set(free);
      }
      case 'inverse-anti-affinity':
        return new Set(sorted.filter((d) => g.count(d) === 0));
    }
  }

  private describeFailure(g: TopologyGroup, options: ReadonlySet<string>): string {
    const counts = [...options]
      .sort()
      .slice(0, 8)
      .map((d) => `${d}=${g.count(d)}`)
      .join(', ');
    if (options.size === 0) return `no domain for topology key "${g.key}" is possible here (${g.kind})`;
    switch (g.kind) {
      case 'spread':
        return `topology spread on "${g.key}" (maxSkew ${g.maxSkew}) would be violated in every possible domain ${formatValues(options)} (matching pods: ${counts})`;
      case 'affinity':
        return `pod affinity on "${g.key}": no possible domain ${formatValues(options)} has a matching pod`;
      case 'anti-affinity':
        return `pod anti-affinity on "${g.key}": every possible domain already has a matching pod (${counts})`;
      case 'inverse-anti-affinity':
        return `anti-affinity of already placed pods on "${g.key}" excludes every possible domain (${counts})`;
    }
  }

  /**
   * Records a placed pod: in each group selecting it (a single known domain; every possible domain for
   * anti-affinity) and in its own inverse anti-affinity groups. `n` = −1 takes a pod back off (`repack.ts`).
   */
  record(pod: TopologyPod, ownInverse: readonly TopologyGroup[], placement: TopologyPlacement, n = 1): void {
    const domainsOf = (key: string): string[] => {
      if (key === LabelHostname) return [placement.hostname];
      if (placement.kind === 'node') {
        const d = placement.labels[key];
        return d === undefined ? [] : [d];
      }
      const r = placement.requirements.get(key);
      if (!r || r.complement) return [];
      return [...r.values].filter((v) => r.has(v));
    };
    for (const g of this.selecting(pod).counting) {
      if (placement.kind === 'node' && !g.nodeFilterMatches(placement.labels)) continue;
      const ds = domainsOf(g.key);
      if (g.kind === 'anti-affinity') for (const d of ds) g.record(d, n);
      else if (ds.length === 1) g.record(ds[0]!, n);
    }
    for (const g of ownInverse) for (const d of domainsOf(g.key)) g.record(d, n);
  }

  /** Keys used by any group (the scheduler computes domain universes for these). */
  keys(): Set<string> {
    return new Set([...this.groups.values()].map((g) => g.key));
  }

  /** Term references of a pod for explanations. */
  static describe(groups: readonly TopologyGroup[]): string[] {
    return groups.map((g) => `${g.kind} on ${g.key}`);
  }
}
