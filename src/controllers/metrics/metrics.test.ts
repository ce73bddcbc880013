import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../apis/core.ts';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import type { CloudProvider } from '../../cloudprovider/types.ts';
import { FakeClock } from '../../kube/clock.ts';
import type { Cluster } from '../../state/cluster.ts';
import { PodSchedulingTimes } from '../../state/podscheduling.ts';
import { metricValue, resourceTypeLabel } from './common.ts';
import { INSTANCE_TYPE_METRICS, InstanceTypeMetricsController } from './instancetype.ts';
import { podsLimits } from './node.ts';
import { nodeClaimPhase } from './nodeclaim.ts';
import { NODEPOOL_METRICS, NodePoolMetricsController } from './nodepool.ts';
import { ownerSelfLink, POD_METRICS, PodBindingMetrics, PodMetricsController } from './pod.ts';
import { POD_PROVISIONING_METRICS } from './podprovisioning.ts';

const pod = (limits: Record<string, string>, owner?: { kind: string; name: string }): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'p',
    namespace: 'shop',
    ...(owner
      ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: 'u' }] }
      : {}),
  },
  spec: { containers: [{ name: 'a', image: 'x', resources: { limits } }] },
});

describe('metrics helpers', () => {
  it('labels and units follow upstream', () => {
    expect(resourceTypeLabel('ephemeral-storage')).toBe('ephemeral_storage');
    expect(resourceTypeLabel('nvidia.com/gpu')).toBe('nvidia.com/gpu');
    expect(metricValue('cpu', 1930)).toBe(1.93);
    expect(metricValue('memory', 1024)).toBe(1024);
  });

  it('sums container limits', () => {
    expect(podsLimits([pod({ cpu: '500m', memory: '1Gi' }), pod({ cpu: '1' })])).toEqual({
      cpu: 1500,
      memory: 2 ** 30,
    });
    expect(podsLimits([pod({ cpu: 'lots' })])).toEqual({});
  });

  it('builds the owner self link of the first owner reference', () => {
    expect(ownerSelfLink(pod({}, { kind: 'ReplicaSet', name: 'web-1' }))).toBe(
      '/apis/apps/v1/namespaces/shop/replicasets/web-1',
    );
    expect(ownerSelfLink(pod({}))).toBe('');
  });

  it('derives the NodeClaim lifecycle phase from its conditions', () => {
    const nc = (conds: string[], deleting = false): NodeClaim =>
      ({
        metadata: { name: 'n', ...(deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}) },
        spec: { nodeClassRef: { group: 'g', kind: 'k', name: 'n' }, requirements: [] },
        status: { conditions: conds.map((type) => ({ type, status: 'True' })) },
      }) as unknown as NodeClaim;
    expect(nodeClaimPhase(nc([]))).toBe('Launching');
    expect(nodeClaimPhase(nc(['Launched']))).toBe('Registering');
    expect(nodeClaimPhase(nc(['Launched', 'Registered']))).toBe('Initializing');
    expect(nodeClaimPhase(nc(['Launched', 'Registered', 'Initialized']))).toBe('Ready');
    expect(nodeClaimPhase(nc(['Launched'], true))).toBe('Deleting');
  });

  it('rebuilds NodePool usage and limit gauges on every pass', async () => {
    const np = (
      name: string,
      limits?: Record<string, string>,
      resources?: Record<string, string>,
    ): NodePool =>
      ({
        metadata: { name },
        spec: { ...(limits ? { limits } : {}), template: { spec: {} } },
        ...(resources ? { status: { resources } } : {}),
      }) as unknown as NodePool;
    let pools = [np('a', { cpu: '100', memory: '64Gi' }, { cpu: '2500m' }), np('b')];
    const cluster = {
      listNodePools: () => pools,
      nodePoolUsage: () => ({ b: { cpu: 4000, 'ephemeral-storage': 10 } }),
    } as unknown as Cluster;
    const registry = new Registry();
    const c = new NodePoolMetricsController({
      cluster,
      clock: new FakeClock(),
      logger: pino({ level: 'silent' }),
      registry,
    });
    expect(c.name).toBe('metrics.nodepool');
    const series = async (metric: string) =>
      Object.fromEntries(
        (await registry.getSingleMetric(metric)!.get()).values.map((v) => [
          `${v.labels.nodepool}/${v.labels.resource_type}`,
          v.value,
        ]),
      );
    c.update();
    expect(await series(NODEPOOL_METRICS.usage)).toEqual({
      'a/cpu': 2.5,
      'b/cpu': 4,
      'b/ephemeral_storage': 10,
    });
    expect(await series(NODEPOOL_METRICS.limit)).toEqual({ 'a/cpu': 100, 'a/memory': 64 * 2 ** 30 });
    pools = [np('b')];
    c.update();
    expect(await series(NODEPOOL_METRICS.usage)).toEqual({ 'b/cpu': 4, 'b/ephemeral_storage': 10 });
    expect(await series(NODEPOOL_METRICS.limit)).toEqual({});
  });
  it('pod binding metrics: unbound/unstarted seconds while pending, one bound duration per pod', async () => {
    const registry = new Registry();
    const created = Date.parse('2026-01-01T00:00:00Z');
    const m = new PodBindingMetrics(registry, created);
    const p = (phase: string, scheduledAt?: string): Pod =>
      ({
        metadata: { name: 'web', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { containers: [] },
        status: {
          phase,
          conditions: scheduledAt
            ? [{ type: 'PodScheduled', status: 'True', lastTransitionTime: scheduledAt }]
            : [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
        },
      }) as unknown as Pod;
    const values = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
    m.reset();
    m.record(p('Pending'), 'shop/web', created + 42_000);
    expect((await values(POD_METRICS.unbound)).map((v) => [v.labels, v.value])).toEqual([
      [{ name: 'web', namespace: 'shop' }, 42],
    ]);
    expect((await values(POD_METRICS.unstarted))[0]!.value).toBe(42);
    m.reset();
    m.record(p('Pending', '2026-01-01T00:01:05Z'), 'shop/web', created + 70_000);
    expect(await values(POD_METRICS.unbound)).toEqual([]);
    expect((await values(POD_METRICS.unstarted))[0]!.value).toBe(70);
    m.reset();
    m.record(p('Running', '2026-01-01T00:01:05Z'), 'shop/web', created + 80_000);
    const bound = await values(POD_METRICS.bound);
    expect(bound.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count'))!.value).toBe(1);
    expect(bound.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'))!.value).toBe(65);
    expect(await values(POD_METRICS.unstarted)).toEqual([]);
  });
});

describe('pod provisioning metrics (upstream karpenter_pods_provisioning_*)', () => {
  it('measures from first seen / first schedulable in cluster state, and forgets a started pod', async () => {
    const registry = new Registry();
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const clock = new FakeClock(t0);
    const times = new PodSchedulingTimes();
    let pods: Pod[] = [];
    const cluster = {
      listPods: () => pods,
      getNode: () => undefined,
      podScheduling: times,
    } as unknown as Cluster;
    const c = new PodMetricsController({ cluster, clock, logger: pino({ level: 'silent' }), registry });
    const at = (s: number) => new Date(t0 + s * 1000).toISOString();
    const web = (phase: string, scheduledAt?: number, readyAt?: number): Pod =>
      ({
        metadata: { name: 'web', namespace: 'shop', creationTimestamp: at(0) },
        spec: { containers: [] },
        status: {
          phase,
          conditions: [
            scheduledAt === undefined
              ? { type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }
              : { type: 'PodScheduled', status: 'True', lastTransitionTime: at(scheduledAt) },
            ...(readyAt === undefined
              ? []
              : [{ type: 'Ready', status: 'True', lastTransitionTime: at(readyAt) }]),
          ],
        },
      }) as unknown as Pod;
    const series = async (name: string) =>
      (await registry.getSingleMetric(name)!.get()).values.map((v) => [
        (v as { metricName?: string }).metricName ?? name,
        v.labels,
        v.value,
      ]);
    const countAndSum = async (name: string) =>
      (await series(name)).filter(([n]) => !String(n).endsWith('_bucket')).map(([n, , v]) => [n, v]);
    const id = { name: 'web', namespace: 'shop' };

    // seen provisionable at 2 s, no decision yet at 5 s
    times.ack(['shop/web'], t0 + 2_000);
    pods = [web('Pending')];
    clock.set(t0 + 5_000);
    c.update();
    expect(await series(POD_PROVISIONING_METRICS.undecided)).toEqual([
      [POD_PROVISIONING_METRICS.undecided, id, 3],
    ]);
    expect(await series(POD_PROVISIONING_METRICS.unbound)).toEqual([]);

    // a simulation placed it at 6 s; at 20 s it is still unbound and unstarted since then
    times.markDecisions([], ['shop/web'], t0 + 6_000);
    clock.set(t0 + 20_000);
    c.update();
    expect(await series(POD_PROVISIONING_METRICS.undecided)).toEqual([]);
    expect(await series(POD_PROVISIONING_METRICS.unbound)).toEqual([
      [POD_PROVISIONING_METRICS.unbound, id, 14],
    ]);
    expect(await series(POD_PROVISIONING_METRICS.unstarted)).toEqual([
      [POD_PROVISIONING_METRICS.unstarted, id, 14],
    ]);

    // bound at 31 s (Pending): bound duration 25 s; unstarted goes on
    pods = [web('Pending', 31)];
    clock.set(t0 + 32_000);
    c.update();
    expect(await countAndSum(POD_PROVISIONING_METRICS.bound)).toEqual([
      [`${POD_PROVISIONING_METRICS.bound}_sum`, 25],
      [`${POD_PROVISIONING_METRICS.bound}_count`, 1],
    ]);
    expect(await series(POD_PROVISIONING_METRICS.unbound)).toEqual([]);
    expect(await series(POD_PROVISIONING_METRICS.unstarted)).toEqual([
      [POD_PROVISIONING_METRICS.unstarted, id, 26],
    ]);

    // Running at 36 s but not Ready (a failing readiness probe): not started yet, as upstream waits for Ready
    pods = [web('Running', 31)];
    clock.set(t0 + 37_000);
    c.update();
    expect(await countAndSum(POD_PROVISIONING_METRICS.startup)).toEqual([
      [`${POD_PROVISIONING_METRICS.startup}_sum`, 0],
      [`${POD_PROVISIONING_METRICS.startup}_count`, 0],
    ]);
    const summaryCount = async () =>
      (await series(POD_METRICS.startup)).find(([n]) => n === `${POD_METRICS.startup}_count`)?.[2];
    expect(await summaryCount()).toBe(0);
    // upstream sets the unstarted gauge only while the pod is Pending
    expect(await series(POD_PROVISIONING_METRICS.unstarted)).toEqual([]);

    // Ready at 40 s: startup 34 s, gauges gone, the pod's times forgotten; later passes observe nothing more
    pods = [web('Running', 31, 40)];
    clock.set(t0 + 41_000);
    c.update();
    c.update();
    expect(await countAndSum(POD_PROVISIONING_METRICS.startup)).toEqual([
      [`${POD_PROVISIONING_METRICS.startup}_sum`, 34],
      [`${POD_PROVISIONING_METRICS.startup}_count`, 1],
    ]);
    expect(await series(POD_PROVISIONING_METRICS.unstarted)).toEqual([]);
    expect(times.size).toBe(0);
    expect(await summaryCount()).toBe(1);
    expect((await countAndSum(POD_PROVISIONING_METRICS.bound))[1]).toEqual([
      `${POD_PROVISIONING_METRICS.bound}_count`,
      1,
    ]);
  });

  it('a pod never found schedulable gets no provisioning durations, and a failed pod is forgotten', async () => {
    const registry = new Registry();
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const times = new PodSchedulingTimes();
    const failed = {
      metadata: { name: 'job', namespace: 'shop', creationTimestamp: new Date(t0).toISOString() },
      spec: { containers: [] },
      status: { phase: 'Failed', conditions: [] },
    } as unknown as Pod;
    const cluster = {
      listPods: () => [failed],
      getNode: () => undefined,
      podScheduling: times,
    } as unknown as Cluster;
    times.ack(['shop/job'], t0);
    times.markDecisions(['shop/job'], [], t0 + 1_000);
    const c = new PodMetricsController({
      cluster,
      clock: new FakeClock(t0 + 2_000),
      logger: pino({ level: 'silent' }),
      registry,
    });
    c.update();
    expect(times.size).toBe(0);
    const count = (await registry.getSingleMetric(POD_PROVISIONING_METRICS.startup)!.get()).values.find((v) =>
      (v as { metricName?: string }).metricName?.endsWith('_count'),
    );
    expect(count?.value ?? 0).toBe(0);
  });
});

describe('NodePool cost (upstream karpenter_nodepools_cost_total, pkg/state/cost)', () => {
  const offering = (zone: string, capacityType: string, priceUSDPerHour: number, available = true) => ({
    zone,
    capacityType,
    priceUSDPerHour,
    available,
    requirements: [],
  });
  const types = [
    {
      name: 'm5.large',
      capacity: { cpu: 2000 },
      offerings: [offering('a', 'on-demand', 0.096), offering('a', 'spot', 0.04, false)],
    },
    { name: 'c5.xlarge', capacity: { cpu: 4000 }, offerings: [offering('b', 'on-demand', 0.17)] },
  ];
  const claim = (name: string, pool: string, labels: Record<string, string>): NodeClaim =>
    ({
      metadata: { name, labels: { 'karpenter.sh/nodepool': pool, ...labels } },
      spec: { nodeClassRef: { group: 'g', kind: 'k', name: 'n' }, requirements: [] },
    }) as unknown as NodeClaim;
  const launched = (it: string, zone: string, ct: string) => ({
    'node.kubernetes.io/instance-type': it,
    'topology.kubernetes.io/zone': zone,
    'karpenter.sh/capacity-type': ct,
  });

  it('sums the offering price of each launched NodeClaim per NodePool; an unknown offering counts an error', async () => {
    expect(INSTANCE_TYPE_METRICS.nodePoolCost).toBe('karpenter_nodepools_cost_total');
    expect(INSTANCE_TYPE_METRICS.costTrackerErrors).toBe('karpenter_nodepools_cost_tracker_errors_total');
    const registry = new Registry();
    const pools = ['web', 'batch', 'idle'].map((name) => ({ metadata: { name } }) as NodePool);
    let claims: NodeClaim[] = [
      claim('web-1', 'web', launched('m5.large', 'a', 'on-demand')),
      claim('web-2', 'web', launched('m5.large', 'a', 'spot')), // unavailable now, still priced
      claim('web-3', 'web', {}), // not launched yet: no labels, not counted
      claim('batch-1', 'batch', launched('c5.xlarge', 'b', 'on-demand')),
      claim('batch-2', 'batch', launched('c5.xlarge', 'c', 'on-demand')), // no such offering
    ];
    const c = new InstanceTypeMetricsController({
      cloudProvider: { instanceTypes: async () => types } as unknown as CloudProvider,
      nodePools: () => pools,
      nodeClaims: () => claims,
      clock: new FakeClock(0),
      logger: pino({ level: 'silent' }),
      registry,
    });
    await c.update();
    const cost = async () =>
      Object.fromEntries(
        (await registry.getSingleMetric(INSTANCE_TYPE_METRICS.nodePoolCost)!.get()).values.map((v) => [
          v.labels.nodepool,
          Number(v.value.toFixed(6)),
        ]),
      );
    expect(await cost()).toEqual({ web: 0.136, batch: 0.17, idle: 0 });
    const errors = await registry.getSingleMetric(INSTANCE_TYPE_METRICS.costTrackerErrors)!.get();
    expect(errors.values.map((v) => [v.labels.nodepool, v.value])).toEqual([['batch', 1]]);
    // a NodeClaim gone: the next pass drops its price
    claims = claims.filter((x) => x.metadata.name !== 'web-1');
    await c.update();
    expect(await cost()).toEqual({ web: 0.04, batch: 0.17, idle: 0 });
  });
});
