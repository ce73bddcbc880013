import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestEnv, type TestEnv, testNodeClaim } from '../testing.ts';
import { nodeClaimConditions } from './context.ts';
import { Initialization, notInitializedReason } from './initialization.ts';
import { Launch } from './launch.ts';
import { Registration } from './registration.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => env.stop());

describe('Initialization', () => {
  it('waits for Ready and startup taints, then labels the Node and sets Initialized=True', async () => {
    const nc = await env.client.create(
      testNodeClaim('init-ok', {
        instanceType: 'm5.large',
        startupTaints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
      }),
    );
    await new Launch(env.ctx).reconcile(nc);
    await new Registration(env.ctx).reconcile(nc);
    const init = new Initialization(env.ctx);
    await init.reconcile(nc);
    expect(nodeClaimConditions(nc, env.clock).get('Initialized')).toMatchObject({
      status: 'Unknown',
      reason: 'NodeNotReady',
    });
    await env.markReady('init-ok');
    await init.reconcile(nc);
    expect(nodeClaimConditions(nc, env.clock).get('Initialized')).toMatchObject({
      status: 'Unknown',
      reason: 'StartupTaintsExist',
      message: 'StartupTaint "node.cluster.x-k8s.io/uninitialized:NoSchedule" still exists',
    });
    await env.client.patch('Node', 'init-ok', undefined, { spec: { taints: [] } }, { type: 'merge' });
    await init.reconcile(nc);
    const conds = nodeClaimConditions(nc, env.clock);
    expect(conds.get('Initialized')?.status).toBe('True');
    expect(conds.get('Ready')).toMatchObject({ status: 'True', reason: 'Ready' });
    expect((await env.client.get('Node', 'init-ok')).metadata.labels?.['karpenter.sh/initialized']).toBe(
      'true',
    );
    expect(await env.metric('karpenter_nodeclaims_initialized_total', { nodepool: 'default' })).toBe(1);
  });

  it('requires requested extended resources to be allocatable and ephemeral taints to be gone', () => {
    const nc = testNodeClaim('x', { requests: { 'nvidia.com/gpu': '1', cpu: '0' } });
    const ready = { type: 'Ready', status: 'True' as const };
    const node = {
      metadata: { name: 'x' },
      spec: { taints: [] },
      status: { conditions: [ready], allocatable: { cpu: '2', 'nvidia.com/gpu': '0' } },
    };
    expect(notInitializedReason(nc, node)).toEqual({
      reason: 'ResourceNotRegistered',
      message: 'Resource "nvidia.com/gpu" was requested but not registered',
    });
    node.status.allocatable['nvidia.com/gpu'] = '1';
    expect(notInitializedReason(nc, node)).toBeUndefined();
    const tainted = {
      ...node,
      spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' as const }] },
    };
    expect(notInitializedReason(nc, tainted)?.reason).toBe('KnownEphemeralTaintsExist');
    // the Node Readiness Controller's taint family (upstream KnownEphemeralTaintKeyPrefixes)
    const readiness = {
      ...node,
      spec: {
        taints: [{ key: 'readiness.k8s.io/network', value: 'pending', effect: 'NoSchedule' as const }],
      },
    };
    expect(notInitializedReason(nc, readiness)).toEqual({
      reason: 'KnownEphemeralTaintsExist',
      message: 'KnownEphemeralTaint "readiness.k8s.io/network=pending:NoSchedule" still exists',
    });
    const lookalike = {
      ...node,
      spec: { taints: [{ key: 'readiness.k8s.io', effect: 'NoSchedule' as const }] },
    };
    expect(notInitializedReason(nc, lookalike)).toBeUndefined();
    // upstream KnownEphemeralTaintsRemoved names the first of the Node's taints that is ephemeral, not-ready
    // NoExecute included; unreachable NoExecute is not one (upstream lists it with NoSchedule only)
    const several = {
      ...node,
      spec: {
        taints: [
          { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' as const },
          { key: 'readiness.k8s.io/network', value: 'pending', effect: 'NoSchedule' as const },
          { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' as const },
        ],
      },
    };
    expect(notInitializedReason(nc, several)?.message).toBe(
      'KnownEphemeralTaint "readiness.k8s.io/network=pending:NoSchedule" still exists',
    );
    several.spec.taints = [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' as const }];
    expect(notInitializedReason(nc, several)?.message).toBe(
      'KnownEphemeralTaint "node.kubernetes.io/not-ready:NoExecute" still exists',
    );
    several.spec.taints = [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' as const }];
    expect(notInitializedReason(nc, several)).toBeUndefined();
  });

  it("is not initialized while Cluster API's node.cluster.x-k8s.io/uninitialized taint is on the Node, declared or not (issue 29)", () => {
    const nc = testNodeClaim('capi', {});
    const node = {
      metadata: { name: 'capi' },
      spec: { taints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' as const }] },
      status: { conditions: [{ type: 'Ready', status: 'True' as const }], allocatable: { cpu: '2' } },
    };
    expect(notInitializedReason(nc, node)).toEqual({
      reason: 'KnownEphemeralTaintsExist',
      message: 'KnownEphemeralTaint "node.cluster.x-k8s.io/uninitialized:NoSchedule" still exists',
    });
    node.spec.taints = [];
    expect(notInitializedReason(nc, node)).toBeUndefined();
  });
});
