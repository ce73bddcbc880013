/**
 * Preview instance types via NodeOverlays (upstream aws/karpenter-provider-aws v1.14 PR #9249, `offering.go`
 * `GetOverlayPrice` + `base_resolver.go`): a type that DescribeInstanceTypes/Offerings list but the price data lacks
 * gets offerings only from a validated NodeOverlay with an absolute `price` and the single requirement
 * `node.kubernetes.io/instance-type In [...]`; the scheduler then picks it when it is the cheapest.
 * The aws instance types (seeded inventory, no EC2 calls) → the NodeOverlay store → the pure overlay core → `solve`.
 */
import type { EC2Client } from '@aws-sdk/client-ec2';
import { describe, expect, it } from 'vitest';
import type { InstanceType } from '../../apis/instancetype.ts';
import type { NodeOverlay, NodeOverlaySpec } from '../../apis/karpenter.ts';
import { FakeClock } from '../../kube/clock.ts';
import { overlayInstanceTypes } from '../../scheduling/nodeoverlay.ts';
import { nodeClaimPrice, solve } from '../../scheduling/scheduler.ts';
import { makeNodePool, makePod } from '../../scheduling/testing.ts';
import { UnavailableOfferings } from '../offerings.ts';
import { NodeOverlayStore } from '../overlay.ts';
import type { CapacityType } from '../types.ts';
import { getInstanceTypeSpec } from './catalog/index.ts';
import { createAwsClients } from './clients.ts';
import { AwsInstanceTypes } from './instancetypes.ts';
import type { AwsPricing } from './pricing.ts';
import type { AwsCloudProvider } from './provider.ts';
import { awsSettings } from './settings.ts';
import { awsSetup } from './setup.ts';

/** A made-up preview type: m5.large's spec under a name no price table has. */
const PREVIEW = 'm9p.large';
const ZONES = ['us-west-2a', 'us-west-2b'];

/** Prices of the fake price data (USD/hour): m5.large only, as the Pricing API and spot history would give. */
const PRICES: Record<string, Partial<Record<CapacityType, number>>> = {
  'm5.large': { 'on-demand': 0.096, spot: 0.04 },
};

function instanceTypes(prices?: () => ReadonlyMap<string, number>): AwsInstanceTypes {
  const clock = new FakeClock();
  const pricing = {
    generation: 1,
    ensureFresh: async () => {},
    price: (t: string, _zone: string, ct: CapacityType) => {
      const p = PRICES[t]?.[ct];
      return p === undefined ? undefined : { priceUSDPerHour: p, priceSource: 'on-demand' as const };
    },
  } as unknown as AwsPricing;
  const its = new AwsInstanceTypes({
    ec2: {} as EC2Client,
    region: 'us-west-2',
    clock,
    pricing,
    unavailable: new UnavailableOfferings({ clock }),
    ...(prices ? { overlayPrices: prices } : {}),
  });
  const m5 = getInstanceTypeSpec('m5.large')!;
  its.seed({
    specs: new Map([
      ['m5.large', m5],
      [PREVIEW, { ...m5, name: PREVIEW, family: 'm9p', generation: '9' }],
    ]),
    zones: new Map([
      ['m5.large', ZONES],
      [PREVIEW, ZONES],
    ]),
    source: 'ec2',
    fetchedAt: clock.now(),
  });
  return its;
}

/** A NodeOverlay the nodeoverlay controller has validated (`ValidationSucceeded=True`, unless `validated` is false). */
function overlay(name: string, spec: NodeOverlaySpec, validated = true): NodeOverlay {
  return {
    apiVersion: 'karpenter.sh/v1alpha1',
    kind: 'NodeOverlay',
    metadata: { name },
    spec,
    ...(validated
      ? {
          status: {
            conditions: [
              { type: 'ValidationSucceeded', status: 'True' as const, reason: 'ValidationSucceeded' },
            ],
          },
        }
      : {}),
  };
}
const previewReq = { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: [PREVIEW] };

/** The pool's instance types with `overlays` stored and applied as the operator does; the scheduler's choice. */
async function choose(overlays: NodeOverlay[], capacityTypes = ['on-demand']) {
  const store = new NodeOverlayStore();
  store.setOverlays(overlays);
  const types = await instanceTypes(() => store.unpricedTypePrices()).list(undefined);
  const pool = makeNodePool('general', {
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: capacityTypes }],
  });
  const { instanceTypes: byPool, evaluation } = overlayInstanceTypes(overlays, [
    { nodePool: pool, instanceTypes: types },
  ]);
  const r = solve({
    pods: [makePod('web', { cpu: '1', memory: '1Gi' })],
    existingNodes: [],
    nodePools: [pool],
    instanceTypes: byPool,
    daemonSets: [],
  });
  expect(r.unschedulable).toEqual([]);
  const nc = r.newNodeClaims[0]!;
  return {
    types: byPool.general!,
    evaluation,
    chosen: nc.cheapest.instanceType.name,
    price: nodeClaimPrice(nc),
    options: nc.instanceTypeOptions.map((t) => t.name),
  };
}
const offeringsOf = (types: readonly InstanceType[], name: string) =>
  types
    .find((t) => t.name === name)!
    .offerings.map((o) => `${o.zone}/${o.capacityType}=${o.priceUSDPerHour} ${o.priceSource} ${o.available}`);

describe('preview instance types via NodeOverlay price (upstream aws v1.14 GetOverlayPrice)', () => {
  it('without an overlay the unpriced type has no offering and m5.large ($0.096) is chosen', async () => {
    const r = await choose([]);
    expect(offeringsOf(r.types, PREVIEW)).toEqual([]);
    expect([r.chosen, r.price, r.options]).toEqual(['m5.large', 0.096, ['m5.large']]);
  });

  it('an overlay with price "0.05" gives it on-demand and spot offerings at $0.05 and it is chosen over m5.large', async () => {
    const r = await choose([overlay('preview-price', { requirements: [previewReq], price: '0.05' })]);
    // upstream's BaseResolver asks the overlay for on-demand and spot alike when the price data has neither
    expect(offeringsOf(r.types, PREVIEW)).toEqual([
      'us-west-2a/on-demand=0.05 node-overlay true',
      'us-west-2a/spot=0.05 node-overlay true',
      'us-west-2b/on-demand=0.05 node-overlay true',
      'us-west-2b/spot=0.05 node-overlay true',
    ]);
    expect(r.evaluation.verdicts.get('preview-price')).toEqual({ ok: true });
    expect([r.chosen, r.price, r.options]).toEqual([PREVIEW, 0.05, [PREVIEW, 'm5.large']]);
    // m5.large keeps its own prices: the overlay names the preview type only
    expect(offeringsOf(r.types, 'm5.large')).toContain('us-west-2a/on-demand=0.096 on-demand true');
  });

  it('a price above m5.large makes the preview type an option, not the choice', async () => {
    const r = await choose([overlay('preview-price', { requirements: [previewReq], price: '0.5' })]);
    expect([r.chosen, r.price, r.options]).toEqual(['m5.large', 0.096, ['m5.large', PREVIEW]]);
  });

  it('a priceAdjustment (relative) has no price to adjust: the preview type stays without offerings', async () => {
    for (const priceAdjustment of ['-50%', '+0.05', '-0.01']) {
      const r = await choose([overlay('preview-adjust', { requirements: [previewReq], priceAdjustment })]);
      expect(offeringsOf(r.types, PREVIEW)).toEqual([]);
      expect([r.chosen, r.price]).toEqual(['m5.large', 0.096]);
    }
  });

  it('only upstream’s exact shape counts: a second requirement (capacity type, zone) or no ValidationSucceeded=True leaves it out', async () => {
    const od = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };
    const zone = { key: 'topology.kubernetes.io/zone', operator: 'In' as const, values: ['us-west-2a'] };
    for (const o of [
      overlay('with-capacity-type', { requirements: [previewReq, od], price: '0.05' }),
      overlay('with-zone', { requirements: [previewReq, zone], price: '0.05' }),
      overlay('not-in', { requirements: [{ ...previewReq, operator: 'NotIn' }], price: '0.05' }),
      overlay('not-validated-yet', { requirements: [previewReq], price: '0.05' }, false),
    ]) {
      const r = await choose([o]);
      expect([o.metadata.name, offeringsOf(r.types, PREVIEW), r.chosen]).toEqual([
        o.metadata.name,
        [],
        'm5.large',
      ]);
    }
  });

  it('a spot-only NodePool launches the preview type on spot at the overlay price (upstream prices spot alike)', async () => {
    const r = await choose(
      [overlay('preview-price', { requirements: [previewReq], price: '0.03' })],
      ['spot'],
    );
    expect([r.chosen, r.price]).toEqual([PREVIEW, 0.03]);
  });

  it('the gate off (no overlay prices wired): no offerings even with a validated overlay', async () => {
    const types = await instanceTypes().list(undefined);
    expect(offeringsOf(types, PREVIEW)).toEqual([]);
  });

  it('a changed overlay price re-prices the memoised list', async () => {
    let prices = new Map([[PREVIEW, 0.05]]);
    const its = instanceTypes(() => prices);
    expect(offeringsOf(await its.list(undefined), PREVIEW)[0]).toBe(
      'us-west-2a/on-demand=0.05 node-overlay true',
    );
    prices = new Map([[PREVIEW, 0.07]]);
    expect(offeringsOf(await its.list(undefined), PREVIEW)[0]).toBe(
      'us-west-2a/on-demand=0.07 node-overlay true',
    );
  });

  it('the operator wiring: awsSetup.createProvider passes the store’s prices (ProviderContext.unpricedTypeOverlayPrices) to the instance types', async () => {
    const clients = createAwsClients({
      region: 'us-west-2',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    // no AWS here: the price APIs fail at once (the provider falls back to the embedded tables)
    for (const c of [clients.ec2, clients.pricing])
      (c as { send: unknown }).send = async () => {
        throw new Error('no AWS in this test');
      };
    const store = new NodeOverlayStore();
    store.setOverlays([overlay('preview-price', { requirements: [previewReq], price: '0.05' })]);
    const clock = new FakeClock();
    const setup = awsSetup({
      clients,
      region: 'us-west-2',
      settings: awsSettings({
        clusterName: 'c',
        clusterEndpoint: 'https://c.example.com',
        region: 'us-west-2',
      }),
    });
    const provider = setup.createProvider({
      client: {} as never,
      clock,
      logger: { warn: () => {} } as never,
      region: 'us-west-2',
      nodeClass: () => undefined,
      unpricedTypeOverlayPrices: () => store.unpricedTypePrices(),
    }) as AwsCloudProvider;
    const m5 = getInstanceTypeSpec('m5.large')!;
    provider.instanceTypeProvider.seed({
      specs: new Map([[PREVIEW, { ...m5, name: PREVIEW }]]),
      zones: new Map([[PREVIEW, ['us-west-2a']]]),
      source: 'ec2',
      fetchedAt: clock.now(),
    });
    expect(offeringsOf(await provider.instanceTypeProvider.list(undefined), PREVIEW)).toEqual([
      'us-west-2a/on-demand=0.05 node-overlay true',
      'us-west-2a/spot=0.05 node-overlay true',
    ]);
    clients.destroy();
  });
});
