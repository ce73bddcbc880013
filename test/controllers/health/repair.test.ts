/**
 * Node auto-repair (`node.health`, scenario C4 of ../shared/cases/controller-scenarios.md) through the embedded API
 * server and the real client: a NodePool without terminationGracePeriod and 10 nodes; a node whose kubelet stops
 * (Ready=Unknown) is left alone for 29 min and repaired at 30 min (the aws provider's policies) although a PDB
 * `minAvailable: 100%` covers its pod; 3 of 10 unhealthy nodes block repair with `NodeRepairBlocked`; with the
 * `NodeRepair` gate off the operator runs no health controller. Time is the env's FakeClock; each step is one
 * explicit reconcile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudProvider } from '../../../src/cloudprovider/types.ts';
import { isNodeClaimNotFoundError } from '../../../src/cloudprovider/types.ts';
import { NodeHealthController } from '../../../src/controllers/node/health/controller.ts';
import type { NodeTerminationController } from '../../../src/controllers/node/termination/controller.ts';
import { NodeClaimTermination } from '../../../src/controllers/nodeclaim/lifecycle/termination.ts';
import { startTestEnv, type TestEnv } from '../../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { createOperator } from '../../../src/operator/operator.ts';
import { DEFAULT_FEATURE_GATES, embeddedOptions } from '../../../src/operator/options.ts';
import {
  guardedPDB,
  guardedPod,
  kubeletStops as kubeletStopsShared,
  launchNode as launchShared,
  MIN,
  nodeTermination,
  repairNodePool,
  rfc,
  TerminationTimestamp as TS,
  withAwsRepairPolicies,
} from '../scenarios.ts';

let env: TestEnv;
/** The kwok provider answering the aws provider's repair policies (Ready False/Unknown 30 min, ...). */
let provider: CloudProvider;
let health: NodeHealthController;
let termination: NodeTerminationController;
const NS = 'w';

beforeAll(async () => {
  env = await startTestEnv();
  Object.defineProperty(env.cluster.store, 'now', { value: () => env.clock.now() });
  await env.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await env.client.create(repairNodePool);
  provider = withAwsRepairPolicies(env.provider);
  const deps = {
    client: env.client,
    cloudProvider: provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
  };
  health = new NodeHealthController(deps);
  termination = nodeTermination(deps);
});
afterAll(async () => env.stop());

const launchNode = (name: string, nodePool = 'default', annotations?: Record<string, string>) =>
  launchShared(env, name, { nodePool, ...(annotations ? { annotations } : {}) });
const kubeletStops = (name: string) => kubeletStopsShared(env, name);

const nodeClaim = (name: string) => env.client.get('NodeClaim', name);

describe('node repair (C4)', () => {
  it('repairs the Unknown node at 30 min, not at 29, deleting its PDB-protected pod; the instance is terminated', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `r-${i}`);
    for (const n of names) await launchNode(n);
    await env.client.create(guardedPod(NS));
    await env.client.patchStatus(
      'Pod',
      'guarded',
      NS,
      { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      { type: 'merge' },
    );
    await env.client.create(guardedPDB(NS));
    await env.cluster.store.settle();
    const t0 = env.clock.now();
    await kubeletStops('r-0');
    // healthy nodes: nothing to do, no requeue
    expect(await health.reconcile('r-1')).toEqual({});

    env.clock.advance(29 * MIN);
    expect(await health.reconcile('r-0')).toEqual({ requeueAfter: 60 });
    let nc = await nodeClaim('r-0');
    expect(nc.metadata.deletionTimestamp).toBeUndefined();
    expect(nc.metadata.annotations?.[TS]).toBeUndefined();

    env.clock.advance(1 * MIN);
    expect(await health.reconcile('r-0')).toEqual({});
    nc = await nodeClaim('r-0');
    expect(nc.metadata.deletionTimestamp).toBe(rfc(t0 + 30 * MIN));
    expect(nc.metadata.annotations?.[TS]).toBe(rfc(t0 + 30 * MIN));
    const labels = { nodepool: 'default', capacity_type: 'on-demand' };
    expect(await env.metric('karpenter_nodeclaims_disrupted_total', { reason: 'unhealthy', ...labels })).toBe(
      1,
    );
    expect(
      await env.metric('karpenter_nodeclaims_unhealthy_disrupted_total', {
        condition: 'ready',
        image_id: nc.status?.imageID ?? '',
        ...labels,
      }),
    ).toBe(1);
    // a second pass changes nothing (already deleting)
    expect(await health.reconcile('r-0')).toEqual({});
    expect(await env.metric('karpenter_nodeclaims_disrupted_total', { reason: 'unhealthy', ...labels })).toBe(
      1,
    );

    // termination: the NodeClaim finalizer keeps the repair deadline and deletes the Node; the drain deletes the
    // PDB-protected pod at once (no eviction), then the instance is terminated
    await new NodeClaimTermination(env.ctx).reconcile(nc);
    expect((await nodeClaim('r-0')).metadata.annotations?.[TS]).toBe(nc.metadata.annotations?.[TS]);
    for (let i = 0; i < 4 && (await env.client.tryGet('Node', 'r-0')); i++) {
      await termination.reconcile('r-0');
      await env.finishTerminating('r-0');
    }
    expect(await env.client.tryGet('Node', 'r-0')).toBeUndefined();
    expect(await env.client.tryGet('Pod', 'guarded', NS)).toBeUndefined();
    expect(await env.metric('karpenter_pods_eviction_requests_total', { code: '429' })).toBe(0);
    const deleted = (await env.events('guarded')).find((e) => e.reason === 'Disrupted');
    expect(deleted?.message).toMatch(/This bypasses the PDB of the pod/);
    const err = await env.provider.get(nc.status?.providerID as string).catch((e: unknown) => e);
    expect(isNodeClaimNotFoundError(err)).toBe(true);
    await new NodeClaimTermination(env.ctx).reconcile(await nodeClaim('r-0'));
    expect(await env.client.tryGet('NodeClaim', 'r-0')).toBeUndefined();
  });

  it('3 of 10 nodes unhealthy (> roundup(20% x 10) = 2): NodeRepairBlocked on each Node, no repair', async () => {
    // r-0 is gone: add b-0 so the pool has 10 nodes again
    await launchNode('b-0');
    for (const n of ['r-1', 'r-2', 'r-3']) await kubeletStops(n);
    env.clock.advance(31 * MIN);
    for (const n of ['r-1', 'r-2', 'r-3']) {
      expect(await health.reconcile(n)).toEqual({ requeueAfter: 300 });
      const nc = await nodeClaim(n);
      expect(nc.metadata.deletionTimestamp).toBeUndefined();
      expect(nc.metadata.annotations?.[TS]).toBeUndefined();
    }
    const blocked = (await env.events('r-1')).filter((e) => e.reason === 'NodeRepairBlocked');
    expect(blocked.map((e) => [e.type, e.involvedObject.kind, e.message])).toEqual([
      ['Warning', 'Node', 'more than 20% nodes are unhealthy in the nodepool'],
    ]);
    // upstream publishes it per Node, NodeClaim and NodePool UID: the first node gets all three (aggregated)
    expect(blocked[0]?.count).toBe(3);
    const second = (await env.events('r-2')).filter((e) => e.reason === 'NodeRepairBlocked');
    expect(second.map((e) => e.count)).toEqual([2]);
    // deduplicated for 15 min: a re-check 5 min later publishes nothing new
    env.clock.advance(5 * MIN);
    expect(await health.reconcile('r-1')).toEqual({ requeueAfter: 300 });
    expect((await env.events('r-1')).find((e) => e.reason === 'NodeRepairBlocked')?.count).toBe(3);

    // one recovers: 2 of 10 ≤ 2, so repair proceeds
    await env.markReady('r-3');
    expect(await health.reconcile('r-1')).toEqual({});
    expect((await nodeClaim('r-1')).metadata.deletionTimestamp).toBeDefined();
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'unhealthy',
        nodepool: 'default',
        capacity_type: 'on-demand',
      }),
    ).toBe(2);
  });

  it('with the NodeRepair gate off the operator runs no node.health controller; on, it does', () => {
    const names = (nodeRepair: boolean) =>
      createOperator({
        client: env.client,
        cloudProvider: provider,
        clock: env.clock,
        defaultMetrics: false,
        options: { ...embeddedOptions(), featureGates: { ...DEFAULT_FEATURE_GATES, NodeRepair: nodeRepair } },
      }).controllers.map((c) => c.name);
    expect(names(false)).not.toContain('node.health');
    expect(embeddedOptions().featureGates.NodeRepair).toBe(false);
    const on = names(true);
    expect(on).toContain('node.health');
    expect(on.indexOf('node.health')).toBe(on.indexOf('node.termination') + 1);
  });
});

describe('node repair details (upstream suite)', () => {
  it('a termination timestamp later than now is overridden with now; an earlier one is kept', async () => {
    // pool `small`: 3 nodes, 1 unhealthy ≤ roundup(20% x 3) = 1, so it is repaired
    const t0 = env.clock.now();
    await launchNode('sm-0', 'small', { [TS]: rfc(t0 + 120 * MIN) });
    await launchNode('sm-1', 'small');
    await launchNode('sm-2', 'small');
    await launchNode('past-0', 'past', { [TS]: rfc(t0 - 3 * MIN) });
    await kubeletStops('sm-0');
    await kubeletStops('past-0');
    env.clock.advance(30 * MIN);
    expect(await health.reconcile('sm-0')).toEqual({});
    expect((await nodeClaim('sm-0')).metadata.annotations?.[TS]).toBe(rfc(t0 + 30 * MIN));
    expect((await nodeClaim('sm-0')).metadata.deletionTimestamp).toBe(rfc(t0 + 30 * MIN));
    expect(await health.reconcile('past-0')).toEqual({});
    expect((await nodeClaim('past-0')).metadata.annotations?.[TS]).toBe(rfc(t0 - 3 * MIN));
    expect((await nodeClaim('past-0')).metadata.deletionTimestamp).toBe(rfc(t0 + 30 * MIN));
  });

  it('AcceleratedHardwareReady=False (Node Monitoring Agent) is repaired after 10 min, counted as accelerated_hardware_ready', async () => {
    await launchNode('gpu-0', 'gpu');
    const since = new Date(env.clock.now()).toISOString();
    await env.client.patchStatus(
      'Node',
      'gpu-0',
      undefined,
      {
        status: {
          conditions: [
            { type: 'Ready', status: 'True', lastTransitionTime: since },
            {
              type: 'AcceleratedHardwareReady',
              status: 'False',
              reason: 'NvidiaXID',
              lastTransitionTime: since,
            },
          ],
        },
      },
      { type: 'merge' },
    );
    env.clock.advance(9 * MIN);
    expect(await health.reconcile('gpu-0')).toEqual({ requeueAfter: 60 });
    env.clock.advance(1 * MIN);
    expect(await health.reconcile('gpu-0')).toEqual({});
    const nc = await nodeClaim('gpu-0');
    expect(nc.metadata.deletionTimestamp).toBeDefined();
    expect(
      await env.metric('karpenter_nodeclaims_unhealthy_disrupted_total', {
        condition: 'accelerated_hardware_ready',
        nodepool: 'gpu',
        capacity_type: 'on-demand',
        image_id: nc.status?.imageID ?? '',
      }),
    ).toBe(1);
  });
});

describe('node repair without a NodePool and as a running controller', () => {
  it('a NodeClaim without NodePool is held to the whole cluster: 6 of 16 nodes unhealthy > 4 blocks it', async () => {
    await launchNode('u-0', 'u');
    await env.client.patch(
      'NodeClaim',
      'u-0',
      undefined,
      { metadata: { labels: { 'karpenter.sh/nodepool': null } } },
      { type: 'merge' },
    );
    await kubeletStops('u-0');
    env.clock.advance(30 * MIN);
    const nodes = (await env.client.list('Node')).items;
    expect(nodes.length).toBe(16);
    expect(await health.reconcile('u-0')).toEqual({ requeueAfter: 300 });
    expect((await nodeClaim('u-0')).metadata.deletionTimestamp).toBeUndefined();
    const blocked = (await env.events('u-0')).filter((e) => e.reason === 'NodeRepairBlocked');
    // upstream's message for the cluster case, typo included; deduplicated by the Node's and the NodeClaim's UID
    expect(blocked.map((e) => [e.type, e.involvedObject.kind, e.message, e.count])).toEqual([
      ['Warning', 'Node', 'more then 20% nodes are unhealthy in the cluster', 2],
    ]);
  });

  it('started: a Node turning Unknown is checked from its watch and repaired when its requeue at 30 min fires', async () => {
    const seen: Array<[string, unknown]> = [];
    class Probe extends NodeHealthController {
      override async reconcile(name: string) {
        const r = await super.reconcile(name);
        seen.push([name, r]);
        return r;
      }
    }
    const probe = new Probe({
      client: env.client,
      cloudProvider: provider,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
    });
    const stop = new AbortController();
    const running = probe.start(stop.signal);
    try {
      await launchNode('q-0', 'q');
      const t1 = env.clock.now();
      await kubeletStops('q-0');
      await until(() =>
        seen.some(([n, r]) => n === 'q-0' && (r as { requeueAfter?: number }).requeueAfter === 1800),
      );
      expect((await nodeClaim('q-0')).metadata.deletionTimestamp).toBeUndefined();
      env.clock.advance(30 * MIN);
      const nc = await until(async () => {
        const c = await nodeClaim('q-0');
        return c.metadata.deletionTimestamp ? c : undefined;
      });
      expect(nc.metadata.annotations?.[TS]).toBe(rfc(t1 + 30 * MIN));
    } finally {
      stop.abort();
      await running;
    }
  });
});

/** Polls `fn` every 10 ms of wall time (the controller runs on its own) until truthy; fails after 10 s. */
async function until<T>(fn: () => T | Promise<T>): Promise<NonNullable<T>> {
  for (let i = 0; i < 1000; i++) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not met within 10 s');
}
