/**
 * `NodeRegistrationHealthy` (upstream v1.14 `nodepool/registrationhealth` + the lifecycle's
 * `updateNodePoolRegistrationHealth`) through the embedded API server: two launch timeouts of a NodePool's
 * NodeClaims set it False with the Launched reason; registrations set it True once the last 4 outcomes hold fewer
 * than 2 failures; a NodePool spec change (new generation) resets it to Unknown with an empty buffer; a NodeClass
 * change likewise. Time is the FakeClock; each step is one explicit reconcile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim, NodePool } from '../../../src/apis/karpenter.ts';
import { type CloudProvider, CreateError } from '../../../src/cloudprovider/types.ts';
import type { LifecycleContext } from '../../../src/controllers/nodeclaim/lifecycle/context.ts';
import { Launch } from '../../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { Liveness } from '../../../src/controllers/nodeclaim/lifecycle/liveness.ts';
import { Registration } from '../../../src/controllers/nodeclaim/lifecycle/registration.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../../../src/controllers/nodeclaim/testing.ts';
import { NodePoolController } from '../../../src/controllers/nodepool/controller.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { NodePoolHealth } from '../../../src/state/nodepoolhealth.ts';

let env: TestEnv;
let health: NodePoolHealth;
let ctl: NodePoolController;
let ok: LifecycleContext;
let failing: LifecycleContext;
let pool: NodePool;

beforeAll(async () => {
  env = await startTestEnv();
  Object.defineProperty(env.cluster.store, 'now', { value: () => env.clock.now() });
  health = new NodePoolHealth();
  await env.client.create({
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name: 'default' },
    spec: {},
  });
  pool = (await env.client.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'default' },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] }],
        },
      },
    },
  })) as NodePool;
  ctl = new NodePoolController({
    client: env.client,
    cloudProvider: env.provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
    nodePoolHealth: health,
  });
  ok = { ...env.ctx, nodePoolHealth: health };
  const broken = Object.assign(Object.create(env.provider) as CloudProvider, {
    create: async () => {
      throw new CreateError('all offerings are out of capacity', 'InsufficientCapacity');
    },
  });
  failing = { ...ok, cloudProvider: broken };
});
afterAll(async () => env.stop());

const condition = async () =>
  (await env.client.get('NodePool', 'default')).status?.conditions?.find(
    (c) => c.type === 'NodeRegistrationHealthy',
  );

/** Reconciles NodePool `default` until done (the first pass writes the hash annotation, then conflicts once). */
async function reconcilePool(c: NodePoolController): Promise<void> {
  for (let i = 0; i < 3; i++) if (!(await c.reconcile('default')).requeue) return;
  throw new Error('NodePool default still requeued after 3 passes');
}

/** A NodeClaim of NodePool `default`, owned by it. */
async function ownedClaim(name: string): Promise<NodeClaim> {
  const nc = testNodeClaim(name, { instanceType: 'm5.large' });
  nc.metadata.ownerReferences = [
    { apiVersion: 'karpenter.sh/v1', kind: 'NodePool', name: 'default', uid: pool.metadata.uid as string },
  ];
  return env.client.create(nc);
}

/** A NodeClaim whose launch keeps failing, until the 5 min launch timeout deletes it. */
async function launchTimesOut(name: string): Promise<void> {
  const nc = await ownedClaim(name);
  await expect(new Launch(failing).reconcile(nc)).rejects.toThrow(/out of capacity/);
  env.clock.advance(5 * 60_000);
  expect(await new Liveness(failing).reconcile(nc)).toEqual({ deleted: true });
}

/** A NodeClaim that launches and registers. */
async function registers(name: string): Promise<void> {
  const nc = await ownedClaim(name);
  await new Launch(ok).reconcile(nc);
  await new Registration(ok).reconcile(nc);
  expect(nc.status?.conditions?.find((c) => c.type === 'Registered')?.status).toBe('True');
}

describe('NodeRegistrationHealthy', () => {
  it('Unknown first; False after 2 launch timeouts; True once 3 of the last 4 registered; reset by a spec change', async () => {
    await reconcilePool(ctl);
    expect((await condition())?.status).toBe('Unknown');
    expect((await env.client.get('NodePool', 'default')).status?.nodeClassObservedGeneration).toBe(1);

    await launchTimesOut('f-0'); // 1 of 4 failed: still Unknown
    expect((await condition())?.status).toBe('Unknown');
    await launchTimesOut('f-1'); // 2 of 4: False with the Launched reason
    expect(await condition()).toMatchObject({
      status: 'False',
      reason: 'InsufficientCapacity',
      message: 'all offerings are out of capacity',
    });

    await registers('ok-0'); // [f, f, t]
    await registers('ok-1'); // [f, f, t, t]
    expect((await condition())?.status).toBe('False');
    await registers('ok-2'); // [f, t, t, t]
    expect(await condition()).toMatchObject({ status: 'True', reason: 'NodeRegistrationHealthy' });
    expect(health.status(pool.metadata.uid as string)).toBe('healthy');
    // the NodePool's own Ready does not depend on it
    const ready = (await env.client.get('NodePool', 'default')).status?.conditions?.find(
      (c) => c.type === 'Ready',
    );
    expect(ready?.status).toBe('True');

    // a spec change: generation 2, reset to Unknown and an empty buffer
    await env.client.patch('NodePool', 'default', undefined, { spec: { weight: 10 } }, { type: 'merge' });
    await reconcilePool(ctl);
    expect(await condition()).toMatchObject({ status: 'Unknown', observedGeneration: 2 });
    expect(health.status(pool.metadata.uid as string)).toBe('unknown');
    // a NodeClass change resets it as well
    await registers('ok-3');
    expect((await condition())?.status).toBe('True');
    await env.client.patch(
      'KWOKNodeClass',
      'default',
      undefined,
      { spec: { nodeRegistrationDelay: '1s' } },
      { type: 'merge' },
    );
    await reconcilePool(ctl);
    expect((await condition())?.status).toBe('Unknown');
    expect((await env.client.get('NodePool', 'default')).status?.nodeClassObservedGeneration).toBe(2);
  });

  it('a conflicting NodePool status write leaves the NodeClaim registered (upstream order) and requeues', async () => {
    // a spec change resets the buffer, so one registration would set the condition True: a status write
    await env.client.patch('NodePool', 'default', undefined, { spec: { weight: 20 } }, { type: 'merge' });
    await reconcilePool(ctl);
    expect((await condition())?.status).toBe('Unknown');
    // another writer updates the NodePool between the registration's read and its status patch: a real 409
    let races = 0;
    const racing: LifecycleContext = {
      ...ok,
      client: new Proxy(env.client, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'patchStatus' || typeof v !== 'function') return v;
          return async (...args: unknown[]) => {
            if (args[0] === 'NodePool') {
              races++;
              await target.patch(
                'NodePool',
                'default',
                undefined,
                { metadata: { annotations: { 'test.capenter.dev/race': String(races) } } },
                { type: 'merge' },
              );
            }
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }),
    };
    const nc = await ownedClaim('race-0');
    await new Launch(ok).reconcile(nc);
    expect(await new Registration(racing).reconcile(nc)).toEqual({ requeue: true });
    expect(races).toBe(1);
    // registered before the health write, as upstream: the Node synced and the NodeClaim says so (the lifecycle
    // controller persists this status before requeueing), so initialization never sees a synced Node whose
    // NodeClaim is still Registered=Unknown without status.nodeName
    expect(nc.status?.conditions?.find((c) => c.type === 'Registered')?.status).toBe('True');
    expect(nc.status?.nodeName).toBe('race-0');
    const node = await env.client.get('Node', 'race-0');
    expect(node.metadata.labels?.['karpenter.sh/registered']).toBe('true');
    expect((node.spec?.taints ?? []).map((t) => t.key)).not.toContain('karpenter.sh/unregistered');
    // the next reconcile has nothing left to do (upstream: Registered is no longer Unknown)
    expect(await new Registration(racing).reconcile(nc)).toEqual({});
    expect(races).toBe(1);
    expect((await condition())?.status).toBe('Unknown');
  });

  it('after a restart the buffer is seeded from the condition (False → unhealthy)', async () => {
    await launchTimesOut('g-0');
    await launchTimesOut('g-1');
    expect((await condition())?.status).toBe('False');
    const fresh = new NodePoolHealth();
    const restarted = new NodePoolController({
      client: env.client,
      cloudProvider: env.provider,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      nodePoolHealth: fresh,
    });
    await reconcilePool(restarted);
    expect(fresh.status(pool.metadata.uid as string)).toBe('unhealthy');
    expect((await condition())?.status).toBe('False');
  });
});
