/**
 * kube-scheduler's queueing hints for Node events, pure and synchronous: an unschedulable pod goes back to the
 * active queue after a Node was added or changed only when a plugin that rejected it says the change may make it
 * schedulable (`framework.Queue`), otherwise it stays in the unschedulable pool (`QueueSkip`). Mirrors the
 * `isSchedulableAfterNodeChange` hints of the default plugins (kubernetes/pkg/scheduler/framework/plugins,
 * QueueingHints GA since v1.34):
 * - NodeUnschedulable: the node was unschedulable (or new) and is now schedulable for the pod;
 * - TaintToleration: the node had (or is new) and no longer has a NoSchedule/NoExecute taint the pod does not tolerate;
 * - NodeAffinity: the node matches the pod's required node affinity/selector and did not before (or is new);
 * - NodeResourcesFit: the pod fits the node's allocatable and the node is new or a requested resource grew;
 * - PodTopologySpread: the node has every topology key of the pod's constraints and is new, or one of those
 *   labels or its taints changed;
 * - NodePorts: the node is new; InterPodAffinity: the node is new or its labels changed.
 * A pod rejected by no known plugin (no nodes at all, volumes, scheduling gates) is always queued, as
 * kube-scheduler does for a pod without rejector plugins. Queueing too often is safe (one more attempt);
 * skipping is what saves a status write and an Event per pending pod per node event.
 * The node's taints are taken as the stand-in's filters see them (`buildNodeInfo`): a node that is not Ready
 * carries the node lifecycle controller's `node.kubernetes.io/not-ready:NoSchedule`.
 */
import type { Node, Pod, Taint } from '../../apis/core.ts';
import { parseResources, type Resources } from '../../apis/quantity.ts';
import { firstUntoleratedTaint, nodeMatchesNodeAffinity, toleratesKey } from '../../scheduling/predicates.ts';
import {
  DefaultMaxPods,
  insufficient,
  nodeIsReady,
  Reasons,
  safePodRequests,
  TaintNotReady,
  TaintUnschedulable,
} from './filters.ts';

/** The filter plugins whose rejections the stand-in reports (kube-scheduler's plugin names). */
export type FilterPlugin =
  | 'NodeUnschedulable'
  | 'TaintToleration'
  | 'NodeAffinity'
  | 'NodePorts'
  | 'NodeResourcesFit'
  | 'PodTopologySpread'
  | 'InterPodAffinity';

/** The plugin that reports `reason` (a string of `filters.ts` `Reasons`), undefined when unknown. */
export function pluginOfReason(reason: string): FilterPlugin | undefined {
  switch (reason) {
    case Reasons.unschedulable:
      return 'NodeUnschedulable';
    case Reasons.nodeAffinity:
      return 'NodeAffinity';
    case Reasons.ports:
      return 'NodePorts';
    case Reasons.tooManyPods:
      return 'NodeResourcesFit';
    case Reasons.spread:
    case Reasons.spreadMissingLabel:
      return 'PodTopologySpread';
    case Reasons.affinity:
    case Reasons.antiAffinity:
    case Reasons.existingAntiAffinity:
      return 'InterPodAffinity';
  }
  if (reason.startsWith('node(s) had untolerated taint')) return 'TaintToleration';
  if (reason.startsWith(insufficient(''))) return 'NodeResourcesFit';
  return undefined;
}

/**
 * The rejector plugins of a failed attempt from its reasons (reason → node count): undefined when some reason
 * is unknown or there were no reasons (the pod is then queued on every node event).
 */
export function rejectorPlugins(reasons: ReadonlyMap<string, number>): ReadonlySet<FilterPlugin> | undefined {
  if (reasons.size === 0) return undefined;
  const out = new Set<FilterPlugin>();
  for (const r of reasons.keys()) {
    const p = pluginOfReason(r);
    if (!p) return undefined;
    out.add(p);
  }
  return out;
}

/** Hard taints of a node as the filters see them (the virtual not-ready taint included). */
function hardTaints(node: Node): Taint[] {
  const taints = (node.spec?.taints ?? []).filter(
    (t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute',
  );
  if (!nodeIsReady(node) && !taints.some((t) => t.key === TaintNotReady && t.effect === 'NoSchedule'))
    taints.push({ key: TaintNotReady, effect: 'NoSchedule' });
  return taints;
}

function allocatable(node: Node): Resources {
  let a: Resources;
  try {
    a = parseResources(node.status?.allocatable ?? node.status?.capacity);
  } catch {
    a = {};
  }
  if (a.pods === undefined) a.pods = DefaultMaxPods;
  return a;
}

function fitsEmpty(req: Resources, alloc: Resources): boolean {
  if ((alloc.pods ?? 0) < 1) return false;
  for (const k of Object.keys(req)) {
    if (k === 'pods') continue;
    const need = req[k] ?? 0;
    if (need > 0 && need > (alloc[k] ?? 0)) return false;
  }
  return true;
}

function hint(plugin: FilterPlugin, pod: Pod, oldNode: Node | undefined, node: Node): boolean {
  const spec = pod.spec;
  switch (plugin) {
    case 'NodeUnschedulable': {
      const ok = (n: Node) =>
        !n.spec?.unschedulable || toleratesKey(spec.tolerations, TaintUnschedulable, 'NoSchedule');
      return ok(node) && (!oldNode || !ok(oldNode));
    }
    case 'TaintToleration': {
      const untolerated = (n: Node) => firstUntoleratedTaint(spec.tolerations, hardTaints(n)) !== undefined;
      return !untolerated(node) && (!oldNode || untolerated(oldNode));
    }
    case 'NodeAffinity': {
      const matches = (n: Node) =>
        nodeMatchesNodeAffinity(spec, n.metadata.name ?? '', n.metadata.labels ?? {});
      return matches(node) && (!oldNode || !matches(oldNode));
    }
    case 'NodeResourcesFit': {
      const req = safePodRequests(pod);
      const now = allocatable(node);
      if (!fitsEmpty(req, now)) return false;
      if (!oldNode) return true;
      const before = allocatable(oldNode);
      return Object.keys(req).some((k) => (now[k] ?? 0) > (before[k] ?? 0));
    }
    case 'PodTopologySpread': {
      const keys = (spec.topologySpreadConstraints ?? []).map((c) => c.topologyKey);
      const labels = node.metadata.labels ?? {};
      if (!keys.every((k) => labels[k] !== undefined)) return false;
      if (!oldNode) return true;
      const old = oldNode.metadata.labels ?? {};
      return (
        keys.some((k) => old[k] !== labels[k]) ||
        JSON.stringify(hardTaints(oldNode)) !== JSON.stringify(hardTaints(node))
      );
    }
    case 'NodePorts':
      return !oldNode;
    case 'InterPodAffinity':
      return !oldNode || JSON.stringify(oldNode.metadata.labels) !== JSON.stringify(node.metadata.labels);
  }
}

/**
 * Whether adding (`oldNode` undefined) or changing a Node may make `pod` schedulable, given the plugins that
 * rejected its last attempt (`rejectors` undefined: unknown, always true).
 */
export function nodeChangeMayHelp(
  pod: Pod,
  rejectors: ReadonlySet<FilterPlugin> | undefined,
  oldNode: Node | undefined,
  node: Node,
): boolean {
  if (!rejectors) return true;
  for (const p of rejectors) if (hint(p, pod, oldNode, node)) return true;
  return false;
}
