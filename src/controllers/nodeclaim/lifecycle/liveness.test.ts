import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestEnv, type TestEnv, testNodeClaim } from '../testing.ts';
import { nodeClaimConditions } from './context.ts';
import { Liveness } from './liveness.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => env.stop());

describe('Liveness', () => {
  it('requeues until 15 min after Registered became Unknown, then deletes the NodeClaim', async () => {
    const nc = await env.client.create(testNodeClaim('live-reg'));
    const conds = nodeClaimConditions(nc, env.clock);
    conds.setTrue('Launched');
    const l = new Liveness(env.ctx);
    expect(await l.reconcile(nc)).toEqual({ requeueAfter: 900 });
    env.clock.advance(600_000);
    expect(await l.reconcile(nc)).toEqual({ requeueAfter: 300 });
    env.clock.advance(300_000);
    expect(await l.reconcile(nc)).toEqual({ deleted: true });
    expect(await env.client.tryGet('NodeClaim', 'live-reg')).toBeUndefined();
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'registration_timeout',
        nodepool: 'default',
      }),
    ).toBe(1);
    expect((await env.events('live-reg')).map((e) => e.reason)).toContain('RegistrationTimeout');
  });

  it('deletes a NodeClaim whose launch failed for 5 min', async () => {
    const nc = await env.client.create(testNodeClaim('live-launch'));
    nodeClaimConditions(nc, env.clock).setFalse('Launched', 'LaunchFailed', 'boom');
    const l = new Liveness(env.ctx);
    expect(await l.reconcile(nc)).toEqual({ requeueAfter: 300 });
    env.clock.advance(301_000);
    expect(await l.reconcile(nc)).toEqual({ deleted: true });
    expect(
      await env.metric('karpenter_nodeclaims_disrupted_total', {
        reason: 'launch_timeout',
        nodepool: 'default',
      }),
    ).toBe(1);
  });

  it('leaves registered NodeClaims alone', async () => {
    const nc = testNodeClaim('live-ok');
    nodeClaimConditions(nc, env.clock).setTrue('Registered');
    env.clock.advance(3600_000);
    expect(await new Liveness(env.ctx).reconcile(nc)).toEqual({});
  });
});
