/** `finalize` of a KarpenterMachinePool: drain the pool, wait for its instances, release, drop the finalizer. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KarpenterMachinePool } from '../../../src/apis/capi.ts';
import { applyDesired } from '../../../src/controllers/capi/steps/apply.ts';
import { finalizePool } from '../../../src/controllers/capi/steps/finalize.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

const Finalizer = 'capenter.sh/karpentermachinepool';

/** Pool `name` applied to the workload cluster, its user data stored, the finalizer set; the live KMP. */
async function applied(name: string): Promise<KarpenterMachinePool> {
  await s.apply(samplePool(name));
  await s.env.writeKubeconfigSecret('default', `${name}-c`);
  const { pass, desired } = await s.prepare(name);
  await applyDesired(s.ctx, pass, desired);
  return (await s.env.mgmt.patch(
    'KarpenterMachinePool',
    name,
    'default',
    { metadata: { finalizers: [Finalizer] } },
    { type: 'merge' },
  )) as KarpenterMachinePool;
}

const location = (name: string) => ({
  region: 'us-east-1',
  bucket: `${name}-c-capa-bootstrap`,
  key: `karpenter-machine-pool/default/${name}`,
});

describe('finalize', () => {
  it('deletes the NodePool, waits for the instances, then removes EC2NodeClass, user data and finalizer', async () => {
    const kmp = await applied('f1');
    const wl = s.env.workload.client;
    expect(await finalizePool(s.ctx, { ...kmp, metadata: { ...kmp.metadata, finalizers: [] } })).toEqual({});
    expect(await wl.tryGet('NodePool', 'f1')).toBeDefined();

    s.instances.byPool.set('f1-c/f1', ['aws:///us-east-1a/i-0f1']);
    expect(await finalizePool(s.ctx, kmp)).toEqual({ requeueAfter: 2 });
    expect(await wl.tryGet('NodePool', 'f1')).toBeUndefined();
    expect(await wl.tryGet('EC2NodeClass', 'f1')).toBeDefined();
    expect(s.instances.terminated).toEqual([]);

    s.instances.byPool.set('f1-c/f1', []);
    expect(await finalizePool(s.ctx, kmp)).toEqual({});
    expect(await wl.tryGet('EC2NodeClass', 'f1')).toBeUndefined();
    expect(await s.store.get(location('f1'))).toBeUndefined();
    const live = (await s.env.mgmt.get('KarpenterMachinePool', 'f1', 'default')) as KarpenterMachinePool;
    expect(live.metadata.finalizers ?? []).toEqual([]);
  });

  it('with the Cluster deleted, terminates what remains and finishes in one pass', async () => {
    const kmp = await applied('f2');
    s.instances.byPool.set('f2-c/f2', ['aws:///us-east-1a/i-0f2', 'aws:///us-east-1b/i-0f3']);
    await s.env.mgmt.delete('Cluster', 'f2-c', 'default');
    expect(await finalizePool(s.ctx, kmp)).toEqual({});
    expect(s.instances.terminated).toEqual(['aws:///us-east-1a/i-0f2', 'aws:///us-east-1b/i-0f3']);
    // without the Cluster its AWSCluster (the bucket) is unknown: the stored object is left to CAPA's bucket cleanup
    expect(await s.store.get(location('f2'))).toBeDefined();
    const live = (await s.env.mgmt.get('KarpenterMachinePool', 'f2', 'default')) as KarpenterMachinePool;
    expect(live.metadata.finalizers ?? []).toEqual([]);
  });

  it('leaves a pool of another workload cluster alone', async () => {
    const kmp = await applied('f3');
    expect(await finalizePool({ ...s.ctx, clusterName: 'other' }, kmp)).toEqual({});
    expect(await s.env.workload.client.tryGet('NodePool', 'f3')).toBeDefined();
  });
});
