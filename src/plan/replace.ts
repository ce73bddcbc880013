/**
 * The replacements, wave by wave, as the disruption controller would launch them: the first step schedules the pods
 * pending today (and those of a deleted NodePool's nodes) with the first wave's drifted pods; each later step the
 * next wave's pods. Every step sees the nodes that stay (never a node that any wave removes, so no pod is moved
 * twice), with the pods earlier steps placed on them, and the NodeClaims earlier steps launched, as nodes of their
 * cheapest type. Each step is one `solve` of the scheduling core over the proposed NodePools.
 */
import type { Node, Pod } from '../apis/core.ts';
import { LabelCapacityType, LabelNodePool, LabelTopologyZone } from '../apis/labels.ts';
import { isReschedulable } from '../apis/pod.ts';
import { formatResources } from '../apis/quantity.ts';
import { solve } from '../scheduling/scheduler.ts';
import type { ExistingNode, NodeClaimPlan, Unschedulable } from '../scheduling/types.ts';
import { type BuiltInput, podKey } from '../simulate/input.ts';
import { unbound } from './merge.ts';

/** What {@link solveByWave} returns. */
export interface WaveSolution {
  /** Every NodeClaim launched, with the wave of the step that launched it (absent without waves). */
  claims: Array<{ plan: NodeClaimPlan; wave?: number }>;
  unschedulable: Unschedulable[];
  /** `namespace/name` of a moved pod → the node it runs on today. */
  origin: Map<string, string>;
}

const nameOf = (en: ExistingNode) => en.node.metadata.name ?? '';

/** `pod` bound to `node` (it counts against that node's capacity in later steps). */
function bound(pod: Pod, node: string): Pod {
  return { ...pod, spec: { ...pod.spec, nodeName: node } } as Pod;
}

/** A launched NodeClaim as a Node of its cheapest type, offering and NodePool template, with its pods. */
export function asExistingNode(plan: NodeClaimPlan, name: string, built: BuiltInput): ExistingNode {
  const { instanceType: it, offering } = plan.cheapest;
  const pool = built.input.nodePools.find((np) => np.metadata.name === plan.nodePool);
  const fromReqs: Record<string, string> = {};
  for (const r of plan.requirements)
    if (r.operator === 'In' && r.values?.length === 1) fromReqs[r.key] = r.values[0] as string;
  const alloc = formatResources(it.allocatable);
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        ...fromReqs,
        ...it.labels,
        ...(pool?.spec.template.metadata?.labels ?? {}),
        [LabelTopologyZone]: offering.zone,
        [LabelCapacityType]: offering.capacityType,
        [LabelNodePool]: plan.nodePool,
        'kubernetes.io/hostname': name,
      },
    },
    spec: { ...(pool?.spec.template.spec.taints ? { taints: pool.spec.template.spec.taints } : {}) },
    status: { allocatable: alloc, capacity: alloc },
  } as Node;
  return { node, pods: plan.pods.map((p) => bound(p, name)) };
}

/**
 * Solves the waves in order (see the module doc). `waves` lists the node names of each wave; `drifted` gives
 * the pods of a drifted node by name; `evicted` the pods of a deleted NodePool's nodes (already pending in
 * `built`) and their node.
 */
export function solveByWave(
  built: BuiltInput,
  waves: ReadonlyArray<{ wave: number; nodes: readonly string[] }>,
  podsOf: (node: string) => readonly Pod[] | undefined,
  evicted: ReadonlyMap<string, string>,
): WaveSolution {
  const origin = new Map(evicted);
  const gone = new Set(waves.flatMap((w) => w.nodes));
  const existing = built.input.existingNodes
    .filter((en) => !gone.has(nameOf(en)))
    .map((en) => ({ ...en, pods: [...en.pods] }));
  const claims: WaveSolution['claims'] = [];
  const unschedulable: Unschedulable[] = [];
  const steps = waves.length > 0 ? waves : [undefined];
  steps.forEach((w, i) => {
    const moved = (w?.nodes ?? []).flatMap((n) =>
      (podsOf(n) ?? []).filter(isReschedulable).map((p) => {
        origin.set(podKey(p), n);
        return unbound(p);
      }),
    );
    const pods = [...(i === 0 ? built.input.pods : []), ...moved];
    if (pods.length === 0) return;
    const result = solve({ ...built.input, existingNodes: existing, pods });
    unschedulable.push(...result.unschedulable);
    const byName = new Map(existing.map((en) => [nameOf(en), en]));
    for (const p of result.placements)
      if (p.target.kind === 'existing') byName.get(p.target.node)?.pods.push(bound(p.pod, p.target.node));
    result.newNodeClaims.forEach((plan, j) => {
      claims.push({ plan, ...(w ? { wave: w.wave } : {}) });
      existing.push(asExistingNode(plan, `plan-wave${w?.wave ?? 0}-${j + 1}`, built));
    });
  });
  return { claims, unschedulable, origin };
}
