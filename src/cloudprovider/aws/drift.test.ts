import { describe, expect, it } from 'vitest';
import {
  amisForNode,
  DriftAMI,
  DriftCapacityReservation,
  DriftSecurityGroup,
  DriftSubnet,
  selectorDrift,
} from './drift.ts';
import { variantRequirements } from './nodeclass/amis.ts';
import type { AMIStatus } from './nodeclass/types.ts';

const arch = (a: string) => ({ key: 'kubernetes.io/arch', operator: 'In' as const, values: [a] });
const amis: AMIStatus[] = [
  { id: 'ami-0new0amd64', requirements: [...variantRequirements('standard'), arch('amd64')] },
  { id: 'ami-0new0arm64', requirements: [...variantRequirements('standard'), arch('arm64')] },
  { id: 'ami-0new0nvidia', requirements: [...variantRequirements('nvidia'), arch('amd64')] },
];
const resolved = {
  amis,
  subnets: [{ id: 'subnet-0a' }, { id: 'subnet-0b' }],
  securityGroups: [{ id: 'sg-0nodes' }],
};
const amd64 = { 'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/instance-type': 'm5.large' };
const inst = { imageId: 'ami-0new0amd64', subnetId: 'subnet-0a', securityGroupIds: ['sg-0nodes'] };

describe('selectorDrift (upstream drift.go isAMIDrifted / isSubnetDrifted / areSecurityGroupsDrifted)', () => {
  it('no drift when image, subnet and groups are the resolved ones', () => {
    expect(selectorDrift(inst, resolved, amd64)).toBeUndefined();
  });

  it('AMIDrift lists the AMIs of the node instance type only (MapToInstanceTypes: arch and GPU variant)', () => {
    expect(selectorDrift({ ...inst, imageId: 'ami-0old0amd64' }, resolved, amd64)).toEqual({
      reason: DriftAMI,
      current: ['ami-0old0amd64'],
      resolved: ['ami-0new0amd64'],
    });
    // an arm64 node running the amd64 image drifts: that image does not serve its architecture
    expect(selectorDrift(inst, resolved, { 'kubernetes.io/arch': 'arm64' })?.resolved).toEqual([
      'ami-0new0arm64',
    ]);
    const gpu = { ...amd64, 'karpenter.k8s.aws/instance-gpu-count': '1' };
    expect(amisForNode(amis, gpu).map((a) => a.id)).toEqual(['ami-0new0nvidia']);
    // without the node's labels (no kubernetes.io/arch) every AMI counts
    expect(amisForNode(amis, {}).map((a) => a.id)).toEqual([
      'ami-0new0amd64',
      'ami-0new0arm64',
      'ami-0new0nvidia',
    ]);
  });

  it('SubnetDrift, then SecurityGroupDrift (exact set), in upstream order; empty resolved lists are not drift', () => {
    expect(selectorDrift({ ...inst, subnetId: 'subnet-0old' }, resolved, amd64)).toEqual({
      reason: DriftSubnet,
      current: ['subnet-0old'],
      resolved: ['subnet-0a', 'subnet-0b'],
    });
    expect(selectorDrift({ ...inst, securityGroupIds: ['sg-0nodes', 'sg-0extra'] }, resolved, amd64)).toEqual(
      { reason: DriftSecurityGroup, current: ['sg-0extra', 'sg-0nodes'], resolved: ['sg-0nodes'] },
    );
    // the AMI is checked first
    expect(
      selectorDrift({ imageId: 'ami-0old', subnetId: 'subnet-0old', securityGroupIds: [] }, resolved, amd64)
        ?.reason,
    ).toBe(DriftAMI);
    expect(
      selectorDrift(
        { imageId: 'ami-0old', subnetId: 'subnet-0old', securityGroupIds: [] },
        {
          amis: [],
          subnets: [],
          securityGroups: [],
        },
      ),
    ).toBeUndefined();
  });

  it('CapacityReservationDrift (isCapacityReservationDrifted): the reservation is no longer selected; last in order', () => {
    const inCr = { ...inst, capacityReservationId: 'cr-0old' };
    expect(
      selectorDrift(inCr, { ...resolved, capacityReservations: [{ id: 'cr-0b' }, { id: 'cr-0a' }] }, amd64),
    ).toEqual({ reason: DriftCapacityReservation, current: ['cr-0old'], resolved: ['cr-0a', 'cr-0b'] });
    // no reservation selected at all: drift too (upstream compares against the empty status list)
    expect(selectorDrift(inCr, { ...resolved, capacityReservations: [] }, amd64)?.reason).toBe(
      DriftCapacityReservation,
    );
    // still selected, not in a reservation, or not compared (ReservedCapacity off): no drift
    expect(
      selectorDrift(inCr, { ...resolved, capacityReservations: [{ id: 'cr-0old' }] }, amd64),
    ).toBeUndefined();
    expect(selectorDrift(inst, { ...resolved, capacityReservations: [] }, amd64)).toBeUndefined();
    expect(selectorDrift(inCr, resolved, amd64)).toBeUndefined();
    // the AMI comes first
    expect(
      selectorDrift({ ...inCr, imageId: 'ami-0old' }, { ...resolved, capacityReservations: [] }, amd64)
        ?.reason,
    ).toBe(DriftAMI);
  });
});
