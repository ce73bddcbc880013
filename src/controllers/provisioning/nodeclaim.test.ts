import { describe, expect, it } from 'vitest';
import { getInstanceTypes } from '../../cloudprovider/aws/catalog/index.ts';
import type { InstanceType } from '../../cloudprovider/types.ts';
import { exceeds, planCapacity } from '../../scheduling/limits.ts';
import { MAX_INSTANCE_TYPES, solve } from '../../scheduling/scheduler.ts';
import { nodePoolHash } from '../nodepool/hash.ts';
import { nodeClaimFromPlan, resolveCustomLabelsFromRequirements, templateHash } from './nodeclaim.ts';
import { pendingPod, testNodePool } from './testing.ts';

const types = getInstanceTypes({ region: 'us-east-1' }).instanceTypes as InstanceType[];

function onDemandPrice(it: InstanceType): number {
  return Math.min(
    ...it.offerings
      .filter((o) => o.available && o.capacityType === 'on-demand')
      .map((o) => o.priceUSDPerHour),
  );
}

describe('nodeClaimFromPlan', () => {
  const np = testNodePool('general', {
    labels: { team: 'payments' },
    annotations: { 'example.com/owner': 'sre' },
    taints: [{ key: 'dedicated', value: 'payments', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' }],
    terminationGracePeriod: '1h',
  });
  np.metadata.uid = 'np-uid-1';
  const pods = [1, 2, 3].map((i) => pendingPod(`web-${i}`, { cpu: '1', memory: '1Gi' }));
  for (const p of pods)
    p.spec.tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'payments', effect: 'NoSchedule' }];
  const result = solve({
    pods,
    existingNodes: [],
    nodePools: [np],
    instanceTypes: { general: types },
    daemonSets: [],
  });

  it('builds exactly the fields upstream ToNodeClaim sets', () => {
    expect(result.unschedulable).toEqual([]);
    expect(result.newNodeClaims).toHaveLength(1);
    const plan = result.newNodeClaims[0]!;
    const nc = nodeClaimFromPlan(plan, np, { hash: '1234567890', version: 'v3' });
    expect(nc.apiVersion).toBe('karpenter.sh/v1');
    expect(nc.kind).toBe('NodeClaim');
    expect(nc.metadata.name).toBeUndefined();
    expect(nc.metadata.generateName).toBe('general-');
    expect(nc.metadata.labels).toEqual({ team: 'payments', 'karpenter.sh/nodepool': 'general' });
    expect(nc.metadata.annotations).toEqual({
      'example.com/owner': 'sre',
      'karpenter.sh/nodepool-hash': '1234567890',
      'karpenter.sh/nodepool-hash-version': 'v3',
      'karpenter.sh/nodeclaim-min-values-relaxed': 'false',
      'capenter.dev/nominated-pods': 'uid-default-web-1,uid-default-web-2,uid-default-web-3',
    });
    expect(nc.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodePool',
        name: 'general',
        uid: 'np-uid-1',
        blockOwnerDeletion: true,
      },
    ]);
    expect(nc.spec.nodeClassRef).toEqual({
      group: 'karpenter.kwok.sh',
      kind: 'KWOKNodeClass',
      name: 'default',
    });
    expect(nc.spec.taints).toEqual([{ key: 'dedicated', value: 'payments', effect: 'NoSchedule' }]);
    expect(nc.spec.startupTaints).toEqual([
      { key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoExecute' },
    ]);
    expect(nc.spec.expireAfter).toBe('720h');
    expect(nc.spec.terminationGracePeriod).toBe('1h');
    // 3 pods × (1 cpu, 1Gi) = requests as quantity strings
    expect(nc.spec.resources).toEqual({ requests: { cpu: '3', memory: '3072Mi', pods: '3' } });
  });

  it('lists every fitting instance type cheapest first (up to 600, not the aws 60) and keeps the other requirements', () => {
    const plan = result.newNodeClaims[0]!;
    const nc = nodeClaimFromPlan(plan, np, templateHash(np));
    const keys = nc.spec.requirements.map((r) => r.key);
    expect(keys).not.toContain('kubernetes.io/hostname');
    expect(keys.filter((k) => k === 'node.kubernetes.io/instance-type')).toHaveLength(1);
    const it = nc.spec.requirements.find((r) => r.key === 'node.kubernetes.io/instance-type')!;
    expect(it.operator).toBe('In');
    // all the plan's options: upstream's core keeps up to 600 (only the aws CreateFleet cuts to 60)
    expect(it.values).toEqual(plan.instanceTypeOptions.map((t) => t.name));
    expect(it.values!.length).toBe(600); // more than 600 of the catalog fit 3 cpu + 3Gi
    expect(it.values![0]).toBe(plan.cheapest.instanceType.name);
    const byName = new Map(types.map((t) => [t.name, t]));
    const prices = it.values!.map((n) => onDemandPrice(byName.get(n)!));
    for (let i = 1; i < prices.length; i++) expect(prices[i]!).toBeGreaterThanOrEqual(prices[i - 1]!);
    // every option fits 3 cpu + 3Gi, and the cheapest is a c/m/r type
    for (const n of it.values!) expect(byName.get(n)!.allocatable.cpu!).toBeGreaterThanOrEqual(3000);
    expect(['c', 'm', 'r']).toContain(
      byName.get(it.values![0]!)!.labels['karpenter.k8s.aws/instance-category'],
    );
    expect(nc.spec.requirements).toContainEqual({
      key: 'karpenter.sh/capacity-type',
      operator: 'In',
      values: ['on-demand'],
    });
    expect(nc.spec.requirements).toContainEqual({
      key: 'karpenter.sh/nodepool',
      operator: 'In',
      values: ['general'],
    });
    expect(nc.spec.requirements).toContainEqual({ key: 'team', operator: 'In', values: ['payments'] });
  });

  it("templateHash is the NodePool controllers' hash: ignores requirements and taint order, changes with labels", () => {
    const a = templateHash(np);
    expect(a).toEqual({ hash: nodePoolHash(np), version: 'v3' });
    expect(a.hash).toMatch(/^\d+$/);
    const reordered = structuredClone(np);
    reordered.spec.template.spec.requirements = [];
    expect(templateHash(reordered)).toEqual(a);
    const relabelled = structuredClone(np);
    relabelled.spec.template.metadata!.labels = { team: 'search' };
    expect(templateHash(relabelled).hash).not.toBe(a.hash);
  });
});

describe('limits', () => {
  const np = testNodePool('limited', { limits: { cpu: '10', memory: '100Gi' } });

  it('planCapacity is the per-resource max over the options', () => {
    const result = solve({
      pods: [pendingPod('p', { cpu: '2', memory: '2Gi' })],
      existingNodes: [],
      nodePools: [np],
      instanceTypes: { limited: types },
      daemonSets: [],
    });
    const plan = result.newNodeClaims[0]!;
    const cap = planCapacity(plan, MAX_INSTANCE_TYPES);
    expect(cap.cpu).toBe(Math.max(...plan.instanceTypeOptions.map((t) => t.capacity.cpu ?? 0)));
    expect(cap.cpu).toBeLessThanOrEqual(10_000); // the scheduler kept only types within the limits
  });

  it('exceeds names the resource and the numbers', () => {
    expect(exceeds(np, { cpu: 6000 }, { cpu: 8000, memory: 2 ** 30 })).toBe(
      'cpu: 8 needed, 4 of 10 remaining',
    );
    expect(exceeds(np, { cpu: 6000 }, { cpu: 4000 })).toBeUndefined();
    expect(exceeds(np, { cpu: 12_000 }, { cpu: 1000 })).toBe('cpu: 1 needed, 0 of 10 remaining');
    expect(exceeds(testNodePool('free'), { cpu: 1e9 }, { cpu: 1e9 })).toBeUndefined();
    // resources without a limit are not compared
    expect(exceeds(np, {}, { 'nvidia.com/gpu': 8 })).toBeUndefined();
  });
});

describe('resolveCustomLabelsFromRequirements (upstream v1.14.1 nodeclaimtemplate.go)', () => {
  it('resolves custom keys and skips well-known, hostname and scheduling-simulation keys', () => {
    expect(
      resolveCustomLabelsFromRequirements(
        [
          { key: 'team', operator: 'In', values: ['a'] },
          { key: 'example.com/tier', operator: 'In', values: ['silver', 'gold'] },
          { key: 'example.com/tier', operator: 'NotIn', values: ['gold'] },
          { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] },
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] },
          { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
          { key: 'kubernetes.io/hostname', operator: 'In', values: ['host-1'] },
          { key: 'karpenter.sh/registered', operator: 'In', values: ['true'] },
          { key: 'karpenter.sh/initialized', operator: 'In', values: ['true'] },
          { key: 'example.com/gone', operator: 'DoesNotExist' },
          // upstream v1.14 (kubernetes-sigs/karpenter#2586): kubernetes.io / k8s.io custom keys become labels too
          { key: 'kubernetes.io/test', operator: 'In', values: ['test-value'] },
          { key: 'subdomain.k8s.io/test', operator: 'In', values: ['test-value'] },
        ],
        () => 0,
      ),
    ).toEqual({
      team: 'a',
      'example.com/tier': 'silver',
      'kubernetes.io/test': 'test-value',
      'subdomain.k8s.io/test': 'test-value',
    });
  });

  it('draws a random integer within the bounds for Exists, NotIn and Gt/Lt (upstream Requirement.Any)', () => {
    const reqs = [
      { key: 'example.com/shard', operator: 'Exists' as const },
      { key: 'example.com/slot', operator: 'Gt' as const, values: ['9'] },
      { key: 'example.com/slot', operator: 'Lt' as const, values: ['20'] },
      { key: 'example.com/pool', operator: 'NotIn' as const, values: ['blue'] },
    ];
    expect(resolveCustomLabelsFromRequirements(reqs, () => 0)).toEqual({
      'example.com/shard': '0',
      'example.com/slot': '10',
      'example.com/pool': '0',
    });
    // 0.5 of [10, 20) → 15; of [0, 2^53-1) → 4503599627370495
    expect(resolveCustomLabelsFromRequirements(reqs, () => 0.5)).toEqual({
      'example.com/shard': '4503599627370495',
      'example.com/slot': '15',
      'example.com/pool': '4503599627370495',
    });
  });

  it('nodeClaimFromPlan labels a NodeClaim with its custom single-value requirement', () => {
    const np = testNodePool('custom');
    np.spec.template.spec.requirements = [
      ...(np.spec.template.spec.requirements ?? []),
      { key: 'team', operator: 'In', values: ['a'] },
    ];
    const pod = pendingPod('api-1', { cpu: '1', memory: '1Gi' });
    const result = solve({
      pods: [pod],
      existingNodes: [],
      nodePools: [np],
      instanceTypes: { custom: types },
      daemonSets: [],
    });
    expect(result.newNodeClaims).toHaveLength(1);
    const nc = nodeClaimFromPlan(result.newNodeClaims[0]!, np, { hash: '1', version: 'v3' }, () => 0);
    expect(nc.metadata.labels).toEqual({ 'karpenter.sh/nodepool': 'custom', team: 'a' });
  });
});
