/**
 * The controller runtime's informer sync: a controller whose informers have not synced when their timeout passes
 * keeps waiting (logging each time) and runs once they sync, instead of stopping for good. The aws soak of
 * 2026-12-02 (seed 14) lost `nodeclaim.lifecycle` that way: a clock jump right after an operator restart passed
 * the 60-s sync timeout of every controller at once. Here the embedded API server answers 503 to NodeClaim lists
 * until the test lets them through, through the real client and informers.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { crdObjects } from '../../apis/crds.ts';
import { KubeClient } from '../../kube/client.ts';
import { FakeClock } from '../../kube/clock.ts';
import { SharedInformers } from '../../kube/informer.ts';
import type { KubeTransport } from '../../kube/transport.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../sim/apiserver/index.ts';
import { eventually } from '../../testing/eventually.ts';
import { QueueController, runQueueWithInformers, waitForInformerSync } from './index.ts';

let cluster: EmbeddedCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

/** A client whose NodeClaim lists get 503 while `failing.on`, and a logger whose lines the test reads. */
async function setup(): Promise<{
  client: KubeClient;
  failing: { on: boolean; lists: number };
  lines: Array<Record<string, unknown>>;
  logger: pino.Logger;
}> {
  cluster = await startEmbeddedCluster({ loopback: true });
  for (const crd of Object.values(crdObjects())) cluster.installCRD(crd as never);
  const inner = cluster.transport as KubeTransport;
  const failing = { on: true, lists: 0 };
  const transport: KubeTransport = {
    request: (req) => {
      if (req.method === 'GET' && req.path.startsWith('/apis/karpenter.sh/v1/nodeclaims?')) {
        failing.lists++;
        if (failing.on)
          return Promise.resolve({
            status: 503,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              kind: 'Status',
              apiVersion: 'v1',
              status: 'Failure',
              reason: 'ServiceUnavailable',
              message: 'injected by the test',
              code: 503,
            }),
          });
      }
      return inner.request(req);
    },
    stream: (req, sink) => inner.stream(req, sink),
  };
  const client = KubeClient.fromKubeconfig(cluster.kubeconfig, { transport });
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { client, failing, lines, logger: pino({ level: 'debug' }, sink) };
}

describe('runQueueWithInformers', () => {
  it('keeps waiting past the sync timeout, logging which kinds have not synced, and reconciles once they do', async () => {
    const { client, failing, lines, logger } = await setup();
    const clock = new FakeClock(0);
    const informers = new SharedInformers(client, {
      clock,
      backoff: { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0 },
    });
    const reconciled: string[] = [];
    const queue = new QueueController({
      name: 'test.controller',
      clock,
      logger,
      reconcile: async (key) => {
        reconciled.push(key);
      },
    });
    const nodeClaims = informers.informerFor('NodeClaim');
    informers.informerFor('Node');
    const off = nodeClaims.on({ add: (nc) => queue.enqueue(nc.metadata.name as string) });
    await client.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'nc-1' },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
    } as never);
    const ac = new AbortController();
    const running = runQueueWithInformers({
      name: 'test.controller',
      logger,
      informers,
      ownInformers: true,
      queue,
      signal: ac.signal,
      offs: [off],
      syncTimeoutMs: 60_000,
    });
    await eventually(() => failing.lists >= 1, 'the first NodeClaim list');
    // the Node list answers normally, but under load it may still be in flight: the clock jump must come after
    // it, or the timeout below names Node too (the flake seen under load)
    await eventually(() => informers.unsynced().join() === 'NodeClaim', 'the Node informer synced');
    // a clock jump well past the timeout (the soak's: 17 min): the timeout fires, the informer's backoff too
    clock.advance(17 * 60_000);
    const waiting = await eventually(
      () => lines.find((l) => l.msg === 'informers have not synced; the controller starts once they do'),
      'the error line',
    );
    expect(waiting).toMatchObject({
      level: 50,
      controller: 'test.controller',
      kinds: ['NodeClaim'],
      waitedMs: 60_000,
    });
    expect(reconciled).toEqual([]);
    // the next timeout logs again, with the total wait
    clock.advance(60_000);
    await eventually(
      () =>
        lines.filter((l) => l.msg === 'informers have not synced; the controller starts once they do')
          .length === 2,
      'the second error line',
    );
    expect(lines.filter((l) => l.waitedMs !== undefined).map((l) => l.waitedMs)).toEqual([60_000, 120_000]);
    // the API server answers again: the next relist syncs, and the controller runs
    failing.on = false;
    const ticker = setInterval(() => clock.advance(1_000), 5);
    try {
      await eventually(() => reconciled.includes('nc-1'), 'nc-1 reconciled');
    } finally {
      clearInterval(ticker);
    }
    expect(informers.unsynced()).toEqual([]);
    ac.abort();
    await running;
    expect(lines.some((l) => l.msg === 'informers stopped before they synced')).toBe(false);
  });

  it('stops waiting when the controller stops, without an error line', async () => {
    const { client, lines, logger } = await setup();
    const clock = new FakeClock(0);
    const informers = new SharedInformers(client, { clock });
    informers.informerFor('NodeClaim');
    informers.start();
    const ac = new AbortController();
    const wait = waitForInformerSync({ name: 'test.controller', logger, informers, signal: ac.signal });
    ac.abort();
    expect(await wait).toBe(false);
    await informers.stop();
    expect(lines).toEqual([]);
    expect(informers.unsynced()).toEqual(['NodeClaim']);
  });
});
