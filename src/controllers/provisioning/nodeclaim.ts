/**
 * Turning a scheduler {@link NodeClaimPlan} into the NodeClaim object provisioning creates (upstream
 * kubernetes-sigs/karpenter `scheduling/nodeclaimtemplate.go` `ToNodeClaim`). Pure functions. The NodePool-limits
 * arithmetic checked right before each create lives in `scheduling/limits.ts`.
 */
import type { NodeClaim, NodePool, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import {
  AnnotationCapacityOverlayApplied,
  AnnotationNodeClaimMinValuesRelaxed,
  AnnotationNodePoolHash,
  AnnotationNodePoolHashVersion,
  AnnotationPriceOverlayApplied,
  LabelHostname,
  LabelInstanceType,
  LabelNodeInitialized,
  LabelNodePool,
  LabelNodeRegistered,
  WellKnownLabels,
} from '../../apis/labels.ts';
import { formatResources } from '../../apis/quantity.ts';
import { MAX_INSTANCE_TYPES } from '../../scheduling/nodeclaim.ts';
import { isPriceOverlaid } from '../../scheduling/nodeoverlay.ts';
import { Requirements } from '../../scheduling/requirements.ts';
import type { NodeClaimPlan } from '../../scheduling/types.ts';
import { AnnotationNominatedPods } from '../../state/cluster.ts';
import { NodePoolHashVersion, nodePoolHash } from '../nodepool/hash.ts';

/** The NodePool hash stamped on NodeClaims (`karpenter.sh/nodepool-hash` and `-hash-version`). */
export interface NodePoolHash {
  hash: string;
  version: string;
}

/**
 * The NodePool hash as the NodePool controllers compute it (`controllers/nodepool/hash.ts` `nodePoolHash`,
 * version `NodePoolHashVersion`), so new NodeClaims are not seen as drifted.
 */
export function templateHash(nodePool: NodePool): NodePoolHash {
  return { hash: nodePoolHash(nodePool), version: NodePoolHashVersion };
}

/** Keys {@link resolveCustomLabelsFromRequirements} never turns into labels besides `WellKnownLabels`. */
const UnresolvedLabelKeys: ReadonlySet<string> = new Set([
  LabelHostname,
  LabelNodeRegistered,
  LabelNodeInitialized,
]);

/**
 * The concrete labels a NodeClaim gets at creation from its requirements (upstream kubernetes-sigs/karpenter
 * v1.14.1 `pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go` `resolveCustomLabelsFromRequirements` +
 * `pkg/scheduling/requirement.go` `Any`), keyed by label key. Requirements on the same key are intersected first.
 * Skipped: `WellKnownLabels` (the cloud provider resolves those at launch; launch.go `PopulateNodeClaimDetails`
 * lets them win), `kubernetes.io/hostname` (upstream `RestrictedLabels`) and `karpenter.sh/registered` /
 * `initialized` (upstream `schedulingSimulationKeys`). Value: `In` → one allowed value (capenter: the smallest, so
 * it is stable; upstream takes an arbitrary one); `NotIn` / `Exists` / `Gt` / `Lt` → a random integer within the
 * bounds (upstream `rand.Intn(max-min)+min`, min = lower bound or 0, max = upper bound or 2^53-1), drawn from
 * `random` (a `[0, 1)` source such as `Math.random`); `DoesNotExist` → no label.
 * @throws RequirementError (from `Requirements.fromNodeSelector`) for a malformed requirement.
 */
export function resolveCustomLabelsFromRequirements(
  requirements: readonly NodeSelectorRequirementWithMinValues[],
  random: () => number = Math.random,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of Requirements.fromNodeSelector(requirements).values()) {
    if (WellKnownLabels.has(r.key) || UnresolvedLabelKeys.has(r.key)) continue;
    const op = r.operator();
    if (op === 'In') {
      const v = r.any();
      if (v !== undefined) out[r.key] = v;
    } else if (op === 'NotIn' || op === 'Exists') {
      const min = r.greaterThan !== undefined ? r.greaterThan + 1 : 0;
      const max = r.lessThan ?? Number.MAX_SAFE_INTEGER;
      out[r.key] = String(min + Math.floor(random() * Math.max(0, max - min)));
    }
  }
  return out;
}

/**
 * The NodeClaim for a plan of `nodePool`:
 * - `metadata.generateName: <nodepool>-`; labels = template labels + `karpenter.sh/nodepool` + the custom labels
 *   the requirements resolve to ({@link resolveCustomLabelsFromRequirements}, drawn with `random`); annotations =
 *   template annotations + `karpenter.sh/nodepool-hash` / `-hash-version` + `karpenter.sh/nodeclaim-min-values-relaxed`
 *   (`"true"` when the plan's `minValues` were relaxed, else `"false"`, as upstream `addToNewNodeClaim`) + (capenter)
 *   the planned pods' UIDs in {@link AnnotationNominatedPods} + `karpenter.sh/price-overlay-applied` /
 *   `capacity-overlay-applied: "true"` when an option carries a NodeOverlay price / capacity (upstream
 *   `nodeclaimtemplate.go`); an ownerReference to the NodePool (`blockOwnerDeletion: true`);
 * - `spec` = the template spec (`nodeClassRef`, `taints`, `startupTaints`, `expireAfter`,
 *   `terminationGracePeriod`), `requirements` = the plan's requirements without `kubernetes.io/hostname`, with
 *   `node.kubernetes.io/instance-type In` listing the plan's options in price order (cheapest first, at most
 *   {@link MAX_INSTANCE_TYPES}, keeping its `minValues`), `resources.requests` = the plan's requests (pods +
 *   daemon overhead) as quantity strings.
 */
export function nodeClaimFromPlan(
  plan: NodeClaimPlan,
  nodePool: NodePool,
  hash: NodePoolHash,
  random: () => number = Math.random,
): NodeClaim {
  const tmpl = nodePool.spec.template;
  const name = nodePool.metadata.name;
  const optionTypes = plan.instanceTypeOptions.slice(0, MAX_INSTANCE_TYPES);
  const options = optionTypes.map((it) => it.name);
  const requirements: NodeSelectorRequirementWithMinValues[] = [];
  let sawInstanceType = false;
  for (const r of plan.requirements) {
    if (r.key === LabelHostname) continue;
    if (r.key === LabelInstanceType && r.operator === 'In') {
      if (sawInstanceType) continue;
      sawInstanceType = true;
      requirements.push({
        key: LabelInstanceType,
        operator: 'In',
        values: options,
        ...(r.minValues !== undefined ? { minValues: r.minValues } : {}),
      });
      continue;
    }
    requirements.push(structuredClone(r));
  }
  if (!sawInstanceType && options.length > 0)
    requirements.push({ key: LabelInstanceType, operator: 'In', values: options });

  const spec: NodeClaim['spec'] = {
    nodeClassRef: { ...tmpl.spec.nodeClassRef },
    requirements,
    resources: { requests: formatResources(plan.requests) },
  };
  if (tmpl.spec.taints?.length) spec.taints = structuredClone(tmpl.spec.taints);
  if (tmpl.spec.startupTaints?.length) spec.startupTaints = structuredClone(tmpl.spec.startupTaints);
  if (tmpl.spec.expireAfter !== undefined) spec.expireAfter = tmpl.spec.expireAfter;
  if (tmpl.spec.terminationGracePeriod !== undefined)
    spec.terminationGracePeriod = tmpl.spec.terminationGracePeriod;

  const uids = plan.pods.map((p) => p.metadata.uid).filter((u): u is string => !!u);
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      generateName: `${name}-`,
      labels: {
        ...(tmpl.metadata?.labels ?? {}),
        [LabelNodePool]: name,
        ...resolveCustomLabelsFromRequirements(plan.requirements, random),
      },
      annotations: {
        ...(tmpl.metadata?.annotations ?? {}),
        [AnnotationNodePoolHash]: hash.hash,
        [AnnotationNodePoolHashVersion]: hash.version,
        [AnnotationNodeClaimMinValuesRelaxed]: plan.minValuesRelaxed ? 'true' : 'false',
        ...(uids.length ? { [AnnotationNominatedPods]: uids.join(',') } : {}),
        ...(optionTypes.some(isPriceOverlaid) ? { [AnnotationPriceOverlayApplied]: 'true' } : {}),
        ...(optionTypes.some((it) => it.capacityOverlaid)
          ? { [AnnotationCapacityOverlayApplied]: 'true' }
          : {}),
      },
      ownerReferences: [
        {
          apiVersion: 'karpenter.sh/v1',
          kind: 'NodePool',
          name,
          uid: nodePool.metadata.uid ?? '',
          blockOwnerDeletion: true,
        },
      ],
    },
    spec,
  };
}
