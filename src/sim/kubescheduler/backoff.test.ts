import { afterEach, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../apis/core.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../embedded/cluster.ts';
import { FakeClock } from '../../kube/clock.ts';
import { whenObjects } from '../../testing/watch.ts';

let sim: SimulatedCluster | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

function pod(name: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'x' } },
    spec: {
      containers: [{ name: 'app', image: 'pause', resources: { requests: { cpu: '1', memory: '64Mi' } } }],
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

const cond = (p: Pod) => p.status?.conditions?.find((c) => c.type === 'PodScheduled');

describe('kube-scheduler stand-in backoff (SchedulerPopFromBackoffQ)', () => {
  it('tries pods still in their backoff at once when nothing else is queued, as kube-scheduler 1.33+', async () => {
    // every delay of the stand-in runs on this clock, which the test never advances: a pod that waited out its
    // backoff (1 s after the first failure, 2 s after the second) would never be tried
    const clock = new FakeClock();
    sim = await startSimulatedCluster({
      clock,
      components: { scheduler: true, kubelet: false, podGC: false, workloads: false },
    });
    const { client } = sim;
    const t0 = clock.now();
    for (const name of ['a', 'b', 'c', 'd']) await client.create(pod(name));
    const pods = <V>(fn: (ps: Pod[]) => V) => whenObjects(client, 'Pod', fn, { namespace: 'default' });
    await pods((ps) => ps.length === 4 && ps.every((p) => cond(p)?.status === 'False'));

    // a node with room for two arrives while all four are in their 1-s backoff: the scheduler is idle, so it
    // takes them now; two bind, two fail a second time
    await client.create(readyNode('n1', '2'));
    const first = await pods((ps) => {
      const bound = ps.filter((p) => p.spec.nodeName);
      const rest = ps.filter((p) => !p.spec.nodeName);
      return (
        bound.length === 2 && rest.every((p) => cond(p)?.message?.startsWith('0/1 nodes')) && { bound, rest }
      );
    });
    // PrioritySort: equal priority, so the oldest first
    expect(first.bound.map((p) => [p.metadata.name, p.spec.nodeName])).toEqual([
      ['a', 'n1'],
      ['b', 'n1'],
    ]);
    expect(first.rest.map((p) => [p.metadata.name, cond(p)?.reason, cond(p)?.message])).toEqual([
      ['c', 'Unschedulable', '0/1 nodes are available: 1 Insufficient cpu.'],
      ['d', 'Unschedulable', '0/1 nodes are available: 1 Insufficient cpu.'],
    ]);

    // the next node, within their 2-s backoff: tried at once again
    await client.create(readyNode('n2', '2'));
    const all = await pods((ps) => ps.length === 4 && ps.every((p) => p.spec.nodeName) && ps);
    expect(all.map((p) => [p.metadata.name, p.spec.nodeName])).toEqual([
      ['a', 'n1'],
      ['b', 'n1'],
      ['c', 'n2'],
      ['d', 'n2'],
    ]);
    expect(clock.now()).toBe(t0);
    expect(sim.scheduler?.bindings).toBe(4);
  });
});
