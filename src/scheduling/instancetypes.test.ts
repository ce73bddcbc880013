import { describe, expect, it } from 'vitest';
import {
  cheapestOffering,
  instanceTypeCompatible,
  instanceTypeIncompatibility,
  minValuesShortfall,
  providerKeys,
  relaxMinValues,
} from './instancetypes.ts';
import { Requirements } from './requirements.ts';
import { makeInstanceType, smallCatalog } from './testing.ts';

const m5 = makeInstanceType({
  name: 'm5.large',
  cpu: 2,
  memoryGiB: 8,
  price: 0.096,
  spotFactor: 0.5,
  unavailableZones: ['test-zone-a'],
});

describe('instance type compatibility', () => {
  it('checks labels, provider keys the type lacks, and available offerings', () => {
    const keys = providerKeys([
      m5,
      makeInstanceType({
        name: 'g5.xlarge',
        cpu: 4,
        memoryGiB: 16,
        price: 1,
        labels: { 'karpenter.k8s.aws/instance-gpu-count': '1' },
      }),
    ]);
    expect(instanceTypeCompatible(m5, Requirements.fromLabels({ 'kubernetes.io/arch': 'amd64' }), keys)).toBe(
      true,
    );
    expect(
      instanceTypeIncompatibility(m5, Requirements.fromLabels({ 'kubernetes.io/arch': 'arm64' }), keys),
    ).toBe('m5.large: key "kubernetes.io/arch" value amd64 not in In [arm64]');
    const gpu = Requirements.fromNodeSelector([
      { key: 'karpenter.k8s.aws/instance-gpu-count', operator: 'Gt', values: ['0'] },
    ]);
    expect(instanceTypeIncompatibility(m5, gpu, keys)).toContain(
      'has no label "karpenter.k8s.aws/instance-gpu-count"',
    );
    // custom keys (NodePool labels) are not the type's business
    expect(instanceTypeCompatible(m5, Requirements.fromLabels({ team: 'a' }), keys)).toBe(true);
    const zoneA = Requirements.fromLabels({ 'topology.kubernetes.io/zone': 'test-zone-a' });
    expect(instanceTypeIncompatibility(m5, zoneA, keys)).toContain('no available offering');
  });

  it('cheapest offering honours zone and capacity type', () => {
    expect(cheapestOffering(m5.offerings, new Requirements())).toMatchObject({
      zone: 'test-zone-b',
      capacityType: 'spot',
      priceUSDPerHour: 0.048,
    });
    const od = Requirements.fromLabels({
      'karpenter.sh/capacity-type': 'on-demand',
      'topology.kubernetes.io/zone': 'test-zone-c',
    });
    expect(cheapestOffering(m5.offerings, od)).toMatchObject({ zone: 'test-zone-c', priceUSDPerHour: 0.096 });
  });

  it('minValues counts distinct allowed values', () => {
    const types = smallCatalog().filter((t) => t.labels['kubernetes.io/arch'] === 'amd64');
    const reqs = Requirements.fromNodeSelector([
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['c5', 'm5', 'r5'], minValues: 3 },
    ]);
    expect(minValuesShortfall(types, reqs)).toBeUndefined();
    expect(
      minValuesShortfall(
        types.filter((t) => !t.name.startsWith('r5')),
        reqs,
      ),
    ).toBe(
      'minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [c5, m5]',
    );
  });

  it('relaxMinValues lowers unmet minValues to the offered count (dropped at 0), leaves met ones and the input alone', () => {
    const types = smallCatalog().filter((t) => t.name.startsWith('c5.') || t.name.startsWith('m5.'));
    const reqs = Requirements.fromNodeSelector([
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['c5', 'm5', 'r5'], minValues: 3 },
      { key: 'karpenter.k8s.aws/instance-size', operator: 'Exists', minValues: 2 },
      { key: 'example.com/absent', operator: 'NotIn', values: ['x'], minValues: 1 },
    ]);
    expect(relaxMinValues(types, reqs)!.toNodeSelector()).toEqual([
      { key: 'example.com/absent', operator: 'NotIn', values: ['x'] },
      { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['c5', 'm5', 'r5'], minValues: 2 },
      { key: 'karpenter.k8s.aws/instance-size', operator: 'Exists', minValues: 2 },
    ]);
    expect(reqs.get('karpenter.k8s.aws/instance-family')!.minValues).toBe(3);
    expect(
      relaxMinValues(
        smallCatalog(),
        Requirements.fromNodeSelector([reqs.get('karpenter.k8s.aws/instance-family')!.toNodeSelector()[0]!]),
      ),
    ).toBeUndefined();
  });
});
