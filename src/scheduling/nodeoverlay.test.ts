import { describe, expect, it } from 'vitest';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodeOverlay, NodeOverlaySpec, NodePool } from '../apis/karpenter.ts';
import { validateObject } from '../apis/validation.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import {
  adjustedPrice,
  applyNodeOverlays,
  evaluateNodeOverlays,
  orderByWeight,
  overlayInstanceTypes,
  unpricedTypeOverlayPrices,
} from './nodeoverlay.ts';

const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];
const types = catalog.filter((t) => ['m5.large', 'm5.xlarge', 'c5.large'].includes(t.name));

function overlay(name: string, spec: NodeOverlaySpec): NodeOverlay {
  return { apiVersion: 'karpenter.sh/v1alpha1', kind: 'NodeOverlay', metadata: { name }, spec };
}
function pool(name: string, labels?: Record<string, string>): NodePool {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        ...(labels ? { metadata: { labels } } : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [],
        },
      },
      disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '0s', budgets: [] },
    },
  };
}
const byName = (its: InstanceType[], n: string) => its.find((t) => t.name === n)!;
const price = (it: InstanceType, zone: string, ct: string) =>
  it.offerings.find((o) => o.zone === zone && o.capacityType === ct)!.priceUSDPerHour;
const m5 = { key: 'node.kubernetes.io/instance-type', operator: 'In' as const, values: ['m5.large'] };

describe('adjustedPrice (upstream AdjustedPrice)', () => {
  it('override, absolute and percent adjustments, floored at 0', () => {
    expect(adjustedPrice(0.096, '-10%')).toBeCloseTo(0.0864, 10);
    expect(adjustedPrice(0.096, '+0.1')).toBeCloseTo(0.196, 10);
    expect(adjustedPrice(0.096, '-0.05')).toBeCloseTo(0.046, 10);
    expect(adjustedPrice(0.096, '0.05')).toBe(0.05);
    expect(adjustedPrice(0.096, '-1')).toBe(0);
    expect(adjustedPrice(0.096, '-100%')).toBe(0);
    expect(adjustedPrice(0.096, '')).toBe(0.096);
  });
});

describe('NodeOverlay application', () => {
  it('m5.large on-demand $0.096 with priceAdjustment "-10%" costs $0.0864; spot and other types untouched', () => {
    const { instanceTypes, evaluation } = overlayInstanceTypes(
      [
        overlay('cheaper-m5', {
          requirements: [m5, { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
          priceAdjustment: '-10%',
        }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    expect(evaluation.verdicts.get('cheaper-m5')).toEqual({ ok: true });
    const its = instanceTypes.default!;
    expect(price(byName(types, 'm5.large'), 'us-east-1a', 'on-demand')).toBe(0.096);
    expect(price(byName(its, 'm5.large'), 'us-east-1a', 'on-demand')).toBeCloseTo(0.0864, 10);
    expect(byName(its, 'm5.large').offerings.find((o) => o.capacityType === 'on-demand')!.priceSource).toBe(
      'node-overlay',
    );
    expect(price(byName(its, 'm5.large'), 'us-east-1a', 'spot')).toBe(0.03264);
    expect(price(byName(its, 'm5.xlarge'), 'us-east-1a', 'on-demand')).toBe(0.192);
  });

  it('capacity smarter-devices/fuse: 1 appears on matching types only, in capacity and allocatable', () => {
    const { instanceTypes } = overlayInstanceTypes(
      [
        overlay('fuse', {
          requirements: [{ key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] }],
          capacity: { 'smarter-devices/fuse': '1' },
        }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    const its = instanceTypes.default!;
    expect(byName(its, 'm5.large').capacity['smarter-devices/fuse']).toBe(1);
    expect(byName(its, 'm5.large').allocatable['smarter-devices/fuse']).toBe(1);
    expect(byName(its, 'm5.xlarge').allocatable['smarter-devices/fuse']).toBe(1);
    expect(byName(its, 'c5.large').capacity['smarter-devices/fuse']).toBeUndefined();
    // the rest of the capacity is unchanged
    expect(byName(its, 'm5.large').allocatable.cpu).toBe(1930);
    expect(byName(types, 'm5.large').capacity['smarter-devices/fuse']).toBeUndefined();
  });

  it('matches NodePool template labels and karpenter.sh/nodepool', () => {
    const ov = overlay('gpu-team', {
      requirements: [{ key: 'team', operator: 'In', values: ['ml'] }],
      price: '0.01',
    });
    const { instanceTypes } = overlayInstanceTypes(
      [ov],
      [
        { nodePool: pool('ml', { team: 'ml' }), instanceTypes: types },
        { nodePool: pool('web', { team: 'web' }), instanceTypes: types },
      ],
    );
    expect(price(byName(instanceTypes.ml!, 'c5.large'), 'us-east-1b', 'spot')).toBe(0.01);
    expect(price(byName(instanceTypes.web!, 'c5.large'), 'us-east-1b', 'on-demand')).toBe(0.085);
    const byPool = overlayInstanceTypes(
      [
        overlay('np', {
          requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['web'] }],
          price: '1',
        }),
      ],
      [
        { nodePool: pool('ml'), instanceTypes: types },
        { nodePool: pool('web'), instanceTypes: types },
      ],
    ).instanceTypes;
    expect(price(byName(byPool.web!, 'm5.large'), 'us-east-1a', 'on-demand')).toBe(1);
    expect(price(byName(byPool.ml!, 'm5.large'), 'us-east-1a', 'on-demand')).toBe(0.096);
  });

  it('weight order: the heavier overlay wins the price; the lighter one still adds resources it alone sets', () => {
    const { instanceTypes, evaluation } = overlayInstanceTypes(
      [
        overlay('light', { requirements: [m5], price: '0.5', weight: 1 }),
        overlay('heavy', { requirements: [m5], price: '0.2', weight: 10 }),
        overlay('cap-heavy', { requirements: [m5], capacity: { 'example.com/a': '2' }, weight: 10 }),
        overlay('cap-light', {
          requirements: [m5],
          capacity: { 'example.com/a': '5', 'example.com/b': '3' },
          weight: 1,
        }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    expect(evaluation.order).toEqual(['heavy', 'cap-heavy', 'light', 'cap-light']);
    expect([...evaluation.verdicts.values()].every((v) => v.ok)).toBe(true);
    const m = byName(instanceTypes.default!, 'm5.large');
    expect(price(m, 'us-east-1c', 'spot')).toBe(0.2);
    expect(m.capacity['example.com/a']).toBe(2);
    expect(m.capacity['example.com/b']).toBe(3);
  });

  it('two overlays of the same weight setting the same offering price: the later-evaluated one is Conflict and not applied', () => {
    const { instanceTypes, evaluation } = overlayInstanceTypes(
      [
        overlay('alpha', { requirements: [m5], price: '0.5', weight: 5 }),
        overlay('beta', { requirements: [m5], priceAdjustment: '+0.1', weight: 5 }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    // equal weights: the name later in the alphabet ("beta") is evaluated first and wins
    expect(
      orderByWeight([overlay('alpha', { requirements: [] }), overlay('beta', { requirements: [] })]).map(
        (o) => o.metadata.name,
      ),
    ).toEqual(['beta', 'alpha']);
    expect(evaluation.verdicts.get('beta')).toEqual({ ok: true });
    expect(evaluation.verdicts.get('alpha')).toEqual({
      ok: false,
      reason: 'Conflict',
      message: 'conflict with another overlay',
    });
    expect(price(byName(instanceTypes.default!, 'm5.large'), 'us-east-1a', 'on-demand')).toBeCloseTo(
      0.196,
      10,
    );
  });

  it('same weight, same capacity resource conflicts; disjoint resources or price-vs-capacity do not', () => {
    const ev = evaluateNodeOverlays(
      [
        overlay('a', { requirements: [m5], capacity: { 'example.com/x': '1' }, weight: 3 }),
        overlay('b', { requirements: [m5], capacity: { 'example.com/x': '2' }, weight: 3 }),
        overlay('c', { requirements: [m5], capacity: { 'example.com/y': '2' }, weight: 2 }),
        overlay('d', { requirements: [m5], price: '0.3', weight: 2 }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    expect(ev.verdicts.get('b')).toEqual({ ok: true });
    expect(ev.verdicts.get('a')).toMatchObject({ ok: false, reason: 'Conflict' });
    expect(ev.verdicts.get('c')).toEqual({ ok: true });
    expect(ev.verdicts.get('d')).toEqual({ ok: true });
    const m = byName(applyNodeOverlays(ev, 'default', types), 'm5.large');
    expect([m.capacity['example.com/x'], m.capacity['example.com/y']]).toEqual([2, 2]);
  });

  it('runtime validation: restricted labels and well-known resources fail with RuntimeValidation', () => {
    const ev = evaluateNodeOverlays(
      [
        overlay('bad-label', {
          requirements: [{ key: 'karpenter.k8s.aws/ec2nodeclass', operator: 'Exists' }],
          price: '1',
        }),
        overlay('bad-cap', { requirements: [m5], capacity: { cpu: '4' } }),
        // upstream v1.14 restricts neither kubernetes.io nor k8s.io (kubernetes-sigs/karpenter#2586)
        overlay('k8s-io', { requirements: [{ key: 'kubernetes.io/foo', operator: 'Exists' }], price: '1' }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    expect(ev.verdicts.get('bad-label')).toMatchObject({ ok: false, reason: 'RuntimeValidation' });
    const message = (ev.verdicts.get('bad-label') as { message: string }).message;
    expect(
      message.startsWith('invalid value: using label karpenter.k8s.aws/ec2nodeclass is not allowed as it '),
    ).toBe(true);
    expect(
      message.endsWith(
        ', or a custom label that does not use a restricted domain: [karpenter.k8s.aws karpenter.sh] in requirements, restricted',
      ),
    ).toBe(true);
    expect(ev.verdicts.get('k8s-io')).toEqual({ ok: true });
    expect(ev.verdicts.get('bad-cap')).toEqual({
      ok: false,
      reason: 'RuntimeValidation',
      message: 'invalid capacity: cpu in resource, restricted',
    });
    expect(
      price(byName(applyNodeOverlays(ev, 'default', types), 'm5.large'), 'us-east-1a', 'on-demand'),
    ).toBe(0.096);
  });

  it('runtime validation: capacity-type In [spott] names no known value (upstream ValidateRequirement → validateWellKnownValues)', () => {
    const ev = evaluateNodeOverlays(
      [
        overlay('spott', {
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spott'] }],
          price: '1',
        }),
        overlay('spot', {
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spott', 'spot'] }],
          price: '1',
        }),
      ],
      [{ nodePool: pool('default'), instanceTypes: types }],
    );
    expect(ev.verdicts.get('spott')).toEqual({
      ok: false,
      reason: 'RuntimeValidation',
      message:
        'invalid value: no valid values found in [spott] for karpenter.sh/capacity-type, expected one of: [on-demand reserved spot]; use on-demand or reserved or spot in requirements, restricted',
    });
    expect(ev.verdicts.get('spot')?.ok).toBe(true);
  });

  it('an unevaluated NodePool is refused (upstream UnevaluatedNodePoolError)', () => {
    const ev = evaluateNodeOverlays([], [{ nodePool: pool('default'), instanceTypes: types }]);
    expect(() => applyNodeOverlays(ev, 'other', types)).toThrow(/NodePool "other" has not been evaluated/);
  });
});

describe('unpricedTypeOverlayPrices (upstream aws GetOverlayPrice, preview instance types)', () => {
  const validated = (o: NodeOverlay, status: 'True' | 'False' = 'True'): NodeOverlay => ({
    ...o,
    status: { conditions: [{ type: 'ValidationSucceeded', status }] },
  });
  const preview = (values: string[]) => ({
    key: 'node.kubernetes.io/instance-type',
    operator: 'In' as const,
    values,
  });
  it('validated overlays of the exact shape give each named type their absolute price; the last listed wins', () => {
    const prices = unpricedTypeOverlayPrices([
      validated(overlay('a', { requirements: [preview(['p6x.48xlarge', 'm9p.large'])], price: '98.32' })),
      validated(overlay('b', { requirements: [preview(['m9p.large'])], price: '0.05', weight: 1 })),
    ]);
    expect([...prices]).toEqual([
      ['p6x.48xlarge', 98.32],
      ['m9p.large', 0.05],
    ]);
  });
  it('priceAdjustment, extra requirements, other operators, a failed or missing validation give nothing', () => {
    const od = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };
    expect(
      unpricedTypeOverlayPrices([
        validated(overlay('adjust', { requirements: [preview(['m9p.large'])], priceAdjustment: '-10%' })),
        validated(overlay('od', { requirements: [preview(['m9p.large']), od], price: '0.05' })),
        validated(
          overlay('notin', { requirements: [{ ...preview(['m9p.large']), operator: 'NotIn' }], price: '1' }),
        ),
        validated(overlay('conflict', { requirements: [preview(['m9p.large'])], price: '0.05' }), 'False'),
        overlay('new', { requirements: [preview(['m9p.large'])], price: '0.05' }),
      ]).size,
    ).toBe(0);
  });
});

describe('NodeOverlay schema (upstream CRD rules)', () => {
  const v = (spec: unknown) =>
    validateObject({
      apiVersion: 'karpenter.sh/v1alpha1',
      kind: 'NodeOverlay',
      metadata: { name: 'o' },
      spec,
    });
  it('accepts upstream examples and rejects what the CRD rejects', () => {
    expect(v({ requirements: [m5], priceAdjustment: '-10%' }).ok).toBe(true);
    expect(v({ requirements: [m5], price: '0.05', weight: 10 }).ok).toBe(true);
    expect(v({ requirements: [m5], capacity: { 'smarter-devices/fuse': 1 } }).ok).toBe(true);
    const msgs = (spec: unknown) => {
      const r = v(spec);
      return r.ok ? [] : r.issues.map((i) => i.message);
    };
    expect(msgs({ requirements: [m5], price: '1', priceAdjustment: '+1' }).join('\n')).toContain(
      "cannot set both 'price' and 'priceAdjustment'",
    );
    expect(msgs({ requirements: [m5], priceAdjustment: '-150%' }).join('\n')).toContain(
      'spec.priceAdjustment',
    );
    expect(msgs({ requirements: [m5], capacity: { memory: '1Gi' } }).join('\n')).toContain(
      'invalid resource restricted',
    );
    expect(msgs({ requirements: [{ key: 'a', operator: 'NotIn' }] }).join('\n')).toContain(
      "requirements with operator 'NotIn' must have a value defined",
    );
    expect(msgs({ requirements: [m5], weight: 0 }).join('\n')).toContain('spec.weight');
    expect(
      msgs({ requirements: [{ key: 'kubernetes.io/hostname', operator: 'Exists' }] }).join('\n'),
    ).toContain('label "kubernetes.io/hostname" is restricted');
    expect(msgs({ price: '1' }).join('\n')).toContain('spec.requirements');
  });
});
