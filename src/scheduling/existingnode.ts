/**
 * Capacity that already exists or is already on its way: registered nodes and in-flight NodeClaims
 * (upstream `existingnode.go`). A pod fits when it tolerates the node's taints, its host ports are free, its
 * requirements are met by the node's labels, topology allows the node's domains, and its requests fit in
 * allocatable minus the requests of the pods already there (and of DaemonSet pods that will still start: the
 * shared DaemonSet placement rule of `predicates.ts` on the node's labels and its non-ephemeral, non-startup taints).
 */
import type { DaemonSet, Taint } from '../apis/core.ts';
import { LabelHostname, LabelNodeInitialized, LabelNodePool } from '../apis/labels.ts';
import { isTerminal } from '../apis/pod.ts';
import { parseResources } from '../apis/quantity.ts';
import { daemonSetPod } from './daemonoverhead.ts';
import { type HostPort, HostPortUsage, podHostPorts } from './hostports.ts';
import type { ResourceIndex } from './instancetypes.ts';
import type { Failure } from './nodeclaim.ts';
import { topoCode } from './nodeclaim.ts';
import type { PodInfo } from './podinfo.ts';
import { daemonSetNodeFit, nodeMatchesNodeAffinity, withoutEphemeralTaints } from './predicates.ts';
import { Requirement, Requirements } from './requirements.ts';
import { fits, formatRequests, podRequests } from './resources.ts';
import { firstUntoleratedTaint, formatTaint, WITH_PREFER } from './taints.ts';
import type { Topology } from './topology.ts';
import type { ExistingNode, InFlightNodeClaim } from './types.ts';

/** An existing node or in-flight NodeClaim as a place for pods. */
export class ExistingCapacity {
  readonly hostPorts = new HostPortUsage();
  readonly placed: PodInfo[] = [];

  constructor(
    readonly kind: 'existing' | 'inflight',
    readonly name: string,
    readonly hostname: string,
    readonly labels: Readonly<Record<string, string>>,
    readonly requirements: Requirements,
    readonly taints: readonly Taint[],
    /** Allocatable minus what is used/promised (internal units, dense). */
    readonly available: Float64Array,
    /** Why the node takes no pods at all (deleting, cordoned), or undefined. */
    readonly unusable: string | undefined,
    readonly initialized: boolean,
    /** In-flight NodeClaims must satisfy the pod wherever they land: requirements must be subsets. */
    readonly strict: boolean,
  ) {}

  /** `undefined` when the pod can be placed here; else the failure. */
  canAdd(pod: PodInfo, topology: Topology, index: ResourceIndex, explain: boolean): Failure | undefined {
    if (this.unusable) return { code: 'IncompatibleRequirements', message: this.unusable };
    const n = this.available.length;
    for (let i = 0; i < n; i++) {
      if (pod.vec[i]! > this.available[i]!) {
        return {
          code: 'NoInstanceTypeFits',
          message: explain
            ? `not enough resources: ${fits(pod.requests, index.resources(this.available)) ?? formatRequests(pod.requests)}`
            : 'not enough resources',
        };
      }
    }
    if (topology.hostnameBlocked(pod, pod.groups, this.hostname))
      return { code: 'TopologyUnsatisfiable', message: 'hostname topology forbids this node' };
    // Every taint counts as given (the ephemeral/startup ones of an uninitialized node were dropped already): a
    // node that no NodeClaim owns keeps `karpenter.sh/unregistered`, which kube-scheduler enforces too.
    const taint = firstUntoleratedTaint(pod.constraints.tolerations, this.taints, WITH_PREFER);
    if (taint) return { code: 'Untolerated', message: `did not tolerate taint ${formatTaint(taint)}` };
    if (pod.hostPorts.length) {
      const c = this.hostPorts.conflict(pod.hostPorts);
      if (c) return { code: 'IncompatibleRequirements', message: c };
    }
    const msg = this.strict
      ? strictlyCompatible(this.requirements, pod.requirements)
      : this.requirements.compatible(pod.requirements);
    if (msg) return { code: 'IncompatibleRequirements', message: msg };
    // node affinity matchFields (metadata.name) only a concrete node can answer
    if (!this.strict && hasMatchFields(pod) && !nodeMatchesNodeAffinity(pod.pod.spec, this.name, this.labels))
      return {
        code: 'IncompatibleRequirements',
        message: `node affinity matchFields does not select node "${this.name}"`,
      };
    const topo = topology.requirementsFor(
      pod,
      pod.groups,
      pod.strict,
      { kind: 'node', hostname: this.hostname, labels: this.labels },
      explain,
    );
    if (!topo.ok) return { code: topoCode(topo.reason), message: topo.reason };
    return undefined;
  }

  commit(pod: PodInfo, topology: Topology): void {
    for (let i = 0; i < this.available.length; i++) this.available[i]! -= pod.vec[i]!;
    if (pod.hostPorts.length) this.hostPorts.add(pod.hostPorts);
    this.placed.push(pod);
    topology.record(pod, pod.inverse, { kind: 'node', hostname: this.hostname, labels: this.labels });
  }
}

/** Every requirement of the pod must hold for ANY value the NodeClaim may still take (upstream `StrictlyCompatible`). */
function strictlyCompatible(node: Requirements, pod: Requirements): string | undefined {
  for (const r of pod.values()) {
    const cur = node.get(r.key);
    if (!cur) {
      if (r.allowsAbsent()) continue;
      return `label "${r.key}" is not guaranteed on this NodeClaim (required ${r.toString()})`;
    }
    if (!cur.subsetOf(r))
      return `key "${r.key}": NodeClaim allows ${cur.toString()}, pod requires ${r.toString()}`;
  }
  return undefined;
}

/**
 * Builds the capacity of an existing node: allocatable − requests of its non-terminal pods − requests of
 * compatible DaemonSets that have no pod there yet (unless `daemonSetPodsIncluded`).
 * @throws QuantityParseError for malformed quantities.
 */
export function existingNodeCapacity(
  en: ExistingNode,
  index: ResourceIndex,
  daemonSets: readonly DaemonSet[],
): ExistingCapacity {
  const node = en.node;
  const name = node.metadata.name ?? '?';
  const labels = node.metadata.labels ?? {};
  const managed = labels[LabelNodePool] !== undefined || en.nodeClaim !== undefined;
  const initialized = !managed || labels[LabelNodeInitialized] === 'true';
  const startup = new Set(
    initialized ? [] : (en.nodeClaim?.spec.startupTaints ?? []).map((t) => `${t.key}:${t.effect}`),
  );
  // Ephemeral and startup taints are assumed gone only on a managed node that is not initialized yet (upstream
  // StateNode.Taints): a node no NodeClaim owns (e.g. of a Cluster API Machine nobody claimed, still carrying
  // `karpenter.sh/unregistered`) is taken with its taints as they are, as kube-scheduler takes it (issue 29).
  const taints = (
    initialized ? [...(node.spec?.taints ?? [])] : withoutEphemeralTaints(node.spec?.taints)
  ).filter((t) => !startup.has(`${t.key}:${t.effect}`));
  const available = index.vector(parseResources(node.status?.allocatable));
  const ports: HostPort[] = [];
  const daemonsPresent = new Set<string>();
  for (const p of en.pods) {
    if (isTerminal(p)) continue;
    const r = index.vector(podRequests(p));
    for (let i = 0; i < available.length; i++) available[i]! -= r[i]!;
    ports.push(...podHostPorts(p));
    for (const o of p.metadata.ownerReferences ?? [])
      if (o.kind === 'DaemonSet') daemonsPresent.add(`${p.metadata.namespace ?? 'default'}/${o.name}`);
  }
  if (!en.daemonSetPodsIncluded) {
    const view = { name, labels, taints };
    for (const ds of daemonSets) {
      const key = `${ds.metadata.namespace ?? 'default'}/${ds.metadata.name ?? ''}`;
      if (daemonsPresent.has(key)) continue;
      const pod = daemonSetPod(ds);
      if (!daemonSetNodeFit(pod.spec, view).shouldRun) continue;
      const r = index.vector(podRequests(pod));
      for (let i = 0; i < available.length; i++) available[i]! -= r[i]!;
      ports.push(...podHostPorts(pod));
    }
  }
  const unusable = en.markedForDeletion
    ? 'node is marked for deletion'
    : node.spec?.unschedulable
      ? 'node is cordoned (spec.unschedulable)'
      : node.metadata.deletionTimestamp
        ? 'node is being deleted'
        : undefined;
  const cap = new ExistingCapacity(
    'existing',
    name,
    labels[LabelHostname] ?? name,
    labels,
    Requirements.fromLabels(labels),
    taints,
    available,
    unusable,
    initialized,
    false,
  );
  cap.hostPorts.add(ports);
  return cap;
}

/**
 * Builds the capacity of an in-flight NodeClaim: the per-resource minimum allocatable over its remaining
 * instance types (else `status.allocatable`) minus the requests already promised to it.
 * @throws RequirementError / QuantityParseError for malformed NodeClaims.
 */
export function inFlightCapacity(inf: InFlightNodeClaim, index: ResourceIndex): ExistingCapacity {
  const nc = inf.nodeClaim;
  const name = nc.metadata.name ?? '?';
  const reqs = Requirements.fromNodeSelector(nc.spec.requirements ?? []);
  for (const [k, v] of Object.entries(nc.metadata.labels ?? {})) reqs.add(Requirement.in(k, [v]));
  const labels = reqs.labels();
  let available: Float64Array;
  if (inf.instanceTypeOptions.length > 0) {
    available = index.vector(inf.instanceTypeOptions[0]!.allocatable);
    for (const it of inf.instanceTypeOptions.slice(1)) {
      const v = index.vector(it.allocatable);
      for (let i = 0; i < available.length; i++) available[i] = Math.min(available[i]!, v[i]!);
    }
  } else {
    available = index.vector(parseResources(nc.status?.allocatable));
  }
  const used = index.vector(inf.requests);
  for (let i = 0; i < available.length; i++) available[i]! -= used[i]!;
  const hostname = nc.status?.nodeName ?? name;
  return new ExistingCapacity(
    'inflight',
    name,
    hostname,
    { ...labels, [LabelHostname]: hostname },
    reqs,
    nc.spec.taints ?? [],
    available,
    nc.metadata.deletionTimestamp ? 'NodeClaim is being deleted' : undefined,
    false,
    true,
  );
}

/** True when one of the pod's required node-affinity terms has `matchFields`. */
function hasMatchFields(pod: PodInfo): boolean {
  return (
    pod.pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms?.some(
      (t) => (t.matchFields?.length ?? 0) > 0,
    ) ?? false
  );
}
