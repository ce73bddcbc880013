/**
 * Integration: the NodeClaim lifecycle, Node termination and garbage-collection controllers against the embedded
 * API server through the real client, with the kwok provider writing Nodes and a kubelet stand-in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { RecordingCloudProvider } from '../../../src/cloudprovider/testing.ts';
import { NodeTerminationController } from '../../../src/controllers/node/termination/controller.ts';
import { NodeClaimGarbageCollectionController } from '../../../src/controllers/nodeclaim/garbagecollection/controller.ts';
import { NodeClaimLifecycleController } from '../../../src/controllers/nodeclaim/lifecycle/controller.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../../../src/controllers/nodeclaim/testing.ts';
import { SharedInformers } from '../../../src/kube/informer.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { eventually } from '../../../src/testing/eventually.ts';

let env: TestEnv;
const ac = new AbortController();
let running: Promise<unknown>;
let ticker: NodeJS.Timeout;

const cond = (nc: NodeClaim | undefined, t: string) => nc?.status?.conditions?.find((c) => c.type === t);

beforeAll(async () => {
  env = await startTestEnv({
    // NodeClaims labelled `test/slow` register only after 20 minutes (they will hit the 15 min registration TTL)
    registrationDelaySeconds: (nc) => (nc.metadata.labels?.['test/slow'] ? 1200 : 0),
  });
  const deps = {
    client: env.client,
    cloudProvider: env.provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
    informers: new SharedInformers(env.client, { clock: env.clock }),
  };
  const controllers = [new NodeClaimLifecycleController(deps), new NodeTerminationController(deps)];
  running = Promise.all(controllers.map((c) => c.start(ac.signal)));
  // fake time runs 10x faster than real time so requeues (1 s, 5 s) happen quickly; 15 min stays far away
  ticker = setInterval(() => env.clock.advance(100), 10);
});

afterAll(async () => {
  clearInterval(ticker);
  ac.abort();
  await running;
  await env.stop();
});

describe('NodeClaim lifecycle (integration)', () => {
  it('launches, registers and initializes a hand-made NodeClaim', async () => {
    await env.client.create(
      testNodeClaim('life-1', {
        instanceType: 'm5.large',
        startupTaints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
      }),
    );
    const registered = await eventually(async () => {
      const nc = await env.client.get('NodeClaim', 'life-1');
      return cond(nc, 'Registered')?.status === 'True' && nc;
    }, 'Registered=True');
    expect(registered.status?.providerID).toMatch(/^kwok:\/\/us-east-1\//);
    expect(registered.metadata.finalizers).toEqual(['karpenter.sh/termination']);
    expect(cond(registered, 'Launched')?.status).toBe('True');
    const node = await env.client.get('Node', 'life-1');
    expect(node.spec?.taints?.map((t) => t.key)).toEqual(['node.cluster.x-k8s.io/uninitialized']);
    expect(node.metadata.labels?.['karpenter.sh/registered']).toBe('true');
    expect(node.metadata.finalizers).toEqual(['karpenter.sh/termination']);

    // kubelet reports Ready, CAPI removes its startup taint
    await env.markReady('life-1');
    await env.client.patch('Node', 'life-1', undefined, { spec: { taints: [] } }, { type: 'merge' });
    const ready = await eventually(async () => {
      const nc = await env.client.get('NodeClaim', 'life-1');
      return cond(nc, 'Ready')?.status === 'True' && nc;
    }, 'Ready=True');
    expect(ready.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Initialized=True',
      'Launched=True',
      'Ready=True',
      'Registered=True',
    ]);
    expect(ready.status?.nodeName).toBe('life-1');
    expect((await env.client.get('Node', 'life-1')).metadata.labels?.['karpenter.sh/initialized']).toBe(
      'true',
    );
  });

  it('deleting the NodeClaim deletes the Node and the instance and removes the finalizers', async () => {
    const before = env.provider.instanceCount;
    await env.client.delete('NodeClaim', 'life-1');
    await eventually(async () => !(await env.client.tryGet('NodeClaim', 'life-1')), 'NodeClaim gone');
    expect(await env.client.tryGet('Node', 'life-1')).toBeUndefined();
    expect(env.provider.instanceCount).toBe(before - 1);
    expect(
      await env.metric('karpenter_nodeclaims_terminated_total', { nodepool: 'default' }),
    ).toBeGreaterThanOrEqual(1);
    expect(await env.metric('karpenter_nodes_terminated_total', { nodepool: 'default' })).toBe(1);
  });

  it('deletes the NodeClaim with an Event when its only offering is out of capacity', async () => {
    for (const z of ['us-east-1a', 'us-east-1b', 'us-east-1c', 'us-east-1d', 'us-east-1e', 'us-east-1f'])
      env.provider.markUnavailable('r5.large', z, 'on-demand');
    await env.client.create(testNodeClaim('life-ice', { instanceType: 'r5.large' }));
    await eventually(
      async () => !(await env.client.tryGet('NodeClaim', 'life-ice')),
      'ICE NodeClaim deleted',
    );
    const ev = await eventually(
      async () => (await env.events('life-ice')).find((e) => e.reason === 'InsufficientCapacityError'),
      'ICE event',
    );
    expect(ev.type).toBe('Warning');
  });

  it('deletes a NodeClaim whose Node never registers after 15 minutes', async () => {
    await env.client.create(
      testNodeClaim('life-slow', { instanceType: 'm5.large', labels: { 'test/slow': 'yes' } }),
    );
    await eventually(async () => {
      const nc = await env.client.get('NodeClaim', 'life-slow');
      return cond(nc, 'Launched')?.status === 'True' && cond(nc, 'Registered')?.reason === 'NodeNotFound';
    }, 'launched, not registered');
    await env.clock.tick(14 * 60_000);
    expect(await env.client.tryGet('NodeClaim', 'life-slow')).toBeDefined();
    await env.clock.tick(61_000);
    await eventually(
      async () => !(await env.client.tryGet('NodeClaim', 'life-slow')),
      'slow NodeClaim deleted',
    );
    expect(await env.client.tryGet('Node', 'life-slow')).toBeUndefined();
    expect((await env.events('life-slow')).map((e) => e.reason)).toContain('RegistrationTimeout');
  });

  it('garbage-collects a NodeClaim whose instance vanished and an instance without NodeClaim', async () => {
    await env.client.create(testNodeClaim('life-gc', { instanceType: 'm5.large' }));
    const nc = await eventually(async () => {
      const x = await env.client.get('NodeClaim', 'life-gc');
      return cond(x, 'Registered')?.status === 'True' && x;
    }, 'gc NodeClaim registered');
    // the instance disappears from the cloud API while its Node object stays (NotReady), as on a real cloud
    const vanished = nc.status?.providerID as string;
    const cloud = new RecordingCloudProvider(env.provider).answer('list', async () =>
      (await env.provider.list()).filter((i) => i.status?.providerID !== vanished),
    );
    const gcView = new NodeClaimGarbageCollectionController({
      client: env.client,
      cloudProvider: cloud,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
    });
    // an instance nobody claims: launched directly, its NodeClaim never stored
    const orphan = await env.provider.create(testNodeClaim('orphan', { instanceType: 'm5.large' }));
    // the orphan is younger than the 30 s grace period: only the NodeClaim goes
    expect(await gcView.collect()).toEqual({ nodeClaims: ['life-gc'], instances: [] });
    await env.clock.tick(31_000);
    expect(await gcView.collect()).toEqual({ nodeClaims: [], instances: [orphan.status?.providerID] });
    await eventually(async () => !(await env.client.tryGet('NodeClaim', 'life-gc')), 'gc NodeClaim gone');
    await eventually(async () => !(await env.client.tryGet('Node', 'orphan')), 'orphan Node gone');
    await expect(env.provider.get(orphan.status?.providerID as string)).rejects.toThrow(
      /nodeclaim not found/,
    );
  });
});
