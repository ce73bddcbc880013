/**
 * Daemon overhead: the requests of the DaemonSet pods that will run on every new node of a NodePool
 * (upstream `scheduler.go` `getDaemonOverhead` / `isDaemonPodCompatible`).
 *
 * A DaemonSet counts for a NodePool when its pod (template plus the DaemonSet controller's default tolerations)
 * - tolerates the NodePool's `taints` (startup taints are excluded, PreferNoSchedule ignored, as upstream), and
 * - has a node selector / required node affinity compatible with the NodePool's template requirements plus
 *   `karpenter.sh/registered=true` and `karpenter.sh/initialized=true`, which every launched node carries
 *   (any one of its ORed required terms suffices; preferred terms are ignored).
 */
import type { DaemonSet, Pod, Taint } from '../apis/core.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { LabelNodeInitialized, LabelNodeRegistered, WellKnownLabels } from '../apis/labels.ts';
import type { Resources } from '../apis/quantity.ts';
import { type HostPort, podHostPorts } from './hostports.ts';
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
