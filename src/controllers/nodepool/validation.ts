/**
 * NodePool runtime validation (upstream `pkg/controllers/nodepool/validation`): the NodePool is checked against
 * capenter's schema and CEL rules (`apis/validation.ts`, the same rules the CRD carries, which an embedded or
 * older API server may not enforce). Result: condition `ValidationSucceeded` True, or False with reason
 * `NodePoolValidationFailed` and every issue in the message. Never throws.
 */
import type { KubeObject } from '../../apis/core.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { validateObject } from '../../apis/validation.ts';

/** Condition type set by this step. */
export const ConditionValidationSucceeded = 'ValidationSucceeded';

/** Server-set metadata fields that are no part of the spec being validated. */
const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'generation',
  'deletionTimestamp',
  'finalizers',
] as const;

/**
 * `undefined` when `obj` (any kind `apis/validation.ts` knows: NodePool, NodeClaim, NodeClasses) passes the
 * schema and CEL rules, else one message listing every issue. `status` and server-set metadata are ignored.
 * Pure.
 */
export function specValidationError(obj: KubeObject): string | undefined {
  const { status: _status, ...rest } = obj;
  const meta: Record<string, unknown> = { ...(rest.metadata ?? {}) };
  for (const k of SERVER_METADATA) delete meta[k];
  const r = validateObject({ ...rest, metadata: meta });
  return r.ok ? undefined : r.issues.map((i) => i.message).join('; ');
}

/** `undefined` when the NodePool is valid, else one message listing every issue. Pure. */
export function nodePoolValidationError(nodePool: NodePool): string | undefined {
  return specValidationError(nodePool);
}
