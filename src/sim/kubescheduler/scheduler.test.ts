import { afterEach, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../apis/core.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../embedded/cluster.ts';
import { FakeClock } from '../../kube/clock.ts';
import type { WorkQueue } from '../../kube/workqueue.ts';
import { whenObjects } from '../../testing/watch.ts';
import { queueOrder } from './scheduler.ts';

let sim: SimulatedCluster | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

function pod(name: string, cpu: string, priority?: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'x' } },
    spec: {
      ...(priority !== undefined ? { priority } : {}),
      containers: [{ name: 'app', image: 'pause', resources: { requests: { cpu, memory: '64Mi' } } }],
    },
  };
}

function readyNode(name: string, cpu: string): Node {
  const alloc = { cpu, memory: '64Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {},
    status: {
      capacity: alloc,
      allocatable: alloc,
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    },
  };
}

/**
 * Resolves once the stand-ins' shared Pod informer (the scheduler's) has delivered the writes of `ps` to its
 * handlers (the embedded server's resource versions are increasing integers, and one watch delivers them in order).
 */
function schedulerSaw(cluster: SimulatedCluster, ps: readonly Pod[]): Promise<void> {
  const pods = cluster.informers.informerFor('Pod');
  const rv = Math.max(...ps.map((p) => Number(p.metadata.resourceVersion)));
  const seen = () => Number(pods.cache.resourceVersion) >= rv;
  if (seen()) return Promise.resolve();
  return new Promise((resolve) => {
    const off = pods.on({
      update: () => {
        if (!seen()) return;
        off();
        resolve();
      },
    });
  });
}

const cond = (p: Pod) => p.status?.conditions?.find((c) => c.type === 'PodScheduled');

describe('kube-scheduler stand-in (bulk cycles)', () => {
  it('marks every pending pod once, then binds by priority until the node is full and re-marks the rest', async () => {
    // every delay of the stand-ins (the pods' scheduling backoff, the 30 s retry) runs on this clock
    const clock = new FakeClock();
    sim = await startSimulatedCluster({
      clock,
      components: { scheduler: true, kubelet: false, podGC: false, workloads: false },
    });
    const { client } = sim;
    for (let i = 0; i < 40; i++)
      await client.create(pod(`p${String(i).padStart(2, '0')}`, '1', i >= 35 ? 100 : 0));
    const marked = await whenObjects(
      client,
      'Pod',
      (ps) => (ps.length === 40 && ps.every((p) => cond(p)?.status === 'False') ? ps : undefined),
      { namespace: 'default' },
    );
    expect(new Set(marked.map((p) => cond(p)?.message))).toEqual(
      new Set(['no nodes available to schedule pods']),
    );
    // one status write per pod: no write loop from our own updates. Once the scheduler has been handed its own 40
    // writes, none of them queued a retry (a status-only update is none) ...
    const rv = new Map(marked.map((p) => [p.metadata.name, p.metadata.resourceVersion]));
    await schedulerSaw(sim, marked);
    const queue = (sim.scheduler as unknown as { queue: WorkQueue<string> }).queue;
    expect({ ready: queue.len(), processing: queue.processingLen() }).toEqual({ ready: 0, processing: 0 });
    // ... and 1.1 s later (which also passes every pod's 1 s backoff after its first failure, so the node below
    // retries them all at once) no pod was written again
    await clock.tick(1100);
    const again = (await client.list('Pod', { namespace: 'default' })).items;
    expect(again.filter((p) => rv.get(p.metadata.name) !== p.metadata.resourceVersion)).toEqual([]);
    expect(sim.scheduler?.statusWrites).toBe(40);

    await client.create(readyNode('n1', '10')); // room for 10 pods of 1 cpu
    const settled = await whenObjects(
      client,
      'Pod',
      (ps) => {
        const bound = ps.filter((p) => p.spec.nodeName);
        const rest = ps.filter((p) => !p.spec.nodeName);
        return ps.length === 40 &&
          bound.length === 10 &&
          rest.every((p) => cond(p)?.message?.startsWith('0/1'))
          ? { bound, rest }
          : undefined;
      },
      { namespace: 'default' },
    );
    // the 5 high-priority pods go first (PrioritySort), then the oldest
    const names = settled.bound.map((p) => p.metadata.name ?? '').sort();
    expect(names.filter((n) => Number(n.slice(1)) >= 35)).toEqual(['p35', 'p36', 'p37', 'p38', 'p39']);
    expect(new Set(settled.rest.map((p) => cond(p)?.message))).toEqual(
      new Set(['0/1 nodes are available: 1 Insufficient cpu.']),
    );
    expect(sim.scheduler?.bindings).toBe(10);
  });

  it('queueOrder: higher priority first, then older creationTimestamp', () => {
    const a = pod('a', '1', 0);
    a.metadata.creationTimestamp = '2024-01-01T00:00:02Z';
    const b = pod('b', '1', 0);
    b.metadata.creationTimestamp = '2024-01-01T00:00:01Z';
    const c = pod('c', '1', 5);
    c.metadata.creationTimestamp = '2024-01-01T00:00:03Z';
    expect([a, b, c].sort(queueOrder).map((p) => p.metadata.name)).toEqual(['c', 'b', 'a']);
  });
});
