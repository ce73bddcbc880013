/**
 * `nodeclaim.consistency` (upstream v1.14 `nodeclaim/consistency`) through the embedded API server: an initialized
 * NodeClaim whose Node has its expected shape gets `ConsistentStateFound=True`; a Node registering with less than
 * 90% of the expected memory gets a Warning `FailedConsistencyCheck` with upstream's message and
 * `ConsistentStateFound=False`; a NodeClaim is scanned at most once per 10 min.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import {
  NodeClaimConsistencyController,
  nodeShapeIssues,
} from '../../../src/controllers/nodeclaim/consistency/controller.ts';
import { nodeClaimConditions } from '../../../src/controllers/nodeclaim/lifecycle/context.ts';
import { Launch } from '../../../src/controllers/nodeclaim/lifecycle/launch.ts';
import { Registration } from '../../../src/controllers/nodeclaim/lifecycle/registration.ts';
import { startTestEnv, type TestEnv, testNodeClaim } from '../../../src/controllers/nodeclaim/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';

let env: TestEnv;
let ctl: NodeClaimConsistencyController;
beforeAll(async () => {
  env = await startTestEnv();
  ctl = new NodeClaimConsistencyController({
    client: env.client,
    cloudProvider: env.provider,
    clock: env.clock,
    logger: silentLogger(),
    recorder: env.recorder,
    registry: env.registry,
  });
});
afterAll(async () => env.stop());

/** A launched, registered, initialized m5.large NodeClaim requesting 1 cpu / 1Gi; its Node's memory set to `memory`. */
async function initialized(name: string, memory?: string): Promise<NodeClaim> {
  const nc = await env.client.create(
    testNodeClaim(name, { instanceType: 'm5.large', requests: { cpu: '1', memory: '1Gi' } }),
  );
  await new Launch(env.ctx).reconcile(nc);
  await new Registration(env.ctx).reconcile(nc);
  nodeClaimConditions(nc, env.clock).setTrue('Initialized');
  const stored = await env.client.patchStatus(
    'NodeClaim',
    name,
    undefined,
    { status: nc.status },
    { type: 'merge' },
  );
  if (memory) {
    const node = await env.client.get('Node', name);
    await env.client.patchStatus(
      'Node',
      name,
      undefined,
      { status: { capacity: { ...node.status?.capacity, memory } } },
      { type: 'merge' },
    );
  }
  return stored;
}

const consistent = async (name: string) =>
  (await env.client.get('NodeClaim', name)).status?.conditions?.find(
    (c) => c.type === 'ConsistentStateFound',
  );

describe('nodeclaim.consistency', () => {
  it('the expected shape: ConsistentStateFound=True, no Event, next scan in 10 min', async () => {
    const nc = await initialized('shape-ok');
    expect(nc.status?.capacity?.memory).toBeDefined();
    expect(await ctl.reconcile('shape-ok')).toEqual({ requeueAfter: 600 });
    expect(await consistent('shape-ok')).toMatchObject({ status: 'True', reason: 'ConsistentStateFound' });
    expect((await env.events('shape-ok')).filter((e) => e.reason === 'FailedConsistencyCheck')).toEqual([]);
    // the NodeClaim's Ready does not depend on it
    const ready = (await env.client.get('NodeClaim', 'shape-ok')).status?.conditions?.find(
      (c) => c.type === 'Ready',
    );
    expect(ready?.status).toBe('True');
  });

  it('a Node with 50% of the expected memory: Warning FailedConsistencyCheck, ConsistentStateFound=False; once per 10 min', async () => {
    const nc = await initialized('shape-bad', '4Gi');
    const expected = nc.status?.capacity?.memory as string;
    expect(expected).toBe('7577Mi'); // m5.large's memory in the kwok catalog
    expect(await ctl.reconcile('shape-bad')).toEqual({ requeueAfter: 600 });
    expect(await consistent('shape-bad')).toMatchObject({
      status: 'False',
      reason: 'ConsistencyCheckFailed',
      message: 'Consistency Check Failed',
    });
    const failed = (await env.events('shape-bad')).filter((e) => e.reason === 'FailedConsistencyCheck');
    expect(failed.map((e) => [e.type, e.message])).toEqual([
      ['Warning', 'expected 7577Mi of resource memory, but found 4Gi (54.1% of expected)'],
    ]);
    // 4 min later: not scanned again, requeued for the rest of the window
    env.clock.advance(4 * 60_000);
    expect(await ctl.reconcile('shape-bad')).toEqual({ requeueAfter: 360 });
    // fixed (the Node reports its full memory) and 10 min passed: True again
    await env.client.patchStatus(
      'Node',
      'shape-bad',
      undefined,
      { status: { capacity: { memory: expected } } },
      { type: 'merge' },
    );
    env.clock.advance(6 * 60_000);
    expect(await ctl.reconcile('shape-bad')).toEqual({ requeueAfter: 600 });
    expect((await consistent('shape-bad'))?.status).toBe('True');
  });

  it('nodeShapeIssues: not initialized, deleting, or not requested resources are no issue; 90% is fine', () => {
    const claim = (init: boolean, extra: Partial<NodeClaim['metadata']> = {}): NodeClaim => ({
      ...testNodeClaim('p', { requests: { cpu: '2', memory: '0' } }),
      metadata: { name: 'p', ...extra },
      status: {
        capacity: { cpu: '4', memory: '16Gi' },
        conditions: init ? [{ type: 'Initialized', status: 'True', reason: 'Initialized', message: '' }] : [],
      },
    });
    const node = (cpu: string) => ({
      apiVersion: 'v1' as const,
      kind: 'Node' as const,
      metadata: { name: 'p' },
      status: { capacity: { cpu, memory: '1Gi' } },
    });
    expect(nodeShapeIssues(node('3600m'), claim(true))).toEqual([]); // 90%; memory requested 0: skipped
    expect(nodeShapeIssues(node('3'), claim(true))).toEqual([
      'expected 4 of resource cpu, but found 3 (75.0% of expected)',
    ]);
    expect(nodeShapeIssues(node('1'), claim(false))).toEqual([]);
    expect(nodeShapeIssues(node('1'), claim(true, { deletionTimestamp: '2025-01-01T00:00:00Z' }))).toEqual(
      [],
    );
  });
});
