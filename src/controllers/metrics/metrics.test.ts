import { describe, expect, it } from 'vitest';
import type { Pod } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { metricValue, resourceTypeLabel } from './common.ts';
import { podsLimits } from './node.ts';
import { nodeClaimPhase } from './nodeclaim.ts';
import { ownerSelfLink } from './pod.ts';

const pod = (limits: Record<string, string>, owner?: { kind: string; name: string }): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'p',
    namespace: 'shop',
    ...(owner
      ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: 'u' }] }
      : {}),
  },
  spec: { containers: [{ name: 'a', image: 'x', resources: { limits } }] },
});

describe('metrics helpers', () => {
  it('labels and units follow upstream', () => {
    expect(resourceTypeLabel('ephemeral-storage')).toBe('ephemeral_storage');
    expect(resourceTypeLabel('nvidia.com/gpu')).toBe('nvidia.com/gpu');
    expect(metricValue('cpu', 1930)).toBe(1.93);
    expect(metricValue('memory', 1024)).toBe(1024);
  });

  it('sums container limits', () => {
    expect(podsLimits([pod({ cpu: '500m', memory: '1Gi' }), pod({ cpu: '1' })])).toEqual({
      cpu: 1500,
      memory: 2 ** 30,
    });
    expect(podsLimits([pod({ cpu: 'lots' })])).toEqual({});
  });

  it('builds the owner self link of the first owner reference', () => {
    expect(ownerSelfLink(pod({}, { kind: 'ReplicaSet', name: 'web-1' }))).toBe(
      '/apis/apps/v1/namespaces/shop/replicasets/web-1',
    );
    expect(ownerSelfLink(pod({}))).toBe('');
  });

  it('derives the NodeClaim lifecycle phase from its conditions', () => {
    const nc = (conds: string[], deleting = false): NodeClaim =>
      ({
        metadata: { name: 'n', ...(deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}) },
        spec: { nodeClassRef: { group: 'g', kind: 'k', name: 'n' }, requirements: [] },
        status: { conditions: conds.map((type) => ({ type, status: 'True' })) },
      }) as unknown as NodeClaim;
    expect(nodeClaimPhase(nc([]))).toBe('Launching');
    expect(nodeClaimPhase(nc(['Launched']))).toBe('Registering');
    expect(nodeClaimPhase(nc(['Launched', 'Registered']))).toBe('Initializing');
    expect(nodeClaimPhase(nc(['Launched', 'Registered', 'Initialized']))).toBe('Ready');
    expect(nodeClaimPhase(nc(['Launched'], true))).toBe('Deleting');
  });
});
