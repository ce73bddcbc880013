/**
 * Taints that leave nodes hanging or let pods land too early:
 * - `MissingRegistrationTaint`: a node must register with `karpenter.sh/unregistered:NoExecute` so no pod
 *   lands before Karpenter has synced the NodeClaim's labels and taints onto it (upstream v1 contract).
 *   Karpenter's own user data adds it for the AL2/AL2023/Bottlerocket/Windows families; with
 *   `amiFamily: Custom` the user data must, and on Cluster API the bootstrap config of a MachinePool that a
 *   KarpenterMachinePool serves must (CABPK `joinConfiguration.nodeRegistration.taints`).
 * - `UndeclaredStartupTaint`: agents that taint a node until they run (Cilium, the EBS/EFS CSI node
 *   plugins) must be declared as NodePool `startupTaints`; otherwise Karpenter's simulation thinks pods can't
 *   land on the new node and launches more (upstream "startupTaints" documentation). Found from the agents'
 *   DaemonSets and from taints seen on capenter's nodes.
 * - `UninitializedTaintStuck`: Cluster API's `node.cluster.x-k8s.io/uninitialized` taint still on a node
 *   after 5 minutes (CAPI removes it only for nodes whose provider ID its MachinePool lists).
 */
import type { DaemonSet, KubeObject, Taint } from '../../apis/core.ts';
import { LabelNodePool, TaintCAPIUninitialized, TaintUnregistered } from '../../apis/labels.ts';
import { ageSeconds, type Check, type Finding, ref } from '../types.ts';

/** Startup taints of well-known node agents, and how to recognise the agent's DaemonSet by its image. */
export const AGENT_STARTUP_TAINTS: ReadonlyArray<{ agent: string; taint: Taint; image: RegExp }> = [
  {
    agent: 'Cilium',
    taint: { key: 'node.cilium.io/agent-not-ready', effect: 'NoSchedule' },
    image: /cilium\/cilium/,
  },
  {
    agent: 'AWS EBS CSI driver',
    taint: { key: 'ebs.csi.aws.com/agent-not-ready', effect: 'NoExecute' },
    image: /aws-ebs-csi-driver/,
  },
  {
    agent: 'AWS EFS CSI driver',
    taint: { key: 'efs.csi.aws.com/agent-not-ready', effect: 'NoExecute' },
    image: /aws-efs-csi-driver/,
  },
];

/** Taint key prefixes that Kubernetes, cloud controllers, CAPI and Karpenter manage (never "undeclared"). */
const MANAGED_TAINT_PREFIXES = [
  'node.kubernetes.io/',
  'node.cloudprovider.kubernetes.io/',
  'node-role.kubernetes.io/',
  'karpenter.sh/',
  'node.cluster.x-k8s.io/',
  'ToBeDeletedByClusterAutoscaler',
  'DeletionCandidateOfClusterAutoscaler',
];

/** Seconds after which `node.cluster.x-k8s.io/uninitialized` counts as stuck. */
export const UNINITIALIZED_STUCK_SECONDS = 300;

function hasUnregistered(taints: readonly Taint[] | undefined): boolean {
  return (taints ?? []).some((t) => t.key === TaintUnregistered.key && t.effect === TaintUnregistered.effect);
}

function nested(obj: unknown, ...path: string[]): unknown {
  let cur = obj;
  for (const p of path)
    cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

/** The `MissingRegistrationTaint` check. */
export const registrationTaintCheck: Check = (s) => {
  const out: Finding[] = [];
  const why =
    'Without karpenter.sh/unregistered:NoExecute a node accepts pods before Karpenter has applied the NodeClaim’s labels and taints, so pods can land on a node that should repel them.';
  for (const nc of s.ec2NodeClasses) {
    const spec = nc.spec ?? {};
    const aliased = (spec.amiSelectorTerms ?? []).some(
      (t) => typeof (t as { alias?: string }).alias === 'string',
    );
    const custom = spec.amiFamily === 'Custom' || (!aliased && spec.amiFamily === undefined);
    if (!custom || (spec.userData ?? '').includes(TaintUnregistered.key)) continue;
    out.push({
      check: 'MissingRegistrationTaint',
      severity: 'warning',
      objects: [ref({ ...nc, kind: 'EC2NodeClass' })],
      message:
        'amiFamily Custom: spec.userData does not register the node with karpenter.sh/unregistered:NoExecute',
      why,
      fix: 'Add --register-with-taints=karpenter.sh/unregistered:NoExecute to the kubelet arguments in spec.userData (or the registerWithTaints field of your bootstrap format).',
    });
  }
  // Cluster API: bootstrap configs of MachinePools served by a KarpenterMachinePool.
  for (const mp of s.machinePools) {
    const infraKind = nested(mp, 'spec', 'template', 'spec', 'infrastructureRef', 'kind');
    if (infraKind !== 'KarpenterMachinePool') continue;
    const cfgRef = nested(mp, 'spec', 'template', 'spec', 'bootstrap', 'configRef') as
      | { kind?: string; name?: string }
      | undefined;
    if (!cfgRef?.name) continue;
    const ns = mp.metadata?.namespace;
    const pool: KubeObject[] =
      cfgRef.kind === 'KubeadmConfigTemplate' ? s.kubeadmConfigTemplates : s.kubeadmConfigs;
    const cfg = pool.find((c) => c.metadata?.name === cfgRef.name && c.metadata?.namespace === ns);
    if (!cfg) continue;
    const spec =
      cfgRef.kind === 'KubeadmConfigTemplate' ? nested(cfg, 'spec', 'template', 'spec') : nested(cfg, 'spec');
    const taints = nested(spec, 'joinConfiguration', 'nodeRegistration', 'taints') as Taint[] | undefined;
    if (hasUnregistered(taints)) continue;
    out.push({
      check: 'MissingRegistrationTaint',
      severity: 'error',
      objects: [ref({ ...cfg, kind: cfgRef.kind ?? 'KubeadmConfig' }), ref({ ...mp, kind: 'MachinePool' })],
      message: `the bootstrap config of MachinePool ${mp.metadata?.name} (served by a KarpenterMachinePool) lacks the karpenter.sh/unregistered:NoExecute taint in joinConfiguration.nodeRegistration.taints`,
      why,
      fix: 'Add {key: karpenter.sh/unregistered, effect: NoExecute} to joinConfiguration.nodeRegistration.taints (keep node.cluster.x-k8s.io/uninitialized:NoSchedule there too).',
    });
  }
  return out;
};

/** The `UndeclaredStartupTaint` check. */
export const startupTaintCheck: Check = (s) => {
  const out: Finding[] = [];
  const declared = (poolName: string): Set<string> => {
    const np = s.nodePools.find((p) => p.metadata.name === poolName);
    const spec = np?.spec.template.spec;
    return new Set([...(spec?.startupTaints ?? []), ...(spec?.taints ?? [])].map((t) => t.key));
  };
  // 1. Agents running as DaemonSets whose taint a NodePool does not declare.
  for (const a of AGENT_STARTUP_TAINTS) {
    const ds = (s.daemonSets as DaemonSet[]).find((d) =>
      (d.spec?.template?.spec?.containers ?? []).some((c) => a.image.test(c.image ?? '')),
    );
    if (!ds) continue;
    const missing = s.nodePools.filter((p) => !declared(p.metadata.name).has(a.taint.key));
    if (missing.length === 0) continue;
    out.push({
      check: 'UndeclaredStartupTaint',
      severity: 'warning',
      objects: [ref({ ...ds, kind: 'DaemonSet' }), ...missing.map((p) => `NodePool ${p.metadata.name}`)],
      message: `${a.agent} taints new nodes with ${a.taint.key}:${a.taint.effect} until it runs, and ${missing.length === 1 ? 'this NodePool does' : 'these NodePools do'} not declare it in spec.template.spec.startupTaints`,
      why: 'A taint Karpenter does not expect makes its simulation believe pending pods cannot land on the new node, so it launches more nodes than needed.',
      fix: `Add {key: ${a.taint.key}, effect: ${a.taint.effect}} to spec.template.spec.startupTaints of each NodePool.`,
    });
  }
  // 2. Taints seen on capenter's nodes that their NodePool does not declare.
  const seen = new Map<string, { taint: Taint; nodes: string[] }>();
  for (const n of s.nodes) {
    const pool = n.metadata.labels?.[LabelNodePool];
    if (!pool) continue;
    const decl = declared(pool);
    for (const t of n.spec?.taints ?? []) {
      if (decl.has(t.key) || MANAGED_TAINT_PREFIXES.some((p) => t.key.startsWith(p))) continue;
      if (
        AGENT_STARTUP_TAINTS.some((a) => a.taint.key === t.key) &&
        out.some((f) => f.message.includes(t.key))
      )
        continue;
      const k = `${pool}|${t.key}`;
      const e = seen.get(k) ?? { taint: t, nodes: [] };
      e.nodes.push(n.metadata.name ?? '');
      seen.set(k, e);
    }
  }
  for (const [k, e] of seen) {
    const pool = k.slice(0, k.indexOf('|'));
    out.push({
      check: 'UndeclaredStartupTaint',
      severity: 'warning',
      objects: [`NodePool ${pool}`, ...e.nodes.map((n) => `Node ${n}`)],
      message: `node${e.nodes.length === 1 ? '' : 's'} ${e.nodes.join(', ')} of NodePool ${pool} carr${e.nodes.length === 1 ? 'ies' : 'y'} ${e.taint.key}:${e.taint.effect}, which the NodePool declares neither as a taint nor as a startup taint`,
      why: 'A taint applied by an agent outside Karpenter makes its simulation think the node cannot take the pending pods, so it may launch duplicate nodes; if it is permanent, Karpenter’s view of the node is wrong.',
      fix: `If an agent removes it once ready, add {key: ${e.taint.key}, effect: ${e.taint.effect}} to the NodePool's spec.template.spec.startupTaints; if it stays, add it to spec.template.spec.taints.`,
    });
  }
  return out;
};

/** The `UninitializedTaintStuck` check. */
export const uninitializedTaintCheck: Check = (s) => {
  const out: Finding[] = [];
  for (const n of s.nodes) {
    if (!(n.spec?.taints ?? []).some((t) => t.key === TaintCAPIUninitialized.key)) continue;
    const age = ageSeconds(n, s.now);
    if (age < UNINITIALIZED_STUCK_SECONDS) continue;
    out.push({
      check: 'UninitializedTaintStuck',
      severity: 'error',
      objects: [ref({ ...n, kind: 'Node' })],
      message: `node.cluster.x-k8s.io/uninitialized is still on the node ${Math.round(age / 60)} minutes after it was created (limit ${UNINITIALIZED_STUCK_SECONDS / 60})`,
      why: 'Cluster API removes this taint only from nodes whose provider ID its MachinePool or Machine lists; a node outside that list stays unschedulable forever while it costs money (cluster-api#9858).',
      fix: 'Let capenter serve the pool as a KarpenterMachinePool (it reports provider IDs and removes the taint itself), or remove the taint: kubectl taint node NAME node.cluster.x-k8s.io/uninitialized-.',
    });
  }
  return out;
};
