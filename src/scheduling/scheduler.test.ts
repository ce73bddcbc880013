import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import type { NodePool } from '../apis/karpenter.ts';
import { nodeClaimPrice, solve } from './scheduler.ts';
import { makeDaemonSet, makeInstanceType, makeNode, makeNodePool, makePod, smallCatalog } from './testing.ts';
import type { ExistingNode, SchedulingInput } from './types.ts';

const amd64 = { key: 'kubernetes.io/arch', operator: 'In' as const, values: ['amd64'] };
const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };

function input(
  pods: Pod[],
  pools: NodePool[],
  extra: Partial<SchedulingInput> = {},
  types = smallCatalog(),
): SchedulingInput {
  return {
    pods,
    existingNodes: [],
    nodePools: pools,
    instanceTypes: Object.fromEntries(pools.map((p) => [p.metadata.name, types])),
    daemonSets: [],
    ...extra,
  };
}
const general = () => makeNodePool('general', { requirements: [amd64, onDemand] });
const replicas = (n: number, prefix: string, o: Parameters<typeof makePod>[1]) =>
  Array.from({ length: n }, (_, i) => makePod(`${prefix}-${i}`, o));

describe('solve: new NodeClaims', () => {
  it('picks the cheapest type that fits pod + daemon overhead, options sorted by price', () => {
    const r = solve(input([makePod('a', { cpu: '1', memory: '1Gi' })], [general()]));
    expect(r.unschedulable).toEqual([]);
    expect(r.newNodeClaims).toHaveLength(1);
    const nc = r.newNodeClaims[0]!;
    expect(nc.cheapest.instanceType.name).toBe('c5.large');
    expect(nodeClaimPrice(nc)).toBe(0.085);
    expect(nc.instanceTypeOptions.map((t) => t.name).slice(0, 3)).toEqual([
      'c5.large',
      'm5.large',
      'r5.large',
    ]);
    expect(nc.requirements).toContainEqual({
      key: 'karpenter.sh/nodepool',
      operator: 'In',
      values: ['general'],
    });
    expect(nc.requirements.find((q) => q.key === 'node.kubernetes.io/instance-type')?.values).toHaveLength(
      12,
    );
    expect(r.placements).toEqual([{ pod: r.newNodeClaims[0]!.pods[0], target: { kind: 'new', index: 0 } }]);

    const withDaemon = solve(
      input([makePod('a', { cpu: '1', memory: '1Gi' })], [general()], {
        daemonSets: [makeDaemonSet('agent', '1')],
      }),
    );
    expect(withDaemon.newNodeClaims[0]!.cheapest.instanceType.name).toBe('c5.xlarge');
    expect(withDaemon.newNodeClaims[0]!.requests).toEqual({ cpu: 2000, memory: 2 ** 30, pods: 2 });
    expect(withDaemon.newNodeClaims[0]!.daemonOverhead).toEqual({ cpu: 1000, pods: 1 });
  });

  it('adds to each instance type only the daemon overhead of the DaemonSets that run on it (upstream buildDaemonOverheadGroups)', () => {
    const sizes = (values: string[]) => ({
      key: 'karpenter.k8s.aws/instance-size',
      operator: 'In' as const,
      values,
    });
    const pool = makeNodePool('general', {
      requirements: [
        { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
        sizes(['xlarge', '2xlarge']),
        onDemand,
      ],
    });
    const onSizes = (values: string[]) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [sizes(values)] }],
          },
        },
      },
    });
    const daemonSets = [
      makeDaemonSet('agent-small', '200m', '256Mi', onSizes(['large', 'xlarge'])),
      makeDaemonSet('agent-large', '2', '2Gi', onSizes(['2xlarge'])),
    ];
    const r = solve(input([makePod('a', { cpu: '3', memory: '4Gi' })], [pool], { daemonSets }));
    const nc = r.newNodeClaims[0]!;
    // m5.xlarge: 3900m allocatable ≥ 3000m + 200m; both agents on every type (5200m) would need m5.2xlarge
    expect(nc.cheapest.instanceType.name).toBe('m5.xlarge');
    expect(nc.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.xlarge', 'm5.2xlarge']);
    // spec.resources.requests: the pods plus the smallest overhead over the options (upstream addDaemonRequests)
    expect(nc.daemonOverhead).toEqual({ cpu: 200, memory: 256 * 2 ** 20, pods: 1 });
    expect(nc.requests).toEqual({ cpu: 3200, memory: 4352 * 2 ** 20, pods: 2 });
    // m5.2xlarge (7900m) holds 5.9 CPU next to agent-large's 2; 6 CPU fits no type
    const big = solve(input([makePod('b', { cpu: '5900m' })], [pool], { daemonSets }));
    expect(big.newNodeClaims.map((n) => n.cheapest.instanceType.name)).toEqual(['m5.2xlarge']);
    expect(big.newNodeClaims[0]!.daemonOverhead).toEqual({ cpu: 2000, memory: 2048 * 2 ** 20, pods: 1 });
    const none = solve(input([makePod('c', { cpu: '6' })], [pool], { daemonSets }));
    expect(none.unschedulable.map((u) => u.code)).toEqual(['NoInstanceTypeFits']);
  });

  it('packs many pods into one NodeClaim that grows into a larger type (not one node per pod)', () => {
    const r = solve(input(replicas(20, 'w', { cpu: '700m', memory: '1Gi' }), [general()]));
    expect(r.unschedulable).toEqual([]);
    const total = r.newNodeClaims.reduce((s, n) => s + nodeClaimPrice(n), 0);
    // 14 vCPU of requests: one c5.4xlarge (15900m) at $0.68 holds them all
    expect(r.newNodeClaims.map((n) => [n.cheapest.instanceType.name, n.pods.length])).toEqual([
      ['c5.4xlarge', 20],
    ]);
    expect(total).toBeCloseTo(0.68, 5);
  });

  it('explains an oversized pod with numbers, and an arch mismatch with the key', () => {
    const big = makePod('big', { cpu: '20', memory: '8Gi' });
    const arm = makePod('arm', { cpu: '1', spec: { nodeSelector: { 'kubernetes.io/arch': 'arm64' } } });
    const r = solve(input([big, arm], [general()]));
    expect(r.newNodeClaims).toEqual([]);
    const byName = Object.fromEntries(r.unschedulable.map((u) => [u.pod.metadata.name, u]));
    expect(byName.big!.code).toBe('NoInstanceTypeFits');
    expect(byName.big!.message).toBe(
      'incompatible with nodepool "general": no instance type has enough resources: pod needs cpu 20, memory 8192Mi, pods 1; largest allowed type c5.4xlarge has 15900m/29491Mi/110 pods allocatable',
    );
    expect(byName.arm!.code).toBe('IncompatibleRequirements');
    expect(byName.arm!.message).toBe(
      'incompatible with nodepool "general": key "kubernetes.io/arch" values [arm64] not in [amd64]',
    );
  });

  it('uses NodePools by weight and falls back when the heavier one cannot hold the pod', () => {
    const small = makeNodePool('small-first', {
      weight: 50,
      requirements: [onDemand, { key: 'karpenter.k8s.aws/instance-size', operator: 'In', values: ['large'] }],
    });
    const a = solve(input([makePod('a', { cpu: '1' })], [general(), small]));
    // the heavier pool allows arm64 too, so its cheapest large type is c6g.large ($0.068 < c5.large $0.085)
    expect(a.newNodeClaims.map((n) => [n.nodePool, n.cheapest.instanceType.name])).toEqual([
      ['small-first', 'c6g.large'],
    ]);
    const b = solve(input([makePod('b', { cpu: '3' })], [general(), small]));
    expect(b.newNodeClaims.map((n) => [n.nodePool, n.cheapest.instanceType.name])).toEqual([
      ['general', 'c5.xlarge'],
    ]);
    // a pod that fits an already planned NodeClaim joins it instead of opening a heavier pool's NodeClaim
    const both = solve(input([makePod('a', { cpu: '1' }), makePod('b', { cpu: '3' })], [general(), small]));
    expect(both.newNodeClaims.map((n) => [n.nodePool, n.cheapest.instanceType.name, n.pods.length])).toEqual([
      ['general', 'c5.2xlarge', 2],
    ]);
  });

  it('honours limits: counts the largest option, filters types above the remaining budget', () => {
    const limited = makeNodePool('limited', {
      weight: 10,
      limits: { cpu: '4' },
      requirements: [amd64, onDemand],
    });
    const other = makeNodePool('other', { requirements: [amd64, onDemand] });
    const pods = [makePod('a', { cpu: '1500m' }), makePod('b', { cpu: '1500m' })];
    const r = solve(input(pods, [limited, other], { nodePoolUsage: { limited: { cpu: 2000 } } }));
    expect(
      r.newNodeClaims.map((n) => [n.nodePool, n.cheapest.instanceType.name, n.instanceTypeOptions.length]),
    ).toEqual([
      ['limited', 'c5.large', 3],
      ['other', 'c5.large', 12],
    ]);
    const only = solve(input(pods, [limited], { nodePoolUsage: { limited: { cpu: 2000 } } }));
    expect(only.unschedulable.map((u) => [u.code, u.message])).toEqual([
      [
        'NodePoolLimitsExceeded',
        'incompatible with nodepool "limited": all available instance types exceed limits for nodepool (remaining cpu 0)',
      ],
    ]);
  });

  it("truncates options to upstream core's 600 and keeps the cheapest first", () => {
    const types: InstanceType[] = Array.from({ length: 700 }, (_, i) =>
      makeInstanceType({
        name: `t${String(i).padStart(3, '0')}.large`,
        cpu: 2,
        memoryGiB: 4,
        price: 1 - i / 10_000,
      }),
    );
    const r = solve(input([makePod('a', { cpu: '1' })], [makeNodePool('p')], {}, types));
    const nc = r.newNodeClaims[0]!;
    expect(nc.instanceTypeOptions).toHaveLength(600);
    expect(nc.cheapest.instanceType.name).toBe('t699.large');
    expect(nc.instanceTypeOptions[599]!.name).toBe('t100.large');
  });

  it("the NodeClaim's instance-type requirement lists the fitting types by name, within the NodePool's list, with its minValues", () => {
    const pool = makeNodePool('named', {
      requirements: [
        amd64,
        onDemand,
        {
          key: 'node.kubernetes.io/instance-type',
          operator: 'In',
          values: ['r5.xlarge', 'c5.large', 'm5.2xlarge', 'c5.xlarge', 'm5.large', 'c6g.large'],
          minValues: 2,
        },
      ],
    });
    // 5Gi does not fit c5.large (4Gi); c6g is arm64; the options are sorted by price, the requirement by name
    const r = solve(input([makePod('a', { cpu: '1', memory: '5Gi' })], [pool]));
    const nc = r.newNodeClaims[0]!;
    expect(nc.instanceTypeOptions.map((t) => t.name)).toEqual([
      'm5.large',
      'c5.xlarge',
      'r5.xlarge',
      'm5.2xlarge',
    ]);
    expect(nc.requirements.find((q) => q.key === 'node.kubernetes.io/instance-type')).toEqual({
      key: 'node.kubernetes.io/instance-type',
      operator: 'In',
      values: ['c5.xlarge', 'm5.2xlarge', 'm5.large', 'r5.xlarge'],
      minValues: 2,
    });
    expect(nc.requirements.map((q) => q.key)).toEqual([...nc.requirements.map((q) => q.key)].sort());
  });

  it('minValues keeps enough families, else the pod fails with the key in the message', () => {
    const pool = makeNodePool('mv', {
      requirements: [
        amd64,
        onDemand,
        {
          key: 'karpenter.k8s.aws/instance-family',
          operator: 'In',
          values: ['c5', 'm5', 'r5'],
          minValues: 3,
        },
      ],
    });
    const ok = solve(input([makePod('a', { cpu: '1' })], [pool]));
    expect(
      new Set(
        ok.newNodeClaims[0]!.instanceTypeOptions.map((t) => t.labels['karpenter.k8s.aws/instance-family']),
      ),
    ).toEqual(new Set(['c5', 'm5', 'r5']));
    // 40Gi only fits r5 types → one family left
    const bad = solve(input([makePod('a', { cpu: '1', memory: '40Gi' })], [pool]));
    expect(bad.unschedulable[0]!.message).toContain(
      'key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values',
    );
  });

  describe('MIN_VALUES_POLICY (upstream MinValuesPolicy)', () => {
    const familyMin3 = () =>
      makeNodePool('mv', {
        requirements: [
          amd64,
          onDemand,
          {
            key: 'karpenter.k8s.aws/instance-family',
            operator: 'In',
            values: ['c5', 'm5', 'r5'],
            minValues: 3,
          },
        ],
      });
    // 30Gi: c5 tops out at 28.8Gi allocatable (c5.4xlarge), so only m5.4xlarge and r5.2xlarge/r5.4xlarge fit
    const big = () => makePod('big', { cpu: '1', memory: '30Gi' });
    const familyReq = (nc: { requirements: { key: string; minValues?: number }[] }) =>
      nc.requirements.find((r) => r.key === 'karpenter.k8s.aws/instance-family');

    it('Strict (default): minValues 3 met by only 2 families leaves the pod unschedulable', () => {
      for (const extra of [{}, { minValuesPolicy: 'Strict' as const }]) {
        const r = solve(input([big()], [familyMin3()], extra));
        expect(r.newNodeClaims).toEqual([]);
        expect(r.unschedulable.map((u) => [u.code, u.message])).toEqual([
          [
            'IncompatibleRequirements',
            'incompatible with nodepool "mv": minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [m5, r5]',
          ],
        ]);
      }
    });

    it('BestEffort: the NodeClaim is planned with minValues lowered to the 2 families and marked relaxed', () => {
      const r = solve(input([big()], [familyMin3()], { minValuesPolicy: 'BestEffort' }));
      expect(r.unschedulable).toEqual([]);
      expect(r.newNodeClaims).toHaveLength(1);
      const nc = r.newNodeClaims[0]!;
      expect(nc.minValuesRelaxed).toBe(true);
      expect(familyReq(nc)).toEqual({
        key: 'karpenter.k8s.aws/instance-family',
        operator: 'In',
        values: ['c5', 'm5', 'r5'],
        minValues: 2,
      });
      expect(nc.instanceTypeOptions.map((t) => t.name)).toEqual(['r5.2xlarge', 'm5.4xlarge', 'r5.4xlarge']);
      expect(nc.cheapest.instanceType.name).toBe('r5.2xlarge');
    });

    it('BestEffort changes nothing when minValues is met: no relaxed mark, minValues kept', () => {
      const r = solve(input([makePod('a', { cpu: '1' })], [familyMin3()], { minValuesPolicy: 'BestEffort' }));
      const nc = r.newNodeClaims[0]!;
      expect(nc.minValuesRelaxed).toBeUndefined();
      expect(familyReq(nc)?.minValues).toBe(3);
    });

    it('truncation to 600 options: Strict fails the pod, BestEffort lowers minValues to the kept families (capenter deviation)', () => {
      // 700 types, cheapest first: 300 of family fa, 300 of fb, then 100 of fc; the 600 cheapest hold only fa and fb
      const types: InstanceType[] = Array.from({ length: 700 }, (_, i) =>
        makeInstanceType({
          name: `t${String(i).padStart(3, '0')}.large`,
          cpu: 2,
          memoryGiB: 4,
          price: 0.1 + i / 10_000,
          labels: { 'karpenter.k8s.aws/instance-family': i < 300 ? 'fa' : i < 600 ? 'fb' : 'fc' },
        }),
      );
      const pool = makeNodePool('p', {
        requirements: [
          {
            key: 'karpenter.k8s.aws/instance-family',
            operator: 'In',
            values: ['fa', 'fb', 'fc'],
            minValues: 3,
          },
        ],
      });
      const strict = solve(input([makePod('a', { cpu: '1' })], [pool], {}, types));
      expect(strict.newNodeClaims).toEqual([]);
      expect(strict.unschedulable.map((u) => u.message)).toEqual([
        'NodePool "p" could not meet minValues after truncation: minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [fa, fb]',
      ]);
      const best = solve(
        input([makePod('a', { cpu: '1' })], [pool], { minValuesPolicy: 'BestEffort' }, types),
      );
      const nc = best.newNodeClaims[0]!;
      expect(nc.instanceTypeOptions).toHaveLength(600);
      expect(nc.instanceTypeOptions[599]!.name).toBe('t599.large');
      expect(nc.minValuesRelaxed).toBe(true);
      expect(familyReq(nc)?.minValues).toBe(2);
    });

    it('BestEffort: a pod joining a relaxed NodeClaim is held to its lowered minValues (upstream addToInflightNode)', () => {
      // 30Gi opens the NodeClaim (m5, r5 → minValues 2); a second 30Gi pod needs 60Gi in total: only
      // m5.4xlarge (57.6Gi) drops out, leaving r5.4xlarge alone (1 family < 2), so it opens a second NodeClaim.
      const pods = [big(), makePod('big2', { cpu: '1', memory: '30Gi' })];
      const r = solve(input(pods, [familyMin3()], { minValuesPolicy: 'BestEffort' }));
      expect(r.unschedulable).toEqual([]);
      expect(
        r.newNodeClaims.map((nc) => [nc.pods.length, familyReq(nc)?.minValues, nc.minValuesRelaxed]),
      ).toEqual([
        [1, 2, true],
        [1, 2, true],
      ]);
    });
  });
});

describe('solve: existing and in-flight capacity', () => {
  const nodeWith = (
    name: string,
    used: string,
    extra: Partial<ExistingNode> = {},
    taints?: ExistingNode['node']['spec'],
  ): ExistingNode => ({
    node: {
      ...makeNode(name, { labels: { 'kubernetes.io/arch': 'amd64' } }),
      ...(taints ? { spec: taints } : {}),
    },
    pods: [
      {
        ...makePod(`${name}-used`, { cpu: used }),
        spec: { ...makePod('x', { cpu: used }).spec, nodeName: name },
      },
    ],
    ...extra,
  });

  it('prefers existing nodes with room, skips full, tainted and deleting ones', () => {
    const r = solve(
      input([makePod('a', { cpu: '500m' }), makePod('b', { cpu: '500m' })], [general()], {
        existingNodes: [
          nodeWith('full', '1800m'),
          nodeWith('tainted', '0', {}, { taints: [{ key: 'gpu', effect: 'NoSchedule' }] }),
          nodeWith('deleting', '0', { markedForDeletion: true }),
          nodeWith('roomy', '800m'),
        ],
      }),
    );
    expect(r.placements.map((p) => [p.pod.metadata.name, p.target])).toEqual([
      ['a', { kind: 'existing', node: 'roomy' }],
      ['b', { kind: 'existing', node: 'roomy' }],
    ]);
    expect(r.newNodeClaims).toEqual([]);
  });

  // Upstream pkg/controllers/state/statenode.go `Taints()` with pkg/scheduling/taints.go
  // `KnownEphemeralTaintKeyPrefixes` (issue 27 #1).
  it('a readiness.k8s.io/foo taint keeps a pod off an initialized node, not off an uninitialized managed one', () => {
    const managed = (name: string, initialized: boolean): ExistingNode => ({
      node: makeNode(name, {
        labels: {
          'kubernetes.io/arch': 'amd64',
          'karpenter.sh/nodepool': 'general',
          ...(initialized ? { 'karpenter.sh/initialized': 'true' } : {}),
        },
        taints: [{ key: 'readiness.k8s.io/foo', effect: 'NoSchedule' }],
      }),
      pods: [],
    });
    const up = solve(
      input([makePod('a', { cpu: '500m' })], [general()], { existingNodes: [managed('up', true)] }),
    );
    expect(up.placements.map((p) => p.target)).toEqual([{ kind: 'new', index: 0 }]);
    expect(up.newNodeClaims).toHaveLength(1);
    const starting = solve(
      input([makePod('a', { cpu: '500m' })], [general()], { existingNodes: [managed('starting', false)] }),
    );
    expect(starting.placements.map((p) => p.target)).toEqual([{ kind: 'existing', node: 'starting' }]);
    expect(starting.newNodeClaims).toEqual([]);
  });

  it('keeps room for DaemonSet pods that have not started on an existing node yet', () => {
    const node = nodeWith('n1', '1000m');
    const r1 = solve(
      input([makePod('a', { cpu: '800m' })], [general()], {
        existingNodes: [node],
        daemonSets: [makeDaemonSet('d', '200m')],
      }),
    );
    expect(r1.placements[0]!.target).toEqual({ kind: 'new', index: 0 });
    const r2 = solve(
      input([makePod('a', { cpu: '800m' })], [general()], {
        existingNodes: [{ ...node, daemonSetPodsIncluded: true }],
        daemonSets: [makeDaemonSet('d', '200m')],
      }),
    );
    expect(r2.placements[0]!.target).toEqual({ kind: 'existing', node: 'n1' });
  });

  it('packs onto in-flight NodeClaims when every remaining type holds the pod', () => {
    const types = smallCatalog();
    const nc = {
      apiVersion: 'karpenter.sh/v1' as const,
      kind: 'NodeClaim' as const,
      metadata: { name: 'general-abc', labels: { 'karpenter.sh/nodepool': 'general' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [amd64, onDemand],
      },
    };
    const r = solve(
      input([makePod('a', { cpu: '1' }), makePod('b', { cpu: '3' })], [general()], {
        inFlight: [
          {
            nodeClaim: nc,
            nodePool: 'general',
            instanceTypeOptions: types.filter((t) => t.name.endsWith('.xlarge')),
            requests: { cpu: 1000, pods: 1 },
          },
        ],
      }),
    );
    const t = Object.fromEntries(r.placements.map((p) => [p.pod.metadata.name, p.target.kind]));
    expect(t).toEqual({ a: 'inflight', b: 'new' });
  });
});

describe('solve: topology', () => {
  const spread = (app: string, key: string, extra = {}) => ({
    labels: { app },
    spec: {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: key,
          whenUnsatisfiable: 'DoNotSchedule' as const,
          labelSelector: { matchLabels: { app } },
          ...extra,
        },
      ],
    },
  });
  const zoneOf = (r: ReturnType<typeof solve>, i: number) =>
    r.newNodeClaims[i]!.requirements.find((q) => q.key === 'topology.kubernetes.io/zone')?.values;

  it('spreads across zones with maxSkew 1 and pins each NodeClaim to one zone', () => {
    const r = solve(
      input(replicas(6, 'web', { cpu: '1', ...spread('web', 'topology.kubernetes.io/zone') }), [general()]),
    );
    expect(r.unschedulable).toEqual([]);
    const perZone = new Map<string, number>();
    r.newNodeClaims.forEach((n, i) => {
      const z = zoneOf(r, i);
      expect(z).toHaveLength(1);
      perZone.set(z![0]!, (perZone.get(z![0]!) ?? 0) + n.pods.length);
    });
    expect([...perZone.values()]).toEqual([2, 2, 2]);
  });

  it('counts pending pods by effective zone before placing any (upstream pending_pods_by_effective_zone_count)', () => {
    // two web pods already in zone a: a zonal spread (maxSkew 1) allows only b and c for the next one
    const existing: ExistingNode = {
      node: makeNode('n1', {
        labels: { 'topology.kubernetes.io/zone': 'test-zone-a' },
        allocatable: { cpu: '100m', memory: '1Gi', pods: '10' },
      }),
      pods: ['old-0', 'old-1'].map((n) => ({
        ...makePod(n, { labels: { app: 'web' } }),
        spec: { ...makePod(n).spec, nodeName: 'n1' },
      })),
    };
    const zone = (values: string[]) => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In' as const, values }] },
          ],
        },
      },
    });
    const web = spread('web', 'topology.kubernetes.io/zone');
    const pods = [
      makePod('free', { cpu: '1' }),
      makePod('pinned', {
        cpu: '1',
        spec: { nodeSelector: { 'topology.kubernetes.io/zone': 'test-zone-b' } },
      }),
      makePod('two', { cpu: '1', spec: { affinity: zone(['test-zone-a', 'test-zone-b']) } }),
      makePod('web-any', { cpu: '1', ...web }),
      makePod('web-a', {
        cpu: '1',
        labels: web.labels,
        spec: { ...web.spec, affinity: zone(['test-zone-a']) },
      }),
      makePod('web-ab', {
        cpu: '1',
        labels: web.labels,
        spec: { ...web.spec, affinity: zone(['test-zone-a', 'test-zone-b']) },
      }),
    ];
    // anti-affinity to the web pods on zones, but only zone a allowed: nowhere to go
    pods.push(
      makePod('anti-a', {
        cpu: '1',
        spec: {
          affinity: {
            ...zone(['test-zone-a']),
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  topologyKey: 'topology.kubernetes.io/zone',
                  labelSelector: { matchLabels: { app: 'web' } },
                },
              ],
            },
          },
        },
      }),
    );
    const r = solve(input(pods, [general()], { existingNodes: [existing] }));
    // free, two, web-any: flexible; pinned and web-ab: zone b (for web-ab, a is over the skew among a and b);
    // web-a: zone a (its only eligible domain is the spread's minimum); anti-a: none
    expect(r.pendingPodsByEffectiveZone).toEqual({
      flexible: 3,
      'test-zone-b': 2,
      'test-zone-a': 1,
      none: 1,
    });
    expect(solve(input([], [general()])).pendingPodsByEffectiveZone).toBeUndefined();
  });

  it('counts pods on existing nodes for the spread', () => {
    const existing: ExistingNode = {
      node: makeNode('n1', {
        labels: { 'topology.kubernetes.io/zone': 'test-zone-a' },
        allocatable: { cpu: '100m', memory: '1Gi', pods: '10' },
      }),
      pods: [
        { ...makePod('old', { labels: { app: 'web' } }), spec: { ...makePod('old').spec, nodeName: 'n1' } },
      ],
    };
    const r = solve(
      input(replicas(2, 'web', { cpu: '1', ...spread('web', 'topology.kubernetes.io/zone') }), [general()], {
        existingNodes: [existing],
      }),
    );
    expect(r.newNodeClaims.map((_, i) => zoneOf(r, i)![0]).sort()).toEqual(['test-zone-b', 'test-zone-c']);
  });

  // Upstream countDomains filters on the Node's spec.taints as they are (pkg/controllers/provisioning/scheduling/
  // topology.go): a readiness.k8s.io/ taint on an initialized node keeps its pods out of a taints-Honor spread.
  it('nodeTaintsPolicy Honor: pods on a node with an untolerated readiness.k8s.io/foo taint do not count', () => {
    const existing: ExistingNode = {
      node: makeNode('n1', {
        labels: {
          'topology.kubernetes.io/zone': 'test-zone-a',
          'karpenter.sh/nodepool': 'general',
          'karpenter.sh/initialized': 'true',
        },
        allocatable: { cpu: '100m', memory: '1Gi', pods: '10' },
        taints: [{ key: 'readiness.k8s.io/foo', effect: 'NoSchedule' }],
      }),
      pods: [
        { ...makePod('old', { labels: { app: 'web' } }), spec: { ...makePod('old').spec, nodeName: 'n1' } },
      ],
    };
    const zones = (policy: 'Honor' | 'Ignore') => {
      const pods = replicas(3, 'web', {
        cpu: '1',
        ...spread('web', 'topology.kubernetes.io/zone', { nodeTaintsPolicy: policy }),
      });
      const r = solve(input(pods, [general()], { existingNodes: [existing] }));
      expect(r.unschedulable).toEqual([]);
      return r.newNodeClaims.flatMap((n, i) => n.pods.map(() => zoneOf(r, i)![0])).sort();
    };
    expect(zones('Honor')).toEqual(['test-zone-a', 'test-zone-b', 'test-zone-c']);
    expect(zones('Ignore')).toEqual(['test-zone-b', 'test-zone-b', 'test-zone-c']);
  });

  it('hostname anti-affinity gives each replica its own NodeClaim; other pods still share', () => {
    const anti = {
      labels: { app: 'db' },
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'db' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    };
    const r = solve(
      input(
        [...replicas(3, 'db', { cpu: '500m', ...anti }), ...replicas(3, 'x', { cpu: '100m' })],
        [general()],
      ),
    );
    expect(r.newNodeClaims).toHaveLength(3);
    expect(r.newNodeClaims.map((n) => n.pods.filter((p) => p.metadata.labels?.app === 'db').length)).toEqual([
      1, 1, 1,
    ]);
  });

  it('places hostname self-anti-affinity pods first, then fills their NodeClaims with the other pods', () => {
    const anti = {
      labels: { app: 'db' },
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'db' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    };
    // cpu-descending order alone would pack the three 1500m pods into one c5.2xlarge first and then open two
    // more NodeClaims for the small db replicas ($0.34 + 2 × $0.085); db first gives 3 × c5.large.
    const r = solve(
      input(
        [
          ...replicas(3, 'web', { cpu: '1500m', memory: '1Gi' }),
          ...replicas(3, 'db', { cpu: '100m', ...anti }),
        ],
        [general()],
      ),
    );
    expect(r.unschedulable).toEqual([]);
    expect(r.newNodeClaims.map((n) => n.cheapest.instanceType.name)).toEqual([
      'c5.large',
      'c5.large',
      'c5.large',
    ]);
    expect(r.newNodeClaims.map((n) => n.pods.map((p) => p.metadata.name?.split('-')[0]).sort())).toEqual([
      ['db', 'web'],
      ['db', 'web'],
      ['db', 'web'],
    ]);
    expect(r.newNodeClaims.reduce((sum, n) => sum + nodeClaimPrice(n), 0)).toBeCloseTo(0.255, 6);
  });

  it('inverse anti-affinity: a running pod that repels app=web keeps new web pods off its node', () => {
    const guard: Pod = {
      ...makePod('guard', { labels: { app: 'guard' } }),
      spec: {
        ...makePod('guard').spec,
        nodeName: 'n1',
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    };
    const existing: ExistingNode = {
      node: makeNode('n1', { labels: { 'kubernetes.io/arch': 'amd64' } }),
      pods: [guard],
    };
    const r = solve(
      input(
        [makePod('web-0', { cpu: '100m', labels: { app: 'web' } }), makePod('other', { cpu: '100m' })],
        [general()],
        { existingNodes: [existing] },
      ),
    );
    const t = Object.fromEntries(r.placements.map((p) => [p.pod.metadata.name, p.target.kind]));
    expect(t).toEqual({ 'web-0': 'new', other: 'existing' });
  });

  it('zonal pod affinity: followers go to the zone of the first replica', () => {
    const aff = {
      labels: { app: 'cache' },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                labelSelector: { matchLabels: { app: 'cache' } },
                topologyKey: 'topology.kubernetes.io/zone',
              },
            ],
          },
        },
      },
    };
    const r = solve(input(replicas(5, 'cache', { cpu: '6', ...aff }), [general()]));
    expect(r.unschedulable).toEqual([]);
    const zones = new Set(r.newNodeClaims.map((_, i) => zoneOf(r, i)!.join()));
    expect(r.newNodeClaims.length).toBeGreaterThan(1);
    expect([...zones]).toEqual(['test-zone-a']);
  });

  it('relaxes preferences: preferred node affinity to a missing label, then ScheduleAnyway', () => {
    const pod = makePod('p', {
      cpu: '1',
      spec: {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 10,
                preference: {
                  matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['s390x'] }],
                },
              },
            ],
          },
        },
      },
    });
    const r = solve({ ...input([pod], [general()]), explain: true });
    expect(r.unschedulable).toEqual([]);
    expect(r.explanations[0]!.details).toContain('relaxed: removed preferred node affinity term (weight 10)');
    expect(r.explanations[0]!.decision).toBe('new nodeclaim #0 (nodepool general, cheapest c5.large)');
  });

  it('tries ORed required node-affinity terms one at a time', () => {
    const pod = makePod('p', {
      cpu: '1',
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['x9'] },
                  ],
                },
                {
                  matchExpressions: [
                    { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
                  ],
                },
              ],
            },
          },
        },
      },
    });
    const r = solve(input([pod], [general()]));
    expect(r.newNodeClaims[0]!.cheapest.instanceType.name).toBe('m5.large');
  });
});

describe('solve: deprecated label keys', () => {
  it('nodeSelector and node affinity on beta.kubernetes.io/* keys mean the well-known keys', () => {
    const bySelector = makePod('sel', {
      cpu: '1',
      spec: { nodeSelector: { 'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': 'arm64' } },
    });
    const byAffinity = makePod('aff', {
      cpu: '1',
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'beta.kubernetes.io/instance-type', operator: 'In', values: ['m5.xlarge'] },
                  ],
                },
              ],
            },
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 1,
                preference: {
                  matchExpressions: [
                    {
                      key: 'failure-domain.beta.kubernetes.io/zone',
                      operator: 'In',
                      values: ['test-zone-b'],
                    },
                  ],
                },
              },
            ],
          },
        },
      },
    });
    const pool = makeNodePool('any', { requirements: [onDemand] });
    const r = solve(input([bySelector, byAffinity], [pool]));
    expect(r.unschedulable).toEqual([]);
    const of = (name: string) => {
      const p = r.placements.find((x) => x.pod.metadata.name === name)!;
      return r.newNodeClaims[(p.target as { index: number }).index]!;
    };
    expect(of('sel').cheapest.instanceType.name).toBe('c6g.large');
    expect(of('sel').requirements).toContainEqual({
      key: 'kubernetes.io/arch',
      operator: 'In',
      values: ['arm64'],
    });
    expect(of('aff').cheapest.instanceType.name).toBe('m5.xlarge');
    expect(of('aff').cheapest.offering.zone).toBe('test-zone-b');
    expect(
      of('aff').requirements.some((q) => q.key.startsWith('beta.') || q.key.startsWith('failure-domain.')),
    ).toBe(false);
  });
});

describe('solve: determinism and bad input', () => {
  it('returns the same result for the same input, independent of pod order', () => {
    const pods = [
      ...replicas(7, 'a', { cpu: '900m', memory: '3Gi' }),
      ...replicas(5, 'b', { cpu: '300m', memory: '512Mi', labels: { app: 'b' } }),
    ];
    const summary = (r: ReturnType<typeof solve>) =>
      r.newNodeClaims.map((n) => [n.cheapest.instanceType.name, n.pods.map((p) => p.metadata.name).sort()]);
    const a = solve(input(pods, [general()]));
    const b = solve(input([...pods].reverse(), [general()]));
    expect(summary(a)).toEqual(summary(b));
  });

  it('reports malformed pods as InvalidPod and keeps scheduling the rest', () => {
    const bad = makePod('bad', { cpu: 'lots' });
    const badAffinity = makePod('bad2', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'Gt', values: ['x'] }] }],
            },
          },
        },
      },
    });
    const r = solve(input([bad, badAffinity, makePod('ok', { cpu: '1' })], [general()]));
    expect(r.unschedulable.map((u) => [u.pod.metadata.name, u.code])).toEqual([
      ['bad', 'InvalidPod'],
      ['bad2', 'InvalidPod'],
    ]);
    expect(r.unschedulable[1]!.message).toBe(
      'requirement on key "k": operator Gt needs exactly one integer value, got [x]',
    );
    expect(r.newNodeClaims).toHaveLength(1);
    expect(solve(input([makePod('x', { cpu: '1' })], [])).unschedulable[0]!.code).toBe('NoNodePool');
  });
});

describe('solve: consolidateAfterDestinations (upstream v1.14 isUnderConsolidateAfter)', () => {
  it('keeps the listed moving pods off the protected existing node; other pods may still land there', () => {
    const existing: ExistingNode = { node: makeNode('fresh'), pods: [] };
    const moving = makePod('moved', { cpu: '500m', memory: '512Mi' });
    const pending = makePod('pending', { cpu: '500m', memory: '512Mi' });
    const guard = { nodes: new Set(['fresh']), podKeys: new Set(['default/moved']) };
    const r = solve(
      input([moving, pending], [general()], {
        existingNodes: [existing],
        consolidateAfterDestinations: guard,
      }),
    );
    const where = Object.fromEntries(
      r.placements.map((p) => [
        p.pod.metadata.name,
        p.target.kind === 'existing' ? p.target.node : p.target.kind,
      ]),
    );
    expect(where).toEqual({ moved: 'new', pending: 'fresh' });
    expect(r.newNodeClaims.map((nc) => nc.cheapest.instanceType.name)).toEqual(['c5.large']);
    // without the guard both fit the existing node (1930m allocatable)
    const open = solve(input([moving, pending], [general()], { existingNodes: [existing] }));
    expect(open.newNodeClaims).toEqual([]);
  });
});
