/**
 * Why a NodeClaim is drifted (upstream kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/disruption/drift.go`),
 * checked in upstream's order:
 * 1. a `Drifted=True` condition already on the NodeClaim (its reason, default `Drifted`);
 * 2. `NodePoolDrifted`: the NodeClaim's `karpenter.sh/nodepool-hash` differs from the NodePool's current hash
 *    (`nodePoolHash()`), when both carry hash annotations of the same `karpenter.sh/nodepool-hash-version`;
 * 3. `RequirementsDrifted`: the node's labels (its instance type's labels, then the NodeClaim's, then the Node's)
 *    no longer satisfy every NodePool requirement (strictly: a missing label fails unless the operator allows
 *    absence);
 * 4. `InstanceTypeNotFound`: the node's instance type is not among the NodePool's instance types (or has no
 *    offerings);
 * 5. the provider's reason (`CloudProvider.isDrifted`), passed in as `providerDrifted`.
 */

import { NodePoolHashVersion, nodePoolHash } from '../apis/hash.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { AnnotationNodePoolHash, AnnotationNodePoolHashVersion, LabelInstanceType } from '../apis/labels.ts';
import { Requirements } from '../scheduling/requirements.ts';
import type { DisruptionNode } from './types.ts';

/** Per-pass memo of NodePool hashes and parsed requirements (both are pure functions of the NodePool). */
export interface DriftMemo {
  hash: Map<NodePool, string>;
  requirements: Map<NodePool, Requirements | null>;
}

/** A fresh {@link DriftMemo}. */
export function driftMemo(): DriftMemo {
  return { hash: new Map(), requirements: new Map() };
}

/** Static (hash) drift: `NodePoolDrifted` or undefined (see the module doc, step 2). */
export function staticDrift(
  dn: DisruptionNode,
  nodePool: NodePool,
  memo: DriftMemo = driftMemo(),
): string | undefined {
  const a = dn.nodeClaim?.metadata.annotations ?? {};
  const claimHash = a[AnnotationNodePoolHash];
  const claimVersion = a[AnnotationNodePoolHashVersion];
  if (claimHash === undefined || claimVersion === undefined) return undefined;
  const pa = nodePool.metadata.annotations ?? {};
  const poolVersion = pa[AnnotationNodePoolHashVersion] ?? NodePoolHashVersion;
  if (poolVersion !== claimVersion) return undefined;
  let current = memo.hash.get(nodePool);
  if (current === undefined && poolVersion === NodePoolHashVersion) {
    current = nodePoolHash(nodePool);
    memo.hash.set(nodePool, current);
  }
  const poolHash = poolVersion === NodePoolHashVersion ? current : pa[AnnotationNodePoolHash];
  if (poolHash === undefined) return undefined;
  return poolHash !== claimHash ? 'NodePoolDrifted' : undefined;
}

/** Requirement drift: the first unsatisfied requirement as a message, or undefined. */
export function requirementsDrift(
  labels: Readonly<Record<string, string>>,
  nodePool: NodePool,
  memo: DriftMemo = driftMemo(),
): string | undefined {
  let reqs = memo.requirements.get(nodePool);
  if (reqs === undefined) {
    try {
      reqs = Requirements.fromNodeSelector(nodePool.spec.template.spec.requirements ?? []);
    } catch {
      reqs = null; // malformed requirements are reported by validation, not as drift
    }
    memo.requirements.set(nodePool, reqs);
  }
  if (reqs === null) return undefined;
  return Requirements.fromLabels(labels).compatible(reqs);
}

/** The drift reason of a managed node, or undefined when it matches its NodePool (see the module doc). */
export function driftReason(
  dn: DisruptionNode,
  nodePool: NodePool,
  poolTypes: readonly InstanceType[] | undefined,
  instanceType: InstanceType | undefined,
  memo: DriftMemo = driftMemo(),
): string | undefined {
  const nc = dn.nodeClaim;
  const cond = (nc?.status?.conditions ?? []).find((c) => c.type === 'Drifted');
  if (cond?.status === 'True') return cond.reason || 'Drifted';
  const s = staticDrift(dn, nodePool, memo);
  if (s) return s;
  const labels = {
    ...(instanceType?.labels ?? {}),
    ...(nc?.metadata.labels ?? {}),
    ...(dn.node.metadata.labels ?? {}),
  };
  if (requirementsDrift(labels, nodePool, memo)) return 'RequirementsDrifted';
  const typeName = labels[LabelInstanceType];
  if (poolTypes && (!instanceType || instanceType.offerings.length === 0) && typeName !== undefined)
    return 'InstanceTypeNotFound';
  if (dn.providerDrifted) return dn.providerDrifted;
  return undefined;
}
