import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pod, startServer, type TestServer, until } from './helpers.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ watchHistory: 5, bookmarkIntervalMs: 100 });
  await s.req('POST', '/api/v1/namespaces', { metadata: { name: 'w' } });
});
afterAll(async () => {
  await s.stop();
});

const P = '/api/v1/namespaces/w/pods';

describe('watch', () => {
  it('streams ADDED, MODIFIED, DELETED from a resourceVersion', async () => {
    const list = await s.req('GET', P);
    const w = s.watch(`${P}?watch=1&resourceVersion=${list.body.metadata.resourceVersion}`);
    expect(await w.status).toBe(200);
    await s.req('POST', P, pod('a'));
    await s.req('PATCH', `${P}/a`, { metadata: { labels: { x: '1' } } }, 'application/merge-patch+json');
    await s.req('DELETE', `${P}/a`);
    const ev = await w.waitFor(3);
    expect(ev.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    expect(ev[1].object.metadata.labels).toEqual({ x: '1' });
    expect(ev[0].object.kind).toBe('Pod');
    expect(Number(ev[2].object.metadata.resourceVersion)).toBeGreaterThan(
      Number(ev[1].object.metadata.resourceVersion),
    );
    w.close();
  });

  it('resourceVersion unset gives synthetic ADDED for existing objects; legacy /watch path works', async () => {
    await s.req('POST', P, pod('b1'));
    await s.req('POST', P, pod('b2'));
    const w = s.watch('/api/v1/watch/namespaces/w/pods');
    const ev = await w.waitFor(2);
    expect(ev.map((e) => `${e.type}:${e.object.metadata.name}`)).toEqual(['ADDED:b1', 'ADDED:b2']);
    w.close();
    const one = s.watch(`${P}?watch=true&fieldSelector=metadata.name%3Db2&resourceVersion=0`);
    const ev1 = await one.waitFor(1);
    expect(ev1.map((e) => e.object.metadata.name)).toEqual(['b2']);
    one.close();
  });

  it('translates selector transitions into ADDED/DELETED', async () => {
    const list = await s.req('GET', P);
    const w = s.watch(
      `${P}?watch=1&labelSelector=sel%3Dyes&resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    await w.status;
    await s.req('POST', P, pod('t', {}, { sel: 'no' }));
    await s.req('PATCH', `${P}/t`, { metadata: { labels: { sel: 'yes' } } }, 'application/merge-patch+json');
    await s.req('PATCH', `${P}/t`, { metadata: { labels: { sel: 'no' } } }, 'application/merge-patch+json');
    const ev = await w.waitFor(2);
    expect(ev.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    w.close();
  });

  it('replays selector transitions from the history (which keeps only the field-label view of a previous version)', async () => {
    const rv = (await s.req('GET', P)).body.metadata.resourceVersion;
    await s.req('POST', P, pod('h', {}, { sel: 'no' }));
    await s.req('PATCH', `${P}/h/status`, { status: { phase: 'Running' } }, 'application/merge-patch+json');
    await s.req('PATCH', `${P}/h`, { metadata: { labels: { sel: 'yes' } } }, 'application/merge-patch+json');
    const running = s.watch(`${P}?watch=1&fieldSelector=status.phase%3DRunning&resourceVersion=${rv}`);
    const pending = s.watch(`${P}?watch=1&fieldSelector=status.phase%3DPending&resourceVersion=${rv}`);
    const labelled = s.watch(`${P}?watch=1&labelSelector=sel%3Dyes&resourceVersion=${rv}`);
    expect((await running.waitFor(2)).map((e) => `${e.type}:${e.object.status?.phase}`)).toEqual([
      'ADDED:Running',
      'MODIFIED:Running',
    ]);
    expect((await pending.waitFor(2)).map((e) => `${e.type}:${e.object.status?.phase}`)).toEqual([
      'ADDED:Pending',
      'DELETED:Running',
    ]);
    const ev = await labelled.waitFor(1);
    expect(ev.map((e) => `${e.type}:${e.object.metadata.labels.sel}`)).toEqual(['ADDED:yes']);
    expect(ev[0].object.spec.containers.length).toBeGreaterThan(0);
    for (const w of [running, pending, labelled]) w.close();
    await s.req('DELETE', `${P}/h`);
  });

  it('answers 410 Gone (Expired) for a resourceVersion older than the history window', async () => {
    const start = (await s.req('GET', P)).body.metadata.resourceVersion;
    for (let i = 0; i < 8; i++) await s.req('POST', P, pod(`old-${i}`));
    const r = await s.req('GET', `${P}?watch=1&resourceVersion=${start}`);
    expect(r.status).toBe(410);
    expect(r.body).toMatchObject({ kind: 'Status', reason: 'Expired', code: 410 });
    expect(r.body.message).toMatch(/^too old resource version: \d+ \(\d+\)$/);
  });

  it('sends BOOKMARK events when allowWatchBookmarks is set, and the initial-events-end bookmark', async () => {
    const rv = (await s.req('GET', P)).body.metadata.resourceVersion;
    const w = s.watch(`${P}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}`);
    const ev = await w.waitFor(1, 2000);
    expect(ev[0].type).toBe('BOOKMARK');
    expect(ev[0].object).toMatchObject({ kind: 'Pod', apiVersion: 'v1' });
    expect(Number(ev[0].object.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(rv));
    w.close();
    const init = s.watch(
      `${P}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`,
    );
    const iev = await init.waitFor(2);
    const bm = iev.find((e) => e.type === 'BOOKMARK');
    expect(bm.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    expect(iev.indexOf(bm)).toBe(iev.filter((e) => e.type === 'ADDED').length);
    init.close();
  });

  it('ends a watch after timeoutSeconds', async () => {
    const w = s.watch(
      `${P}?watch=1&timeoutSeconds=1&resourceVersion=${(await s.req('GET', P)).body.metadata.resourceVersion}`,
    );
    const t0 = Date.now();
    await w.ended;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it('delivers each change to many watchers and drops closed ones', async () => {
    const rv = (await s.req('GET', P)).body.metadata.resourceVersion;
    const ws = Array.from({ length: 20 }, () => s.watch(`${P}?watch=1&resourceVersion=${rv}`));
    await Promise.all(ws.map((w) => w.status));
    await s.req('POST', P, pod('fan'));
    for (const w of ws) expect((await w.waitFor(1))[0].object.metadata.name).toBe('fan');
    const before = s.cluster.store.watcherCount();
    for (const w of ws) w.close();
    // over HTTPS the server sees the close a little later; in process at once
    await until(() => s.cluster.store.watcherCount() === before - 20);
  });
});
