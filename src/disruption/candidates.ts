/**
 * Builds the disruption view of a snapshot: one {@link Candidate} per managed node (label `karpenter.sh/nodepool`
 * with a NodeClaim and a known NodePool), with its price, pods, disruption cost, consolidatable state, drift
 * reason and — when it cannot be disrupted — why. Rules mirror upstream kubernetes-sigs/karpenter
 * `pkg/controllers/disruption/types.go` (`NewCandidate`), `pkg/controllers/state/statenode.go`
 * (`ValidateNodeDisruptable`, `ValidatePodsDisruptable`) and `pkg/controllers/nodeclaim/disruption/consolidation.go`
 * (the `Consolidatable` condition):
 * - not a candidate: not initialized, marked for deletion, nominated, node/NodeClaim annotated
 *   `karpenter.sh/do-not-disrupt: "true"` (only `"true"`: upstream takes durations on pods alone);
 * - pods block: an active pod whose `karpenter.sh/do-not-disrupt` protects it at `now` — `"true"`, or a Go
 *   duration not yet elapsed since its `status.startTime` (`apis/donotdisrupt.ts`; an invalid value is ignored, as
 *   upstream `IsDoNotDisruptActive`) — DaemonSet and static pods included, as upstream; or a PDB refusing eviction
 *   of an evictable pod (see `pdb.ts`);
 * - consolidatable: `consolidateAfter` (not `Never`) has elapsed since the NodeClaim's `status.lastPodEventTime`,
 *   else its `Initialized` condition's transition, else its creation; with no timestamp at all, only
 *   `consolidateAfter: 0s` qualifies (or a `Consolidatable=True` condition set by the controller).
 */
import type { Node, Pod } from '../apis/core.ts';
import { type DoNotDisruptState, doNotDisruptState, isDoNotDisruptActive } from '../apis/donotdisrupt.ts';
import { tryParseDuration } from '../apis/duration.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeClaim, NodePool } from '../apis/karpenter.ts';
import {
  AnnotationDoNotDisrupt,
  LabelCapacityType,
  LabelInstanceType,
  LabelNodeInitialized,
  LabelNodePool,
  LabelTopologyZone,
  TaintDisrupted,
} from '../apis/labels.ts';
import { isActive, isOwnedByNode, isReschedulable } from '../apis/pod.ts';

import type { PoolCounts } from './budgets.ts';
import { disruptionCost, parseTime, rescheduleDisruptionCost } from './cost.ts';
import { driftMemo, driftReason } from './drift-reason.ts';
import { pdbBlocks, type ResolvedPDB, resolvePDBs } from './pdb.ts';
import type { Candidate, DisruptionInput, DisruptionNode } from './types.ts';

/** `namespace/name`. */
export function podName(p: Pod): string {
  return `${p.metadata.namespace ?? 'default'}/${p.metadata.name ?? ''}`;
}

/** True when the node is being disrupted or deleted. */
export function nodeMarkedForDeletion(dn: DisruptionNode): boolean {
  return (
    dn.markedForDeletion === true ||
    !!dn.node.metadata.deletionTimestamp ||
    !!dn.nodeClaim?.metadata.deletionTimestamp ||
    (dn.node.spec?.taints ?? []).some(
      (t) => t.key === TaintDisrupted.key && t.effect === TaintDisrupted.effect,
    )
  );
}

/** Node condition Ready is True. */
export function nodeReady(node: Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function condition(nc: NodeClaim, type: string) {
  return (nc.status?.conditions ?? []).find((c) => c.type === type);
}

/** NodeClaim `Initialized=True`, or the node's `karpenter.sh/initialized: "true"` label. */
export function nodeInitialized(dn: DisruptionNode): boolean {
  if (dn.node.metadata.labels?.[LabelNodeInitialized] === 'true') return true;
  return dn.nodeClaim ? condition(dn.nodeClaim, 'Initialized')?.status === 'True' : false;
}

/** The cheapest offering price (USD/hour) of `it` in `zone` × `capacityType` (availability ignored, as upstream). */
export function offeringPrice(it: InstanceType, zone: string | undefined, capacityType: string | undefined) {
  let best: number | undefined;
  for (const o of it.offerings) {
    if (zone !== undefined && o.zone !== zone) continue;
    if (capacityType !== undefined && o.capacityType !== capacityType) continue;
    if (best === undefined || o.priceUSDPerHour < best) best = o.priceUSDPerHour;
  }
  return best;
}

/**
 * Whether `consolidateAfter` has elapsed for the NodeClaim (see the module doc), and why not. Never for a static
 * NodePool (`spec.replicas` set: upstream leaves `Consolidatable` unset, so emptiness and consolidation skip it).
 */
export function consolidatableState(
  nc: NodeClaim,
  node: Node,
  nodePool: NodePool,
  nowMs: number,
): { consolidatable: boolean; reason?: string } {
  // upstream nodeclaim/disruption/controller.go: NodeClaims of static NodePools are never marked consolidatable
  if (nodePool.spec.replicas !== undefined)
    return {
      consolidatable: false,
      reason: `NodePool "${nodePool.metadata.name}" is static (spec.replicas): its nodes are never consolidated`,
    };
  const after = nodePool.spec.disruption?.consolidateAfter ?? '0s';
  const d = tryParseDuration(after);
  if (!d.ok) return { consolidatable: false, reason: `consolidateAfter "${after}" is not a duration` };
  if (!Number.isFinite(d.seconds)) return { consolidatable: false, reason: 'consolidateAfter is Never' };
  const base =
    parseTime(nc.status?.lastPodEventTime) ??
    parseTime(condition(nc, 'Initialized')?.lastTransitionTime) ??
    parseTime(nc.metadata.creationTimestamp) ??
    parseTime(node.metadata.creationTimestamp);
  if (base === undefined) {
    if (d.seconds === 0 || condition(nc, 'Consolidatable')?.status === 'True')
      return { consolidatable: true };
    return {
      consolidatable: false,
      reason: `consolidateAfter ${after} has not elapsed (no pod event time known)`,
    };
  }
  const elapsed = (nowMs - base) / 1000;
  if (elapsed >= d.seconds) return { consolidatable: true };
  return {
    consolidatable: false,
    reason: `consolidateAfter ${after} has not elapsed since the last pod event (${Math.max(0, Math.floor(elapsed))}s ago)`,
  };
}

/**
 * Upstream v1.14 `IsUnderConsolidateAfter` (`pkg/utils/disruption/disruption.go`): true when the NodePool has a
 * positive `consolidateAfter` (not `Never`, not `0s`), the NodeClaim is `Initialized=True`, and less than
 * `consolidateAfter` has passed since its `status.lastPodEventTime` (else since its `Initialized` transition).
 * Such a node takes no pods moved by a consolidation (see `context.ts`). A timestamp that is missing or malformed
 * counts as long ago (upstream's zero time), so the node is not protected.
 */
export function underConsolidateAfter(
  nc: NodeClaim | undefined,
  nodePool: NodePool | undefined,
  nowMs: number,
) {
  if (!nc || !nodePool) return false;
  const d = tryParseDuration(nodePool.spec.disruption?.consolidateAfter ?? '0s');
  if (!d.ok || !Number.isFinite(d.seconds) || d.seconds === 0) return false;
  const init = condition(nc, 'Initialized');
  if (init?.status !== 'True') return false;
  const base = parseTime(nc.status?.lastPodEventTime) ?? parseTime(init.lastTransitionTime);
  if (base === undefined) return false;
  return (nowMs - base) / 1000 < d.seconds;
}

/** The disruption view of a snapshot. */
export interface ClusterView {
  /** Every managed node with a NodeClaim and a known NodePool, eligible or not, by node name. */
  candidates: Map<string, Candidate>;
  /** Nodes that are not candidates at all (unmanaged, no NodeClaim, unknown NodePool), with why. */
  notManaged: Map<string, string>;
  /** NodePool → managed initialized nodes and how many of them are already disrupting (for budgets). */
  poolCounts: Map<string, PoolCounts>;
  pdbs: ResolvedPDB[];
}

/** Builds the {@link ClusterView} of `input` (pure). */
export function buildClusterView(input: DisruptionInput): ClusterView {
  const pools = new Map(input.nodePools.map((np) => [np.metadata.name, np]));
  const allPods: Pod[] = [...(input.pendingPods ?? [])];
  for (const dn of input.nodes) allPods.push(...dn.pods);
  const pdbs = resolvePDBs(input.pdbs, allPods);
  const typeMaps = new Map<string, Map<string, InstanceType>>();
  const typesOf = (pool: string) => {
    let m = typeMaps.get(pool);
    if (!m) {
      m = new Map((input.instanceTypes[pool] ?? []).map((t) => [t.name, t]));
      typeMaps.set(pool, m);
    }
    return m;
  };

  const memo = driftMemo();
  const candidates = new Map<string, Candidate>();
  const notManaged = new Map<string, string>();
  const poolCounts = new Map<string, PoolCounts>();
  for (const dn of input.nodes) {
    const name = dn.node.metadata.name ?? '?';
    const labels = dn.node.metadata.labels ?? {};
    const poolName = labels[LabelNodePool];
    if (!poolName) {
      notManaged.set(name, 'not managed by Karpenter (no karpenter.sh/nodepool label)');
      continue;
    }
    const marked = nodeMarkedForDeletion(dn);
    const initialized = nodeInitialized(dn);
    if (initialized) {
      const c = poolCounts.get(poolName) ?? { nodes: 0, disrupting: 0 };
      c.nodes++;
      if (marked || !nodeReady(dn.node)) c.disrupting++;
      poolCounts.set(poolName, c);
    }
    if (!dn.nodeClaim) {
      notManaged.set(name, 'managed node without a NodeClaim');
      continue;
    }
    const nodePool = pools.get(poolName);
    if (!nodePool) {
      notManaged.set(name, `NodePool "${poolName}" not found`);
      continue;
    }
    const nc = dn.nodeClaim;
    const typeName = labels[LabelInstanceType] ?? nc.metadata.labels?.[LabelInstanceType];
    const instanceType = typeName ? typesOf(poolName).get(typeName) : undefined;
    const zone = labels[LabelTopologyZone] ?? nc.metadata.labels?.[LabelTopologyZone];
    const capacityType = labels[LabelCapacityType] ?? nc.metadata.labels?.[LabelCapacityType];
    const price = instanceType ? offeringPrice(instanceType, zone, capacityType) : undefined;
    const reschedulablePods = dn.pods.filter(isReschedulable);
    const created = parseTime(nc.metadata.creationTimestamp) ?? parseTime(dn.node.metadata.creationTimestamp);
    const cost = disruptionCost(
      reschedulablePods,
      nc.spec.expireAfter ?? nodePool.spec.template.spec.expireAfter,
      created,
      input.now,
    );
    const cons = consolidatableState(nc, dn.node, nodePool, input.now);

    let ineligible: string | undefined;
    if (marked) ineligible = 'node is being disrupted or deleted';
    else if (!initialized) ineligible = 'node is not initialized';
    else if (dn.nominated) ineligible = 'node is nominated for pending pods';
    else if (
      dn.node.metadata.annotations?.[AnnotationDoNotDisrupt] === 'true' ||
      nc.metadata.annotations?.[AnnotationDoNotDisrupt] === 'true'
    )
      ineligible = 'node is annotated karpenter.sh/do-not-disrupt';

    let podsBlock: string | undefined;
    for (const p of dn.pods) {
      if (isActive(p) && isDoNotDisruptActive(p, input.now)) {
        podsBlock = doNotDisruptBlock(p, input.now);
        break;
      }
    }
    if (!podsBlock) {
      for (const p of dn.pods) {
        if (!isActive(p) || isOwnedByNode(p)) continue;
        const b = pdbBlocks(p, pdbs);
        if (b) {
          podsBlock = b;
          break;
        }
      }
    }
    const c: Candidate = {
      name,
      node: dn.node,
      nodeClaim: nc,
      nodePool,
      pods: dn.pods,
      reschedulablePods,
      disruptionCost: cost,
      rescheduleDisruptionCost: rescheduleDisruptionCost(reschedulablePods),
      consolidatable: cons.consolidatable,
      initialized,
      markedForDeletion: marked,
    };
    if (instanceType) c.instanceType = instanceType;
    if (zone !== undefined) c.zone = zone;
    if (capacityType !== undefined) c.capacityType = capacityType;
    if (price !== undefined) c.priceUSDPerHour = price;
    if (cons.reason) c.notConsolidatableReason = cons.reason;
    if (ineligible) c.ineligible = ineligible;
    if (podsBlock) c.podsBlock = podsBlock;
    const drift = driftReason(dn, nodePool, input.instanceTypes[poolName], instanceType, memo);
    if (drift) c.driftReason = drift;
    candidates.set(name, c);
  }
  return { candidates, notManaged, poolCounts, pdbs };
}

/**
 * The pod `karpenter.sh/do-not-disrupt` readings the candidate check makes at `now` (ms since the epoch), for the
 * controller to publish upstream's Events (`DoNotDisruptUntil`, `DoNotDisruptGracePeriodElapsed`,
 * `InvalidDoNotDisruptAnnotation`; see `apis/donotdisrupt.ts`). Mirrors where upstream's
 * `StateNode.ValidatePodsDisruptable` calls `IsDisruptable` with its recorder: only for candidates that passed the
 * node checks (no `ineligible`), over their active pods in order, stopping at the first protected pod. Pods without
 * the annotation are left out. Pure.
 */
export function doNotDisruptReadings(
  candidates: Iterable<Candidate>,
  now: number,
): Array<{ pod: Pod; state: DoNotDisruptState }> {
  const out: Array<{ pod: Pod; state: DoNotDisruptState }> = [];
  for (const c of candidates) {
    if (c.ineligible) continue;
    for (const p of c.pods) {
      if (!isActive(p)) continue;
      const state = doNotDisruptState(p, now);
      if (state.state !== 'none') out.push({ pod: p, state });
      if (state.state === 'active') break;
    }
  }
  return out;
}

/**
 * The blocked reason of a pod protected by `karpenter.sh/do-not-disrupt` at `now`: `pod ns/name is annotated
 * karpenter.sh/do-not-disrupt`, plus the value and the end of the protection for a duration
 * (`: "1h" until 2026-01-01T00:30:00Z`, or `: "1h" (no status.startTime)`).
 */
export function doNotDisruptBlock(p: Pod, now: number): string {
  const base = `pod ${podName(p)} is annotated karpenter.sh/do-not-disrupt`;
  const s = doNotDisruptState(p, now);
  if (s.state !== 'active' || s.value === 'true') return base;
  if (s.untilMs === undefined) return `${base}: "${s.value}" (no status.startTime)`;
  return `${base}: "${s.value}" until ${new Date(s.untilMs).toISOString().replace('.000Z', 'Z')}`;
}

/** Sorts candidates by disruption cost ascending, ties by name (upstream sorts by cost only). */
export function byDisruptionCost(a: Candidate, b: Candidate): number {
  return a.disruptionCost - b.disruptionCost || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
