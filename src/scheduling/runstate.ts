/**
 * Preparing a scheduling run (the first of `solve`'s three parts, see `scheduler.ts`): the resource index,
 * the NodePools with their daemon overhead and instance types, the pod infos (invalid pods set aside as
 * values), the topology with its domain universes and the counts of bound pods, and the existing and in-flight
 * capacity. Pure: the same input gives the same state.
 */
import type { Pod } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelCapacityType, LabelHostname, LabelTopologyZone } from '../apis/labels.ts';
import { isTerminal } from '../apis/pod.ts';
import { parseResources, QuantityParseError, type Resources, resourceListProblem } from '../apis/quantity.ts';
import { type DaemonOverhead, daemonOverhead, daemonOverheadGroups } from './daemonoverhead.ts';
import { type ExistingCapacity, existingNodeCapacity, inFlightCapacity } from './existingnode.ts';
import {
  addOfferingDomains,
  isOfferingKey,
  providerKeys,
  ResourceIndex,
  typeInfos,
} from './instancetypes.ts';
import { PoolContext } from './nodeclaim.ts';
import { nodeClaimTemplateRequirements } from './nodeclaimtemplate.ts';
import { constraintKey, type PodInfo, PodInfoCache, resourceKey } from './podinfo.ts';
import { podConstraints } from './preferences.ts';
import { requirementProblem } from './requirements.ts';
import { eligibleSpreadDomains, type SpreadPool } from './spreaddomains.ts';
import { Topology, type TopologyGroup } from './topology.ts';
import type { SchedulingInput, Unschedulable } from './types.ts';

/** Everything a run schedules with; built once by {@link prepareRun}. */
export interface RunState {
  index: ResourceIndex;
  /** Dynamic NodePools (no `spec.replicas`) that could be prepared, by weight desc then name. */
  pools: PoolContext[];
  /** `nodepool "x": …` / `node "y": …` / `nodeclaim "z": …` messages of objects that could not be prepared. */
  poolErrors: string[];
  topology: Topology;
  /** Pods to schedule, in input order. */
  pods: PodInfo[];
  /** Pods set aside before scheduling (already bound, malformed requests or node affinity): `InvalidPod`. */
  invalid: Unschedulable[];
  /** Existing nodes, initialized first, then by name. */
  existing: ExistingCapacity[];
  /** In-flight NodeClaims by name. */
  inflight: ExistingCapacity[];
  /** True when some NodePool has a `PreferNoSchedule` taint (a pod may then relax tolerating it). */
  allowPreferNoSchedule: boolean;
  /** `SchedulingInput.consolidateAfterDestinations`: existing nodes closed to the listed moving pods. */
  consolidateAfterDestinations: SchedulingInput['consolidateAfterDestinations'];
  /** Smallest cpu (millicores) and memory (bytes) request of the run's pods (`Infinity` without pods). */
  minCpu: number;
  minMemory: number;
}

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders NodePools as the scheduler does: weight desc, then name. */
export function compareNodePools(a: NodePool, b: NodePool): number {
  return (b.spec.weight ?? 0) - (a.spec.weight ?? 0) || cmpStr(a.metadata.name, b.metadata.name);
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Why a pod's requests cannot be used (`invalid resources: …`), as a value; `undefined` when every resource list
 * parses. Same check and message as parsing them.
 */
export function resourcesProblem(pod: Pod): string | undefined {
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    const e = resourceListProblem(c.resources?.limits) ?? resourceListProblem(c.resources?.requests);
    if (e) return `invalid resources: ${e.message}`;
  }
  const e =
    resourceListProblem(pod.spec?.overhead) ??
    (pod.spec?.containers ? undefined : new QuantityParseError('spec.containers missing'));
  return e ? `invalid resources: ${e.message}` : undefined;
}

/** Why a pod's node affinity is malformed (any required or preferred term), as a value; else `undefined`. */
export function nodeAffinityProblem(pod: Pod): string | undefined {
  const na = pod.spec?.affinity?.nodeAffinity;
  if (!na) return undefined;
  const terms = [
    ...(na.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []),
    ...(na.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((t) => t.preference),
  ];
  for (const t of terms)
    for (const e of t?.matchExpressions ?? []) {
      const p = requirementProblem(e);
      if (p) return p;
    }
  return undefined;
}

/** All resource names a pod's lists mention (registered in the index). Only for pods without a problem. */
function resourceNames(pod: Pod): Resources {
  const out: Resources = {};
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])])
    Object.assign(out, parseResources(c.resources?.limits), parseResources(c.resources?.requests));
  return Object.assign(out, parseResources(pod.spec?.overhead));
}

/** Runs `fn`; a thrown error becomes a `label: message` entry of `errors` (malformed NodePools and nodes). */
function attempt<T>(errors: string[], label: string, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (e) {
    errors.push(`${label}: ${errorMessage(e)}`);
    return undefined;
  }
}

/**
 * Pending pods that can be scheduled, and the others as `InvalidPod` values. Checks run once per template
 * (replicas share resource and constraint keys); resource names are registered in `index`.
 */
function screenPods(input: SchedulingInput, index: ResourceIndex) {
  const invalid: Unschedulable[] = [];
  const valid: Array<{ pod: Pod; rkey: string; ckey: string }> = [];
  const byResources = new Map<string, string | undefined>();
  const byConstraints = new Map<string, string | undefined>();
  for (const pod of input.pods) {
    if (pod.spec?.nodeName) {
      invalid.push({
        pod,
        code: 'InvalidPod',
        message: `pod is already bound to node "${pod.spec.nodeName}"`,
      });
      continue;
    }
    const rkey = resourceKey(pod);
    if (!byResources.has(rkey)) {
      const problem = resourcesProblem(pod);
      if (!problem) index.register(resourceNames(pod));
      byResources.set(rkey, problem);
    }
    const ckey = constraintKey(pod);
    let problem = byResources.get(rkey);
    if (problem === undefined) {
      if (!byConstraints.has(ckey)) byConstraints.set(ckey, nodeAffinityProblem(pod));
      problem = byConstraints.get(ckey);
    }
    if (problem !== undefined) invalid.push({ pod, code: 'InvalidPod', message: problem });
    else valid.push({ pod, rkey, ckey });
  }
  return { invalid, valid };
}

/**
 * The NodePools a run can use, each with the daemon overhead of its template alone (every DaemonSet that may run
 * on some of its types): registers the daemons' resource names and reports malformed NodePools / DaemonSets
 * once; the per-type overhead is built with the pool ({@link buildPools}).
 */
function preparePools(input: SchedulingInput, index: ResourceIndex, errors: string[]) {
  const dynamicPools = input.nodePools.filter((np) => np.spec.replicas === undefined).sort(compareNodePools);
  const overheads = new Map<NodePool, DaemonOverhead>();
  for (const np of dynamicPools) {
    const d = attempt(errors, `nodepool "${np.metadata.name}"`, () => daemonOverhead(np, input.daemonSets));
    if (!d) continue;
    index.register(d.requests);
    overheads.set(np, d);
  }
  return { dynamicPools, overheads };
}

function buildPools(
  input: SchedulingInput,
  index: ResourceIndex,
  errors: string[],
  dynamicPools: readonly NodePool[],
  overheads: ReadonlyMap<NodePool, DaemonOverhead>,
): PoolContext[] {
  const pools: PoolContext[] = [];
  for (const np of dynamicPools) {
    const d = overheads.get(np);
    if (!d) continue;
    const pool = attempt(errors, `nodepool "${np.metadata.name}"`, () => {
      const raw = input.instanceTypes[np.metadata.name] ?? [];
      const limits = np.spec.limits ? parseResources(np.spec.limits) : undefined;
      const usage = input.nodePoolUsage?.[np.metadata.name];
      const reqs = nodeClaimTemplateRequirements(np);
      const keys = providerKeys(raw);
      const daemon = daemonOverheadGroups(np, raw, keys, input.daemonSets);
      const pool = new PoolContext(np, reqs, typeInfos(raw, index), keys, daemon, index, limits, usage);
      pool.relaxMinValues = input.minValuesPolicy === 'BestEffort';
      return pool;
    });
    if (pool) pools.push(pool);
  }
  return pools;
}

/**
 * The domains of topology key `key` a run knows (lazy per key, cached): zones, capacity types and the provider's
 * offering labels (aws `topology.k8s.aws/zone-id`) of the NodePools' offerings, values the NodePools' requirements
 * allow, labels of their instance types, and the labels of existing nodes.
 */
function domainUniverse(input: SchedulingInput, pools: readonly PoolContext[]) {
  const cache = new Map<string, Set<string>>();
  const fromPool = (pool: PoolContext, key: string, u: Set<string>) => {
    const r = pool.requirements.get(key);
    if (key === LabelTopologyZone || key === LabelCapacityType) {
      for (const p of pool.types) addOfferingDomains(p.t.offerings, pool.requirements, key, u);
    } else if (r && !r.complement) {
      for (const v of r.values) if (r.has(v)) u.add(v);
    } else {
      for (const p of pool.types) {
        if (isOfferingKey(p.t.offerings, key)) {
          addOfferingDomains(p.t.offerings, pool.requirements, key, u);
          continue;
        }
        const v = p.t.it.labels[key];
        if (v !== undefined && (!r || r.has(v))) u.add(v);
      }
    }
  };
  const spreadPools: SpreadPool[] = pools.map((pool) => ({
    requirements: pool.requirements,
    taints: pool.taints,
    domains: (key, reqs) => {
      const u = new Set<string>();
      fromPool(pool, key, u);
      const r = reqs?.get(key);
      return r ? [...u].filter((d) => r.has(d)) : u;
    },
  }));
  // The node's taints as they are, ephemeral ones included: upstream countDomains filters state nodes on
  // `n.Node.Spec.Taints` (pkg/controllers/provisioning/scheduling/topology.go), not on StateNode.Taints().
  const spreadNodes = input.existingNodes.map((en) => ({
    labels: en.node.metadata.labels ?? {},
    taints: en.node.spec?.taints ?? [],
  }));
  const byGroup = new WeakMap<TopologyGroup, Set<string>>();
  return (key: string, group?: TopologyGroup): ReadonlySet<string> => {
    if (group) {
      let g = byGroup.get(group);
      if (!g) {
        g = eligibleSpreadDomains(key, group, spreadPools, spreadNodes);
        byGroup.set(group, g);
      }
      return g;
    }
    let u = cache.get(key);
    if (u) return u;
    u = new Set();
    for (const pool of pools) fromPool(pool, key, u);
    for (const en of input.existingNodes) {
      const v = en.node.metadata.labels?.[key];
      if (v !== undefined) u.add(v);
    }
    cache.set(key, u);
    return u;
  };
}

/**
 * Counts the pods bound to existing nodes (not marked for deletion) in the topology. A node's taints count as
 * they are, ephemeral ones included (`readiness.k8s.io/<rule>` on an initialized node too): upstream
 * countDomains filters on the Node's `spec.taints` (pkg/controllers/provisioning/scheduling/topology.go).
 */
function countBoundPods(input: SchedulingInput, topology: Topology): void {
  for (const en of input.existingNodes) {
    if (en.markedForDeletion) continue;
    const labels = en.node.metadata.labels ?? {};
    const node = {
      hostname: labels[LabelHostname] ?? en.node.metadata.name ?? '?',
      labels,
      taints: en.node.spec?.taints ?? [],
    };
    for (const p of en.pods) {
      if (isTerminal(p)) continue;
      const tp = { namespace: p.metadata.namespace ?? 'default', labels: p.metadata.labels ?? {} };
      const inverse = topology.inverseGroups(tp, podConstraints(p).podAntiAffinityRequired);
      topology.countExisting(tp, node, inverse);
    }
  }
}

/** Existing nodes (initialized first, then by name) and in-flight NodeClaims (by name) as capacity. */
function prepareCapacity(input: SchedulingInput, index: ResourceIndex, errors: string[]) {
  const existing: ExistingCapacity[] = [];
  for (const en of input.existingNodes) {
    const label = `node "${en.node.metadata.name ?? '?'}"`;
    const cap = attempt(errors, label, () => existingNodeCapacity(en, index, input.daemonSets));
    if (cap) existing.push(cap);
  }
  existing.sort((a, b) => Number(b.initialized) - Number(a.initialized) || cmpStr(a.name, b.name));
  const inflight: ExistingCapacity[] = [];
  const sorted = [...(input.inFlight ?? [])].sort((a, b) =>
    cmpStr(a.nodeClaim.metadata.name ?? '', b.nodeClaim.metadata.name ?? ''),
  );
  for (const inf of sorted) {
    const cap = attempt(errors, `nodeclaim "${inf.nodeClaim.metadata.name ?? '?'}"`, () =>
      inFlightCapacity(inf, index),
    );
    if (cap) inflight.push(cap);
  }
  return { existing, inflight };
}

/** Builds the {@link RunState} of `input`. Never throws for bad objects: they become values in the state. */
export function prepareRun(input: SchedulingInput): RunState {
  const index = new ResourceIndex();
  for (const types of Object.values(input.instanceTypes))
    for (const t of types) index.register(t.allocatable);
  const poolErrors: string[] = [];
  const { dynamicPools, overheads } = preparePools(input, index, poolErrors);
  const { invalid, valid } = screenPods(input, index);
  const pools = buildPools(input, index, poolErrors, dynamicPools, overheads);
  const topology = new Topology(domainUniverse(input, pools), input.namespaces ?? {});
  const infoCache = new PodInfoCache(index, topology);
  const pods = valid.map(({ pod, rkey, ckey }) => infoCache.build(pod, rkey, ckey));
  const { existing, inflight } = prepareCapacity(input, index, poolErrors);
  countBoundPods(input, topology);
  let minCpu = Number.POSITIVE_INFINITY;
  let minMemory = Number.POSITIVE_INFINITY;
  for (const p of pods) {
    minCpu = Math.min(minCpu, p.vec[0]!);
    minMemory = Math.min(minMemory, p.vec[1]!);
  }
  return {
    index,
    pools,
    poolErrors,
    topology,
    pods,
    invalid,
    existing,
    inflight,
    allowPreferNoSchedule: pools.some((p) => p.taints.some((t) => t.effect === 'PreferNoSchedule')),
    consolidateAfterDestinations: input.consolidateAfterDestinations,
    minCpu,
    minMemory,
  };
}
