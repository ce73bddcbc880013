import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../apis/core.ts';
import { silentLogger } from '../../../kube/logger.ts';
import { nodeClaimConditions } from '../../nodeclaim/lifecycle/context.ts';
import { Launch } from '../../nodeclaim/lifecycle/launch.ts';
import { Registration } from '../../nodeclaim/lifecycle/registration.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../../nodeclaim/testing.ts';
import { NodeTerminationController } from './controller.ts';
import { isDrainable } from './drain.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
  await env.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'w' } });
});
afterAll(async () => env.stop());

const pod = (name: string, node: string, extra: Partial<Pod['metadata']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'w', ...extra },
  spec: { nodeName: node, containers: [{ name: 'c', image: 'pause' }] },
});

describe('NodeTerminationController', () => {
  it('cordons, taints, drains (DaemonSet pods in a later tier), deletes the NodeClaim and instance, then the finalizer', async () => {
    const nc = await env.client.create(testNodeClaim('term-1', { instanceType: 'm5.large' }));
    await new Launch(env.ctx).reconcile(nc);
    await new Registration(env.ctx).reconcile(nc);
    await env.client.patchStatus('NodeClaim', 'term-1', undefined, { status: nc.status }, { type: 'merge' });
    await env.client.patch(
      'NodeClaim',
      'term-1',
      undefined,
      { metadata: { labels: nc.metadata.labels, finalizers: ['karpenter.sh/termination'] } },
      { type: 'merge' },
    );
    await env.client.create(pod('app', 'term-1'));
    await env.client.create(
      pod('ds', 'term-1', {
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'd', uid: 'u' }],
      }),
    );
    const ctl = new NodeTerminationController({
      client: env.client,
      cloudProvider: env.provider,
      clock: env.clock,
      logger: silentLogger(),
      recorder: env.recorder,
      registry: env.registry,
      nodeClaimsFor: async (n) =>
        (await env.client.list('NodeClaim')).items.filter((c) => c.status?.providerID === n.spec?.providerID),
    });
    await env.client.delete('Node', 'term-1');
    expect(await ctl.reconcile('term-1')).toEqual({ requeueAfter: 1 });
    const node = await env.client.get('Node', 'term-1');
    expect(node.spec?.unschedulable).toBe(true);
    expect(node.spec?.taints).toContainEqual({ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' });
    // evicted: terminating until its kubelet stops it
    expect((await env.client.get('Pod', 'app', 'w')).metadata.deletionTimestamp).toBeDefined();
    expect((await env.client.get('Pod', 'ds', 'w')).metadata.deletionTimestamp).toBeUndefined();
    const deleting = await env.client.get('NodeClaim', 'term-1');
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    // the second tier waits while the first is still terminating (upstream PR #1478): the DaemonSet pod stays
    expect(await ctl.reconcile('term-1')).toEqual({ requeueAfter: 1 });
    expect((await env.client.get('Pod', 'ds', 'w')).metadata.deletionTimestamp).toBeUndefined();
    expect(await env.finishTerminating('term-1')).toEqual(['app']);
    // the first tier is gone: the DaemonSet pod is evicted, and the drain waits for it to stop
    expect(await ctl.reconcile('term-1')).toEqual({ requeueAfter: 1 });
    expect((await env.client.get('Pod', 'ds', 'w')).metadata.deletionTimestamp).toBeDefined();
    expect(await ctl.reconcile('term-1')).toEqual({ requeueAfter: 1 });
    expect(await env.finishTerminating('term-1')).toEqual(['ds']);
    // drained: the instance is asked to terminate
    expect(await ctl.reconcile('term-1')).toEqual({ requeueAfter: 5 });
    expect(
      nodeClaimConditions(await env.client.get('NodeClaim', 'term-1'), env.clock).get('InstanceTerminating')
        ?.status,
    ).toBe('True');
    // instance gone: finalizer removed, Node deleted
    expect(await ctl.reconcile('term-1')).toEqual({});
    expect(await env.client.tryGet('Node', 'term-1')).toBeUndefined();
    expect(await env.metric('karpenter_nodes_terminated_total', { nodepool: 'default' })).toBe(1);
  });

  it('isDrainable skips DaemonSet, mirror, terminal and disrupted-tolerating pods', () => {
    expect(isDrainable(pod('a', 'n'))).toBe(true);
    expect(isDrainable({ ...pod('b', 'n'), status: { phase: 'Succeeded' } })).toBe(false);
    expect(isDrainable(pod('c', 'n', { annotations: { 'kubernetes.io/config.mirror': 'x' } }))).toBe(false);
    const tol = pod('d', 'n');
    tol.spec.tolerations = [{ key: 'karpenter.sh/disrupted', operator: 'Exists' }];
    expect(isDrainable(tol)).toBe(false);
  });
});
