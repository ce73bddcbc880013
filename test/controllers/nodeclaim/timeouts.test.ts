/**
 * Scenario C3 of ../shared/cases/controller-scenarios.md through the embedded API server and the real client: one
 * pending pod; (i) the instance launches but no Node ever joins: the NodeClaim is deleted 15 min after it launched
 * (`registration_timeout`), not earlier, and the still-pending pod then gets a new NodeClaim; (ii) every launch
 * call fails (`Launched=False`): the NodeClaim is deleted after 5 min (`launch_timeout`). In both runs there is
 * never more than one live NodeClaim for the pod. Time is the FakeClock; each step is an explicit reconcile. The runs
 * are test/controllers/scenarios.ts's, shared with test/cluster/scenarios.test.ts (the real control plane).
 */
import { afterEach, describe, it } from 'vitest';
import { pendingPod, testNodePool } from '../../../src/controllers/provisioning/testing.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import {
  type ControllerProcess,
  createNodePool,
  createPendingPod,
  type Env,
  eventually,
  startEnv,
} from '../provisioning/harness.ts';
import { launchTimeoutRun, registrationTimeoutRun } from '../scenarios.ts';

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

/** A NodePool, one pending pod, a provisioner process (its provider's Nodes never join when `neverJoin`). */
async function setUp(neverJoin: boolean): Promise<{ e: Env; p: ControllerProcess }> {
  const e = await startEnv();
  env = e;
  await createNodePool(e.client, testNodePool('default'));
  await createPendingPod(e.client, pendingPod('web', { cpu: '1', memory: '1Gi' }));
  const p = await e.startProcess({}, silentLogger(), {
    ...(neverJoin ? { registrationDelaySeconds: () => 365 * 24 * 3600 } : {}),
  });
  await eventually(() => p.cluster.pendingPods().length === 1, 'the pending pod in state');
  return { e, p };
}

describe('launch and registration timeouts (C3)', () => {
  it('(i) a Node that never joins: deleted at 15 min after launch (registration_timeout), then the pod gets a new NodeClaim', async () => {
    const { e, p } = await setUp(true);
    await registrationTimeoutRun(e.client, e.clock, p);
  });

  it('(ii) every launch fails: Launched=False, deleted after 5 min (launch_timeout), not earlier', async () => {
    const { e, p } = await setUp(false);
    await launchTimeoutRun(e.client, e.clock, p);
  });
});
