/**
 * Per-pod data the scheduler computes once (requests, host ports) and again after each relaxation
 * (requirements, topology groups). Internal to the scheduler; exported for its sibling modules and tests.
 */
import type { Container, Pod } from '../apis/core.ts';
import { LabelHostname } from '../apis/labels.ts';
import type { Resources } from '../apis/quantity.ts';
import { type HostPort, podHostPorts } from './hostports.ts';
import type { ResourceIndex } from './instancetypes.ts';
import { selectorMatches } from './labelselector.ts';
import { nodeAffinityRequirements, requiredAlternatives } from './nodeaffinity.ts';
import { type PodConstraints, podConstraints } from './preferences.ts';
import { Requirements } from './requirements.ts';
import { podRequests } from './resources.ts';
import { selectKeyOf, type Topology, type TopologyGroup } from './topology.ts';

/** A pod being scheduled, with cached derived data. */
export interface PodInfo {
  pod: Pod;
  /** `namespace/name`. */
  key: string;
  namespace: string;
  labels: Readonly<Record<string, string>>;
  /** See `topology.ts` `selectKeyOf`. */
  selectKey: string;
  requests: Resources;
  vec: Float64Array;
  hostPorts: HostPort[];
  /** Current (possibly relaxed) constraints. */
  constraints: PodConstraints;
  /** nodeSelector ∩ first required term ∩ heaviest preferred term. */
  requirements: Requirements;
  /** nodeSelector ∩ first required term. */
  strict: Requirements;
  /** nodeSelector ∩ each required term (spread node filter). */
  alternatives: Requirements[];
  /** Topology groups of the current constraints. */
  groups: TopologyGroup[];
  /** Inverse anti-affinity groups this pod owns (required anti-affinity terms). */
  inverse: TopologyGroup[];
  /**
   * True when the pod's own (required or preferred) pod anti-affinity on `kubernetes.io/hostname` selects the pod
   * itself: every such replica needs a node of its own, so the scheduler places these pods first and packs other
   * pods onto their nodes (see `scheduler.ts` `comparePods`).
   */
  ownNode: boolean;
  /**
   * True while `constraints` (and everything derived from it) is shared with the other pods of the same template
   * (copy before relaxing); then `template` identifies the template within the run.
   */
  shared?: boolean;
  template?: number;
}

/** `namespace/name` of a pod. */
export function podKey(pod: Pod): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? pod.metadata.generateName ?? '?'}`;
}

/**
 * Builds the info of a pod (constraints unrelaxed).
 * @throws RequirementError / QuantityParseError for malformed affinity or requests.
 */
export function buildPodInfo(pod: Pod, index: ResourceIndex, topology: Topology): PodInfo {
  const requests = podRequests(pod);
  const info: PodInfo = {
    pod,
    key: podKey(pod),
    namespace: pod.metadata.namespace ?? 'default',
    labels: pod.metadata.labels ?? {},
    selectKey: selectKeyOf({
      namespace: pod.metadata.namespace ?? 'default',
      labels: pod.metadata.labels ?? {},
    }),
    requests,
    vec: index.vector(requests),
    hostPorts: podHostPorts(pod),
    constraints: podConstraints(pod),
    requirements: new Requirements(),
    strict: new Requirements(),
    alternatives: requiredAlternatives(pod),
    groups: [],
    inverse: [],
    ownNode: needsOwnNode(pod),
  };
  refreshPodInfo(info, topology);
  return info;
}

/** See {@link PodInfo.ownNode}. */
export function needsOwnNode(pod: Pod): boolean {
  const anti = pod.spec.affinity?.podAntiAffinity;
  if (!anti) return false;
  const ns = pod.metadata.namespace ?? 'default';
  const labels = pod.metadata.labels ?? {};
  const terms = [
    ...(anti.requiredDuringSchedulingIgnoredDuringExecution ?? []),
    ...(anti.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((t) => t.podAffinityTerm),
  ];
  return terms.some(
    (t) =>
      t.topologyKey === LabelHostname &&
      !t.namespaceSelector &&
      (!t.namespaces?.length || t.namespaces.includes(ns)) &&
      selectorMatches(t.labelSelector, labels),
  );
}

/** Recomputes requirements and topology groups after the constraints changed. */
export function refreshPodInfo(info: PodInfo, topology: Topology): void {
  info.requirements = nodeAffinityRequirements(info.constraints.nodeAffinity);
  info.strict = nodeAffinityRequirements(info.constraints.nodeAffinity, true);
  info.groups = topology.ownedGroups(info, info.constraints, info.alternatives);
  info.inverse = topology.inverseGroups(info, info.constraints.podAntiAffinityRequired);
}

/** Restores the unrelaxed constraints. */
export function resetPodInfo(info: PodInfo, topology: Topology): void {
  info.constraints = podConstraints(info.pod);
  info.shared = false;
  refreshPodInfo(info, topology);
}

/**
 * The resource part of a pod's template: container and init-container resources, ports and restart policies,
 * overhead, host network (everything `podRequests` and `podHostPorts` read).
 */
export function resourceKey(pod: Pod): string {
  const spec = pod.spec;
  const slim = (c: Container) => [c.resources ?? null, c.ports ?? null, c.restartPolicy ?? null];
  return JSON.stringify([
    spec?.containers?.map(slim) ?? null,
    spec?.initContainers?.map(slim) ?? null,
    spec?.overhead ?? null,
    spec?.hostNetwork ?? null,
  ]);
}

/**
 * The constraint part of a pod's template: namespace, labels, node selector, affinity, tolerations, topology
 * spread (everything `podConstraints`, `requiredAlternatives`, topology groups and `needsOwnNode` read).
 */
export function constraintKey(pod: Pod): string {
  const spec = pod.spec;
  return JSON.stringify([
    pod.metadata.namespace ?? 'default',
    pod.metadata.labels ?? null,
    spec?.nodeSelector ?? null,
    spec?.affinity ?? null,
    spec?.tolerations ?? null,
    spec?.topologySpreadConstraints ?? null,
  ]);
}

type ResourcePart = Pick<PodInfo, 'requests' | 'vec' | 'hostPorts'>;
type ConstraintPart = Omit<PodInfo, 'pod' | 'key' | keyof ResourcePart>;

/**
 * Builds {@link PodInfo}s, computing requests once per distinct {@link resourceKey} and constraints,
 * requirements and topology groups once per distinct {@link constraintKey} (replicas of one Deployment share
 * both) instead of once per pod. The shared parts are read-only; a pod's `constraints` object is shared until
 * the scheduler relaxes it (it copies first, see `preferences.ts` `copyConstraints`).
 */
export class PodInfoCache {
  private readonly resources = new Map<string, ResourcePart>();
  private readonly constraints = new Map<string, ConstraintPart>();

  constructor(
    private readonly index: ResourceIndex,
    private readonly topology: Topology,
  ) {}

  /**
   * The info of `pod` (constraints unrelaxed); `template` of the result identifies its constraint part.
   * @throws RequirementError / QuantityParseError for malformed affinity or requests (as {@link buildPodInfo}).
   */
  build(pod: Pod, rkey: string = resourceKey(pod), ckey: string = constraintKey(pod)): PodInfo {
    let r = this.resources.get(rkey);
    if (!r) {
      const requests = podRequests(pod);
      r = { requests, vec: this.index.vector(requests), hostPorts: podHostPorts(pod) };
      this.resources.set(rkey, r);
    }
    let c = this.constraints.get(ckey);
    if (!c) {
      const namespace = pod.metadata.namespace ?? 'default';
      const labels = pod.metadata.labels ?? {};
      const info: PodInfo = {
        pod,
        key: '',
        namespace,
        labels,
        selectKey: selectKeyOf({ namespace, labels }),
        ...r,
        constraints: podConstraints(pod),
        requirements: new Requirements(),
        strict: new Requirements(),
        alternatives: requiredAlternatives(pod),
        groups: [],
        inverse: [],
        ownNode: needsOwnNode(pod),
      };
      refreshPodInfo(info, this.topology);
      const { pod: _p, key: _k, requests: _r, vec: _v, hostPorts: _h, ...rest } = info;
      c = { ...rest, shared: true, template: this.constraints.size };
      this.constraints.set(ckey, c);
    }
    // an explicit literal keeps one object shape for every PodInfo (spreads can produce slow dictionary objects)
    return {
      pod,
      key: podKey(pod),
      namespace: c.namespace,
      labels: c.labels,
      selectKey: c.selectKey,
      requests: r.requests,
      vec: r.vec,
      hostPorts: r.hostPorts,
      constraints: c.constraints,
      requirements: c.requirements,
      strict: c.strict,
      alternatives: c.alternatives,
      groups: c.groups,
      inverse: c.inverse,
      ownNode: c.ownNode,
      shared: true,
      template: c.template!,
    };
  }
}
