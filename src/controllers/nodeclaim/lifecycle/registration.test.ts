import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../testing.ts';
import { nodeClaimConditions } from './context.ts';
import { Launch } from './launch.ts';
import { Registration, registeredNode } from './registration.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => env.stop());

async function launched(nc: NodeClaim): Promise<NodeClaim> {
  const stored = await env.client.create(nc);
  await new Launch(env.ctx).reconcile(stored);
  return stored;
}

describe('Registration', () => {
  it('syncs labels, taints, owner and finalizer onto the Node, removes the unregistered taint', async () => {
    const nc = await launched(
      testNodeClaim('reg-ok', {
        instanceType: 'm5.large',
        labels: { team: 'a' },
        taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }],
        startupTaints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
      }),
    );
    expect(await new Registration(env.ctx).reconcile(nc)).toEqual({});
    const node = await env.client.get('Node', 'reg-ok');
    expect(node.metadata.labels).toMatchObject({
      team: 'a',
      'karpenter.sh/registered': 'true',
      'node.kubernetes.io/instance-type': 'm5.large',
    });
    expect(node.metadata.finalizers).toEqual(['karpenter.sh/termination']);
    expect(node.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        name: 'reg-ok',
        uid: nc.metadata.uid,
        blockOwnerDeletion: true,
      },
    ]);
    expect(node.spec?.taints).toEqual([
      { key: 'dedicated', value: 'x', effect: 'NoSchedule' },
      { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
    ]);
    expect(nc.status?.nodeName).toBe('reg-ok');
    expect(nodeClaimConditions(nc, env.clock).get('Registered')?.status).toBe('True');
    expect(await env.metric('karpenter_nodes_created_total', { nodepool: 'default' })).toBe(1);
    expect(await env.metric('karpenter_nodeclaims_registered_total', { nodepool: 'default' })).toBe(1);
  });

  it('stays Unknown/NodeNotFound while the Node is missing', async () => {
    const nc = await env.client.create(testNodeClaim('reg-none'));
    nc.status = { providerID: 'kwok://us-east-1/us-east-1a/i-nothere' };
    await new Registration(env.ctx).reconcile(nc);
    expect(nodeClaimConditions(nc, env.clock).get('Registered')).toMatchObject({
      status: 'Unknown',
      reason: 'NodeNotFound',
    });
  });

  it('refuses a Node that registered without the unregistered taint', async () => {
    const nc = await launched(testNodeClaim('reg-notaint', { instanceType: 'm5.large' }));
    await env.client.patch('Node', 'reg-notaint', undefined, { spec: { taints: [] } }, { type: 'merge' });
    await expect(new Registration(env.ctx).reconcile(nc)).rejects.toThrow(
      /registered without the karpenter.sh\/unregistered/,
    );
    expect(nodeClaimConditions(nc, env.clock).get('Registered')).toMatchObject({
      status: 'False',
      reason: 'UnregisteredTaintNotFound',
    });
    const warned = (await env.events('reg-notaint')).filter((e) => e.reason === 'UnregisteredTaintMissing');
    expect(warned.map((e) => [e.type, e.involvedObject.kind, e.message])).toEqual([
      [
        'Warning',
        'NodeClaim',
        'Missing karpenter.sh/unregistered taint which prevents registration related race conditions on Karpenter-managed nodes',
      ],
    ]);
  });

  it('registeredNode is pure and idempotent', () => {
    const nc = testNodeClaim('p');
    nc.metadata.uid = 'u1';
    const node = {
      metadata: { name: 'p', labels: { a: 'b' } },
      spec: { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' as const }] },
    };
    const once = registeredNode(nc, node);
    expect(node.spec.taints).toHaveLength(1);
    expect(registeredNode(nc, once)).toEqual(once);
    expect(once.spec?.taints).toEqual([]);
  });
});

describe('registeredNode with karpenter.sh/do-not-sync-taints', () => {
  const claim = testNodeClaim('dnst', {
    taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }],
    startupTaints: [{ key: 'startup', effect: 'NoSchedule' }],
  });
  const node = (labels: Record<string, string>) => ({
    apiVersion: 'v1' as const,
    kind: 'Node' as const,
    metadata: { name: 'dnst', labels },
    spec: {
      taints: [
        { key: 'karpenter.sh/unregistered', effect: 'NoExecute' as const },
        { key: 'provider-managed', effect: 'NoSchedule' as const },
      ],
    },
  });
  it('"true" on the Node: NodeClaim taints are not synced, the unregistered taint is still removed', () => {
    const out = registeredNode(claim, node({ 'karpenter.sh/do-not-sync-taints': 'true' }));
    expect(out.spec?.taints).toEqual([{ key: 'provider-managed', effect: 'NoSchedule' }]);
    expect(out.metadata.labels?.['karpenter.sh/registered']).toBe('true');
  });
  it('absent or not "true": taints and startup taints are synced', () => {
    for (const labels of [{}, { 'karpenter.sh/do-not-sync-taints': 'false' }]) {
      const out = registeredNode(claim, node(labels));
      expect(out.spec?.taints?.map((t) => t.key)).toEqual(['provider-managed', 'dedicated', 'startup']);
    }
  });
  it('the label only on the NodeClaim does not count (read on the Node before the NodeClaim labels merge)', () => {
    const c = testNodeClaim('dnst2', {
      labels: { 'karpenter.sh/do-not-sync-taints': 'true' },
      taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }],
    });
    expect(registeredNode(c, node({})).spec?.taints?.map((t) => t.key)).toEqual([
      'provider-managed',
      'dedicated',
    ]);
  });
});
