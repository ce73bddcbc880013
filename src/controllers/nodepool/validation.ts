/**
 * NodePool runtime validation (upstream `pkg/controllers/nodepool/validation`): the NodePool is checked against
 * capenter's schema and CEL rules (`apis/validation.ts`, the same rules the CRD carries, which an embedded or
 * older API server may not enforce). Result: condition `ValidationSucceeded` True, or False with reason
 * `NodePoolValidationFailed` and every issue in the message. Never throws.
 */
import type { NodePool } from '../../apis/karpenter.ts';
import { validateObject } from '../../apis/validation.ts';

/** Condition type set by this step. */
export const ConditionValidationSucceeded = 'ValidationSucceeded';

/** `undefined` when the NodePool is valid, else one message listing every issue. Pure. */
export function nodePoolValidationError(nodePool: NodePool): string | undefined {
  const { status: _status, ...rest } = nodePool;
  const meta = { ...rest.metadata };
  for (const k of [
    'managedFields',
    'resourceVersion',
    'uid',
    'creationTimestamp',
    'generation',
    'deletionTimestamp',
  ])
    delete (meta as Record<string, unknown>)[k];
  const r = validateObject({ ...rest, metadata: meta });
  if (r.ok) return undefined;
  return r.issues.map((i) => i.message).join('; ');
}
