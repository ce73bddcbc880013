/**
 * API conformance: the Eviction API with PodDisruptionBudgets (minAvailable / maxUnavailable, int and
 * percent; 429 when the budget is spent, allowed again when it grows; 500 with two PDBs) — through
 * src/kube only. Pods belong to a ReplicaSet of the pod count (see `group`) so the disruption controller
 * of a real cluster can compute expected pods for percent/maxUnavailable budgets, and are marked Ready
 * through the status subresource (nothing schedules them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntOrString, Pod, PodDisruptionBudget, ReplicaSet } from '../../src/apis/core.ts';
import { eventually, startCluster, type TestCluster, testPod } from './harness.ts';

let c: TestCluster;
beforeAll(async () => {
  c = await startCluster('evict');
});
afterAll(async () => {
  await c?.stop();
});

/**
 * `n` Pending-but-Ready pods owned by a ReplicaSet of scale `n`, so the disruption controller of a real
 * cluster finds the controller's scale for percent/maxUnavailable budgets. A real cluster's ReplicaSet
 * controller creates the pods itself (a ReplicaSet at 0 replicas deletes any pod it owns at once); the
 * embedded server runs no workload controllers, so there the test creates the owned pods. Either way the
 * pods are then marked Running and Ready through the status subresource (nothing schedules them: their
 * nodeSelector matches no node). Returns the pod names.
 */
async function group(app: string, n: number): Promise<string[]> {
  const rs = await c.client.create<ReplicaSet>({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name: app, namespace: c.namespace },
    spec: {
      replicas: n,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: {
          containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
          nodeSelector: { 'capenter.test/never': 'true' },
          terminationGracePeriodSeconds: 0,
        },
      },
    },
  });
  let names: string[];
  if (c.real) {
    const pods = await eventually(
      async () => {
        const l = await c.client.list('Pod', { namespace: c.namespace, labelSelector: `app=${app}` });
        return l.items.length === n ? l.items : undefined;
      },
      `${n} pods of ReplicaSet ${app}`,
      30_000,
    );
    names = pods.map((p) => p.metadata.name as string).sort();
  } else {
    names = [];
    for (let i = 0; i < n; i++) {
      const name = `${app}-${i}`;
      const pod = testPod(c.namespace, name, { app });
      pod.metadata.ownerReferences = [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: app,
          uid: rs.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ];
      await c.client.create(pod);
      names.push(name);
    }
  }
  for (const name of names) {
    await c.client.patchStatus('Pod', name, c.namespace, {
      status: {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
  }
  return names;
}

async function pdb(
  name: string,
  selector: Record<string, string>,
  budget: { minAvailable?: IntOrString; maxUnavailable?: IntOrString },
): Promise<PodDisruptionBudget> {
  return c.client.create<PodDisruptionBudget>({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: c.namespace },
    spec: { selector: { matchLabels: selector }, ...budget },
  });
}

/**
 * Waits until the PDB status reflects its current generation with `allowed` disruptions (and `healthy`
 * current healthy pods, when given) and returns it. On a real server an eviction first writes the status
 * itself (disruptionsAllowed − 1, currentHealthy unchanged) before the disruption controller recounts, so a
 * test that reads currentHealthy after an eviction waits for it too.
 */
async function pdbStatus(
  name: string,
  allowed: number,
  healthy?: number,
): Promise<NonNullable<PodDisruptionBudget['status']>> {
  const p = await eventually(
    async () => {
      const cur = await c.client.get('PodDisruptionBudget', name, c.namespace);
      const st = cur.status;
      return st &&
        st.observedGeneration === cur.metadata.generation &&
        st.disruptionsAllowed === allowed &&
        (healthy === undefined || st.currentHealthy === healthy)
        ? cur
        : undefined;
    },
    `PDB ${name} status with disruptionsAllowed=${allowed}${healthy === undefined ? '' : ` currentHealthy=${healthy}`}`,
    30_000,
  );
  return p.status as NonNullable<PodDisruptionBudget['status']>;
}

/**
 * Stands in for the ReplicaSet controller after an eviction: a real cluster's controller creates an
 * unready replacement, which keeps the selected pods at the controller's scale. The embedded server runs
 * no workload controllers and counts expected pods from the selected pods (its documented limitation), so
 * without a replacement a percent/maxUnavailable budget would shrink with every eviction.
 */
async function replaceEvicted(app: string, evicted: string): Promise<void> {
  if (c.real) return;
  const rs = await c.client.get('ReplicaSet', app, c.namespace);
  const pod = testPod(c.namespace, `${evicted}-r`, { app });
  pod.metadata.ownerReferences = [
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: app,
      uid: rs.metadata.uid as string,
      controller: true,
    },
  ];
  await c.client.create(pod);
}

async function gone(name: string): Promise<boolean> {
  const p = await c.client.tryGet('Pod', name, c.namespace);
  return p === undefined || p.metadata.deletionTimestamp !== undefined;
}

describe('eviction', () => {
  it('a pod without a PDB is evicted; a missing pod is NotFound', async () => {
    await c.client.create(testPod(c.namespace, 'free'));
    expect(await c.client.evict({ name: 'free', namespace: c.namespace })).toEqual({ ok: true });
    expect(await gone('free')).toBe(true);
    const missing = await c.client.evict({ name: 'never-existed', namespace: c.namespace });
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.code).toBe('NotFound');
  });

  it('minAvailable (int): one eviction allowed, then 429, then allowed after the budget grows', async () => {
    const pods = await group('min-int', 4);
    await pdb('min-int', { app: 'min-int' }, { minAvailable: 3 });
    const st = await pdbStatus('min-int', 1);
    expect([st.currentHealthy, st.desiredHealthy, st.expectedPods]).toEqual([4, 3, 4]);
    expect(await c.client.evict({ name: pods[0] as string, namespace: c.namespace })).toEqual({ ok: true });
    expect(await gone(pods[0] as string)).toBe(true);
    const blocked = await eventually(async () => {
      const r = await c.client.evict({ name: pods[1] as string, namespace: c.namespace });
      return r.ok ? undefined : r; // the first may race the status update; a 429 must come
    }, '429 from the PDB');
    expect(blocked).toMatchObject({ ok: false, code: 'TooManyRequests', httpStatus: 429 });
    expect(blocked.message).toMatch(/disruption budget/i);
    expect(await gone(pods[1] as string)).toBe(false);
    await c.client.patch('PodDisruptionBudget', 'min-int', c.namespace, { spec: { minAvailable: 2 } });
    await pdbStatus('min-int', 1);
    expect(await c.client.evict({ name: pods[1] as string, namespace: c.namespace })).toEqual({ ok: true });
  });

  it('minAvailable (percent, rounded up): 50% of 4 → 2 evictions, then 429', async () => {
    const pods = await group('min-pct', 4);
    await pdb('min-pct', { app: 'min-pct' }, { minAvailable: '50%' });
    const st = await pdbStatus('min-pct', 2);
    expect(st.desiredHealthy).toBe(2);
    expect((await c.client.evict({ name: pods[0] as string, namespace: c.namespace })).ok).toBe(true);
    await replaceEvicted('min-pct', pods[0] as string);
    expect(await pdbStatus('min-pct', 1, 3)).toMatchObject({
      currentHealthy: 3,
      desiredHealthy: 2,
      expectedPods: 4,
    });
    expect((await c.client.evict({ name: pods[1] as string, namespace: c.namespace })).ok).toBe(true);
    await replaceEvicted('min-pct', pods[1] as string);
    await pdbStatus('min-pct', 0);
    const r = await c.client.evict({ name: pods[2] as string, namespace: c.namespace });
    expect(r).toMatchObject({ ok: false, code: 'TooManyRequests' });
  });

  it('maxUnavailable (int): 1 of 4 → one eviction, then 429', async () => {
    const pods = await group('max-int', 4);
    await pdb('max-int', { app: 'max-int' }, { maxUnavailable: 1 });
    const st = await pdbStatus('max-int', 1);
    expect([st.desiredHealthy, st.expectedPods]).toEqual([3, 4]);
    expect((await c.client.evict({ name: pods[0] as string, namespace: c.namespace })).ok).toBe(true);
    await replaceEvicted('max-int', pods[0] as string);
    expect(await pdbStatus('max-int', 0, 3)).toMatchObject({
      currentHealthy: 3,
      desiredHealthy: 3,
      expectedPods: 4,
    });
    expect(await c.client.evict({ name: pods[1] as string, namespace: c.namespace })).toMatchObject({
      ok: false,
      code: 'TooManyRequests',
    });
  });

  it('maxUnavailable (percent, rounded up): 30% of 4 → 2 evictions, then 429', async () => {
    const pods = await group('max-pct', 4);
    await pdb('max-pct', { app: 'max-pct' }, { maxUnavailable: '30%' });
    const st = await pdbStatus('max-pct', 2);
    expect(st.desiredHealthy).toBe(2);
    expect((await c.client.evict({ name: pods[0] as string, namespace: c.namespace })).ok).toBe(true);
    await replaceEvicted('max-pct', pods[0] as string);
    await pdbStatus('max-pct', 1);
    expect((await c.client.evict({ name: pods[1] as string, namespace: c.namespace })).ok).toBe(true);
    await replaceEvicted('max-pct', pods[1] as string);
    await pdbStatus('max-pct', 0);
    expect(await c.client.evict({ name: pods[2] as string, namespace: c.namespace })).toMatchObject({
      ok: false,
      code: 'TooManyRequests',
    });
  });

  it('a pod selected by two PDBs cannot be evicted (500)', async () => {
    const pods = await group('two-pdb', 2);
    await pdb('two-a', { app: 'two-pdb' }, { maxUnavailable: 2 });
    await pdb('two-b', { app: 'two-pdb' }, { minAvailable: 0 });
    await pdbStatus('two-a', 2);
    await pdbStatus('two-b', 2);
    const r = await c.client.evict({ name: pods[0] as string, namespace: c.namespace });
    expect(r).toMatchObject({ ok: false, code: 'Error', httpStatus: 500 });
    expect(!r.ok && r.message).toMatch(/more than one PodDisruptionBudget/);
    const p: Pod | undefined = await c.client.tryGet('Pod', pods[0] as string, c.namespace);
    expect(p?.metadata.deletionTimestamp).toBeUndefined();
  });
});
