/**
 * The client's in-process savings (kube/client.ts): watches over the embedded API server's in-process transport
 * that pass the same `shareDecoded` token get one decoded object per event (informers of one transform pass it),
 * others their own; `patchNoResult` and `discardBody` write without decoding the answer, and still throw the
 * server's refusal. Also over HTTPS, where nothing is shared.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/apis/core.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { isConflict, KubeApiError } from '../../src/kube/errors.ts';
import type { WatchEvent } from '../../src/kube/types.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';
import { eventually } from '../../src/testing/eventually.ts';

let cluster: EmbeddedCluster | undefined;
const stops: Array<() => void> = [];

afterEach(async () => {
  for (const s of stops.splice(0)) s();
  await cluster?.stop();
  cluster = undefined;
});

function pod(name: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'a' } },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  } as Pod;
}

/** Opens a watch of pods from `rv` with `token`; returns the objects it received. */
async function watchPods(client: KubeClient, rv: string, token: object | undefined): Promise<Pod[]> {
  const got: Pod[] = [];
  const h = await client.watch(
    'Pod',
    { namespace: 'default', resourceVersion: rv, ...(token ? { shareDecoded: token } : {}) },
    (ev: WatchEvent<Pod>) => {
      if (ev.type !== 'BOOKMARK') got.push(ev.object);
    },
    () => {},
  );
  stops.push(() => h.stop());
  return got;
}

async function clients(loopback: boolean): Promise<KubeClient[]> {
  cluster = await startEmbeddedCluster({ loopback });
  const opts = loopback && cluster.transport ? { transport: cluster.transport } : {};
  return [
    KubeClient.fromKubeconfig(cluster.kubeconfig, opts),
    KubeClient.fromKubeconfig(cluster.kubeconfig, opts),
  ];
}

/** Two clients of a fresh cluster, each with a pods watch from now on that passes one token. */
async function twoWatches(loopback: boolean) {
  const [a, b] = await clients(loopback);
  const rv = (await a!.list('Pod', { namespace: 'default' })).metadata.resourceVersion ?? '';
  const token = {};
  return { a: a!, b: b!, rv, first: await watchPods(a!, rv, token), second: await watchPods(b!, rv, token) };
}

describe('in-process watch decoding', () => {
  it('gives the watches of one token the same object per event, and a watch of another token its own', async () => {
    const { a, b, rv, first, second } = await twoWatches(true);
    const own = await watchPods(b, rv, undefined);
    await a.create(pod('p1'));
    await a.patch('Pod', 'p1', 'default', { metadata: { labels: { app: 'b' } } });
    await eventually(
      () => first.length === 2 && second.length === 2 && own.length === 2,
      'both events on 3 watches',
    );
    expect(first.map((p) => p.metadata.labels?.app)).toEqual(['a', 'b']);
    expect(second[0]).toBe(first[0]);
    expect(second[1]).toBe(first[1]);
    expect(own[1]).not.toBe(first[1]);
    expect(own[1]).toEqual(first[1]);
  });

  it('shares nothing over HTTPS, even with a token', async () => {
    const { a, first, second } = await twoWatches(false);
    await a.create(pod('p1'));
    await eventually(() => first.length === 1 && second.length === 1, 'the event on both watches');
    expect(second[0]).not.toBe(first[0]);
    expect(second[0]).toEqual(first[0]);
  });
});

describe('writes without decoding the answer', () => {
  for (const loopback of [true, false]) {
    it(`patchNoResult writes, resolves undefined and throws the server's refusal (${loopback ? 'in process' : 'HTTPS'})`, async () => {
      const [a] = await clients(loopback);
      const created = await a!.create(pod('p1'));
      const out = await a!.patchNoResult(
        'Pod',
        'p1',
        'default',
        { status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] } },
        { subresource: 'status' },
      );
      expect(out).toBeUndefined();
      const now = await a!.get('Pod', 'p1', 'default');
      expect(now.status?.conditions?.find((c) => c.type === 'PodScheduled')?.reason).toBe('Unschedulable');
      // a stale resourceVersion: 409 Conflict, decoded into its KubeApiError
      const stale = a!.patchNoResult(
        'Pod',
        'p1',
        'default',
        { metadata: { resourceVersion: created.metadata.resourceVersion }, status: { phase: 'Running' } },
        { subresource: 'status' },
      );
      await expect(stale).rejects.toBeInstanceOf(KubeApiError);
      await expect(stale).rejects.toSatisfy(isConflict);
      // discardBody on a raw request: the binding is made, nothing is returned
      const bound = await a!.request('POST', '/api/v1/namespaces/default/pods/p1/binding', {
        body: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: 'p1', namespace: 'default' },
          target: { apiVersion: 'v1', kind: 'Node', name: 'n1' },
        },
        discardBody: true,
      });
      expect(bound).toBeUndefined();
      expect((await a!.get('Pod', 'p1', 'default')).spec.nodeName).toBe('n1');
    });
  }
});
