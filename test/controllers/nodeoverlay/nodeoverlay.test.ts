/**
 * Integration: `nodeoverlay.controller` against the embedded API server with the kwok provider (us-east-1 catalog):
 * conditions per overlay (applied, Conflict, RuntimeValidation) and the decorated provider's instance types.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceType } from '../../../src/apis/instancetype.ts';
import type { NodeOverlay, NodeOverlaySpec, NodePool } from '../../../src/apis/karpenter.ts';
import { NodeOverlayStore, withNodeOverlays } from '../../../src/cloudprovider/overlay.ts';
import { startTestEnv, type TestEnv } from '../../../src/controllers/nodeclaim/testing.ts';
import {
  NodeOverlayController,
  NodeOverlayResyncSeconds,
} from '../../../src/controllers/nodeoverlay/controller.ts';
import { silentLogger } from '../../../src/kube/logger.ts';

let env: TestEnv;

function overlay(name: string, spec: NodeOverlaySpec): NodeOverlay {
  return { apiVersion: 'karpenter.sh/v1alpha1', kind: 'NodeOverlay', metadata: { name }, spec };
}
const m5 = { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: ['m5.large'] };
const pool: NodePool = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'general' },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
    },
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '10%' }],
    },
  },
};
const price = (it: InstanceType | undefined, ct: string) =>
  it?.offerings.find((o) => o.zone === 'us-east-1a' && o.capacityType === ct)?.priceUSDPerHour;

beforeAll(async () => {
  env = await startTestEnv();
  await env.client.create({
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name: 'default' },
    spec: {},
  });
  await env.client.create(pool);
});
afterAll(async () => {
  await env.stop();
});

describe('nodeoverlay.controller (integration)', () => {
  it('sets ValidationSucceeded/Ready per overlay and publishes the overlaid instance types', async () => {
    const store = new NodeOverlayStore();
    let marks = 0;
    const decorated = withNodeOverlays(env.provider, store);
    // before the first evaluation the NodePool is unevaluated: refused, as upstream's UnevaluatedNodePoolError
    await expect(decorated.instanceTypes(pool)).rejects.toThrow(
      /applying nodeoverlays, NodePool "general" has not been evaluated/,
    );
    for (const o of [
      overlay('cheaper-m5', {
        requirements: [m5, { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
        priceAdjustment: '-10%',
        weight: 10,
      }),
      overlay('alpha', { requirements: [m5], capacity: { 'smarter-devices/fuse': '1' }, weight: 5 }),
      overlay('beta', { requirements: [m5], capacity: { 'smarter-devices/fuse': '2' }, weight: 5 }),
      overlay('restricted', {
        requirements: [{ key: 'karpenter.k8s.aws/ec2nodeclass', operator: 'Exists' }],
        price: '1',
      }),
    ])
      await env.client.create(o);
    const controller = new NodeOverlayController({
      client: env.client,
      cloudProvider: env.provider,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      store,
      cluster: { markUnconsolidated: () => marks++ },
    });
    expect(await controller.reconcile('nodeoverlays')).toEqual({ requeueAfter: NodeOverlayResyncSeconds });
    expect(marks).toBe(1);

    const cond = async (name: string) => {
      const o = (await env.client.get('NodeOverlay', name)) as NodeOverlay;
      const c = (t: string) => o.status?.conditions?.find((x) => x.type === t);
      return [c('ValidationSucceeded')?.status, c('ValidationSucceeded')?.reason, c('Ready')?.status];
    };
    expect(await cond('cheaper-m5')).toEqual(['True', 'ValidationSucceeded', 'True']);
    expect(await cond('beta')).toEqual(['True', 'ValidationSucceeded', 'True']);
    expect(await cond('alpha')).toEqual(['False', 'Conflict', 'False']);
    expect(await cond('restricted')).toEqual(['False', 'RuntimeValidation', 'False']);
    const alpha = (await env.client.get('NodeOverlay', 'alpha')) as NodeOverlay;
    expect(alpha.status?.conditions?.find((c) => c.type === 'ValidationSucceeded')?.message).toBe(
      'conflict with another overlay',
    );

    const types = await decorated.instanceTypes(pool);
    const m5l = types.find((t) => t.name === 'm5.large');
    expect(price(m5l, 'on-demand')).toBeCloseTo(0.0864, 10);
    expect(price(m5l, 'spot')).toBe(0.03264);
    // beta (the later name, evaluated first at equal weight) set fuse: 2; alpha's 1 is not applied
    expect(m5l?.capacity['smarter-devices/fuse']).toBe(2);
    expect(types.find((t) => t.name === 'c5.large')?.capacity['smarter-devices/fuse']).toBeUndefined();
    // the undecorated provider is unchanged
    const raw = (await env.provider.instanceTypes(pool)).find((t) => t.name === 'm5.large');
    expect(price(raw, 'on-demand')).toBe(0.096);

    // a second pass writes nothing new and keeps the verdicts
    expect(await controller.reconcile('nodeoverlays')).toEqual({ requeueAfter: NodeOverlayResyncSeconds });
    expect(await cond('alpha')).toEqual(['False', 'Conflict', 'False']);
  });
});
