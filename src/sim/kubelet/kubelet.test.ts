import { afterEach, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../apis/core.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../embedded/cluster.ts';
import type { KubeClient } from '../../kube/client.ts';
import { FakeClock } from '../../kube/clock.ts';
import { SharedInformers } from '../../kube/informer.ts';
import { whenObjects } from '../../testing/watch.ts';
import { KubeletStandIn } from './kubelet.ts';

let sim: SimulatedCluster | undefined;
let stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops = [];
  await sim?.stop();
  sim = undefined;
});

function node(name: string): Node {
  const alloc = { cpu: '4', memory: '16Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {},
    status: { capacity: alloc, allocatable: alloc },
  };
}

function boundPod(name: string, nodeName: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'app', image: 'pause' }] },
  };
}

const ready = (n: Node | undefined) =>
  n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

describe('kubelet stand-in', () => {
  it('reports a new node Ready while every pod worker is busy: each node has its own kubelet', async () => {
    const clock = new FakeClock();
    sim = await startSimulatedCluster({
      clock,
      components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
    });
    const real = sim.client;
    // pod status writes wait until released: the 4 pod workers block on the first 4 pods
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let blocked = 0;
    let fourBlocked: () => void = () => {};
    const workersBlocked = new Promise<void>((r) => {
      fourBlocked = r;
    });
    const client = new Proxy(real, {
      get(target, prop) {
        // the kubelet writes pod statuses without reading the answer (patchNoResult)
        if (prop === 'patchNoResult')
          return async (...args: Parameters<KubeClient['patchNoResult']>) => {
            if (args[0] === 'Pod') {
              if (++blocked === 4) fourBlocked();
              await gate;
            }
            return target.patchNoResult(...args);
          };
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const informers = new SharedInformers(client, { clock });
    const kubelet = new KubeletStandIn({
      client,
      informers,
      clock,
      readyDelaySeconds: 0,
      podStartDelaySeconds: 0,
    });
    kubelet.start();
    informers.start();
    // run in reverse: release the writes, stop the kubelet, then its informers
    stops.push(
      async () => informers.stop(),
      async () => kubelet.stop(),
      async () => release(),
    );
    await informers.waitForSync(10_000);

    await real.create(node('busy'));
    for (let i = 0; i < 6; i++) await real.create(boundPod(`p${i}`, 'busy'));
    await workersBlocked; // the 4 pod workers wait on their first status writes

    await real.create(node('fresh'));
    const fresh = await whenObjects(real, 'Node', (ns) =>
      ns.find((n) => n.metadata.name === 'fresh' && ready(n)),
    );
    expect(fresh.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'KubeletReady',
    });
    expect(blocked).toBe(4);

    release();
    const pods = await whenObjects(
      real,
      'Pod',
      (ps) => ps.length === 6 && ps.every((p) => p.status?.phase === 'Running') && ps,
      { namespace: 'default' },
    );
    expect(pods.map((p) => [p.metadata.name, p.status?.phase])).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => [`p${i}`, 'Running']),
    );
    expect(blocked).toBe(6);
  });
});
