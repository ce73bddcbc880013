import { describe, expect, it } from 'vitest';
import type { KubeObject } from './core.ts';
import { applyDefaults } from './defaults.ts';
import { exampleEC2NodeClass, exampleNodePool } from './examples.ts';
import { validateObject } from './validation.ts';

const nodePool = (): KubeObject => exampleNodePool();
const ec2NodeClass = (): KubeObject => exampleEC2NodeClass();

describe('applyDefaults', () => {
  it('fills upstream v1 NodePool defaults', () => {
    const out = applyDefaults(nodePool()) as { spec: Record<string, unknown> };
    expect(out.spec.disruption).toEqual({
      consolidateAfter: '0s',
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      budgets: [{ nodes: '10%' }],
    });
    expect((out.spec.template as { spec: { expireAfter: string } }).spec.expireAfter).toBe('720h');
  });

  it('keeps values that are set and defaults budget nodes inside given budgets', () => {
    const np = nodePool() as { spec: Record<string, unknown> };
    np.spec.disruption = {
      consolidateAfter: 'Never',
      consolidationPolicy: 'WhenEmpty',
      budgets: [{ schedule: '@daily', duration: '1h' }],
    };
    (np.spec.template as { spec: Record<string, unknown> }).spec.expireAfter = 'Never';
    const out = applyDefaults(np as KubeObject) as typeof np;
    expect(out.spec.disruption).toEqual({
      consolidateAfter: 'Never',
      consolidationPolicy: 'WhenEmpty',
      budgets: [{ schedule: '@daily', duration: '1h', nodes: '10%' }],
    });
    expect((out.spec.template as { spec: { expireAfter: string } }).spec.expireAfter).toBe('Never');
  });

  it('does not mutate its input', () => {
    const np = nodePool();
    const before = JSON.stringify(np);
    applyDefaults(np);
    expect(JSON.stringify(np)).toBe(before);
  });

  it('defaults EC2NodeClass metadataOptions (IMDSv2 required, hop limit 1), field by field', () => {
    expect(
      (applyDefaults(ec2NodeClass()) as { spec: { metadataOptions: unknown } }).spec.metadataOptions,
    ).toEqual({
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 1,
      httpTokens: 'required',
    });
    const partial = ec2NodeClass() as { spec: Record<string, unknown> };
    partial.spec.metadataOptions = { httpPutResponseHopLimit: 2 };
    expect((applyDefaults(partial as KubeObject) as typeof partial).spec.metadataOptions).toEqual({
      httpEndpoint: 'enabled',
      httpProtocolIPv6: 'disabled',
      httpPutResponseHopLimit: 2,
      httpTokens: 'required',
    });
  });

  it('defaults NodeClaim expireAfter and KWOKNodeClass status', () => {
    const nc = applyDefaults({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'x' },
      spec: { nodeClassRef: { group: 'g', kind: 'k', name: 'n' }, requirements: [] },
    }) as unknown as { spec: { expireAfter: string } };
    expect(nc.spec.expireAfter).toBe('720h');
    const kwok = applyDefaults({
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'd' },
    } as KubeObject);
    expect(kwok.status).toEqual({
      conditions: [
        {
          lastTransitionTime: '2024-01-01T01:01:01Z',
          message: '',
          reason: 'Ready',
          status: 'True',
          type: 'Ready',
        },
      ],
    });
  });

  it('returns other kinds unchanged (same reference)', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [] } };
    expect(applyDefaults(pod)).toBe(pod);
  });

  it('agrees with the defaults validateObject applies through the schemas', () => {
    const withStatus = { ...nodePool(), status: {} };
    const partialMeta = ec2NodeClass() as { spec: Record<string, unknown> };
    partialMeta.spec.metadataOptions = { httpTokens: 'optional' };
    for (const o of [nodePool(), withStatus, ec2NodeClass(), partialMeta as KubeObject]) {
      const v = validateObject(o);
      expect(v.ok).toBe(true);
      if (v.ok) expect(v.object).toEqual(applyDefaults(o));
    }
  });
});
