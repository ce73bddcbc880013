import { describe, expect, it } from 'vitest';
import type { NodeClaim, NodePool } from '../../../apis/karpenter.ts';
import { podEventNode } from '../disruption/podevents.ts';
import { expirationTime } from './controller.ts';

const nc = (expireAfter?: string): NodeClaim =>
  ({
    metadata: { name: 'a', creationTimestamp: '2025-01-01T00:00:00Z' },
    spec: { ...(expireAfter ? { expireAfter } : {}) },
  }) as NodeClaim;
const pool = (expireAfter: string) => ({ spec: { template: { spec: { expireAfter } } } }) as NodePool;

describe('expirationTime', () => {
  it('is creation + expireAfter (NodeClaim first, then NodePool), undefined for Never', () => {
    const t0 = Date.UTC(2025, 0, 1);
    expect(expirationTime(nc('1h'), pool('2h'))).toBe(t0 + 3_600_000);
    expect(expirationTime(nc(), pool('30m'))).toBe(t0 + 1_800_000);
    expect(expirationTime(nc('Never'), pool('1h'))).toBeUndefined();
    expect(expirationTime(nc(), undefined)).toBeUndefined();
  });
});

describe('podEventNode', () => {
  const p = (nodeName?: string, extra: Record<string, unknown> = {}) =>
    ({
      metadata: { name: 'p', ...extra },
      spec: { ...(nodeName ? { nodeName } : {}), containers: [] },
    }) as never;
  it('reports binding, leaving and removal, not other updates', () => {
    expect(podEventNode(undefined, p('n1'))).toBe('n1');
    expect(podEventNode(p(), p('n1'))).toBe('n1');
    expect(podEventNode(p('n1'), p('n1'))).toBeUndefined();
    expect(podEventNode(p('n1'), p('n1', { deletionTimestamp: '2025-01-01T00:00:00Z' }))).toBe('n1');
    expect(podEventNode(p('n1'), undefined)).toBe('n1');
    expect(podEventNode(undefined, p())).toBeUndefined();
  });
});
