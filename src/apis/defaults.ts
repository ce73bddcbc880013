/**
 * Defaults of capenter's custom resources, equal to upstream Karpenter v1's CRD defaults (`default:` in
 * the openAPIV3Schema, applied by the API server on create and on read).
 * Sources: kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go`, `nodeclaim.go` (kubebuilder `+default`
 * markers), `kwok/apis/v1alpha1/kwoknodeclass.go`; aws/karpenter-provider-aws `pkg/apis/v1/ec2nodeclass.go`.
 *
 * The zod schemas in `schemas.ts` declare the same constants as `.default()`, so `validateObject`
 * output and the generated CRDs carry exactly these values; {@link applyDefaults} fills them in
 * without validating (for objects built in code).
 */
import type { KubeObject } from './core.ts';
import type { Budget } from './karpenter.ts';

/** `spec.template.spec.expireAfter` (NodePool) and `spec.expireAfter` (NodeClaim): 30 days. */
export const DefaultExpireAfter = '720h';
/** `spec.disruption.consolidationPolicy`. */
export const DefaultConsolidationPolicy = 'WhenEmptyOrUnderutilized';
/** `spec.disruption.consolidateAfter` (via the default `disruption: {consolidateAfter: 0s}`). */
export const DefaultConsolidateAfter = '0s';
/** `spec.disruption.budgets[].nodes`. */
export const DefaultBudgetNodes = '10%';
/** `spec.disruption.budgets`: one budget allowing 10% of the NodePool's nodes to be disrupted at once. */
export function defaultBudgets(): Budget[] {
  return [{ nodes: DefaultBudgetNodes }];
}
/** EC2NodeClass `spec.metadataOptions` (IMDSv2 required, hop limit 1). */
export const DefaultMetadataOptions = {
  httpEndpoint: 'enabled',
  httpProtocolIPv6: 'disabled',
  httpPutResponseHopLimit: 1,
  httpTokens: 'required',
} as const;
/** EC2NodeClass `status.capacityReservations[].reservationType` and `.state`. */
export const DefaultReservationType = 'default';
export const DefaultReservationState = 'active';
/** KWOKNodeClass `status` default: a single `Ready=True` condition (upstream's fixed timestamp). */
export function defaultKWOKStatus(): {
  conditions: Array<{
    lastTransitionTime: string;
    message: string;
    reason: string;
    status: 'True';
    type: string;
  }>;
} {
  return {
    conditions: [
      {
        lastTransitionTime: '2024-01-01T01:01:01Z',
        message: '',
        reason: 'Ready',
        status: 'True',
        type: 'Ready',
      },
    ],
  };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => structuredClone(v);

/**
 * Returns a copy of `obj` with upstream's defaults filled in where a field is absent
 * (Kubernetes structural defaulting: only missing fields are set, nested defaults apply inside objects
 * that exist or were just defaulted). Handles `karpenter.sh/v1` NodePool and NodeClaim,
 * `karpenter.k8s.aws/v1` EC2NodeClass and `karpenter.kwok.sh/v1alpha1` KWOKNodeClass; any other object
 * is returned unchanged (same reference). Never throws; does not validate (see `validateObject`).
 */
export function applyDefaults<T extends KubeObject>(obj: T): T {
  const key = `${obj.apiVersion}/${obj.kind}`;
  switch (key) {
    case 'karpenter.sh/v1/NodePool':
      return defaultNodePool(clone(obj));
    case 'karpenter.sh/v1/NodeClaim':
      return defaultNodeClaim(clone(obj));
    case 'karpenter.k8s.aws/v1/EC2NodeClass':
      return defaultEC2NodeClass(clone(obj));
    case 'karpenter.kwok.sh/v1alpha1/KWOKNodeClass':
      return defaultKWOKNodeClass(clone(obj));
    default:
      return obj;
  }
}

function defaultNodePool<T extends KubeObject>(o: T): T {
  const spec = o.spec;
  if (isObj(spec)) {
    if (spec.disruption === undefined) spec.disruption = { consolidateAfter: DefaultConsolidateAfter };
    const d = spec.disruption;
    if (isObj(d)) {
      if (d.consolidationPolicy === undefined) d.consolidationPolicy = DefaultConsolidationPolicy;
      if (d.budgets === undefined) d.budgets = defaultBudgets();
      if (Array.isArray(d.budgets)) {
        for (const b of d.budgets) if (isObj(b) && b.nodes === undefined) b.nodes = DefaultBudgetNodes;
      }
    }
    const tmpl = spec.template;
    if (isObj(tmpl) && isObj(tmpl.spec) && tmpl.spec.expireAfter === undefined) {
      tmpl.spec.expireAfter = DefaultExpireAfter;
    }
  }
  if (isObj(o.status) && o.status.nodes === undefined) o.status.nodes = 0;
  return o;
}

function defaultNodeClaim<T extends KubeObject>(o: T): T {
  if (isObj(o.spec) && o.spec.expireAfter === undefined) o.spec.expireAfter = DefaultExpireAfter;
  return o;
}

function defaultEC2NodeClass<T extends KubeObject>(o: T): T {
  const spec = o.spec;
  if (isObj(spec)) {
    if (spec.metadataOptions === undefined) spec.metadataOptions = { ...DefaultMetadataOptions };
    else if (isObj(spec.metadataOptions)) {
      const m = spec.metadataOptions;
      for (const [k, v] of Object.entries(DefaultMetadataOptions)) if (m[k] === undefined) m[k] = v;
    }
  }
  if (isObj(o.status) && Array.isArray(o.status.capacityReservations)) {
    for (const r of o.status.capacityReservations) {
      if (!isObj(r)) continue;
      if (r.reservationType === undefined) r.reservationType = DefaultReservationType;
      if (r.state === undefined) r.state = DefaultReservationState;
    }
  }
  return o;
}

function defaultKWOKNodeClass<T extends KubeObject>(o: T): T {
  if (o.status === undefined) (o as Obj).status = defaultKWOKStatus();
  return o;
}
