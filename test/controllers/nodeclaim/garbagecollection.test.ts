/**
 * The garbage-collection controller's instance pass against the embedded API server (no lifecycle controller runs,
 * so a stored NodeClaim stays "launching" until the test writes its provider ID): the races between a launch's
 * status write and the controller's lists, found by the aws soak (seed 19, 2026-12-01: four freshly launched
 * instances terminated, their Nodes deleted and their NodeClaims drained at once, past the NodePool's budget).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { RecordingCloudProvider } from '../../../src/cloudprovider/testing.ts';
import type { CloudProvider } from '../../../src/cloudprovider/types.ts';
import { NodeClaimGarbageCollectionController } from '../../../src/controllers/nodeclaim/garbagecollection/controller.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => {
  await env.stop();
});

function gc(cloud: CloudProvider = env.provider) {
  return new NodeClaimGarbageCollectionController({
    client: env.client,
    cloudProvider: cloud,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
  });
}

async function writeProviderID(name: string, providerID: string): Promise<void> {
  await env.client.patchStatus('NodeClaim', name, undefined, { status: { providerID } }, { type: 'merge' });
}

describe('NodeClaim garbage collection: launches in flight', () => {
  it('keeps an instance whose NodeClaim has no provider ID yet, past the grace period; collects it once the NodeClaim names another instance', async () => {
    const inst = await env.provider.create(testNodeClaim('gc-inflight', { instanceType: 'm5.large' }));
    await env.client.create(testNodeClaim('gc-inflight', { instanceType: 'm5.large' }));
    await env.clock.tick(10 * 60_000); // far past the 30 s grace: a skewed clock or a slow status write
    expect(await gc().collect()).toEqual({ nodeClaims: [], instances: [] });
    expect((await env.provider.get(inst.status?.providerID as string)).status?.providerID).toBe(
      inst.status?.providerID,
    );
    // the launch was retried and this NodeClaim records a second instance: the first is an orphan now
    await writeProviderID('gc-inflight', 'kwok://us-east-1a/second-instance');
    expect(await gc().collect()).toEqual({ nodeClaims: [], instances: [inst.status?.providerID] });
    await expect(env.provider.get(inst.status?.providerID as string)).rejects.toThrow(/nodeclaim not found/);
    await env.client.delete('NodeClaim', 'gc-inflight');
  });

  it('lists instances before NodeClaims: a provider ID written between the two lists keeps its instance', async () => {
    const inst = await env.provider.create(testNodeClaim('gc-race', { instanceType: 'm5.large' }));
    const stored = (await env.client.create(
      testNodeClaim('gc-race-renamed', { instanceType: 'm5.large' }),
    )) as NodeClaim;
    await env.clock.tick(10 * 60_000);
    // the status write lands while the controller lists the cloud (the NodeClaim's name differs from the instance's
    // tag here, so only the order protects it)
    const cloud = new RecordingCloudProvider(env.provider).answer('list', async () => {
      const out = await env.provider.list();
      await writeProviderID(stored.metadata.name as string, inst.status?.providerID as string);
      return out;
    });
    expect(await gc(cloud).collect()).toEqual({ nodeClaims: [], instances: [] });
    expect((await env.provider.get(inst.status?.providerID as string)).status?.providerID).toBe(
      inst.status?.providerID,
    );
  });
});
