/**
 * Turning a scheduler {@link NodeClaimPlan} into the NodeClaim object provisioning creates (upstream
 * kubernetes-sigs/karpenter `scheduling/nodeclaimtemplate.go` `ToNodeClaim`), and the NodePool-limits
 * arithmetic checked right before each create. Pure functions.
 */
import { createHash } from 'node:crypto';
import type { NodeClaim, NodePool, NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import {
  AnnotationNodePoolHash,
  AnnotationNodePoolHashVersion,
  LabelHostname,
  LabelInstanceType,
  LabelNodePool,
} from '../../apis/labels.ts';
import { formatResources, parseResources, type Resources } from '../../apis/quantity.ts';
import { MAX_INSTANCE_TYPES } from '../../scheduling/nodeclaim.ts';
import type { NodeClaimPlan } from '../../scheduling/types.ts';

/** The NodePool hash stamped on NodeClaims (`karpenter.sh/nodepool-hash` and `-hash-version`). */
export interface NodePoolHash {
  hash: string;
  version: string;
}

/** Version of {@link templateHash} (upstream `NodePoolHashVersion` is `v3`). */
export const TemplateHashVersion = 'v3';

function stableJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJSON).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined && x !== null)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * A stable hash of the parts of a NodePool template that make its NodeClaims drift when changed, as upstream
 * `NodePool.Hash()` selects them: template labels and annotations, `taints`, `startupTaints`, `nodeClassRef`
 * (requirements, `expireAfter` and `terminationGracePeriod` are excluded upstream with `hash:"ignore"`; taint
 * order does not matter). Decimal string of the first 64 bits of SHA-256. Used when the NodePool controllers'
 * hash function is not injected.
 */
export function templateHash(nodePool: NodePool): NodePoolHash {
  const t = nodePool.spec.template;
  const byKey = (a: { key: string; effect: string }, b: { key: string; effect: string }): number =>
    `${a.key}:${a.effect}` < `${b.key}:${b.effect}` ? -1 : 1;
  const parts = {
    labels: t.metadata?.labels ?? {},
    annotations: t.metadata?.annotations ?? {},
    taints: [...(t.spec.taints ?? [])].sort(byKey),
    startupTaints: [...(t.spec.startupTaints ?? [])].sort(byKey),
    nodeClassRef: t.spec.nodeClassRef,
  };
  const digest = createHash('sha256').update(stableJSON(parts)).digest();
  return { hash: digest.readBigUInt64BE(0).toString(10), version: TemplateHashVersion };
}

/**
 * The NodeClaim for a plan of `nodePool`:
 * - `metadata.generateName: <nodepool>-`; labels = template labels + `karpenter.sh/nodepool`; annotations =
 *   template annotations + `karpenter.sh/nodepool-hash` / `-hash-version`; an ownerReference to the NodePool
 *   (`blockOwnerDeletion: true`);
 * - `spec` = the template spec (`nodeClassRef`, `taints`, `startupTaints`, `expireAfter`,
 *   `terminationGracePeriod`), `requirements` = the plan's requirements without `kubernetes.io/hostname`, with
 *   `node.kubernetes.io/instance-type In` listing the plan's options in price order (cheapest first, at most
 *   {@link MAX_INSTANCE_TYPES}, keeping its `minValues`), `resources.requests` = the plan's requests (pods +
 *   daemon overhead) as quantity strings.
 */
export function nodeClaimFromPlan(plan: NodeClaimPlan, nodePool: NodePool, hash: NodePoolHash): NodeClaim {
  const tmpl = nodePool.spec.template;
  const name = nodePool.metadata.name;
  const options = plan.instanceTypeOptions.slice(0, MAX_INSTANCE_TYPES).map((it) => it.name);
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

  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      generateName: `${name}-`,
      labels: { ...(tmpl.metadata?.labels ?? {}), [LabelNodePool]: name },
      annotations: {
        ...(tmpl.metadata?.annotations ?? {}),
        [AnnotationNodePoolHash]: hash.hash,
        [AnnotationNodePoolHashVersion]: hash.version,
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

/** Per resource, the largest capacity among a plan's instance-type options (what the scheduler reserves). */
export function planCapacity(plan: NodeClaimPlan): Resources {
  const out: Resources = {};
  for (const it of plan.instanceTypeOptions.slice(0, MAX_INSTANCE_TYPES))
    for (const [k, v] of Object.entries(it.capacity)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
}

/**
 * Why creating a NodeClaim needing `capacity` would exceed the NodePool's `spec.limits` given `usage`, or
 * `undefined` when it fits (or there are no limits). Only limited resources are compared. Message example:
 * `cpu: 8000m needed, 4000m of 10000m remaining`.
 * @throws QuantityParseError when `spec.limits` is malformed.
 */
export function exceedsLimits(nodePool: NodePool, usage: Resources, capacity: Resources): string | undefined {
  if (!nodePool.spec.limits) return undefined;
  const limits = parseResources(nodePool.spec.limits);
  const over: string[] = [];
  for (const [k, limit] of Object.entries(limits)) {
    const remaining = limit - (usage[k] ?? 0);
    const need = capacity[k] ?? 0;
    if (need > remaining)
      over.push(
        `${k}: ${fmt(k, need)} needed, ${fmt(k, Math.max(0, remaining))} of ${fmt(k, limit)} remaining`,
      );
  }
  return over.length ? over.join('; ') : undefined;
}

function fmt(name: string, v: number): string {
  return formatResources({ [name]: v })[name] ?? String(v);
}
