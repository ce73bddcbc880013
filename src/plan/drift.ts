/**
 * Which nodes the proposed objects drift, and why, with the controller's own rules: `disruption/drift-reason.ts`
 * `driftReason` (upstream `pkg/controllers/nodeclaim/disruption/drift.go`: a `Drifted` condition already set,
 * `NodePoolDrifted` from `karpenter.sh/nodepool-hash`, `RequirementsDrifted`, `InstanceTypeNotFound`) and the
 * providers' static NodeClass drift (`NodeClassDrift`: the EC2NodeClass or KWOKNodeClass hash stamped on the
 * NodeClaim differs from the proposed class's, as `CloudProvider.isDrifted` checks it), then the EC2NodeClass's
 * AMI, subnet, security-group and capacity-reservation drift (`AMIDrift`, `SubnetDrift`, `SecurityGroupDrift`,
 * `CapacityReservationDrift`), which need AWS: `aws.ts` evaluates them with the provider's rule and hands them in.
 *
 * A node whose NodeClaim is not in the cluster, carries no hash, or a hash of another version (older upstream or
 * capenter stamps, which the controllers re-stamp rather than drift) is compared as if stamped with the LIVE
 * NodePool's and NodeClass's hashes, so only what the proposal changes shows up. An EC2NodeClass is always compared
 * live against proposed (its hash includes the cluster CA bundle, which plan does not read).
 */
import type { KubeObject } from '../apis/core.ts';
import { NodePoolHashVersion, nodePoolHash } from '../apis/hash.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { EC2NodeClass, KWOKNodeClass, NodeClaim, NodePool } from '../apis/karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion, LabelInstanceType } from '../apis/labels.ts';
import type { SelectorDrift } from '../cloudprovider/aws/drift.ts';
import {
  AnnotationEC2NodeClassHash,
  AnnotationEC2NodeClassHashVersion,
  EC2NodeClassHashVersion,
  ec2NodeClassHash,
} from '../cloudprovider/aws/provider.ts';
import {
  AnnotationKwokNodeClassHash,
  AnnotationKwokNodeClassHashVersion,
  KwokNodeClassHashVersion,
  kwokNodeClassHash,
} from '../cloudprovider/kwok/provider.ts';
import { driftReason, requirementsDrift } from '../disruption/drift-reason.ts';
import type { DisruptionNode } from '../disruption/types.ts';

/** The live and proposed Karpenter objects by name. */
export interface PlanObjects {
  livePools: ReadonlyMap<string, NodePool>;
  proposedPools: ReadonlyMap<string, NodePool>;
  /** `Kind/name` → NodeClass (EC2NodeClass, KWOKNodeClass). */
  liveClasses: ReadonlyMap<string, KubeObject>;
  proposedClasses: ReadonlyMap<string, KubeObject>;
}

/** A node's AMI, subnet, security-group or capacity-reservation drift (`aws.ts`), with the EC2NodeClass it was judged against. */
export interface NodeSelectorDrift extends SelectorDrift {
  nodeClass: string;
}

/** A drifted node: the upstream reason and a sentence naming what changed. */
export interface NodeDrift {
  reason: string;
  detail: string;
  /**
   * For `AMIDrift`, `SubnetDrift`, `SecurityGroupDrift`, `CapacityReservationDrift`: the instance's IDs and the
   * planned class's, sorted.
   */
  selectors?: { current: string[]; resolved: string[] };
}

const SELECTOR_WORDS: Readonly<Record<string, [field: string, what: string]>> = {
  AMIDrift: ['amiSelectorTerms', 'image'],
  SubnetDrift: ['subnetSelectorTerms', 'subnet'],
  SecurityGroupDrift: ['securityGroupSelectorTerms', 'security groups'],
  CapacityReservationDrift: ['capacityReservationSelectorTerms', 'capacity reservation'],
};

/** The detail of an AMI, subnet or security-group drift, naming the old and new IDs. */
function selectorDetail(d: NodeSelectorDrift): string {
  const [field, what] = SELECTOR_WORDS[d.reason] ?? ['selector terms', 'resources'];
  const forType = d.reason === 'AMIDrift' ? ' for its instance type' : '';
  return `EC2NodeClass "${d.nodeClass}"'s ${field} resolve to ${d.resolved.join(', ') || 'nothing'}${forType}; the instance's ${what} ${d.current.join(', ')} ${d.reason === 'SecurityGroupDrift' ? 'differ' : 'is not among them'}`;
}

const HASHED_TEMPLATE_FIELDS: ReadonlyArray<[string, (p: NodePool) => unknown]> = [
  ['spec.template.metadata.labels', (p) => p.spec.template.metadata?.labels],
  ['spec.template.metadata.annotations', (p) => p.spec.template.metadata?.annotations],
  ['spec.template.spec.taints', (p) => p.spec.template.spec.taints],
  ['spec.template.spec.startupTaints', (p) => p.spec.template.spec.startupTaints],
  ['spec.template.spec.nodeClassRef', (p) => p.spec.template.spec.nodeClassRef],
  ['spec.template.spec.terminationGracePeriod', (p) => p.spec.template.spec.terminationGracePeriod],
  ['spec.template.spec.expireAfter', (p) => p.spec.template.spec.expireAfter],
];

/** The hashed template fields that differ between two NodePools (`nodePoolHash`'s inputs). */
function changedTemplateFields(live: NodePool | undefined, proposed: NodePool): string[] {
  if (!live) return [];
  return HASHED_TEMPLATE_FIELDS.filter(
    ([, get]) => JSON.stringify(get(live) ?? null) !== JSON.stringify(get(proposed) ?? null),
  ).map(([f]) => f);
}

/** The hash of a NodeClass under its provider's scheme, with the NodeClaim annotation names. */
function classHash(
  nc: KubeObject,
): { hash: string; annotation: string; versionAnnotation: string; version: string } | undefined {
  if (nc.kind === 'EC2NodeClass')
    return {
      // the cluster CA bundle is part of upstream's hash but not readable here: '' on both sides of the comparison
      hash: ec2NodeClassHash(nc as EC2NodeClass, ''),
      annotation: AnnotationEC2NodeClassHash,
      versionAnnotation: AnnotationEC2NodeClassHashVersion,
      version: EC2NodeClassHashVersion,
    };
  if (nc.kind === 'KWOKNodeClass')
    return {
      hash: kwokNodeClassHash(nc as KWOKNodeClass),
      annotation: AnnotationKwokNodeClassHash,
      versionAnnotation: AnnotationKwokNodeClassHashVersion,
      version: KwokNodeClassHashVersion,
    };
  return undefined;
}

/** `NodeClassDrift` detail when the proposed NodeClass's hash differs from the stamped (or live) one. */
function nodeClassDrift(claim: NodeClaim, objs: PlanObjects): string | undefined {
  const ref = claim.spec.nodeClassRef;
  const key = `${ref.kind}/${ref.name}`;
  const proposed = objs.proposedClasses.get(key);
  const live = objs.liveClasses.get(key);
  if (!proposed) return undefined;
  const now = classHash(proposed);
  if (!now) return undefined;
  const a = claim.metadata.annotations ?? {};
  // EC2NodeClass: its hash includes the CA bundle, which plan cannot read, so the live class (hashed the same way)
  // stands for what the NodeClaim was stamped with.
  const byLive = proposed.kind === 'EC2NodeClass' && live !== undefined;
  const stamped =
    !byLive && a[now.versionAnnotation] === now.version && a[now.annotation] !== undefined
      ? a[now.annotation]
      : live
        ? classHash(live)?.hash
        : undefined;
  if (stamped === undefined || stamped === now.hash) return undefined;
  const spec = (o: KubeObject | undefined) =>
    ((o as { spec?: Record<string, unknown> })?.spec ?? {}) as Record<string, unknown>;
  const fields = [...new Set([...Object.keys(spec(live)), ...Object.keys(spec(proposed))])]
    .filter((k) => JSON.stringify(spec(live)[k] ?? null) !== JSON.stringify(spec(proposed)[k] ?? null))
    .map((k) => `spec.${k}`);
  return `${ref.kind} "${ref.name}" changed${fields.length ? `: ${fields.join(', ')}` : ''} (its hash differs from the one stamped at launch)`;
}

/**
 * The NodeClaim to judge `dn` by: the live one when it carries a capenter NodePool hash, else a copy stamped with
 * the live NodePool's hash (see the module doc).
 */
export function claimForDrift(dn: DisruptionNode, livePool: NodePool | undefined): NodeClaim | undefined {
  const nc = dn.nodeClaim;
  if (!nc) return undefined;
  const a = nc.metadata.annotations ?? {};
  const ours =
    a[AnnotationNodePoolHash] !== undefined && a[AnnotationNodePoolHashVersion] === NodePoolHashVersion;
  if (ours || !livePool) return nc;
  const out = structuredClone(nc);
  out.metadata.annotations = {
    ...a,
    [AnnotationNodePoolHash]: nodePoolHash(livePool),
    [AnnotationNodePoolHashVersion]: NodePoolHashVersion,
  };
  return out;
}

/**
 * The drift of one managed node under the proposed NodePool `pool` (with its instance types `poolTypes`), or
 * undefined when it stays; `selector` is its AMI/subnet/security-group/capacity-reservation drift when `aws.ts` found one (it counts
 * after the static NodeClass hash, as upstream's order). Pure.
 */
export function nodeDrift(
  dn: DisruptionNode,
  pool: NodePool,
  poolTypes: readonly InstanceType[],
  objs: PlanObjects,
  selector?: NodeSelectorDrift,
): NodeDrift | undefined {
  const claim = claimForDrift(dn, objs.livePools.get(pool.metadata.name));
  const judged: DisruptionNode = { ...dn, ...(claim ? { nodeClaim: claim } : {}) };
  const typeName = dn.node.metadata.labels?.[LabelInstanceType];
  const it = poolTypes.find((t) => t.name === typeName);
  const classDetail = claim ? nodeClassDrift(claim, objs) : undefined;
  if (classDetail) judged.providerDrifted = 'NodeClassDrift';
  else if (selector) judged.providerDrifted = selector.reason;
  const reason = driftReason(judged, pool, poolTypes, it);
  if (!reason) return undefined;
  const name = pool.metadata.name;
  switch (reason) {
    case 'NodePoolDrifted': {
      const fields = changedTemplateFields(objs.livePools.get(name), pool);
      return {
        reason,
        detail: fields.length
          ? `NodePool "${name}" changed ${fields.join(', ')}`
          : `the NodeClaim's karpenter.sh/nodepool-hash differs from NodePool "${name}"'s`,
      };
    }
    case 'RequirementsDrifted': {
      const labels = { ...(it?.labels ?? {}), ...(claim?.metadata.labels ?? {}), ...dn.node.metadata.labels };
      const why = requirementsDrift(labels, pool) ?? 'a requirement is not satisfied';
      return { reason, detail: `the node no longer satisfies NodePool "${name}"'s requirements: ${why}` };
    }
    case 'InstanceTypeNotFound':
      return { reason, detail: `instance type ${typeName} is not among NodePool "${name}"'s instance types` };
    case 'NodeClassDrift':
      return { reason, detail: classDetail ?? 'the NodeClass changed' };
    case 'AMIDrift':
    case 'SubnetDrift':
    case 'SecurityGroupDrift':
    case 'CapacityReservationDrift':
      if (selector?.reason === reason)
        return {
          reason,
          detail: selectorDetail(selector),
          selectors: { current: selector.current, resolved: selector.resolved },
        };
      return { reason, detail: `the NodeClaim already has Drifted=True (${reason})` };
    default:
      return { reason, detail: `the NodeClaim already has Drifted=True (${reason})` };
  }
}
