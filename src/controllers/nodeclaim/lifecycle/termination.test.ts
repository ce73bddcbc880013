import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestEnv, type TestEnv, testNodeClaim } from '../testing.ts';
import { Launch } from './launch.ts';
import { Registration } from './registration.ts';
import { NodeClaimTermination } from './termination.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => env.stop());

describe('NodeClaimTermination', () => {
  it('annotates the grace deadline, deletes the Node, waits for it, terminates the instance, drops the finalizer', async () => {
    const created = await env.client.create({
      ...testNodeClaim('fin-1', { instanceType: 'm5.large', terminationGracePeriod: '1h' }),
      metadata: {
        name: 'fin-1',
        labels: { 'karpenter.sh/nodepool': 'default' },
        finalizers: ['karpenter.sh/termination'],
      },
    });
    await new Launch(env.ctx).reconcile(created);
    await new Registration(env.ctx).reconcile(created);
    await env.client.patchStatus(
      'NodeClaim',
      'fin-1',
      undefined,
      { status: created.status },
      { type: 'merge' },
    );
    await env.client.patch(
      'NodeClaim',
      'fin-1',
      undefined,
      { metadata: { labels: created.metadata.labels, finalizers: ['karpenter.sh/termination'] } },
      { type: 'merge' },
    );
    await env.client.delete('NodeClaim', 'fin-1');
    const step = new NodeClaimTermination(env.ctx);
    const nc = await env.client.get('NodeClaim', 'fin-1');
    expect(await step.reconcile(nc)).toEqual({ requeueAfter: 5 });
    const annotated = await env.client.get('NodeClaim', 'fin-1');
    const deadline = Date.parse(
      annotated.metadata.annotations?.['karpenter.sh/nodeclaim-termination-timestamp'] ?? '',
    );
    expect(deadline - Date.parse(annotated.metadata.deletionTimestamp ?? '')).toBe(3600_000);
    // upstream's Warning on the NodeClaim, naming the deadline (terminator/events NodeClaimTerminationGracePeriodExpiring)
    const expiring = (await env.events('fin-1')).filter((e) => e.reason === 'TerminationGracePeriodExpiring');
    expect(expiring.map((e) => [e.involvedObject.kind, e.type, e.message])).toEqual([
      [
        'NodeClaim',
        'Warning',
        `All pods will be deleted by ${annotated.metadata.annotations?.['karpenter.sh/nodeclaim-termination-timestamp']}`,
      ],
    ]);
    const node = await env.client.get('Node', 'fin-1');
    expect(node.metadata.deletionTimestamp).toBeDefined(); // held by its finalizer until node termination runs
    // node termination done: finalizer removed by hand here
    await env.client.patch('Node', 'fin-1', undefined, { metadata: { finalizers: null } }, { type: 'merge' });
    const r = await step.reconcile(await env.client.get('NodeClaim', 'fin-1'));
    expect(r).toEqual({ requeueAfter: 5 }); // kwok accepted the delete; instance terminating
    expect(env.provider.instanceCount).toBe(0);
    expect(await step.reconcile(await env.client.get('NodeClaim', 'fin-1'))).toEqual({ deleted: true });
    expect(await env.client.tryGet('NodeClaim', 'fin-1')).toBeUndefined();
    expect(
      await env.metric('karpenter_nodeclaims_terminated_total', {
        nodepool: 'default',
        capacity_type: 'on-demand',
      }),
    ).toBe(1);
  });
});
