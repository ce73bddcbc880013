/** Step `bootstrap` of the KarpenterMachinePool reconcile: upload on change, the registration-taint check. */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KarpenterMachinePool } from '../../../src/apis/capi.ts';
import { reconcileBootstrap } from '../../../src/controllers/capi/steps/bootstrap.ts';
import { NotReady } from '../../../src/controllers/capi/steps/context.ts';
import { resolveInputs } from '../../../src/controllers/capi/steps/resolve.ts';
import { fakeBootstrapData } from '../../../src/sim/capi/environment.ts';
import { eventually } from '../../../src/testing/eventually.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

/** Resolve then bootstrap on a fresh pass of `pool`. */
async function run(pool: string) {
  const pass = await s.pass(pool);
  const inputs = await resolveInputs(s.ctx, pass);
  if (!inputs) throw new Error('not resolved');
  return { pass, inputs, result: reconcileBootstrap(s.ctx, pass, inputs) };
}

describe('bootstrap step', () => {
  it('uploads the Secret once, records its SHA-256 on the KMP, and reads the KubeadmConfig', async () => {
    await s.apply(samplePool('b1'));
    const first = await run('b1');
    const r = await first.result;
    expect(r.format).toBe('cloud-config');
    expect(r.config?.kind).toBe('KubeadmConfig');
    expect(s.store.writes).toBe(1);
    expect((await s.store.get(first.inputs.location))?.toString()).toBe(fakeBootstrapData());
    const kmp = (await s.env.mgmt.get('KarpenterMachinePool', 'b1', 'default')) as KarpenterMachinePool;
    expect(kmp.metadata.annotations?.['capenter.sh/userdata-hash']).toBe(
      createHash('sha256').update(fakeBootstrapData()).digest('hex'),
    );
    expect(first.pass.condition('BootstrapDataReady')?.status).toBe('True');
    expect(first.pass.condition('RegistrationTaintConfigured')?.status).toBe('True');
    // the hash is recorded and the object is there: no second write
    await (await run('b1')).result;
    expect(s.store.writes).toBe(1);
  });

  it('a KubeadmConfig without karpenter.sh/unregistered: condition False and a Warning Event', async () => {
    await s.apply(samplePool('b2', (o) => o, { registrationTaint: false }));
    const { pass, result } = await run('b2');
    await result;
    const msg =
      "bootstrap config KubeadmConfig/b2 does not register nodes with karpenter.sh/unregistered:NoExecute; add it to spec.joinConfiguration.nodeRegistration.taints, or Karpenter's registration fails";
    expect(pass.condition('RegistrationTaintConfigured')).toMatchObject({
      status: 'False',
      reason: 'RegistrationTaintMissing',
      message: msg,
    });
    expect(
      await eventually(async () => (await s.events('b2')).length > 0 && s.events('b2'), 'event'),
    ).toEqual([`RegistrationTaintMissing: ${msg}`]);
  });

  it('a missing or empty Secret stops the pass: BootstrapDataReady and Ready False', async () => {
    const writes = s.store.writes;
    await s.apply(samplePool('b3', (o) => (o.kind === 'Secret' ? undefined : o)));
    const missing = await run('b3');
    await expect(missing.result).rejects.toBeInstanceOf(NotReady);
    for (const type of ['BootstrapDataReady', 'Ready'])
      expect(missing.pass.condition(type)).toMatchObject({
        status: 'False',
        reason: 'WaitingForBootstrapData',
        message: 'bootstrap Secret default/b3-bootstrap not found',
      });
    await s.apply(samplePool('b4', (o) => (o.kind === 'Secret' ? { ...o, data: {} } : o)));
    const empty = await run('b4');
    await expect(empty.result).rejects.toBeInstanceOf(NotReady);
    expect(empty.pass.condition('Ready')).toMatchObject({
      reason: 'InvalidBootstrapData',
      message:
        'Secret default/b4-bootstrap has no data.value; the bootstrap provider has not rendered it yet',
    });
    expect(s.store.writes).toBe(writes);
  });
});
