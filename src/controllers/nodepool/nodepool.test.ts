import { describe, expect, it } from 'vitest';
import { nodePoolHash } from '../../apis/hash.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { statusResources } from '../../scheduling/limits.ts';
import * as hashController from './hash.ts';
import { nodeClassReadiness } from './readiness.ts';
import { nodePoolValidationError } from './validation.ts';

function pool(
  over: Partial<NodePool['spec']['template']['spec']> = {},
  labels?: Record<string, string>,
): NodePool {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'p' },
    spec: {
      template: {
        ...(labels ? { metadata: { labels } } : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
          expireAfter: '720h',
          ...over,
        },
      },
      disruption: {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '0s',
        budgets: [{ nodes: '10%' }],
      },
    },
  };
}

describe('nodePoolHash', () => {
  it('ignores requirements and taint order, changes with taints, labels, expireAfter', () => {
    const base = nodePoolHash(pool());
    // upstream v1.14's own numbers (test/fixtures/upstream-hash/cases.json, "kwok"): a change of the hashed fields
    // or their encoding makes every NodeClaim upstream or capenter launched look drifted
    expect(base).toBe('12745407319442031341');
    expect(nodePoolHash(pool({ requirements: [] }))).toBe(base);
    // as in Go: an empty list is not nil, so upstream hashes it (cases.json "kwok-empty-taints")
    expect(nodePoolHash(pool({ taints: [] }))).toBe('845502862369909111');
    const a = { key: 'a', effect: 'NoSchedule' as const };
    const b = { key: 'b', value: 'x', effect: 'NoExecute' as const };
    expect(nodePoolHash(pool({ taints: [a, b] }))).toBe('12060706492150710103');
    expect(nodePoolHash(pool({ taints: [b, a] }))).toBe('12060706492150710103');
    expect(nodePoolHash(pool({ taints: [a] }))).not.toBe(base);
    expect(nodePoolHash(pool({}, { team: 'x' }))).toBe('14023917897414649037');
    expect(nodePoolHash(pool({ expireAfter: 'Never' }))).toBe('7428780003907761376');
  });

  it('is re-exported unchanged by the hash controller module', () => {
    expect(hashController.nodePoolHash).toBe(nodePoolHash);
    expect(hashController.NodePoolHashVersion).toBe('v3');
  });
});

describe('nodePoolValidationError', () => {
  it('accepts a valid NodePool and names the field of an invalid one', async () => {
    expect(await nodePoolValidationError(pool())).toBeUndefined();
    const bad = pool({ requirements: [{ key: 'karpenter.sh/custom', operator: 'In', values: ['x'] }] });
    expect(await nodePoolValidationError(bad)).toMatch(
      /NodePool "p": spec.template.spec.requirements\[0\].*karpenter.sh/,
    );
  });
});

describe('nodeClassReadiness', () => {
  const kinds = [{ group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' }];
  it('reports missing, unsupported, not-ready and ready NodeClasses', () => {
    expect(nodeClassReadiness(pool(), undefined, kinds)).toMatchObject({
      status: 'False',
      reason: 'NodeClassNotFound',
    });
    expect(
      nodeClassReadiness(
        pool({ nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'x' } }),
        undefined,
        kinds,
      ),
    ).toMatchObject({ status: 'False', reason: 'NodeClassNotSupported' });
    const nc = (status: 'True' | 'False', reason = 'Ready') => ({
      metadata: { name: 'default' },
      status: { conditions: [{ type: 'Ready', status, reason, message: 'm' }] },
    });
    expect(nodeClassReadiness(pool(), nc('False', 'SubnetsNotFound'), kinds)).toEqual({
      status: 'False',
      reason: 'SubnetsNotFound',
      message: 'm',
    });
    expect(nodeClassReadiness(pool(), nc('True'), kinds)).toEqual({ status: 'True' });
  });
});

describe('statusResources', () => {
  it('sums Node capacity, else NodeClaim capacity, and counts nodes', () => {
    const nc = (name: string, id: string, cpu: string) => ({
      apiVersion: 'karpenter.sh/v1' as const,
      kind: 'NodeClaim' as const,
      metadata: { name, labels: { 'karpenter.sh/nodepool': 'p' } },
      spec: { nodeClassRef: { group: 'g', kind: 'k', name: 'n' }, requirements: [] },
      status: { providerID: id, capacity: { cpu, memory: '1Gi', pods: '10' } },
    });
    const node = {
      metadata: { name: 'n1', labels: { 'karpenter.sh/nodepool': 'p' } },
      spec: { providerID: 'a' },
      status: { capacity: { cpu: '4', memory: '2Gi', pods: '20' } },
    };
    const u = statusResources('p', [nc('c1', 'a', '2'), nc('c2', 'b', '2')], [node]);
    expect(u).toEqual({
      nodes: 2,
      resources: { cpu: '6', memory: '3072Mi', pods: '30', 'ephemeral-storage': '0', nodes: '2' },
    });
  });
});
