/**
 * Scenarios C5 and C6 of ../shared/cases/controller-scenarios.md: the disruption controller on explicit passes
 * (no time pump) over the embedded API server, on the FakeClock.
 * - C5: NodePool `a` (3 nodes) and `b` (no nodes), both `budgets: [{nodes: "0"}]`: one pass publishes Normal
 *   `DisruptionBlocked` on `a` for Underutilized, Empty and Drifted, deduplicated per reason for 1 min; `b` gets
 *   none; `karpenter_nodepools_allowed_disruptions{nodepool="a"}` is 0 for each reason.
 * - C6: `consolidateAfter: 30m`: node-b gets a pod at t0 (the pod-events controller, running on its watch, stamps
 *   `lastPodEventTime`); node-e's last pod leaves at t1. node-b is no candidate at t0+10m (no Consolidatable) and
 *   is one at t0+31m; node-e is kept at t1+10m and deleted as Empty at t1+31m.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/apis/core.ts';
import { NodePoolHashVersion, nodePoolHash } from '../../../src/apis/hash.ts';
import type { NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { DisruptionController } from '../../../src/controllers/disruption/controller.ts';
import { syncDisruptionConditions } from '../../../src/controllers/nodeclaim/disruption/conditions.ts';
import { PodEventsController } from '../../../src/controllers/nodeclaim/disruption/podevents.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { computeDisruption } from '../../../src/disruption/index.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type ControllerProcess,
  createNodePool,
  type Env,
  eventually,
  readyNode,
  startEnv,
} from '../provisioning/harness.ts';

let env: Env | undefined;
const stops: AbortController[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) s.abort();
  await env?.stop();
  env = undefined;
});
const MIN = 60_000;

/** A registered, initialized NodeClaim + Ready Node `name` of `pool` (initialized at the clock's start). */
async function managedNode(e: Env, name: string, type: string, pool: NodePool): Promise<void> {
  const node = readyNode(name, type, pool.metadata.name);
  const nc: NodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      labels: { ...node.metadata.labels, 'karpenter.sh/capacity-type': 'on-demand' },
      annotations: {
        'karpenter.sh/nodepool-hash': nodePoolHash(pool),
        'karpenter.sh/nodepool-hash-version': NodePoolHashVersion,
      },
    },
    spec: {
      nodeClassRef: pool.spec.template.spec.nodeClassRef,
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: [type] }],
    },
  };
  node.metadata.labels = { ...node.metadata.labels, 'karpenter.sh/capacity-type': 'on-demand' };
  const created = (await e.client.create(nc)) as NodeClaim;
  const at = new Date(e.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await e.client.updateStatus({
    ...created,
    status: {
      providerID: node.spec?.providerID,
      nodeName: name,
      capacity: node.status?.capacity,
      allocatable: node.status?.allocatable,
      conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
        type,
        status: 'True',
        reason: type,
        message: '',
        lastTransitionTime: at,
      })),
    },
  } as NodeClaim);
  const n = await e.client.create(node);
  await e.client.updateStatus({ ...n, status: node.status });
}

/** A Running ReplicaSet pod `name` bound to `node`. */
async function boundPod(e: Env, name: string, node: string, cpu: string): Promise<void> {
  const { status: _s, ...rest } = pendingPod(name, { cpu, memory: '1Gi', ownerKind: 'ReplicaSet' });
  const meta = { ...rest.metadata };
  delete meta.uid;
  delete meta.creationTimestamp;
  const stored = (await e.client.create({
    ...rest,
    metadata: meta,
    spec: { ...rest.spec, nodeName: node },
  } as Pod)) as Pod;
  await e.client.updateStatus({
    ...stored,
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  } as Pod);
}

/** The environment: API timestamps on the fake clock, a controller process and a DisruptionController. */
async function setUp(
  pools: NodePool[],
  nodes: Array<[name: string, type: string, pool: string]>,
): Promise<{ e: Env; p: ControllerProcess; dc: DisruptionController }> {
  const e = await startEnv();
  env = e;
  Object.defineProperty(e.sim.apiServer.store, 'now', { value: () => e.clock.now() });
  const stored = new Map<string, NodePool>();
  for (const np of pools) stored.set(np.metadata.name, await createNodePool(e.client, np));
  for (const [name, type, pool] of nodes) await managedNode(e, name, type, stored.get(pool) as NodePool);
  const p = await e.startProcess();
  await eventually(
    () => p.cluster.stateNodes().filter((sn) => sn.node && sn.nodeClaim).length === nodes.length,
    'the nodes in state',
  );
  const dc = new DisruptionController({
    client: e.client,
    cluster: p.cluster,
    cloudProvider: p.provider,
    clock: e.clock,
    logger: silentLogger(),
    recorder: p.recorder,
    registry: p.registry,
    launcher: p.provisioner.launcher,
    validationSeconds: 0,
  });
  return { e, p, dc };
}

/** One disruption pass; due timers at the current time (the 0 s validation wait) fire, time does not move. */
const pass = async (e: Env, dc: DisruptionController) => {
  let done = false;
  const running = dc.reconcile(new AbortController().signal).finally(() => {
    done = true;
  });
  while (!done) {
    e.clock.advance(0);
    await new Promise((r) => setTimeout(r, 5));
  }
  await running;
  return dc.lastPass;
};

/** DisruptionBlocked Events on NodePool `name`: [message, count]. */
async function blocked(e: Env, p: ControllerProcess, name: string): Promise<Array<[string, number]>> {
  await p.recorder.flush();
  return (await e.client.list('Event')).items
    .filter((x) => x.reason === 'DisruptionBlocked' && x.involvedObject.kind === 'NodePool')
    .filter((x) => x.involvedObject.name === name)
    .map((x): [string, number] => [x.message ?? '', x.count ?? 1])
    .sort();
}

const zeroBudget = (name: string): NodePool => {
  const np = testNodePool(name, { labels: { pool: name } });
  np.spec.disruption = { ...np.spec.disruption, budgets: [{ nodes: '0' }] };
  return np;
};

describe('a zero budget blocks only NodePools that have nodes (C5)', () => {
  it('NodePool a (3 nodes) gets DisruptionBlocked per reason, deduplicated for 1 min; b (no nodes) gets none', async () => {
    const { e, p, dc } = await setUp(
      [zeroBudget('a'), zeroBudget('b')],
      [
        ['a-0', 'm5.xlarge', 'a'],
        ['a-1', 'm5.xlarge', 'a'],
        ['a-2', 'm5.xlarge', 'a'],
      ],
    );
    const first = await pass(e, dc);
    expect(first?.chosen).toBeUndefined();
    const msg = (r: string) => `No allowed disruptions for disruption reason ${r} due to blocking budget`;
    expect(await blocked(e, p, 'a')).toEqual([
      [msg('Drifted'), 1],
      [msg('Empty'), 1],
      [msg('Underutilized'), 1],
    ]);
    expect(await blocked(e, p, 'b')).toEqual([]);
    const gauge = p.registry.getSingleMetric('karpenter_nodepools_allowed_disruptions');
    const values = (await gauge?.get())?.values ?? [];
    const of = (pool: string) =>
      values
        .filter((v) => v.labels.nodepool === pool)
        .map((v) => [v.labels.reason, v.value])
        .sort();
    expect(of('a')).toEqual([
      ['Drifted', 0],
      ['Empty', 0],
      ['Underutilized', 0],
    ]);
    const consuming = (
      await p.registry.getSingleMetric('karpenter_nodepools_nodes_consuming_budgets')?.get()
    )?.values
      .filter((v) => v.labels.nodepool === 'a')
      .map((v) => v.value);
    expect(consuming).toEqual([0, 0, 0]);
    // within 1 min: nothing new; after 1 min: published again (the Event's count goes up)
    e.clock.advance(30_000);
    await pass(e, dc);
    expect((await blocked(e, p, 'a')).map(([, n]) => n)).toEqual([1, 1, 1]);
    e.clock.advance(31_000);
    await pass(e, dc);
    expect((await blocked(e, p, 'a')).map(([, n]) => n)).toEqual([2, 2, 2]);
    expect(await blocked(e, p, 'b')).toEqual([]);
  });
});

describe('consolidateAfter counts from the last pod event (C6)', () => {
  it('node-b is no candidate 10 min after a pod bound, one at 31 min; node-e is deleted as Empty 31 min after its last pod left', async () => {
    const np = testNodePool('c6');
    np.spec.disruption = {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '30m',
      budgets: [{ nodes: '100%' }],
    };
    const { e, p, dc } = await setUp(
      [np],
      [
        ['node-b', 'm5.2xlarge', 'c6'],
        ['node-e', 'm5.large', 'c6'],
      ],
    );
    await boundPod(e, 'e-0', 'node-e', '100m');
    // the pod-events controller runs on its watches
    const stop = new AbortController();
    stops.push(stop);
    const podEvents = new PodEventsController({ client: e.client, clock: e.clock, logger: silentLogger() });
    void podEvents.start(stop.signal);
    const lastPodEvent = async (nc: string) =>
      Date.parse((await e.client.get('NodeClaim', nc)).status?.lastPodEventTime ?? '');
    e.clock.advance(60 * MIN); // long past initialization
    // t1: node-e's last pod is removed
    const t1 = e.clock.now();
    await e.client.delete('Pod', 'e-0', 'default', { gracePeriodSeconds: 0 });
    await eventually(async () => (await lastPodEvent('node-e')) === t1, 'node-e lastPodEventTime = t1');
    // t0 = t1 + 2 min: a small pod is bound to node-b (an m5.2xlarge: underutilized)
    e.clock.advance(2 * MIN);
    const t0 = e.clock.now();
    await boundPod(e, 'b-0', 'node-b', '500m');
    await eventually(async () => (await lastPodEvent('node-b')) === t0, 'node-b lastPodEventTime = t0');
    await eventually(() => p.cluster.getPod('default/e-0') === undefined, 'pod e-0 gone from state');
    await eventually(() => p.cluster.getPod('default/b-0') !== undefined, 'pod b-0 in state');

    const consolidatable = async (nc: string) =>
      (await e.client.get('NodeClaim', nc)).status?.conditions?.find((c) => c.type === 'Consolidatable')
        ?.status;
    /** The candidates the pure core's commands would disrupt now (no command is executed). */
    const candidates = async () =>
      computeDisruption(await dc.input()).commands.flatMap((c) =>
        c.candidates.map((x) => `${c.method}:${x.name}`),
      );
    // t1+10m, t0+10m: neither is a candidate, nothing is chosen, no Consolidatable condition
    for (const at of [t1 + 10 * MIN, t0 + 10 * MIN]) {
      e.clock.set(at);
      const r = await pass(e, dc);
      expect(r?.chosen).toBeUndefined();
      expect(await consolidatable('node-b')).toBeUndefined();
      expect(await consolidatable('node-e')).toBeUndefined();
    }
    expect((await e.client.get('NodeClaim', 'node-e')).metadata.deletionTimestamp).toBeUndefined();
    // t1+31m (t0+29m): node-e is deleted as Empty; node-b is still no candidate
    e.clock.set(t1 + 31 * MIN);
    expect(await candidates()).toEqual(['Emptiness:node-e']);
    const r = await pass(e, dc);
    expect(r?.executed?.method).toBe('Emptiness');
    expect(r?.executed?.candidates.map((x) => x.name)).toEqual(['node-e']);
    expect((await e.client.tryGet('NodeClaim', 'node-e'))?.metadata.deletionTimestamp ?? 'gone').toBeTruthy();
    expect(await consolidatable('node-b')).toBeUndefined();
    // t0+31m: node-b is a candidate (Consolidatable=True)
    e.clock.set(t0 + 31 * MIN);
    await eventually(
      () => p.cluster.getNodeClaim('node-e') === undefined,
      'node-e NodeClaim gone from state',
    );
    expect((await candidates()).filter((c) => c.endsWith(':node-b')).length).toBeGreaterThan(0);
    await syncDisruptionConditions(e.client, e.clock, await dc.input());
    expect(await consolidatable('node-b')).toBe('True');
    // a further pod bound to node-b restarts its 30 minutes
    e.clock.advance(MIN);
    const t2 = e.clock.now();
    await boundPod(e, 'b-1', 'node-b', '500m');
    await eventually(async () => (await lastPodEvent('node-b')) === t2, 'node-b lastPodEventTime = t2');
    await eventually(() => p.cluster.getPod('default/b-1') !== undefined, 'pod b-1 in state');
    await syncDisruptionConditions(e.client, e.clock, await dc.input());
    expect(await consolidatable('node-b')).toBeUndefined();
    expect((await candidates()).filter((c) => c.endsWith(':node-b'))).toEqual([]);
  });
});

describe('Balanced consolidation events', () => {
  it('an approved Balanced move publishes ConsolidationApproved with its score on the Node and NodeClaim', async () => {
    const np = testNodePool('bal');
    np.spec.disruption = {
      consolidationPolicy: 'Balanced',
      consolidateAfter: '0s',
      budgets: [{ nodes: '100%' }],
    };
    const { e, p, dc } = await setUp(
      [np],
      [
        ['x', 'm5.2xlarge', 'bal'],
        ['y', 'm5.xlarge', 'bal'],
      ],
    );
    for (let i = 0; i < 6; i++) await boundPod(e, `x${i}`, 'x', '500m');
    await boundPod(e, 'y0', 'y', '3');
    await eventually(() => p.cluster.getPod('default/y0') !== undefined, 'pods in state');
    await eventually(() => p.cluster.listPods().length === 7, 'all pods in state');
    e.clock.advance(60 * MIN);
    const r = await pass(e, dc);
    expect(r?.chosen?.method).toBe('SingleNodeConsolidation');
    expect(r?.chosen?.candidates.map((c) => c.name)).toEqual(['y']);
    await p.recorder.flush();
    const approved = (await e.client.list('Event')).items
      .filter((x) => x.reason === 'ConsolidationApproved')
      .map((x) => [x.involvedObject.kind, x.involvedObject.name, x.type, x.message])
      .sort();
    // savings $0.192 of $0.576 (33.3%), disruption 2 of 9 (22.2%): score 1.5
    const msg = 'score 1.50 >= threshold 0.50 (k: 2, savings 33.3%, disruption 22.2%)';
    expect(approved).toEqual([
      ['Node', 'y', 'Normal', msg],
      ['NodeClaim', 'y', 'Normal', msg],
    ]);
    // upstream v1.14 metrics.go ConsolidationMovesTotal / ConsolidationScoreHistogram, fed by balanced.go: first
    // multi-node's batch [y, x] (one cheaper replacement for both, score 0.469 < 0.5) is counted rejected once
    // (EmitMultiNodeEvents), then single-node's move of y is counted approved (ApproveCommand).
    const moves =
      (await p.registry.getSingleMetric('karpenter_consolidation_moves_total')?.get())?.values ?? [];
    expect(moves.map((v) => [v.labels, v.value])).toEqual([
      [{ decision: 'rejected', nodepool: 'bal', policy: 'Balanced' }, 1],
      [{ decision: 'approved', nodepool: 'bal', policy: 'Balanced' }, 1],
    ]);
    const score = (await p.registry.getSingleMetric('karpenter_consolidation_score')?.get())?.values ?? [];
    const series = (decision: string, suffix: string) =>
      score.find(
        (v) =>
          (v as { metricName?: string }).metricName === `karpenter_consolidation_score_${suffix}` &&
          v.labels.decision === decision,
      )?.value;
    expect([series('approved', 'count'), series('rejected', 'count')]).toEqual([1, 1]);
    expect(series('approved', 'sum')).toBeCloseTo(1.5, 10);
    expect(series('rejected', 'sum')).toBeCloseTo(0.46875, 10);
  });
});

describe('consolidation pipeline events (upstream ConsolidationCandidate / ConsolidationRejected)', () => {
  const underutilized = (): NodePool => {
    const np = testNodePool('r');
    np.spec.disruption = {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '100%' }],
    };
    return np;
  };
  const events = async (e: Env, p: ControllerProcess, reason: string) => {
    await p.recorder.flush();
    return (await e.client.list('Event')).items
      .filter((x) => x.reason === reason)
      .map((x) => [x.involvedObject.kind, x.involvedObject.name, x.type, x.message])
      .sort();
  };

  it('a single-node replace publishes ConsolidationCandidate with the command and its savings on the Node and NodeClaim', async () => {
    const { e, p, dc } = await setUp([underutilized()], [['big', 'm5.2xlarge', 'r']]);
    await boundPod(e, 'small', 'big', '500m');
    await eventually(() => p.cluster.getPod('default/small') !== undefined, 'pod in state');
    e.clock.advance(60 * MIN);
    const r = await pass(e, dc);
    expect(r?.chosen?.method).toBe('SingleNodeConsolidation');
    expect(r?.chosen?.decision).toBe('replace');
    const savings = r!.chosen!.savingsUSDPerHour;
    // m5.2xlarge $0.384/h replaced by the cheapest fit, m1.small $0.044/h
    expect(r?.chosen?.replacements[0]?.cheapest.instanceType.name).toBe('m1.small');
    expect(savings).toBeCloseTo(0.34, 10);
    const msg = 'Consolidation candidate: replace: [big] -> [1 replacement] (savings: $0.34)';
    expect(await events(e, p, 'ConsolidationCandidate')).toEqual([
      ['Node', 'big', 'Normal', msg],
      ['NodeClaim', 'big', 'Normal', msg],
    ]);
    expect(await events(e, p, 'ConsolidationRejected')).toEqual([]);
  });

  it('a single-node command whose node turns do-not-disrupt during validation publishes ConsolidationRejected (churn)', async () => {
    const { e, p, dc } = await setUp([underutilized()], [['big', 'm5.2xlarge', 'r']]);
    await boundPod(e, 'small', 'big', '500m');
    await eventually(() => p.cluster.getPod('default/small') !== undefined, 'pod in state');
    e.clock.advance(60 * MIN);
    // the state after the validation wait: a user annotated the candidate karpenter.sh/do-not-disrupt
    const input = dc.input.bind(dc);
    let calls = 0;
    dc.input = async () => {
      const i = await input();
      if (++calls === 2)
        for (const dn of i.nodes)
          dn.node.metadata.annotations = {
            ...dn.node.metadata.annotations,
            'karpenter.sh/do-not-disrupt': 'true',
          };
      return i;
    };
    const r = await pass(e, dc);
    expect(r?.abandoned).toMatch(/^validation: /);
    const msg = 'Consolidation rejected: replace: [big] -> [1 replacement], reason: churn (savings: $0.34)';
    expect(await events(e, p, 'ConsolidationRejected')).toEqual([
      ['Node', 'big', 'Normal', msg],
      ['NodeClaim', 'big', 'Normal', msg],
    ]);
  });
});
