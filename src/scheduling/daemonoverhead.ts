/**
 * Daemon overhead: the requests of the DaemonSet pods that will run on a new node of a NodePool, per instance type
 * ({@link daemonOverheadGroups}, upstream `scheduler.go` `buildDaemonOverheadGroups` / `isDaemonPodCompatible`)
 * or for the NodePool template alone ({@link daemonOverhead}, in-flight NodeClaims and resource registration).
 *
 * A DaemonSet counts for a NodePool when its pod (template plus the DaemonSet controller's default tolerations)
 * - tolerates the NodePool's `taints` (startup taints are excluded, PreferNoSchedule ignored, as upstream), and
 * - has a node selector / required node affinity compatible with the NodePool's template requirements plus
 *   `karpenter.sh/registered=true` and `karpenter.sh/initialized=true`, which every launched node carries
 *   (any one of its ORed required terms suffices; preferred terms are ignored).
 */
import type { DaemonSet, Pod, Taint } from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelNodeInitialized, LabelNodeRegistered, WellKnownLabels } from '../apis/labels.ts';
import type { Resources } from '../apis/quantity.ts';
import { type HostPort, podHostPorts } from './hostports.ts';
import { instanceTypeIncompatibility } from './instancetypes.ts';
import { requiredAlternatives } from './nodeaffinity.ts';
import { nodeClaimTemplateRequirements, nodePoolTaints } from './nodeclaimtemplate.ts';
import { daemonSetPodTolerations } from './predicates.ts';
import { Requirement, type Requirements } from './requirements.ts';
import { addInto, podRequests } from './resources.ts';
import { untoleratedTaint } from './taints.ts';

/**
 * The pod a DaemonSet would create: template metadata and spec in the DaemonSet's namespace, with the
 * tolerations the DaemonSet controller adds to every daemon pod (`predicates.ts` `daemonSetPodTolerations`).
 */
export function daemonSetPod(ds: DaemonSet): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...(ds.spec.template.metadata ?? {}),
      name: `${ds.metadata.name ?? 'daemonset'}-daemon`,
      namespace: ds.metadata.namespace ?? 'default',
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          name: ds.metadata.name ?? '',
          uid: ds.metadata.uid ?? '',
          controller: true,
        },
      ],
    },
    spec: { ...ds.spec.template.spec, tolerations: daemonSetPodTolerations(ds.spec.template.spec) },
  };
}

/**
 * Why a daemon pod would NOT run on a node with `requirements` and `taints`, or `undefined` when it would.
 * With `strictLabels` (an existing node's labels) an undefined well-known label is not assumed to appear.
 * @throws RequirementError when the pod's node affinity is malformed.
 */
export function daemonIncompatibility(
  pod: Pod,
  requirements: Requirements,
  taints: readonly Taint[],
  strictLabels = false,
): string | undefined {
  const t = untoleratedTaint(pod.spec.tolerations, taints);
  if (t) return t;
  let first: string | undefined;
  for (const alt of requiredAlternatives(pod)) {
    const msg = requirements.compatible(alt, strictLabels ? undefined : WellKnownLabels);
    if (!msg) return undefined;
    first ??= msg;
  }
  return first;
}

/** Result of {@link daemonOverhead}. */
export interface DaemonOverhead {
  /** Summed requests (internal units, `pods` = number of daemon pods). */
  requests: Resources;
  /** `namespace/name` of each counted DaemonSet, sorted. */
  daemonSets: string[];
  /** Host ports the daemons bind on every new node. */
  hostPorts: HostPort[];
}

/**
 * The daemon overhead of a new node of `nodePool`.
 * @throws RequirementError / QuantityParseError for malformed NodePool requirements or DaemonSet requests.
 */
export function daemonOverhead(nodePool: NodePool, daemonSets: readonly DaemonSet[]): DaemonOverhead {
  const reqs = nodeClaimTemplateRequirements(nodePool)
    .add(Requirement.in(LabelNodeRegistered, ['true']))
    .add(Requirement.in(LabelNodeInitialized, ['true']));
  const taints = nodePoolTaints(nodePool);
  const out: DaemonOverhead = { requests: {}, daemonSets: [], hostPorts: [] };
  for (const ds of daemonSets) {
    const pod = daemonSetPod(ds);
    if (daemonIncompatibility(pod, reqs, taints)) continue;
    addInto(out.requests, podRequests(pod));
    out.daemonSets.push(`${pod.metadata.namespace}/${ds.metadata.name ?? ''}`);
    out.hostPorts.push(...podHostPorts(pod));
  }
  out.daemonSets.sort();
  return out;
}

/** Result of {@link daemonOverheadGroups}: the daemon overhead of each instance type of a NodePool. */
export interface DaemonOverheadGroups {
  /** One entry per distinct set of counted DaemonSets, in order of the first type that has it. */
  groups: DaemonOverhead[];
  /** The group of each instance type passed in (types with no counted DaemonSet map to an empty group). */
  byType: Map<InstanceType, DaemonOverhead>;
}

/** A DaemonSet that may run on new nodes of a NodePool, before the per-type check. */
interface DaemonCandidate {
  key: string;
  requests: Resources;
  hostPorts: HostPort[];
  /** Required-affinity alternatives compatible with the template; undefined when it runs on every type. */
  alternatives: Requirements[] | undefined;
}

/** The DaemonSets whose pods tolerate the NodePool's taints and match its template requirements. */
function daemonCandidates(
  nodePool: NodePool,
  daemonSets: readonly DaemonSet[],
  keys: ReadonlySet<string>,
): DaemonCandidate[] {
  const reqs = nodeClaimTemplateRequirements(nodePool)
    .add(Requirement.in(LabelNodeRegistered, ['true']))
    .add(Requirement.in(LabelNodeInitialized, ['true']));
  const taints = nodePoolTaints(nodePool);
  const out: DaemonCandidate[] = [];
  for (const ds of daemonSets) {
    const pod = daemonSetPod(ds);
    if (untoleratedTaint(pod.spec.tolerations, taints)) continue;
    const alts = requiredAlternatives(pod).filter((alt) => !reqs.compatible(alt, WellKnownLabels));
    if (alts.length === 0) continue;
    const everyType = alts.some((alt) => ![...alt.values()].some((r) => keys.has(r.key)));
    out.push({
      key: `${pod.metadata.namespace}/${ds.metadata.name ?? ''}`,
      requests: podRequests(pod),
      hostPorts: podHostPorts(pod),
      alternatives: everyType ? undefined : alts,
    });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * The daemon overhead of a new node of `nodePool` for each of `types` (upstream `scheduler.go`
 * `buildDaemonOverheadGroups` / `isDaemonPodCompatible`): a DaemonSet counts for a type when its pod tolerates the
 * NodePool's taints and one of its required node-affinity alternatives is compatible with the template
 * requirements (as {@link daemonOverhead}) AND with the type's own labels and offerings (upstream
 * `it.Requirements.Intersects`: a key the type defines must allow its value, a provider key it lacks must allow
 * absence, zone / capacity type must meet one available offering; keys the provider does not define are
 * ignored). A DaemonSet with an alternative on no provider key (`keys`) counts for every type without a per-type
 * check. Types with the same set of DaemonSets share one {@link DaemonOverhead} object.
 * @throws RequirementError / QuantityParseError for malformed NodePool requirements or DaemonSet requests.
 */
export function daemonOverheadGroups(
  nodePool: NodePool,
  types: readonly InstanceType[],
  keys: ReadonlySet<string>,
  daemonSets: readonly DaemonSet[],
): DaemonOverheadGroups {
  const candidates = daemonCandidates(nodePool, daemonSets, keys);
  const byKey = new Map<string, DaemonOverhead>();
  const out: DaemonOverheadGroups = { groups: [], byType: new Map() };
  for (const it of types) {
    const counted = candidates.filter(
      (c) => !c.alternatives || c.alternatives.some((alt) => !instanceTypeIncompatibility(it, alt, keys)),
    );
    const key = counted.map((c) => c.key).join(',');
    let group = byKey.get(key);
    if (!group) {
      group = { requests: {}, daemonSets: [], hostPorts: [] };
      for (const c of counted) {
        addInto(group.requests, c.requests);
        group.daemonSets.push(c.key);
        group.hostPorts.push(...c.hostPorts);
      }
      byKey.set(key, group);
      out.groups.push(group);
    }
    out.byType.set(it, group);
  }
  return out;
}
