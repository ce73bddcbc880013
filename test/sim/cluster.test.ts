/**
 * The simulated cluster end to end, through the real client against the embedded API server, on a
 * FakeClock: scheduler, kubelet, pod GC and workload controllers together.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Deployment, Pod } from '../../src/apis/core.ts';
import {
  type FakeTimeCluster,
  scheduledCondition,
  startFakeTimeCluster,
  testNode,
  testPod,
} from './helpers.ts';

let c: FakeTimeCluster;
afterEach(async () => {
  const unexpected = c.errors.filter(
    (e) => !/409|Conflict|the object has been modified/i.test(String(e.err)),
  );
  await c.stop();
  expect(unexpected.map((e) => `${e.where}: ${String(e.err)}`)).toEqual([]);
});

const NS = 'default';

function deployment(name: string, replicas: number, cpu = '100m'): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'registry.k8s.io/pause:3.10',
              resources: { requests: { cpu, memory: '64Mi' } },
            },
          ],
        },
      },
    },
  };
}

async function podsOf(app: string): Promise<Pod[]> {
  return (await c.client.list('Pod', { namespace: NS, labelSelector: { app } })).items;
}

const isRunningReady = (p: Pod) =>
  p.status?.phase === 'Running' &&
  p.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');

describe('workloads', () => {
  it('a Deployment of 3 gets one ReplicaSet and 3 pods with owner references; scale 5 then 2', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('n1'));
    const d = await c.client.create(deployment('web', 3));
    const pods = await c.until(async () => {
      const ps = await podsOf('web');
      return ps.length === 3 && ps.every(isRunningReady) ? ps : undefined;
    }, '3 running pods');
    const rsList = (await c.client.list('ReplicaSet', { namespace: NS })).items;
    expect(rsList).toHaveLength(1);
    const rs = rsList[0]!;
    const hash = rs.metadata.labels?.['pod-template-hash'];
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(rs.metadata.name).toBe(`web-${hash}`);
    expect(rs.spec.selector.matchLabels).toEqual({ app: 'web', 'pod-template-hash': hash });
    expect(rs.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'web',
        uid: d.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    for (const p of pods) {
      expect(p.metadata.name).toMatch(new RegExp(`^web-${hash}-[a-z0-9]{5}$`));
      expect(p.metadata.labels?.['pod-template-hash']).toBe(hash);
      expect(p.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: rs.metadata.name,
          uid: rs.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(p.spec.nodeName).toBe('n1');
    }
    await c.until(async () => {
      const cur = await c.client.get('Deployment', 'web', NS);
      const st = cur.status as Record<string, number> | undefined;
      return (
        st?.replicas === 3 && st.readyReplicas === 3 && st.availableReplicas === 3 && st.updatedReplicas === 3
      );
    }, 'deployment status 3/3');

    // scale subresource: 5
    await c.client.patch('Deployment', 'web', NS, { spec: { replicas: 5 } }, { subresource: 'scale' });
    await c.until(async () => {
      const ps = await podsOf('web');
      return ps.length === 5 && ps.every(isRunningReady);
    }, '5 running pods');
    // then 2: three pods terminate (30 s grace on the simulated clock) and disappear
    await c.client.patch('Deployment', 'web', NS, { spec: { replicas: 2 } }, { subresource: 'scale' });
    await c.until(
      async () => (await podsOf('web')).filter((p) => !p.metadata.deletionTimestamp).length === 2,
      '2 live pods',
    );
    await c.until(async () => (await podsOf('web')).length === 2, 'terminated pods removed', {
      stepMs: 2000,
    });
    await c.until(async () => {
      const st = (await c.client.get('Deployment', 'web', NS)).status as Record<string, number> | undefined;
      return st?.replicas === 2 && st.readyReplicas === 2;
    }, 'deployment status 2/2');
    const scale = await c.client.request<{ spec: { replicas: number }; status: { replicas: number } }>(
      'GET',
      `/apis/apps/v1/namespaces/${NS}/deployments/web/scale`,
    );
    expect(scale.spec.replicas).toBe(2);
    expect(scale.status.replicas).toBe(2);
  });

  it('a template change rolls out a new ReplicaSet and scales the old one to 0', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('n1'));
    await c.client.create(deployment('roll', 2));
    await c.until(async () => (await podsOf('roll')).filter(isRunningReady).length === 2, '2 running pods');
    const first = (await c.client.list('ReplicaSet', { namespace: NS })).items[0]!;
    expect(first.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1');
    await c.client.patch('Deployment', 'roll', NS, {
      spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.9' }] } } },
    });
    const second = await c.until(async () => {
      const rs = (await c.client.list('ReplicaSet', { namespace: NS })).items;
      return rs.length === 2 ? rs.find((r) => r.metadata.name !== first.metadata.name) : undefined;
    }, 'a second ReplicaSet');
    expect(second.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2');
    expect(second.metadata.labels?.['pod-template-hash']).not.toBe(
      first.metadata.labels?.['pod-template-hash'],
    );
    await c.until(
      async () => {
        const ps = await podsOf('roll');
        return (
          ps.length === 2 &&
          ps.every((p) => isRunningReady(p) && p.spec.containers[0]?.image === 'registry.k8s.io/pause:3.9')
        );
      },
      'pods of the new template only',
      { stepMs: 2000 },
    );
    expect((await c.client.get('ReplicaSet', first.metadata.name ?? '', NS)).spec.replicas).toBe(0);
    expect(
      (await c.client.get('Deployment', 'roll', NS)).metadata.annotations?.[
        'deployment.kubernetes.io/revision'
      ],
    ).toBe('2');
  });

  it('an evicted Deployment pod is replaced by a pending pod that binds once the old one is gone', async () => {
    c = await startFakeTimeCluster();
    // room for exactly two 1-cpu pods
    await c.client.create(testNode('n1', { cpu: '2' }));
    await c.client.create(deployment('api', 2, '1'));
    const [victim] = await c.until(async () => {
      const ps = await podsOf('api');
      return ps.length === 2 && ps.every(isRunningReady) ? ps : undefined;
    }, '2 running pods');
    expect(await c.client.evict(victim!)).toEqual({ ok: true });
    const replacement = await c.until(async () => {
      const ps = await podsOf('api');
      const fresh = ps.find((p) => p.metadata.name !== victim!.metadata.name && !p.spec.nodeName);
      return scheduledCondition(fresh)?.reason === 'Unschedulable' ? fresh : undefined;
    }, 'pending replacement');
    expect(scheduledCondition(replacement)?.message).toBe('0/1 nodes are available: 1 Insufficient cpu.');
    // the evicted pod holds its cpu until its 30 s grace period ends; then the replacement runs
    await c.until(
      async () => {
        const p = await c.client.tryGet('Pod', replacement.metadata.name ?? '', NS);
        return p && isRunningReady(p);
      },
      'replacement running',
      { stepMs: 2000 },
    );
    expect(await c.client.tryGet('Pod', victim!.metadata.name ?? '', NS)).toBeUndefined();
    expect(c.clock.now() - Date.UTC(2024, 0, 1)).toBeGreaterThanOrEqual(30_000);
  });

  it('a DaemonSet runs one pod per eligible node, including new ones, and leaves deleted nodes', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('n1'));
    await c.client.create(testNode('gpu', { taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] }));
    await c.client.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: { containers: [{ name: 'a', image: 'agent:1', resources: { requests: { cpu: '50m' } } }] },
        },
      },
    });
    const nodesOf = async () =>
      (await podsOf('agent'))
        .filter((p) => isRunningReady(p))
        .map((p) => p.spec.nodeName)
        .sort();
    await c.until(
      async () => JSON.stringify(await nodesOf()) === '["n1"]',
      'agent on n1 only (gpu taint not tolerated)',
    );
    const [p1] = await podsOf('agent');
    expect(p1!.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }],
    });
    expect(p1!.spec.tolerations).toContainEqual({
      key: 'node.kubernetes.io/unschedulable',
      operator: 'Exists',
      effect: 'NoSchedule',
    });

    await c.client.create(testNode('n2'));
    await c.until(async () => JSON.stringify(await nodesOf()) === '["n1","n2"]', 'agent on the new node');
    // a cordoned node keeps and still gets DaemonSet pods (they tolerate unschedulable)
    await c.client.patch('Node', 'n2', undefined, { spec: { unschedulable: true } });
    await c.client.delete('Node', 'n1');
    await c.until(async () => JSON.stringify(await nodesOf()) === '["n2"]', 'agent gone with n1');
    await c.until(async () => (await podsOf('agent')).length === 1, 'no pod left for n1');
    await c.until(async () => {
      const st = (await c.client.get('DaemonSet', 'agent', NS)).status as Record<string, number> | undefined;
      return st?.desiredNumberScheduled === 1 && st.numberReady === 1 && st.currentNumberScheduled === 1;
    }, 'daemonset status');
  });

  it('a StatefulSet creates ordinals in order with PVCs and scales down from the highest', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('n1'));
    await c.client.create({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: NS },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: {
          metadata: { labels: { app: 'db' } },
          spec: { containers: [{ name: 'db', image: 'db:1', resources: { requests: { cpu: '100m' } } }] },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    });
    const created: string[] = [];
    await c.until(
      async () => {
        const ps = await podsOf('db');
        for (const p of ps) if (!created.includes(p.metadata.name ?? '')) created.push(p.metadata.name ?? '');
        return ps.length === 3 && ps.every(isRunningReady);
      },
      '3 running ordinals',
      { stepMs: 50 },
    );
    expect(created).toEqual(['db-0', 'db-1', 'db-2']);
    const db1 = await c.client.get('Pod', 'db-1', NS);
    expect(db1.spec.hostname).toBe('db-1');
    expect(db1.spec.volumes).toContainEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: 'data-db-1' },
    });
    const pvcs = (await c.client.list('PersistentVolumeClaim', { namespace: NS })).items
      .map((p) => p.metadata.name)
      .sort();
    expect(pvcs).toEqual(['data-db-0', 'data-db-1', 'data-db-2']);

    await c.client.patch('StatefulSet', 'db', NS, { spec: { replicas: 1 } }, { subresource: 'scale' });
    const firstGone = await c.until(async () => {
      const ps = await podsOf('db');
      return ps.find((p) => p.metadata.deletionTimestamp)?.metadata.name;
    }, 'a terminating ordinal');
    expect(firstGone).toBe('db-2');
    await c.until(
      async () => JSON.stringify((await podsOf('db')).map((p) => p.metadata.name)) === '["db-0"]',
      'only db-0 left',
      {
        stepMs: 2000,
      },
    );
  });

  it('a Job runs parallelism pods until completions succeeded', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('n1'));
    await c.client.create({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'batch', namespace: NS },
      spec: {
        completions: 3,
        parallelism: 2,
        template: {
          metadata: { labels: { app: 'batch' }, annotations: { 'sim.capenter.dev/run-seconds': '10' } },
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'w', image: 'worker:1', resources: { requests: { cpu: '100m' } } }],
          },
        },
      },
    });
    await c.until(
      async () => (await podsOf('batch')).filter(isRunningReady).length === 2,
      '2 running workers',
    );
    const job = await c.until(
      async () => {
        const j = await c.client.get('Job', 'batch', NS);
        const conds = (j.status as { conditions?: Array<{ type: string; status: string }> } | undefined)
          ?.conditions;
        return conds?.some((x) => x.type === 'Complete' && x.status === 'True') ? j : undefined;
      },
      'job complete',
      { stepMs: 1000 },
    );
    expect((job.status as Record<string, unknown>).succeeded).toBe(3);
    const pods = await podsOf('batch');
    expect(pods).toHaveLength(3);
    expect(pods.every((p) => p.status?.phase === 'Succeeded')).toBe(true);
    expect(pods[0]!.metadata.labels?.['batch.kubernetes.io/job-name']).toBe('batch');
  });
});

describe('kube-scheduler and kubelet', () => {
  it('marks a pod unschedulable without nodes, binds it when a node becomes Ready, and runs it', async () => {
    c = await startFakeTimeCluster({ kubeletReadyDelaySeconds: 2 });
    await c.client.create(testPod(NS, 'lonely'));
    const pending = await c.until(async () => {
      const p = await c.client.get('Pod', 'lonely', NS);
      return scheduledCondition(p)?.status === 'False' ? p : undefined;
    }, 'PodScheduled=False');
    expect(scheduledCondition(pending)).toMatchObject({
      reason: 'Unschedulable',
      message: 'no nodes available to schedule pods',
    });
    await c.client.create(testNode('n1'));
    const running = await c.until(async () => {
      const p = await c.client.get('Pod', 'lonely', NS);
      return isRunningReady(p) ? p : undefined;
    }, 'running');
    expect(running.spec.nodeName).toBe('n1');
    // The node came up with the not-ready taint: as kube-scheduler's queueing hints (TaintToleration), its
    // add did not move the pod back, so no second attempt failed on it; its Ready update did.
    const failed = (await c.client.list('Event', { namespace: NS })).items.filter(
      (e) => e.reason === 'FailedScheduling' && e.involvedObject?.name === 'lonely',
    );
    expect(failed.map((e) => e.message)).toEqual(['no nodes available to schedule pods']);
    const types = Object.fromEntries((running.status?.conditions ?? []).map((x) => [x.type, x.status]));
    expect(types).toEqual({
      PodReadyToStartContainers: 'True',
      Initialized: 'True',
      ContainersReady: 'True',
      Ready: 'True',
      PodScheduled: 'True',
    });
    const node = await c.client.get('Node', 'n1');
    expect(node.status?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
    });
    expect(node.status?.allocatable).toEqual({ cpu: '4', memory: '16Gi', pods: '110' });
    // the kubelet waited for the configured delay on the simulated clock
    const readyAt = Date.parse(
      node.status?.conditions?.find((x) => x.type === 'Ready')?.lastTransitionTime ?? '',
    );
    expect(readyAt - Date.UTC(2024, 0, 1)).toBeGreaterThanOrEqual(2000);
  });

  it('with a providerID prefix the kubelet runs only matching nodes', async () => {
    c = await startFakeTimeCluster({ kubeletProviderIDPrefix: 'kwok://' });
    await c.client.create(testNode('kwok-1', { providerID: 'kwok://us-east-1/us-east-1a/i-1' }));
    await c.client.create(testNode('other'));
    await c.until(async () => {
      const n = await c.client.get('Node', 'kwok-1');
      return n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
    }, 'kwok node Ready');
    await c.advance(3000);
    expect((await c.client.get('Node', 'other')).status?.conditions).toBeUndefined();
  });

  it('reports why each node is unsuitable; too-big pods stay pending while others run', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('small', { cpu: '1' }));
    await c.client.create(
      testNode('new-1', { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }] }),
    );
    await c.client.create(
      testNode('new-2', { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }] }),
    );
    await c.until(
      async () => (await c.client.list('Node')).items.every((n) => n.status?.conditions?.length),
      'nodes ready',
    );
    await c.client.create(testPod(NS, 'big', { cpu: '2' }));
    await c.client.create(testPod(NS, 'small-pod', { cpu: '500m' }));
    const big = await c.until(async () => {
      const p = await c.client.get('Pod', 'big', NS);
      return scheduledCondition(p)?.reason === 'Unschedulable' ? p : undefined;
    }, 'big unschedulable');
    expect(scheduledCondition(big)?.message).toBe(
      '0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {karpenter.sh/unregistered: }.',
    );
    const small = await c.until(async () => {
      const p = await c.client.get('Pod', 'small-pod', NS);
      return isRunningReady(p) ? p : undefined;
    }, 'small pod running');
    expect(small.spec.nodeName).toBe('small');
    await c.advance(5000);
    expect((await c.client.get('Pod', 'big', NS)).spec.nodeName).toBeUndefined();
  });

  it('taints block, tolerations allow, cordoned nodes get nothing', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(
      testNode('tainted', { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] }),
    );
    await c.client.create(testNode('cordoned'));
    await c.client.patch('Node', 'cordoned', undefined, { spec: { unschedulable: true } });
    await c.client.create(testPod(NS, 'plain'));
    await c.client.create(
      testPod(NS, 'tolerant', {
        spec: { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }] },
      }),
    );
    const plain = await c.until(async () => {
      const p = await c.client.get('Pod', 'plain', NS);
      return scheduledCondition(p)?.message?.includes('unschedulable') ? p : undefined;
    }, 'plain pod unschedulable');
    expect(scheduledCondition(plain)?.message).toBe(
      '0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 1 node(s) were unschedulable.',
    );
    const tolerant = await c.until(async () => {
      const p = await c.client.get('Pod', 'tolerant', NS);
      return isRunningReady(p) ? p : undefined;
    }, 'tolerant pod running');
    expect(tolerant.spec.nodeName).toBe('tainted');
    // uncordon: the pending pod is retried on the node update and binds
    await c.client.patch('Node', 'cordoned', undefined, { spec: { unschedulable: false } });
    const bound = await c.until(
      async () => (await c.client.get('Pod', 'plain', NS)).spec.nodeName,
      'plain bound',
    );
    expect(bound).toBe('cordoned');
  });

  it('removes a startup taint after its delay; pods bind only then', async () => {
    c = await startFakeTimeCluster({ startupTaintRemoval: { 'example.com/cni-not-ready': 5 } });
    await c.client.create(
      testNode('n1', {
        taints: [
          { key: 'example.com/cni-not-ready', effect: 'NoSchedule' },
          { key: 'example.com/permanent', effect: 'PreferNoSchedule' },
        ],
      }),
    );
    await c.client.create(testPod(NS, 'p'));
    const start = c.clock.now();
    await c.until(async () => {
      const p = await c.client.get('Pod', 'p', NS);
      return scheduledCondition(p)?.message?.includes('cni-not-ready');
    }, 'blocked by the startup taint');
    await c.advance(3000);
    const node = await c.client.get('Node', 'n1');
    expect(node.spec?.taints?.map((t) => t.key)).toContain('example.com/cni-not-ready');
    await c.until(async () => {
      const n = await c.client.get('Node', 'n1');
      return !n.spec?.taints?.some((t) => t.key === 'example.com/cni-not-ready');
    }, 'startup taint removed');
    expect(c.clock.now() - start).toBeGreaterThanOrEqual(5000);
    expect((await c.client.get('Node', 'n1')).spec?.taints).toEqual([
      { key: 'example.com/permanent', effect: 'PreferNoSchedule' },
    ]);
    await c.until(async () => isRunningReady(await c.client.get('Pod', 'p', NS)), 'pod running');
  });

  it('deleting a node deletes its pods; the Deployment replaces them as pending pods', async () => {
    c = await startFakeTimeCluster();
    await c.client.create(testNode('doomed'));
    await c.client.create(deployment('svc', 2));
    const before = await c.until(async () => {
      const ps = await podsOf('svc');
      return ps.length === 2 && ps.every(isRunningReady) ? ps : undefined;
    }, '2 running pods');
    await c.client.delete('Node', 'doomed');
    const after = await c.until(async () => {
      const ps = await podsOf('svc');
      const pending = ps.filter((p) => scheduledCondition(p)?.reason === 'Unschedulable');
      return ps.length === 2 && pending.length === 2 ? ps : undefined;
    }, '2 pending replacements');
    const oldNames = new Set(before.map((p) => p.metadata.name));
    expect(after.some((p) => oldNames.has(p.metadata.name))).toBe(false);
    expect(scheduledCondition(after[0])?.message).toBe('no nodes available to schedule pods');
    expect(c.podGC?.deleted).toBe(2);
  });
});
