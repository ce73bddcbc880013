/**
 * Integration: `nodeoverlay.controller` against the embedded API server with the kwok provider (us-east-1 catalog):
 * conditions per overlay (applied, Conflict, RuntimeValidation) and the decorated provider's instance types.
 */

import type { EC2Client } from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstanceType } from '../../../src/apis/instancetype.ts';
import type { NodeOverlay, NodeOverlaySpec, NodePool } from '../../../src/apis/karpenter.ts';
import { getInstanceTypeSpec } from '../../../src/cloudprovider/aws/catalog/index.ts';
import { AwsInstanceTypes } from '../../../src/cloudprovider/aws/instancetypes.ts';
import type { AwsPricing } from '../../../src/cloudprovider/aws/pricing.ts';
import { UnavailableOfferings } from '../../../src/cloudprovider/offerings.ts';
import { NodeOverlayStore, withNodeOverlays } from '../../../src/cloudprovider/overlay.ts';
import type { CloudProvider } from '../../../src/cloudprovider/types.ts';
import { startTestEnv, type TestEnv } from '../../../src/controllers/nodeclaim/testing.ts';
import {
  NodeOverlayController,
  NodeOverlayResyncSeconds,
} from '../../../src/controllers/nodeoverlay/controller.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { nodeClaimPrice, solve } from '../../../src/scheduling/scheduler.ts';
import { makePod } from '../../../src/scheduling/testing.ts';

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

  it('preview instance type (upstream aws v1.14 PR #9249): the reconcile after the one that validated a price overlay gives the unpriced type offerings at $0.05 and the scheduler picks it', async () => {
    const store = new NodeOverlayStore();
    // the aws instance types of a seeded inventory: m5.large priced ($0.096 on-demand), m9p.large (made-up preview
    // type, m5.large's spec) in no price table; overlay prices of unpriced types from the store, as the operator wires it
    const preview = 'm9p.large';
    const m5spec = getInstanceTypeSpec('m5.large')!;
    const pricing = {
      generation: 1,
      ensureFresh: async () => {},
      price: (t: string, _z: string, ct: string) =>
        t === 'm5.large' && ct === 'on-demand'
          ? { priceUSDPerHour: 0.096, priceSource: 'on-demand' }
          : undefined,
    } as unknown as AwsPricing;
    const its = new AwsInstanceTypes({
      ec2: {} as EC2Client,
      region: 'us-east-1',
      clock: env.clock,
      pricing,
      unavailable: new UnavailableOfferings({ clock: env.clock }),
      overlayPrices: () => store.unpricedTypePrices(),
    });
    its.seed({
      specs: new Map([
        ['m5.large', m5spec],
        [preview, { ...m5spec, name: preview, family: 'm9p', generation: '9' }],
      ]),
      zones: new Map([
        ['m5.large', ['us-east-1a']],
        [preview, ['us-east-1a']],
      ]),
      source: 'ec2',
      fetchedAt: env.clock.now(),
    });
    const raw = Object.create(env.provider) as CloudProvider;
    raw.instanceTypes = () => its.list(undefined);
    const decorated = withNodeOverlays(raw, store);
    await env.client.create(
      overlay('preview-price', {
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: [preview] }],
        price: '0.05',
      }),
    );
    const controller = new NodeOverlayController({
      client: env.client,
      cloudProvider: raw,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      store,
    });
    const previewOf = async () => (await decorated.instanceTypes(pool)).find((t) => t.name === preview)!;

    // first reconcile: the overlay had no ValidationSucceeded yet when listed, so the type is still unpriced
    await controller.reconcile('nodeoverlays');
    expect((await previewOf()).offerings).toEqual([]);
    const o = (await env.client.get('NodeOverlay', 'preview-price')) as NodeOverlay;
    expect(o.status?.conditions?.find((c) => c.type === 'ValidationSucceeded')?.status).toBe('True');

    // the reconcile its status write triggers: priced at $0.05 by the overlay (provider and store agree)
    await controller.reconcile('nodeoverlays');
    expect([...store.unpricedTypePrices()]).toEqual([[preview, 0.05]]);
    expect(
      (await previewOf()).offerings.map((x) => [x.capacityType, x.priceUSDPerHour, x.priceSource]),
    ).toEqual([
      ['on-demand', 0.05, 'node-overlay'],
      ['spot', 0.05, 'node-overlay'],
    ]);
    const r = solve({
      pods: [makePod('web', { cpu: '1', memory: '1Gi' })],
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { general: await decorated.instanceTypes(pool) },
      daemonSets: [],
    });
    expect([r.newNodeClaims[0]?.cheapest.instanceType.name, nodeClaimPrice(r.newNodeClaims[0]!)]).toEqual([
      preview,
      0.05,
    ]);
    await env.client.delete('NodeOverlay', 'preview-price');
  });
});
