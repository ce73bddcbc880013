/**
 * Scenario C3 of ../shared/cases/controller-scenarios.md through the embedded API server and the real client: one
 * pending pod; (i) the instance launches but no Node ever joins: the NodeClaim is deleted 15 min after it launched
 * (`registration_timeout`), not earlier, and the still-pending pod then gets a new NodeClaim; (ii) every launch
 * call fails (`Launched=False`): the NodeClaim is deleted after 5 min (`launch_timeout`). In both runs there is
 * never more than one live NodeClaim for the pod. Time is the FakeClock; each step is an explicit reconcile.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { type CloudProvider, CreateError } from '../../../src/cloudprovider/types.ts';
import { NodeClaimLifecycleController } from '../../../src/controllers/nodeclaim/lifecycle/controller.ts';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type ControllerProcess,
  createNodePool,
  createPendingPod,
  type Env,
  eventually,
  listNodeClaims,
  startEnv,
} from '../provisioning/harness.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});
const MIN = 60_000;

/** NodeClaims not being deleted. */
const live = async (e: Env): Promise<NodeClaim[]> =>
  (await listNodeClaims(e.client)).filter((nc) => !nc.metadata.deletionTimestamp);

const cond = (nc: NodeClaim | undefined, type: string) =>
  nc?.status?.conditions?.find((c) => c.type === type);

/** A NodePool, one pending pod, a provisioner process (its provider's Nodes never join when `neverJoin`). */
async function setUp(neverJoin: boolean): Promise<{ e: Env; p: ControllerProcess }> {
  const e = await startEnv();
  env = e;
  await createNodePool(e.client, testNodePool('default'));
  await createPendingPod(e.client, pendingPod('web', { cpu: '1', memory: '1Gi' }));
  const p = await e.startProcess({}, silentLogger(), {
    ...(neverJoin ? { registrationDelaySeconds: () => 365 * 24 * 3600 } : {}),
  });
  await eventually(() => p.cluster.pendingPods().length === 1, 'the pending pod in state');
  return { e, p };
}

/** A lifecycle controller over `provider` sharing the process's registry (its metrics). */
const lifecycle = (e: Env, p: ControllerProcess, provider: CloudProvider) =>
  new NodeClaimLifecycleController({
    client: e.client,
    cloudProvider: provider,
    clock: e.clock,
    logger: silentLogger(),
    recorder: p.recorder,
    registry: p.registry,
  });

/** `karpenter_nodeclaims_disrupted_total{reason}` of the process. */
async function disrupted(p: ControllerProcess, reason: string): Promise<number> {
  const m = p.registry.getSingleMetric('karpenter_nodeclaims_disrupted_total');
  const v = (await m?.get())?.values.find((x) => x.labels.reason === reason);
  return v?.value ?? 0;
}

/** Provisions once and returns the NodeClaim names created. */
async function provision(p: ControllerProcess): Promise<string[]> {
  const r = await p.provisioner.provision();
  return r.created.map((c) => c.nodeClaim.metadata.name as string);
}

describe('launch and registration timeouts (C3)', () => {
  it('(i) a Node that never joins: deleted at 15 min after launch (registration_timeout), then the pod gets a new NodeClaim', async () => {
    const { e, p } = await setUp(true);
    const [first] = await provision(p);
    expect(first).toBeDefined();
    const name = first as string;
    const ctl = lifecycle(e, p, p.provider);
    await ctl.reconcile(name); // finalizer, launch, registration pending
    const launched = await e.client.get('NodeClaim', name);
    expect(cond(launched, 'Launched')?.status).toBe('True');
    expect(cond(launched, 'Registered')?.status).toBe('Unknown');
    const t0 = Date.parse(cond(launched, 'Registered')?.lastTransitionTime as string);
    await eventually(() => p.cluster.getNodeClaim(name), 'in state');
    // while it is in flight the pod is not given a second NodeClaim
    expect(await provision(p)).toEqual([]);
    e.clock.set(t0 + 15 * MIN - 1000);
    expect(await ctl.reconcile(name)).toEqual({ requeueAfter: 1 });
    expect(await provision(p)).toEqual([]);
    expect((await live(e)).map((nc) => nc.metadata.name)).toEqual([name]);
    expect(await disrupted(p, 'registration_timeout')).toBe(0);
    // 15 min: deleted, counted, the instance terminated by the finalizer
    e.clock.set(t0 + 15 * MIN);
    expect(await ctl.reconcile(name)).toEqual({});
    expect((await e.client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeDefined();
    expect(await disrupted(p, 'registration_timeout')).toBe(1);
    const ev = (await e.client.list('Event')).items.find((x) => x.reason === 'RegistrationTimeout');
    expect(ev?.message).toBe('Node did not register within 900s; deleting the NodeClaim');
    expect(await live(e)).toEqual([]);
    for (let i = 0; i < 3 && (await e.client.tryGet('NodeClaim', name)); i++) await ctl.reconcile(name);
    expect(await e.client.tryGet('NodeClaim', name)).toBeUndefined();
    // the still-pending pod gets a new NodeClaim: one live NodeClaim at a time
    await eventually(() => !p.cluster.getNodeClaim(name), 'gone from state');
    const second = await provision(p);
    expect(second).toHaveLength(1);
    expect(second[0]).not.toBe(name);
    expect((await live(e)).map((nc) => nc.metadata.name)).toEqual(second);
  });

  it('(ii) every launch fails: Launched=False, deleted after 5 min (launch_timeout), not earlier', async () => {
    const { e, p } = await setUp(false);
    const failing = Object.assign(Object.create(p.provider) as CloudProvider, {
      create: async () => {
        throw new CreateError('no capacity in the simulated cloud', 'LaunchFailed');
      },
    });
    const [name] = (await provision(p)) as [string];
    const ctl = lifecycle(e, p, failing);
    await expect(ctl.reconcile(name)).rejects.toThrow(/no capacity in the simulated cloud/);
    const nc = await e.client.get('NodeClaim', name);
    expect([cond(nc, 'Launched')?.status, cond(nc, 'Launched')?.reason]).toEqual(['False', 'LaunchFailed']);
    const t0 = Date.parse(cond(nc, 'Launched')?.lastTransitionTime as string);
    e.clock.set(t0 + 5 * MIN - 1000);
    await expect(ctl.reconcile(name)).rejects.toThrow(/no capacity/);
    expect((await e.client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeUndefined();
    expect(await disrupted(p, 'launch_timeout')).toBe(0);
    expect((await live(e)).length).toBe(1);
    e.clock.set(t0 + 5 * MIN);
    await ctl.reconcile(name).catch(() => undefined); // the launch step fails once more; liveness deletes
    expect((await e.client.get('NodeClaim', name)).metadata.deletionTimestamp).toBeDefined();
    expect(await disrupted(p, 'launch_timeout')).toBe(1);
    expect(await live(e)).toEqual([]);
  });
});
