/**
 * From cluster state to the pure scheduler's {@link SchedulingInput} (upstream kubernetes-sigs/karpenter
 * `provisioner.go` `Schedule`/`NewScheduler` and `GetPendingPods`):
 * - pods: pending provisionable pods ({@link provisionableReason}) plus the reschedulable pods of nodes marked
 *   for deletion that `karpenter.sh/do-not-disrupt` does not protect (upstream `IsCurrentlyReschedulable`), minus
 *   pods held by a nomination ({@link heldPods}: nominated to a NodeClaim that is not initialized yet);
 * - existing nodes: every StateNode with a Node, with its bound pods plus the held pods nominated onto it
 *   (their requests stay reserved until the NodeClaim initializes) plus the pods kube-scheduler nominated onto it
 *   by preemption (`status.nominatedNodeName`, not bound yet: they take its room once the victims are gone);
 * - in-flight NodeClaims (no Node yet, not marked for deletion), their instance-type options resolved from
 *   their `node.kubernetes.io/instance-type` label or requirement, their requests = daemon overhead of their
 *   NodePool + pods nominated onto them;
 * - NodePools that are usable ({@link nodePoolUsability}), their instance types, DaemonSets, usage, namespaces.
 * Pure functions over a {@link ClusterSnapshot}.
 */
import type { Node, Pod } from '../../apis/core.ts';
import { isDoNotDisruptActive } from '../../apis/donotdisrupt.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { LabelInstanceType, LabelNodePool } from '../../apis/labels.ts';
import { isActive, isReschedulable } from '../../apis/pod.ts';
import type { Resources } from '../../apis/quantity.ts';
import type { InstanceType, NodeClassKind } from '../../cloudprovider/types.ts';
import { daemonOverhead, daemonOverheadGroups } from '../../scheduling/daemonoverhead.ts';
import { providerKeys } from '../../scheduling/instancetypes.ts';
import { instanceTypeOptionsOf, usageByPool } from '../../scheduling/limits.ts';
import { addInto, podRequests } from '../../scheduling/resources.ts';
import type { ExistingNode, InFlightNodeClaim, SchedulingInput } from '../../scheduling/types.ts';
import { type ClusterSnapshot, conditionOf, nodeClassKey } from '../../state/cluster.ts';
import { podKey, provisionableReason } from '../../state/pods.ts';

/** A pod left out of scheduling, with why. */
export interface IgnoredPod {
  pod: Pod;
  reason: string;
}

/**
 * Why a provisionable pod is still not handed to the scheduler (upstream `Provisioner.Validate`), or
 * `undefined`: a pod requiring `karpenter.sh/nodepool DoesNotExist` never runs on a Karpenter node.
 */
export function validatePod(pod: Pod): string | undefined {
  const terms =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  const first = terms?.[0];
  if (first?.matchExpressions?.some((r) => r.key === LabelNodePool && r.operator === 'DoesNotExist'))
    return `configured to not run on a Karpenter provisioned node via the ${LabelNodePool} DoesNotExist requirement`;
  return undefined;
}

/**
 * Keys (`namespace/name`) of the pods a live nomination holds out of provisioning passes: those nominated to a
 * NodeClaim that is not initialized (its capacity is on the way; planning for them again would launch twice, and
 * kube-scheduler cannot bind them before it initializes). Upstream Karpenter re-simulates every pending pod in
 * every pass; so does capenter once the target is initialized (or is a Node): kube-scheduler binds pods where it
 * sees fit, not where they were planned, so a pod it left pending — the node filled with other pods, or a zonal
 * topology spread that kube-scheduler's placement of the others no longer allows there — is planned again at the
 * next pass, not when its nomination expires. Such a nomination still keeps disruption off its node.
 */
export function heldPods(snapshot: Pick<ClusterSnapshot, 'nominations' | 'stateNodes'>): Set<string> {
  const initialized = new Set<string>();
  for (const sn of snapshot.stateNodes)
    if (sn.nodeClaim && sn.initialized) initialized.add(sn.nodeClaim.metadata.name ?? '');
  const out = new Set<string>();
  for (const [key, n] of snapshot.nominations)
    if (n.target.kind === 'nodeclaim' && !initialized.has(n.target.name)) out.add(key);
  return out;
}

/** Result of {@link selectPods}. */
export interface SelectedPods {
  /** Pods to schedule: pending provisionable pods, then reschedulable pods of deleting nodes (unbound copies). */
  pods: Pod[];
  /** Pods of deleting nodes among `pods` (by key), for messages. */
  fromDeletingNodes: Set<string>;
  /** Pending pods left out (not provisionable, invalid) — without the nominated ones. */
  ignored: IgnoredPod[];
  /** Pending or reschedulable pods held out by a live nomination ({@link heldPods}). */
  nominated: Pod[];
  /**
   * How many of `ignored` are provisionable but fail validation (upstream `Provisioner.Validate` rejections:
   * what `karpenter_scheduler_ignored_pods_count` reports).
   */
  rejected: number;
}

/**
 * Selects the pods a provisioning pass schedules from `snapshot`; see the module comment. Pods of deleting
 * nodes are copied with `spec.nodeName` removed (the scheduler places unbound pods only).
 */
export function selectPods(snapshot: ClusterSnapshot): SelectedPods {
  const out: SelectedPods = {
    pods: [],
    fromDeletingNodes: new Set(),
    ignored: [],
    nominated: [],
    rejected: 0,
  };
  const held = heldPods(snapshot);
  for (const pod of snapshot.pods) {
    if (pod.spec?.nodeName) continue;
    const notProvisionable = provisionableReason(pod);
    const why = notProvisionable ?? validatePod(pod);
    if (why) {
      out.ignored.push({ pod, reason: why });
      if (!notProvisionable) out.rejected++;
      continue;
    }
    if (held.has(podKey(pod))) {
      out.nominated.push(pod);
      continue;
    }
    out.pods.push(pod);
  }
  for (const sn of snapshot.stateNodes) {
    if (!sn.markedForDeletion || !sn.node) continue;
    for (const pod of sn.pods) {
      // upstream IsCurrentlyReschedulable: a pod protected by do-not-disrupt will not be evicted, no capacity for it
      if (!isReschedulable(pod) || isDoNotDisruptActive(pod, snapshot.takenAt)) continue;
      if (held.has(podKey(pod))) {
        out.nominated.push(pod);
        continue;
      }
      const copy: Pod = { ...pod, spec: { ...pod.spec } };
      delete copy.spec.nodeName;
      out.pods.push(copy);
      out.fromDeletingNodes.add(podKey(pod));
    }
  }
  return out;
}

/** A NodePool provisioning may use, or why not. */
export type NodePoolUsability = { ok: true } | { ok: false; reason: string };

/**
 * Whether provisioning may launch from `nodePool` (upstream: the NodePool is not being deleted and its
 * `Ready` condition is True). A NodePool whose status has no `Ready` condition yet is accepted when its
 * NodeClass is present in `snapshot`, not being deleted and not `Ready=False` (so a NodePool provisions before
 * the NodePool status controller's first pass). Static NodePools (`spec.replicas`) and NodeClass kinds the
 * provider does not support are never used.
 */
export function nodePoolUsability(
  nodePool: NodePool,
  snapshot: ClusterSnapshot,
  supported: readonly NodeClassKind[],
): NodePoolUsability {
  if (nodePool.metadata.deletionTimestamp) return { ok: false, reason: 'NodePool is being deleted' };
  if (nodePool.spec.replicas !== undefined)
    return { ok: false, reason: 'static NodePool (spec.replicas) is not provisioned dynamically' };
  const ref = nodePool.spec.template?.spec?.nodeClassRef;
  if (!ref || !supported.some((k) => k.group === ref.group && k.kind === ref.kind))
    return {
      ok: false,
      reason: `spec.template.spec.nodeClassRef ${ref?.group ?? '?'}/${ref?.kind ?? '?'} is not supported by the cloud provider (supported: ${supported.map((k) => `${k.group}/${k.kind}`).join(', ') || 'none'})`,
    };
  const ready = conditionOf(nodePool, 'Ready');
  if (ready) {
    if (ready.status === 'True') return { ok: true };
    return {
      ok: false,
      reason: `NodePool Ready=${ready.status}${ready.reason ? ` (${ready.reason}${ready.message ? `: ${ready.message}` : ''})` : ''}`,
    };
  }
  const nc = snapshot.nodeClasses.find(
    (o) =>
      nodeClassKey({
        group: (o.apiVersion ?? '').split('/')[0] ?? '',
        kind: o.kind ?? '',
        name: o.metadata?.name ?? '',
      }) === nodeClassKey(ref),
  );
  if (!nc) return { ok: false, reason: `${ref.kind} "${ref.name}" not found` };
  if (nc.metadata?.deletionTimestamp)
    return { ok: false, reason: `${ref.kind} "${ref.name}" is being deleted` };
  const ncReady = conditionOf(nc, 'Ready');
  if (ncReady && ncReady.status !== 'True')
    return {
      ok: false,
      reason: `${ref.kind} "${ref.name}" Ready=${ncReady.status}${ncReady.reason ? ` (${ncReady.reason})` : ''}`,
    };
  return { ok: true };
}

/** Every instance type of `instanceTypes` by name; a NodePool's own list wins for `prefer`. */
export function instanceTypeIndex(
  instanceTypes: Readonly<Record<string, readonly InstanceType[]>>,
  prefer?: string,
): Map<string, InstanceType> {
  const out = new Map<string, InstanceType>();
  for (const [pool, types] of Object.entries(instanceTypes)) {
    if (pool === prefer) continue;
    for (const it of types) if (!out.has(it.name)) out.set(it.name, it);
  }
  if (prefer) for (const it of instanceTypes[prefer] ?? []) out.set(it.name, it);
  return out;
}

/** Options of {@link buildSchedulingInput}. */
export interface BuildInputArgs {
  snapshot: ClusterSnapshot;
  /** Pods to schedule (from {@link selectPods}). */
  pods: Pod[];
  /** Usable NodePools. */
  nodePools: NodePool[];
  /** Instance types by NodePool name (usable NodePools). */
  instanceTypes: Record<string, InstanceType[]>;
  explain?: boolean;
}

function safeRequests(pod: Pod): Resources {
  try {
    return podRequests(pod);
  } catch {
    return {};
  }
}

/** The in-flight instance-type options of a NodeClaim: its launched type when labelled, else its requirement. */
function inFlightOptions(nc: NodeClaim, instanceTypes: Record<string, InstanceType[]>): InstanceType[] {
  const index = instanceTypeIndex(instanceTypes, nc.metadata.labels?.[LabelNodePool]);
  const launched = nc.metadata.labels?.[LabelInstanceType];
  if (launched) {
    const it = index.get(launched);
    if (it) return [it];
  }
  return instanceTypeOptionsOf(nc, index);
}

/**
 * The daemon overhead reserved on an in-flight NodeClaim of `pool` (internal units): once its instance type is
 * known (one option), the DaemonSets that run on that type (`daemonOverheadGroups`, upstream
 * `buildDaemonOverheadGroups`); before, every DaemonSet the NodePool template allows (a fresh list; empty for a
 * malformed NodePool/DaemonSet, which the scheduler reports for new NodeClaims).
 */
function inFlightDaemonRequests(
  pool: NodePool,
  options: readonly InstanceType[],
  poolTypes: readonly InstanceType[],
  daemonSets: ClusterSnapshot['daemonSets'],
): Resources {
  try {
    if (options.length === 1) {
      const it = options[0]!;
      const g = daemonOverheadGroups(
        pool,
        [it],
        providerKeys(poolTypes.length ? poolTypes : [it]),
        daemonSets,
      );
      return { ...g.byType.get(it)?.requests };
    }
    return { ...daemonOverhead(pool, daemonSets).requests };
  } catch {
    return {};
  }
}

/** Builds the scheduler input; see the module comment. */
export function buildSchedulingInput(args: BuildInputArgs): SchedulingInput {
  const { snapshot, instanceTypes } = args;
  const nominatedTo = new Map<string, Pod[]>();
  const podByKey = new Map<string, Pod>();
  for (const p of snapshot.pods) podByKey.set(podKey(p), p);
  const held = heldPods(snapshot);
  for (const [key, n] of snapshot.nominations) {
    if (!held.has(key)) continue; // scheduled in this pass (or not provisionable): nothing to reserve
    const pod = podByKey.get(key);
    if (!pod || pod.spec?.nodeName) continue;
    const list = nominatedTo.get(n.target.name) ?? [];
    list.push(pod);
    nominatedTo.set(n.target.name, list);
  }
  // pods kube-scheduler nominated by preemption (`status.nominatedNodeName`) will take that node's room once
  // their victims are gone: they are held there, like Karpenter's own nominations
  for (const pod of snapshot.pods) {
    const target = pod.status?.nominatedNodeName;
    if (!target || pod.spec?.nodeName || !isActive(pod)) continue;
    if (snapshot.nominations.has(podKey(pod)) && held.has(podKey(pod))) continue; // already held above
    const list = nominatedTo.get(target) ?? [];
    list.push(pod);
    nominatedTo.set(target, list);
  }
  const poolsByName = new Map(snapshot.nodePools.map((np) => [np.metadata.name, np]));
  const existingNodes: ExistingNode[] = [];
  const inFlight: InFlightNodeClaim[] = [];
  for (const sn of snapshot.stateNodes) {
    const nominated = [
      ...(nominatedTo.get(sn.name) ?? []),
      ...(sn.nodeClaim && sn.nodeClaim.metadata.name !== sn.name
        ? (nominatedTo.get(sn.nodeClaim.metadata.name ?? '') ?? [])
        : []),
    ];
    if (sn.node) {
      const en: ExistingNode = { node: sn.node as Node, pods: [...sn.pods, ...nominated] };
      if (sn.nodeClaim) en.nodeClaim = sn.nodeClaim;
      if (sn.markedForDeletion) en.markedForDeletion = true;
      existingNodes.push(en);
      continue;
    }
    const nc = sn.nodeClaim;
    if (!nc || sn.markedForDeletion) continue;
    const poolName = nc.metadata.labels?.[LabelNodePool] ?? '';
    const options = inFlightOptions(nc, instanceTypes);
    const pool = poolsByName.get(poolName);
    const requests = pool
      ? inFlightDaemonRequests(pool, options, instanceTypes[poolName] ?? [], snapshot.daemonSets)
      : {};
    for (const p of [...sn.pods, ...nominated]) addInto(requests, safeRequests(p));
    inFlight.push({ nodeClaim: nc, nodePool: poolName, instanceTypeOptions: options, requests });
  }
  const allTypes = instanceTypeIndex(instanceTypes);
  return {
    pods: args.pods,
    existingNodes,
    inFlight,
    nodePools: args.nodePools,
    instanceTypes,
    daemonSets: snapshot.daemonSets,
    nodePoolUsage: usageByPool(snapshot.stateNodes, allTypes),
    namespaces: snapshot.namespaces,
    ...(snapshot.volumes ? { volumes: snapshot.volumes } : {}),
    explain: args.explain ?? false,
  };
}
