/**
 * Node/pod matching predicates: the ONE implementation of "does this pod (or DaemonSet) match this node" that
 * the scheduling core, the kube-scheduler stand-in (`sim/kubescheduler`), the DaemonSet controller stand-in
 * (`sim/workloads/daemonset.ts`) and `simulate` share. Pure and synchronous.
 *
 * - node selector terms with `matchExpressions` (In, NotIn, Exists, DoesNotExist, Gt, Lt and Karpenter's
 *   Gte/Lte) and `matchFields` (`metadata.name` In/NotIn), kube-scheduler `NodeAffinity` filter
 *   (k8s.io/component-helpers `nodeaffinity`). Label keys are normalised as the core's requirements do
 *   (`beta.kubernetes.io/arch` reads `kubernetes.io/arch`, upstream Karpenter `NormalizedLabels`); a malformed
 *   expression matches no node (the API server rejects it anyway);
 * - untolerated taints by effect (`taints.ts`), label selectors (`labelselector.ts`), selectors widened by
 *   `matchLabelKeys` / `mismatchLabelKeys` (kube-scheduler PodTopologySpread and InterPodAffinity);
 * - the node inclusion policies of a topology spread constraint (`nodeAffinityPolicy`, default Honor;
 *   `nodeTaintsPolicy`, default Ignore), kube-scheduler `podtopologyspread/common.go`;
 * - DaemonSet placement (kube-controller-manager `daemon.NodeShouldRunDaemonPod`): node selector and required
 *   node affinity, `NoSchedule`/`NoExecute` taints tolerated by the template's tolerations plus the defaults of
 *   `apis/daemonset.ts`; a running pod continues while its `NoExecute` taints are tolerated.
 */
import type {
  LabelSelector,
  LabelSelectorRequirement,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PodSpec,
  Taint,
  Toleration,
  TopologySpreadConstraint,
} from '../apis/core.ts';
import { daemonPodTolerations } from '../apis/daemonset.ts';
import { TaintCAPIUninitialized, TaintUnregistered } from '../apis/labels.ts';
import { Requirement, RequirementError } from './requirements.ts';
import { firstUntoleratedTaint, toleratesTaint } from './taints.ts';

export { selectorKey, selectorMatches } from './labelselector.ts';
export { firstUntoleratedTaint, HardTaintEffects, toleratesTaint } from './taints.ts';

/** A node as the predicates see it: its name (for `matchFields`), labels and taints. */
export interface NodeView {
  name: string;
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
}

/** Only `NoExecute` (what decides whether a running daemon pod may stay). */
export const NoExecuteEffect: ReadonlySet<string> = new Set(['NoExecute']);

/**
 * Taints that are transient on a starting or registering node and need no toleration from pods that will
 * run there once it is up (upstream pkg/scheduling/taints.go `KnownEphemeralTaints`, matched as corev1
 * `MatchTaint` does: on key and effect, the value ignored): `node.kubernetes.io/not-ready` NoSchedule and NoExecute,
 * `node.kubernetes.io/unreachable` NoSchedule, the cloud provider's uninitialized NoSchedule,
 * `karpenter.sh/unregistered` NoExecute; plus (capenter) Cluster API's `node.cluster.x-k8s.io/uninitialized`
 * NoSchedule (every CAPI-bootstrapped node registers with it; CAPI's Machine/MachinePool controllers remove it once
 * they have matched the node: a startup taint no NodePool declares, issue 29).
 */
export const KnownEphemeralTaints: ReadonlyArray<Pick<Taint, 'key' | 'effect'>> = [
  { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
  { key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' },
  TaintUnregistered,
  TaintCAPIUninitialized,
];

/**
 * Taint key prefixes of ephemeral taint families whose suffix a controller picks (upstream
 * `KnownEphemeralTaintKeyPrefixes`): the Node Readiness Controller's `readiness.k8s.io/<rule-name>`, any effect.
 */
export const EphemeralTaintKeyPrefixes: readonly string[] = ['readiness.k8s.io/'];

/**
 * Upstream `scheduling.IsKnownEphemeralTaint`: a taint of {@link KnownEphemeralTaints} (same key and effect) or
 * with a key of {@link EphemeralTaintKeyPrefixes}. Callers drop these only while a managed node is not initialized
 * (upstream pkg/controllers/state/statenode.go `Taints()`); an initialized node keeps them.
 */
export function isEphemeralTaint(t: Pick<Taint, 'key' | 'effect'>): boolean {
  return (
    KnownEphemeralTaints.some((k) => k.key === t.key && k.effect === t.effect) ||
    EphemeralTaintKeyPrefixes.some((p) => t.key.startsWith(p))
  );
}

/** `taints` without the ephemeral ones ({@link isEphemeralTaint}; a fresh array). */
export function withoutEphemeralTaints(taints: readonly Taint[] | undefined): Taint[] {
  return (taints ?? []).filter((t) => !isEphemeralTaint(t));
}

/** Parsed expressions per term object (terms of cached pods are never mutated). */
const termCache = new WeakMap<NodeSelectorTerm, Requirement[] | null>();

function termRequirements(term: NodeSelectorTerm): Requirement[] | null {
  let reqs = termCache.get(term);
  if (reqs !== undefined) return reqs;
  try {
    reqs = (term.matchExpressions ?? []).map((e) => Requirement.from(e));
  } catch (e) {
    if (!(e instanceof RequirementError)) throw e;
    reqs = null;
  }
  termCache.set(term, reqs);
  return reqs;
}

function fieldMatches(f: NodeSelectorRequirement, name: string): boolean {
  if (f.key !== 'metadata.name') return false;
  if (f.operator === 'In') return (f.values ?? []).includes(name);
  if (f.operator === 'NotIn') return !(f.values ?? []).includes(name);
  return false;
}

/**
 * True when a node named `name` with `labels` matches one node selector term: every `matchExpressions` entry
 * and every `matchFields` entry. An empty term (neither) matches nothing, as in kube-scheduler.
 */
export function nodeMatchesTerm(
  term: NodeSelectorTerm,
  name: string,
  labels: Readonly<Record<string, string>>,
): boolean {
  const fields = term.matchFields ?? [];
  const reqs = termRequirements(term);
  if (reqs === null || (reqs.length === 0 && fields.length === 0)) return false;
  for (const r of reqs) {
    const v = labels[r.key];
    if (v === undefined ? !r.allowsAbsent() : !r.has(v)) return false;
  }
  for (const f of fields) if (!fieldMatches(f, name)) return false;
  return true;
}

/**
 * kube-scheduler's NodeAffinity filter for a pod `spec`: every `nodeSelector` entry, and ANY of the required
 * node selector terms (none, or an empty list: any node). Preferred terms are not looked at.
 */
export function nodeMatchesNodeAffinity(
  spec: Pick<PodSpec, 'nodeSelector' | 'affinity'>,
  name: string,
  labels: Readonly<Record<string, string>>,
): boolean {
  const sel = spec.nodeSelector;
  if (sel) for (const k in sel) if (labels[k] !== sel[k]) return false;
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  for (const t of terms) if (nodeMatchesTerm(t, name, labels)) return true;
  return false;
}

/**
 * A label selector widened by the owner pod's labels: `key In [value]` for each `matchLabelKeys` key and
 * `key NotIn [value]` for each `mismatchLabelKeys` key the pod carries (kube-scheduler PodTopologySpread
 * `matchLabelKeys`, InterPodAffinity `matchLabelKeys`/`mismatchLabelKeys`). A nil selector stays nil (matches
 * nothing); the same object is returned when nothing is added.
 */
export function selectorWithLabelKeys(
  selector: LabelSelector | undefined,
  podLabels: Readonly<Record<string, string>>,
  matchLabelKeys: readonly string[] | undefined,
  mismatchLabelKeys?: readonly string[],
): LabelSelector | undefined {
  if (!selector) return undefined;
  const extra: LabelSelectorRequirement[] = [];
  for (const k of matchLabelKeys ?? []) {
    const v = podLabels[k];
    if (v !== undefined) extra.push({ key: k, operator: 'In', values: [v] });
  }
  for (const k of mismatchLabelKeys ?? []) {
    const v = podLabels[k];
    if (v !== undefined) extra.push({ key: k, operator: 'NotIn', values: [v] });
  }
  if (extra.length === 0) return selector;
  return { ...selector, matchExpressions: [...(selector.matchExpressions ?? []), ...extra] };
}

/**
 * True when `node` takes part in spread constraint `c` of a pod with `spec` (kube-scheduler's node inclusion
 * policies): with `nodeAffinityPolicy: Honor` (the default) the node must match the pod's node selector and
 * required node affinity; with `nodeTaintsPolicy: Honor` (default Ignore) the pod must tolerate the node's
 * `NoSchedule`/`NoExecute` taints. The topology key itself is checked by the caller.
 */
export function spreadCountsNode(
  c: Pick<TopologySpreadConstraint, 'nodeAffinityPolicy' | 'nodeTaintsPolicy'>,
  spec: Pick<PodSpec, 'nodeSelector' | 'affinity' | 'tolerations'>,
  node: NodeView,
): boolean {
  if ((c.nodeAffinityPolicy ?? 'Honor') === 'Honor' && !nodeMatchesNodeAffinity(spec, node.name, node.labels))
    return false;
  if (c.nodeTaintsPolicy === 'Honor' && firstUntoleratedTaint(spec.tolerations, node.taints)) return false;
  return true;
}

/**
 * The tolerations of a DaemonSet's pods: the template's own, then each default of `apis/daemonset.ts`
 * (network-unavailable for `hostNetwork` templates) that is not already there, as the DaemonSet controller's
 * `AddOrUpdateDaemonPodTolerations` does. A fresh array.
 */
export function daemonSetPodTolerations(
  template: Pick<PodSpec, 'tolerations' | 'hostNetwork'>,
): Toleration[] {
  const own = [...(template.tolerations ?? [])];
  const has = (t: Toleration) =>
    own.some(
      (o) =>
        o.key === t.key &&
        (o.operator ?? 'Equal') === (t.operator ?? 'Equal') &&
        (o.value ?? '') === (t.value ?? '') &&
        (o.effect ?? '') === (t.effect ?? '') &&
        o.tolerationSeconds === t.tolerationSeconds,
    );
  for (const t of daemonPodTolerations(template.hostNetwork === true)) if (!has(t)) own.push(t);
  return own;
}

/** Result of {@link daemonSetNodeFit}. */
export interface DaemonNodeFit {
  /** A daemon pod should be created on the node. */
  shouldRun: boolean;
  /** A daemon pod already on the node may stay. */
  shouldContinue: boolean;
}

/**
 * Whether a DaemonSet with pod template `template` should run a pod on `node` and whether a running one may
 * stay (kube-controller-manager `daemon.NodeShouldRunDaemonPod`): node selector and required node affinity
 * must match; `shouldRun` needs every `NoSchedule`/`NoExecute` taint tolerated, `shouldContinue` only the
 * `NoExecute` ones, by the template's tolerations plus the DaemonSet defaults ({@link daemonSetPodTolerations}).
 * Taints are taken as given (pass {@link withoutEphemeralTaints} to ask "once the node is up").
 */
export function daemonSetNodeFit(
  template: Pick<PodSpec, 'nodeSelector' | 'affinity' | 'tolerations' | 'hostNetwork'>,
  node: NodeView,
): DaemonNodeFit {
  if (!nodeMatchesNodeAffinity(template, node.name, node.labels))
    return { shouldRun: false, shouldContinue: false };
  const tolerations = daemonSetPodTolerations(template);
  const shouldContinue = !firstUntoleratedTaint(tolerations, node.taints, NoExecuteEffect);
  return { shouldRun: shouldContinue && !firstUntoleratedTaint(tolerations, node.taints), shouldContinue };
}

/** True when a toleration list tolerates the taint `key:effect` (no value), e.g. the unschedulable taint. */
export function toleratesKey(
  tolerations: readonly Toleration[] | undefined,
  key: string,
  effect: Taint['effect'],
): boolean {
  return tolerations?.some((t) => toleratesTaint(t, { key, effect })) ?? false;
}
