/**
 * Topology over a label the provider puts on its offerings (aws `topology.k8s.aws/zone-id`, upstream
 * aws/karpenter-provider-aws v1.14.1 `offering/base_resolver.go` + kubernetes-sigs/karpenter
 * `scheduling/topology.go` `buildDomainGroups`): the domains come from the offerings, a NodeClaim pinned to a domain
 * narrows its offerings, and a pod's node selector on the label picks an offering that carries it.
 */
import { describe, expect, it } from 'vitest';
import type { Offering } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { cheapestOffering, offeringLabelKeys } from './instancetypes.ts';
import { overlayInstanceTypes } from './nodeoverlay.ts';
import { Requirement, Requirements } from './requirements.ts';
import { solve } from './scheduler.ts';
import { makeInstanceType, makeNode, makeNodePool, makePod } from './testing.ts';
import type { ExistingNode, NodeClaimPlan, SchedulingInput } from './types.ts';

const ZONE_ID = 'topology.k8s.aws/zone-id';
const ZONE = 'topology.kubernetes.io/zone';
const ZONE_IDS: Record<string, string> = {
  'us-east-1a': 'use1-az1',
  'us-east-1b': 'use1-az2',
  'us-east-1c': 'use1-az4',
};

/** A c5 catalog offered in `zones`, each offering labelled with its zone ID; `dearer` zones cost 2×. */
function catalog(zones: readonly string[], dearer: readonly string[] = []) {
  return (['large', 'xlarge'] as const).map((size, i) => {
    const it = makeInstanceType({
      name: `c5.${size}`,
      cpu: 2 * (i + 1),
      memoryGiB: 4 * (i + 1),
      price: 0.085 * (i + 1),
      zones,
    });
    it.offerings = it.offerings.map((o) => ({
      ...o,
      priceUSDPerHour: dearer.includes(o.zone) ? o.priceUSDPerHour * 2 : o.priceUSDPerHour,
      labels: { [ZONE_ID]: ZONE_IDS[o.zone]! },
    }));
    return it;
  });
}

const pool = (): NodePool =>
  makeNodePool('default', {
    requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
  });

function input(
  pods: ReturnType<typeof makePod>[],
  zones: readonly string[],
  extra: Partial<SchedulingInput> = {},
  dearer: readonly string[] = [],
): SchedulingInput {
  return {
    pods,
    existingNodes: [],
    nodePools: [pool()],
    instanceTypes: { default: catalog(zones, dearer) },
    daemonSets: [],
    ...extra,
  };
}

const spreadPod = (name: string) =>
  makePod(name, {
    cpu: '1',
    labels: { app: 'web' },
    spec: {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: ZONE_ID,
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: { matchLabels: { app: 'web' } },
        },
      ],
    },
  });

function valuesOf(nc: NodeClaimPlan, key: string): string[] | undefined {
  return nc.requirements.find((r) => r.key === key)?.values;
}

/** Pods per zone ID over the planned NodeClaims, each pinned to exactly one zone ID. */
function podsPerZoneID(ncs: readonly NodeClaimPlan[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const nc of ncs) {
    const ids = valuesOf(nc, ZONE_ID);
    expect(ids).toHaveLength(1);
    // the offering launched in the pinned zone ID
    expect(ZONE_IDS[nc.cheapest.offering.zone]).toBe(ids![0]);
    out[ids![0]!] = (out[ids![0]!] ?? 0) + nc.pods.length;
  }
  return out;
}

describe('topology spread over an offering label (topology.k8s.aws/zone-id)', () => {
  it('4 replicas, maxSkew 1, two zones: 2 pods per zone ID, each NodeClaim pinned to one', () => {
    const pods = Array.from({ length: 4 }, (_, i) => spreadPod(`web-${i}`));
    const r = solve(input(pods, ['us-east-1a', 'us-east-1b']));
    expect(r.unschedulable).toEqual([]);
    expect(podsPerZoneID(r.newNodeClaims)).toEqual({ 'use1-az1': 2, 'use1-az2': 2 });
  });

  it('4 replicas, maxSkew 1, three zones: 2/1/1 over the three zone IDs, even when one zone is dearer', () => {
    const pods = Array.from({ length: 4 }, (_, i) => spreadPod(`web-${i}`));
    const r = solve(input(pods, ['us-east-1a', 'us-east-1b', 'us-east-1c'], {}, ['us-east-1c']));
    expect(r.unschedulable).toEqual([]);
    const counts = podsPerZoneID(r.newNodeClaims);
    expect(Object.keys(counts).sort()).toEqual(['use1-az1', 'use1-az2', 'use1-az4']);
    expect(Object.values(counts).sort()).toEqual([1, 1, 2]);
    expect(counts['use1-az4']).toBe(1);
  });

  it('counts pods on an existing node by its zone-id label', () => {
    const existing: ExistingNode = {
      node: makeNode('n1', {
        labels: { [ZONE]: 'us-east-1a', [ZONE_ID]: 'use1-az1' },
        allocatable: { cpu: '100m', memory: '1Gi', pods: '10' },
      }),
      pods: [{ ...spreadPod('old'), spec: { ...spreadPod('old').spec, nodeName: 'n1' } }],
    };
    const pods = Array.from({ length: 3 }, (_, i) => spreadPod(`web-${i}`));
    const r = solve(input(pods, ['us-east-1a', 'us-east-1b'], { existingNodes: [existing] }));
    expect(r.unschedulable).toEqual([]);
    expect(podsPerZoneID(r.newNodeClaims)).toEqual({ 'use1-az1': 1, 'use1-az2': 2 });
  });

  it('required pod anti-affinity over the zone ID: one pod per zone ID, the third of three pods on two zones is left', () => {
    const anti = (name: string) =>
      makePod(name, {
        cpu: '1',
        labels: { app: 'db' },
        spec: {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { topologyKey: ZONE_ID, labelSelector: { matchLabels: { app: 'db' } } },
              ],
            },
          },
        },
      });
    const r = solve(input([anti('db-0'), anti('db-1'), anti('db-2')], ['us-east-1a', 'us-east-1b']));
    expect(podsPerZoneID(r.newNodeClaims)).toEqual({ 'use1-az1': 1, 'use1-az2': 1 });
    expect(r.unschedulable.map((u) => [u.pod.metadata.name, u.code])).toEqual([
      ['db-2', 'AffinityUnsatisfiable'],
    ]);
  });

  it('a node selector on the zone ID gets an offering in that zone, though another zone is cheaper', () => {
    const pod = makePod('pinned', { cpu: '1', spec: { nodeSelector: { [ZONE_ID]: 'use1-az2' } } });
    const r = solve(input([pod], ['us-east-1a', 'us-east-1b'], {}, ['us-east-1b']));
    expect(r.unschedulable).toEqual([]);
    const nc = r.newNodeClaims[0]!;
    expect(valuesOf(nc, ZONE_ID)).toEqual(['use1-az2']);
    expect(nc.cheapest.offering.zone).toBe('us-east-1b');
    expect(nc.cheapest.offering.priceUSDPerHour).toBeCloseTo(0.17, 6);
  });

  it('a zone ID no offering carries is unschedulable, naming the label', () => {
    const pod = makePod('nowhere', { cpu: '1', spec: { nodeSelector: { [ZONE_ID]: 'use1-az6' } } });
    const r = solve(input([pod], ['us-east-1a', 'us-east-1b']));
    expect(r.newNodeClaims).toEqual([]);
    expect(r.unschedulable).toHaveLength(1);
    expect(r.unschedulable[0]!.message).toContain(ZONE_ID);
  });
});

describe('offering label keys', () => {
  const base: Offering = {
    zone: 'us-east-1a',
    capacityType: 'on-demand',
    priceUSDPerHour: 0.1,
    available: true,
    priceSource: 'provider',
  };

  it('are the capacity-reservation keys plus the keys the offerings carry', () => {
    const offerings: Offering[] = [
      { ...base, labels: { [ZONE_ID]: 'use1-az1' } },
      { ...base, zone: 'us-east-1b', priceUSDPerHour: 0.05 },
    ];
    expect(offeringLabelKeys(offerings)).toEqual([
      'karpenter.k8s.aws/capacity-reservation-id',
      'karpenter.k8s.aws/capacity-reservation-type',
      'karpenter.k8s.aws/capacity-reservation-interruptible',
      ZONE_ID,
    ]);
    // an offering without the label is not in any zone ID: the cheaper us-east-1b offering is skipped
    const o = cheapestOffering(offerings, new Requirements([Requirement.in(ZONE_ID, ['use1-az1'])]));
    expect(o?.zone).toBe('us-east-1a');
    // ... unless the requirement allows absence
    const notIn = new Requirements([Requirement.notIn(ZONE_ID, ['use1-az1'])]);
    expect(cheapestOffering(offerings, notIn)?.zone).toBe('us-east-1b');
  });

  it('offerings without labels add no key (kwok, clusterapi)', () => {
    expect(offeringLabelKeys([base])).toHaveLength(3);
  });
});

describe('NodeOverlay over an offering label', () => {
  it('priceAdjustment "-50%" with requirement zone-id In [use1-az2]: only the us-east-1b offerings get cheaper', () => {
    const { instanceTypes, evaluation } = overlayInstanceTypes(
      [
        {
          apiVersion: 'karpenter.sh/v1alpha1',
          kind: 'NodeOverlay',
          metadata: { name: 'az2-discount' },
          spec: {
            requirements: [{ key: ZONE_ID, operator: 'In', values: ['use1-az2'] }],
            priceAdjustment: '-50%',
          },
        },
      ],
      [{ nodePool: pool(), instanceTypes: catalog(['us-east-1a', 'us-east-1b']) }],
    );
    expect(evaluation.verdicts.get('az2-discount')).toEqual({ ok: true });
    const large = instanceTypes.default!.find((t) => t.name === 'c5.large')!;
    expect(large.offerings.map((o) => [o.zone, o.priceUSDPerHour, o.priceSource])).toEqual([
      ['us-east-1a', 0.085, 'provider'],
      ['us-east-1b', 0.0425, 'node-overlay'],
    ]);
  });
});
