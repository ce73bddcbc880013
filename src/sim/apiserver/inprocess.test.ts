import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../apis/core.ts';
import { KubeClient } from '../../kube/client.ts';
import { isConnectionError, KubeApiError } from '../../kube/errors.ts';
import type { WatchEvent } from '../../kube/types.ts';
import { eventually } from '../../testing/eventually.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from './index.ts';

// The REST suites run again through the transport in test/apiserver/*.inprocess.test.ts; these are the
// transport's own guarantees, through KubeClient as the stand-ins and the operator use it.

let cluster: EmbeddedCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function start(watchHistory?: number): Promise<{ c: EmbeddedCluster; client: KubeClient }> {
  const c = await startEmbeddedCluster({ loopback: true, ...(watchHistory ? { watchHistory } : {}) });
  cluster = c;
  if (!c.transport) throw new Error('loopback: true gave no transport');
  return { c, client: KubeClient.fromKubeconfig(c.kubeconfig, { transport: c.transport }) };
}

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
});

describe('the in-process transport', () => {
  it('serves writes and reads as the TLS listener does, with server errors as KubeApiError', async () => {
    const { c, client } = await start();
    const created = await client.create(pod('p1'));
    expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.status?.phase).toBe('Pending'); // defaulted by the server
    const user = KubeClient.fromKubeconfig(c.kubeconfig);
    expect((await user.get('Pod', 'p1', 'default')).metadata.uid).toBe(created.metadata.uid);
    user.close();
    const dup = await client.create(pod('p1')).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(KubeApiError);
    expect(dup).toMatchObject({ code: 409, reason: 'AlreadyExists' });
    const patched = await client.patch('Pod', 'p1', 'default', { metadata: { labels: { a: 'b' } } });
    expect(patched.metadata.labels).toEqual({ a: 'b' });
    // the body crosses as text: the caller's object is not the stored one
    const mine = pod('p2');
    await client.create(mine);
    mine.metadata.labels = { changed: 'locally' };
    expect((await client.get('Pod', 'p2', 'default')).metadata.labels).toBeUndefined();
  });

  it('delivers a watch in order, never before watch() returned, and ends it on stop()', async () => {
    const { c, client } = await start();
    await client.create(pod('before'));
    const events: Array<WatchEvent<Pod>> = [];
    let done: unknown = 'open';
    const h = await client.watch(
      'Pod',
      { namespace: 'default', resourceVersion: '' },
      (ev) => events.push(ev),
      (err) => {
        done = err;
      },
    );
    expect(events).toEqual([]); // the synthetic ADDED of `before` comes in a later turn
    await eventually(() => events.length === 1, 'initial ADDED');
    await client.create(pod('after'));
    await client.patch('Pod', 'after', 'default', { metadata: { labels: { x: 'y' } } });
    await client.delete('Pod', 'after', 'default', { gracePeriodSeconds: 0 });
    await eventually(() => events.length >= 4, 'ADDED, MODIFIED, DELETED of after');
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      'ADDED before',
      'ADDED after',
      'MODIFIED after',
      'DELETED after',
    ]);
    expect(events[1]?.object.kind).toBe('Pod');
    const watching = c.store.watcherCount();
    h.stop();
    expect(done).toBeUndefined();
    expect(c.store.watcherCount()).toBe(watching - 1);
  });

  it('ends a watch from a compacted resourceVersion with 410 Gone, and open watches when the server stops', async () => {
    const { c, client } = await start(2);
    const first = await client.create(pod('a'));
    for (const n of ['b', 'c', 'd']) await client.create(pod(n));
    let gone: unknown;
    await client.watch(
      'Pod',
      { namespace: 'default', resourceVersion: first.metadata.resourceVersion ?? '' },
      () => {},
      (err) => {
        gone = err;
      },
    );
    await eventually(() => gone !== undefined, '410');
    expect(gone).toBeInstanceOf(KubeApiError);
    expect(gone).toMatchObject({ code: 410, reason: 'Expired' });

    let ended: unknown = 'open';
    await client.watch(
      'Pod',
      { namespace: 'default' },
      () => {},
      (err) => {
        ended = err;
      },
    );
    await eventually(() => c.store.watcherCount() > 0, 'watch registered');
    await c.stop();
    expect(ended).toBeUndefined();
    const refused = await client.list('Pod').catch((e: unknown) => e);
    expect(isConnectionError(refused)).toBe(true);
    expect(String(refused)).toMatch(/GET \/api\/v1\/pods → 0 ConnectionError/);
  });

  it('rejects an aborted request as Aborted and refuses a body past the limit with 413', async () => {
    const { client } = await start();
    const ac = new AbortController();
    ac.abort();
    const aborted = await client.list('Pod', { signal: ac.signal }).catch((e: unknown) => e);
    expect(aborted).toMatchObject({ code: 0, reason: 'Aborted' });
    // one signal for many requests: each answered request removes its abort listener
    const shared = new AbortController();
    for (let i = 0; i < 20; i++) await client.list('Pod', { signal: shared.signal });
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    const big = pod('big');
    big.metadata.annotations = { blob: 'x'.repeat(3 * 1024 * 1024 + 1) };
    await expect(client.create(big)).rejects.toMatchObject({ code: 413, reason: 'RequestEntityTooLarge' });
  });
});
