/**
 * The controller kit's builder against the embedded API server through the real client and informers: watches
 * map informer events to keys (only the events listed, several keys per event, the initial list dropped for an
 * `afterSync` watch), caches are read only once the controller runs, and private informers stop with it while
 * shared ones keep running.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../apis/core.ts';
import { KubeClient } from '../../kube/client.ts';
import { FakeClock } from '../../kube/clock.ts';
import { SharedInformers } from '../../kube/informer.ts';
import type { KubeTransport } from '../../kube/transport.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../sim/apiserver/index.ts';
import { eventually } from '../../testing/eventually.ts';
import { defineController, watch } from './index.ts';

let cluster: EmbeddedCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

/** A client on the embedded cluster, and the number of its watches open now. */
async function setup(): Promise<{ client: KubeClient; watches: { open: number } }> {
  cluster = await startEmbeddedCluster({ loopback: true });
  const inner = cluster.transport as KubeTransport;
  const watches = { open: 0 };
  const transport: KubeTransport = {
    request: (req) => inner.request(req),
    stream: (req, sink) => {
      watches.open++;
      return inner.stream(req, {
        response: (status, headers) => sink.response(status, headers),
        data: (chunk) => sink.data(chunk),
        end: (err) => {
          watches.open--;
          sink.end(err);
        },
      });
    },
  };
  return { client: KubeClient.fromKubeconfig(cluster.kubeconfig, { transport }), watches };
}

const configMap = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
});
const node = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });

describe('defineController', () => {
  it('enqueues the keys its watches map events to, and stops the informers it created', async () => {
    const { client, watches } = await setup();
    const clock = new FakeClock(0);
    await client.create(configMap('cm-1'));
    await client.create(node('n-0'));
    const reconciled: string[] = [];
    const configMapEvents: string[] = [];
    const kit = defineController({
      name: 'test.kit',
      deps: { client, clock, logger: pino({ level: 'silent' }) },
      concurrency: 2,
      watches: [
        watch('ConfigMap', {
          events: ['add'],
          map: (cm, e) => {
            configMapEvents.push(`${e.type} ${cm.metadata.name}`);
            return cm.metadata.name;
          },
        }),
        watch('Node', {
          afterSync: true,
          map: (n, e) => [`a/${e.type}/${n.metadata.name}`, `b/${n.metadata.name}`],
        }),
      ],
      reconcile: async (key) => {
        reconciled.push(key);
      },
    });
    expect(kit.name).toBe('test.kit');
    expect(kit.cache('ConfigMap')).toBeUndefined(); // not started: a reconcile reads through the client
    const ac = new AbortController();
    const running = kit.start(ac.signal);
    await eventually(() => reconciled.includes('cm-1'), 'cm-1 reconciled');
    expect(kit.cache('ConfigMap')?.getByName('cm-1', 'default')?.metadata?.name).toBe('cm-1');
    // the initial list of Nodes is not an event for an afterSync watch; a later add is, with both keys
    await client.create(node('n-1'));
    await eventually(() => reconciled.includes('b/n-1'), 'b/n-1 reconciled');
    expect(reconciled.filter((k) => k !== 'cm-1').sort()).toEqual(['a/add/n-1', 'b/n-1']);
    // an update is not among the ConfigMap watch's events: its map never sees it
    await client.patch(
      'ConfigMap',
      'cm-1',
      'default',
      { metadata: { labels: { x: 'y' } } },
      { type: 'merge' },
    );
    await eventually(
      () => kit.cache('ConfigMap')?.getByName('cm-1', 'default')?.metadata?.labels?.x === 'y',
      'the update cached',
    );
    expect(configMapEvents).toEqual(['add cm-1']);
    ac.abort();
    await running;
    expect(watches.open).toBe(0); // the private informers stopped with the controller
  });

  it('leaves shared informers running when it stops', async () => {
    const { client, watches } = await setup();
    const clock = new FakeClock(0);
    const informers = new SharedInformers(client, { clock });
    const kit = defineController({
      name: 'test.kit',
      deps: { client, clock, logger: pino({ level: 'silent' }), informers },
      watches: () => [watch('Node', { map: (n) => n.metadata.name })],
      reconcile: async () => ({}),
    });
    expect(kit.informers).toBe(informers);
    const ac = new AbortController();
    const running = kit.start(ac.signal);
    await informers.waitForSync();
    expect(informers.unsynced()).toEqual([]);
    ac.abort();
    await running;
    expect(watches.open).toBe(1); // the shared Node informer still watches
    await client.create(node('n-2'));
    await eventually(() => informers.informerFor('Node').cache.get('n-2'), 'n-2 in the shared cache');
    await informers.stop();
  });
});
