import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pod, startServer, type TestServer } from './helpers.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.stop();
});

async function readyPods(ns: string, names: string[], labels: Record<string, string>): Promise<void> {
  await s.req('POST', '/api/v1/namespaces', { metadata: { name: ns } });
  for (const n of names) {
    await s.req('POST', `/api/v1/namespaces/${ns}/pods`, pod(n, { nodeName: 'node-1' }, labels));
    await s.req(
      'PATCH',
      `/api/v1/namespaces/${ns}/pods/${n}/status`,
      { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      'application/merge-patch+json',
    );
  }
}

function pdb(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec };
}

function evict(ns: string, name: string) {
  return s.req('POST', `/api/v1/namespaces/${ns}/pods/${name}/eviction`, {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name, namespace: ns },
  });
}

async function pdbStatus(ns: string, name: string) {
  await s.cluster.store.settle();
  return (await s.req('GET', `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/${name}`)).body.status;
}

describe('PodDisruptionBudget status', () => {
  it('computes expected, desired and current healthy pods and allowed disruptions', async () => {
    await readyPods('pdb1', ['a', 'b', 'c'], { app: 'x' });
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/pdb1/poddisruptionbudgets',
      pdb('min', { minAvailable: '50%', selector: { matchLabels: { app: 'x' } } }),
    );
    expect(await pdbStatus('pdb1', 'min')).toMatchObject({
      expectedPods: 3,
      desiredHealthy: 2, // ceil(1.5)
      currentHealthy: 3,
      disruptionsAllowed: 1,
      observedGeneration: 1,
    });
    // a pod becoming unready lowers currentHealthy
    await s.req(
      'PATCH',
      '/api/v1/namespaces/pdb1/pods/c/status',
      { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
      'application/strategic-merge-patch+json',
    );
    expect(await pdbStatus('pdb1', 'min')).toMatchObject({ currentHealthy: 2, disruptionsAllowed: 0 });
    // spec change bumps generation and is observed
    await s.req(
      'PATCH',
      '/apis/policy/v1/namespaces/pdb1/poddisruptionbudgets/min',
      { spec: { minAvailable: null, maxUnavailable: '34%' } },
      'application/merge-patch+json',
    );
    expect(await pdbStatus('pdb1', 'min')).toMatchObject({
      observedGeneration: 2,
      desiredHealthy: 1,
      disruptionsAllowed: 1,
    });
  });
});

describe('eviction', () => {
  it('429 TooManyRequests when the budget is exhausted, eviction when allowed', async () => {
    await readyPods('ev1', ['a', 'b'], { app: 'db' });
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/ev1/poddisruptionbudgets',
      pdb('db', { minAvailable: 2, selector: { matchLabels: { app: 'db' } } }),
    );
    await s.cluster.store.settle();
    const denied = await evict('ev1', 'a');
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({
      kind: 'Status',
      reason: 'TooManyRequests',
      code: 429,
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: 'The disruption budget db needs 2 healthy pods and has 2 currently',
          },
        ],
      },
    });
    expect(denied.headers['retry-after']).toBeUndefined();
    expect((await s.req('GET', '/api/v1/namespaces/ev1/pods/a')).status).toBe(200);
    await s.req(
      'PATCH',
      '/apis/policy/v1/namespaces/ev1/poddisruptionbudgets/db',
      { spec: { minAvailable: 1 } },
      'application/merge-patch+json',
    );
    await s.cluster.store.settle();
    const ok = await evict('ev1', 'a');
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ kind: 'Status', status: 'Success' });
    // a bound pod is deleted gracefully: terminating until its kubelet (none here) finishes it
    const evicted = await s.req('GET', '/api/v1/namespaces/ev1/pods/a');
    expect(evicted.body.metadata.deletionTimestamp).toBeDefined();
    expect(evicted.body.metadata.deletionGracePeriodSeconds).toBe(30);
    // the second pod is now protected
    expect((await evict('ev1', 'b')).status).toBe(429);
    expect(await pdbStatus('ev1', 'db')).toMatchObject({
      // the terminating pod still counts as expected, no longer as healthy (disruption controller)
      expectedPods: 2,
      currentHealthy: 1,
      disruptionsAllowed: 0,
    });
  });

  it('decrements disruptionsAllowed immediately so concurrent evictions cannot both pass', async () => {
    await readyPods('ev2', ['a', 'b', 'c'], { app: 'w' });
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/ev2/poddisruptionbudgets',
      pdb('w', { maxUnavailable: 1, selector: { matchLabels: { app: 'w' } } }),
    );
    await s.cluster.store.settle();
    const [r1, r2] = await Promise.all([evict('ev2', 'a'), evict('ev2', 'b')]);
    expect([r1.status, r2.status].sort()).toEqual([201, 429]);
  });

  it('500 when more than one PDB selects the pod; pods without PDB evict freely', async () => {
    await readyPods('ev3', ['a', 'free'], { app: 'm' });
    await s.req(
      'PATCH',
      '/api/v1/namespaces/ev3/pods/free',
      { metadata: { labels: { app: 'other' } } },
      'application/merge-patch+json',
    );
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/ev3/poddisruptionbudgets',
      pdb('one', { maxUnavailable: 1, selector: { matchLabels: { app: 'm' } } }),
    );
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/ev3/poddisruptionbudgets',
      pdb('two', { maxUnavailable: 1, selector: {} }),
    );
    await s.cluster.store.settle();
    const r = await evict('ev3', 'a');
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({
      reason: 'InternalError',
      message:
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    });
    await s.req('DELETE', '/apis/policy/v1/namespaces/ev3/poddisruptionbudgets/two');
    const free = await evict('ev3', 'free');
    expect(free.status).toBe(201);
    expect((await evict('ev3', 'missing')).status).toBe(404);
  });

  it('pending pods are evicted regardless of the budget', async () => {
    await s.req('POST', '/api/v1/namespaces', { metadata: { name: 'ev4' } });
    await s.req('POST', '/api/v1/namespaces/ev4/pods', pod('p', {}, { app: 'q' }));
    await s.req(
      'POST',
      '/apis/policy/v1/namespaces/ev4/poddisruptionbudgets',
      pdb('q', { minAvailable: 5, selector: { matchLabels: { app: 'q' } } }),
    );
    await s.cluster.store.settle();
    expect((await evict('ev4', 'p')).status).toBe(201);
  });
});
