/** Step `apply` of the KarpenterMachinePool reconcile: writes to the workload cluster, only when changed. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EC2NodeClass, NodePool } from '../../../src/apis/karpenter.ts';
import { applyDesired, specContains } from '../../../src/controllers/capi/steps/apply.ts';
import { NotReady } from '../../../src/controllers/capi/steps/context.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

describe('apply step', () => {
  it('creates EC2NodeClass and NodePool, leaves them alone when unchanged, replaces a changed spec', async () => {
    await s.apply(samplePool('a1'));
    await s.env.writeKubeconfigSecret('default', 'a1-c');
    const first = await s.prepare('a1');
    await applyDesired(s.ctx, first.pass, first.desired);
    const wl = s.env.workload.client;
    const np = (await wl.get('NodePool', 'a1')) as NodePool;
    const nc = (await wl.get('EC2NodeClass', 'a1')) as EC2NodeClass;
    expect(np.metadata.labels?.['cluster.x-k8s.io/cluster-name']).toBe('a1-c');
    expect(nc.metadata.name).toBe('a1');
    expect(first.pass.condition('EC2NodeClassCreated')?.status).toBe('True');
    expect(first.pass.condition('NodePoolCreated')?.status).toBe('True');
    expect(first.pass.status.version).toBe('v1.33.1');

    const again = await s.prepare('a1');
    await applyDesired(s.ctx, again.pass, again.desired);
    expect((await wl.get('NodePool', 'a1')).metadata.resourceVersion).toBe(np.metadata.resourceVersion);
    expect((await wl.get('EC2NodeClass', 'a1')).metadata.resourceVersion).toBe(nc.metadata.resourceVersion);

    const changed = await s.prepare('a1');
    changed.desired.nodePool.spec.weight = 7;
    await applyDesired(s.ctx, changed.pass, changed.desired);
    expect(((await wl.get('NodePool', 'a1')) as NodePool).spec.weight).toBe(7);
  });

  it('an unreachable workload cluster stops the pass with WorkloadClusterUnavailable', async () => {
    await s.apply(samplePool('a2'));
    const { pass, desired } = await s.prepare('a2');
    await expect(applyDesired(s.ctx, pass, desired)).rejects.toBeInstanceOf(NotReady);
    expect(pass.condition('Ready')).toMatchObject({
      status: 'False',
      reason: 'WorkloadClusterUnavailable',
      message:
        'Secret default/a2-c-kubeconfig not found; CAPI writes it once the control plane is up (key "value": a kubeconfig)',
    });
    expect(pass.condition('NodePoolCreated')).toBeUndefined();
  });

  it('specContains ignores fields only the server has, not differing or missing ones', () => {
    expect(specContains({ a: 1, b: { c: [1, 2] }, d: 'x' }, { a: 1, b: { c: [1, 2] } })).toBe(true);
    expect(specContains({ a: 1 }, { a: 2 })).toBe(false);
    expect(specContains({ a: [1] }, { a: [1, 2] })).toBe(false);
    expect(specContains({}, { a: { b: 1 } })).toBe(false);
    expect(specContains({ a: 1 }, { a: 1, b: undefined })).toBe(true);
  });
});
