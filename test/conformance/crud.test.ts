/**
 * API conformance: CRUD, object metadata, optimistic concurrency, the four patch types, status
 * subresource isolation, label/field selectors, paging and the retry helpers — through src/kube only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../../src/apis/core.ts';
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  KubeApiError,
  NO_CHANGE,
  patchWithRetry,
  updateWithRetry,
} from '../../src/kube/index.ts';
import type { ConfigMap } from '../../src/kube/types.ts';
import { startCluster, type TestCluster, testPod } from './harness.ts';

let c: TestCluster;
beforeAll(async () => {
  c = await startCluster('crud');
});
afterAll(async () => {
  await c?.stop();
});

function cm(name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: c.namespace, labels }, data };
}

describe('create / get / update / delete', () => {
  it('create fills uid, resourceVersion, creationTimestamp; get returns the same object', async () => {
    const created = await c.client.create(cm('basic', { a: '1' }));
    expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(Date.parse(created.metadata.creationTimestamp as string)).toBeGreaterThan(Date.now() - 600_000);
    expect(created.apiVersion).toBe('v1');
    expect(created.kind).toBe('ConfigMap');
    const got = await c.client.get('ConfigMap', 'basic', c.namespace);
    expect(got.metadata.uid).toBe(created.metadata.uid);
    expect(got.data).toEqual({ a: '1' });
    expect(got.kind).toBe('ConfigMap');
  });

  it('create of an existing name throws AlreadyExists (409)', async () => {
    await c.client.create(cm('dup'));
    const err = await c.client.create(cm('dup')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(isAlreadyExists(err)).toBe(true);
    expect(isConflict(err)).toBe(false);
    expect((err as KubeApiError).code).toBe(409);
  });

  it('generateName produces a unique name with the prefix', async () => {
    const a = await c.client.create({
      ...cm(''),
      metadata: { generateName: 'gen-', namespace: c.namespace },
    });
    const b = await c.client.create({
      ...cm(''),
      metadata: { generateName: 'gen-', namespace: c.namespace },
    });
    expect(a.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(b.metadata.name).not.toBe(a.metadata.name);
  });

  it('get of a missing object throws NotFound; tryGet resolves undefined', async () => {
    const err = await c.client.get('ConfigMap', 'nope', c.namespace).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect((err as KubeApiError).code).toBe(404);
    expect(await c.client.tryGet('ConfigMap', 'nope', c.namespace)).toBeUndefined();
  });

  it('update bumps resourceVersion; a stale resourceVersion gets 409 Conflict', async () => {
    const v1 = await c.client.create(cm('upd', { a: '1' }));
    const v2 = await c.client.update({ ...v1, data: { a: '2' } });
    expect(v2.data).toEqual({ a: '2' });
    expect(v2.metadata.resourceVersion).not.toBe(v1.metadata.resourceVersion);
    const err = await c.client.update({ ...v1, data: { a: 'stale' } }).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    expect((await c.client.get('ConfigMap', 'upd', c.namespace)).data).toEqual({ a: '2' });
  });

  it('generation increments on spec changes only (Deployment)', async () => {
    const dep = await c.client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'gen', namespace: c.namespace },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'gen' } },
        template: { metadata: { labels: { app: 'gen' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    });
    expect(dep.metadata.generation).toBe(1);
    const labelled = await c.client.patch('Deployment', 'gen', c.namespace, {
      metadata: { labels: { x: 'y' } },
    });
    expect(labelled.metadata.generation).toBe(1);
    const scaled = await c.client.patch('Deployment', 'gen', c.namespace, {
      spec: { replicas: 0, paused: true },
    });
    expect(scaled.metadata.generation).toBe(2);
  });

  it('delete removes the object; a wrong uid precondition gets 409', async () => {
    const obj = await c.client.create(cm('del'));
    const err = await c.client
      .delete('ConfigMap', 'del', c.namespace, {
        preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
      })
      .catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    await c.client.delete('ConfigMap', 'del', c.namespace, {
      preconditions: { uid: obj.metadata.uid as string },
    });
    expect(await c.client.tryGet('ConfigMap', 'del', c.namespace)).toBeUndefined();
    expect(await c.client.tryDelete('ConfigMap', 'del', c.namespace)).toBe(false);
  });

  it('cluster-scoped objects (Node) work without a namespace', async () => {
    const name = c.name('node');
    const n = await c.client.create<Node>({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'capenter.test/suite': 'crud' } },
      spec: { providerID: `kwok://${name}` },
    });
    expect(n.metadata.namespace).toBeUndefined();
    const got = await c.client.get('Node', name);
    expect(got.spec?.providerID).toBe(`kwok://${name}`);
    await c.client.delete('Node', name);
    expect(await c.client.tryGet('Node', name)).toBeUndefined();
  });

  it('namespaced kinds without a namespace fail with a clear error', async () => {
    await expect(c.client.get('Pod', 'x')).rejects.toThrow(/Pod "x" is namespaced: pass its namespace/);
    await expect(c.client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).rejects.toThrow(
      /Pod "x" is namespaced: set metadata.namespace/,
    );
  });
});

describe('patch', () => {
  it('merge patch sets and removes (null) keys', async () => {
    await c.client.create(cm('mp', { a: '1', b: '2' }));
    const p = await c.client.patch(
      'ConfigMap',
      'mp',
      c.namespace,
      { data: { b: null, c: '3' } },
      { type: 'merge' },
    );
    expect(p.data).toEqual({ a: '1', c: '3' });
  });

  it('json patch applies operations and rejects a failing test op with 422', async () => {
    await c.client.create(cm('jp', { a: '1' }));
    const p = await c.client.patch(
      'ConfigMap',
      'jp',
      c.namespace,
      [
        { op: 'add', path: '/data/b', value: '2' },
        { op: 'replace', path: '/data/a', value: '9' },
      ],
      { type: 'json' },
    );
    expect(p.data).toEqual({ a: '9', b: '2' });
    const err = await c.client
      .patch('ConfigMap', 'jp', c.namespace, [{ op: 'test', path: '/data/a', value: 'x' }], { type: 'json' })
      .catch((e: unknown) => e);
    expect((err as KubeApiError).code).toBe(422);
  });

  it('strategic merge patch merges lists by key (containers by name)', async () => {
    const pod = await c.client.create(
      testPod(
        c.namespace,
        'smp',
        {},
        {
          spec: {
            containers: [
              { name: 'a', image: 'img-a' },
              { name: 'b', image: 'img-b' },
            ],
          },
        },
      ),
    );
    expect(pod.spec.containers.length).toBe(2);
    const patched = await c.client.patch(
      'Pod',
      'smp',
      c.namespace,
      { metadata: { labels: { added: 'yes' } }, spec: { containers: [{ name: 'b', image: 'img-b2' }] } },
      { type: 'strategic' },
    );
    expect(patched.spec.containers.map((x) => [x.name, x.image])).toEqual([
      ['a', 'img-a'],
      ['b', 'img-b2'],
    ]);
    expect(patched.metadata.labels).toEqual({ added: 'yes' });
  });

  it('server-side apply creates and updates with a field manager', async () => {
    const applied = await c.client.apply(cm('ssa', { owned: 'by-a' }), { fieldManager: 'manager-a' });
    expect(applied.data).toEqual({ owned: 'by-a' });
    expect(applied.metadata.uid).toBeTruthy();
    const again = await c.client.apply(cm('ssa', { owned: 'by-a', more: 'x' }), {
      fieldManager: 'manager-a',
    });
    expect(again.data).toEqual({ owned: 'by-a', more: 'x' });
    expect(again.metadata.uid).toBe(applied.metadata.uid);
    const managers = ((again.metadata.managedFields as Array<{ manager: string }>) ?? []).map(
      (m) => m.manager,
    );
    expect(managers).toContain('manager-a');
  });

  it('server-side apply reports conflicts between field managers; force takes over', async () => {
    await c.client.apply(cm('ssa-conflict', { owned: 'by-a' }), { fieldManager: 'manager-a' });
    const err = await c.client
      .apply(cm('ssa-conflict', { owned: 'by-b' }), { fieldManager: 'manager-b' })
      .catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    const forced = await c.client.apply(cm('ssa-conflict', { owned: 'by-b' }), {
      fieldManager: 'manager-b',
      force: true,
    });
    expect(forced.data?.owned).toBe('by-b');
  });
});

describe('status subresource', () => {
  it('main-resource writes ignore status; /status writes ignore spec and metadata', async () => {
    const dep = await c.client.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'status-iso', namespace: c.namespace },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'iso' } },
        template: { metadata: { labels: { app: 'iso' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    });
    // a real cluster's Deployment controller writes status too (at any moment after the create): each
    // write reads the latest version and retries on 409
    const ref = { kind: 'Deployment' as const, name: 'status-iso', namespace: c.namespace };
    expect(dep.metadata.name).toBe('status-iso');
    const viaMain = await updateWithRetry(c.client, ref, (d) => ({
      ...d,
      status: { observedGeneration: 42 },
    }));
    expect((viaMain.status as { observedGeneration?: number } | undefined)?.observedGeneration).not.toBe(42);
    const viaStatus = await updateWithRetry(
      c.client,
      ref,
      (d) => ({ ...d, spec: { ...d.spec, replicas: 5 }, status: { observedGeneration: 42 } }),
      { status: true },
    );
    expect((viaStatus.status as { observedGeneration?: number }).observedGeneration).toBe(42);
    expect(viaStatus.spec.replicas).toBe(0);
    const patched = await c.client.patchStatus('Deployment', 'status-iso', c.namespace, {
      spec: { replicas: 7 },
      status: { observedGeneration: 43 },
    });
    expect((patched.status as { observedGeneration?: number }).observedGeneration).toBe(43);
    expect(patched.spec.replicas).toBe(0);
  });

  it('pod status can be patched (conditions) without touching spec', async () => {
    await c.client.create(testPod(c.namespace, 'st-pod'));
    const p = await c.client.patchStatus('Pod', 'st-pod', c.namespace, {
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    expect(p.status?.phase).toBe('Running');
    expect(p.status?.conditions?.find((x) => x.type === 'Ready')?.status).toBe('True');
  });
});

describe('list and selectors', () => {
  beforeAll(async () => {
    const specs: Array<[string, Record<string, string>]> = [
      ['sel-a', { app: 'web', tier: 'front', env: 'prod' }],
      ['sel-b', { app: 'web', tier: 'back', env: 'dev' }],
      ['sel-c', { app: 'db', tier: 'back' }],
      ['sel-d', { app: 'cache' }],
    ];
    for (const [n, labels] of specs) await c.client.create(cm(n, {}, { ...labels, suite: 'sel' }));
  });
  const names = async (labelSelector: string): Promise<string[]> =>
    (
      await c.client.list('ConfigMap', {
        namespace: c.namespace,
        labelSelector: `suite=sel,${labelSelector}`,
      })
    ).items
      .map((o) => o.metadata.name as string)
      .sort();

  it('equality-based selectors', async () => {
    expect(await names('app=web')).toEqual(['sel-a', 'sel-b']);
    expect(await names('app==db')).toEqual(['sel-c']);
    expect(await names('app!=web')).toEqual(['sel-c', 'sel-d']);
  });

  it('set-based selectors', async () => {
    expect(await names('tier in (front,back)')).toEqual(['sel-a', 'sel-b', 'sel-c']);
    expect(await names('tier notin (back)')).toEqual(['sel-a', 'sel-d']);
    expect(await names('env')).toEqual(['sel-a', 'sel-b']);
    expect(await names('!env')).toEqual(['sel-c', 'sel-d']);
  });

  it('LabelSelector objects are formatted for the API', async () => {
    const l = await c.client.list('ConfigMap', {
      namespace: c.namespace,
      labelSelector: {
        matchLabels: { suite: 'sel' },
        matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'cache'] }],
      },
    });
    expect(l.items.map((o) => o.metadata.name).sort()).toEqual(['sel-c', 'sel-d']);
    expect(l.items.every((o) => o.kind === 'ConfigMap' && o.apiVersion === 'v1')).toBe(true);
  });

  it('field selectors on metadata.name and pod spec.nodeName / status.phase', async () => {
    const byName = await c.client.list('ConfigMap', {
      namespace: c.namespace,
      fieldSelector: 'metadata.name=sel-b',
    });
    expect(byName.items.map((o) => o.metadata.name)).toEqual(['sel-b']);
    await c.client.create(
      testPod(c.namespace, 'fs-bound', {}, { spec: { nodeName: 'fs-node-1', nodeSelector: {} } }),
    );
    await c.client.create(testPod(c.namespace, 'fs-unbound'));
    const bound = await c.client.list('Pod', {
      namespace: c.namespace,
      fieldSelector: { 'spec.nodeName': 'fs-node-1' },
    });
    expect(bound.items.map((p: Pod) => p.metadata.name)).toEqual(['fs-bound']);
    const unbound = await c.client.list('Pod', {
      namespace: c.namespace,
      fieldSelector: 'spec.nodeName=,metadata.name=fs-unbound',
    });
    expect(unbound.items.map((p: Pod) => p.metadata.name)).toEqual(['fs-unbound']);
  });

  it('pages with limit/continue and pageSize returns everything', async () => {
    for (let i = 0; i < 7; i++) await c.client.create(cm(`page-${i}`, {}, { suite: 'page' }));
    const first = await c.client.list('ConfigMap', {
      namespace: c.namespace,
      labelSelector: 'suite=page',
      limit: 3,
    });
    expect(first.items.length).toBe(3);
    expect(first.metadata.continue).toBeTruthy();
    const second = await c.client.list('ConfigMap', {
      namespace: c.namespace,
      labelSelector: 'suite=page',
      limit: 3,
      continue: first.metadata.continue as string,
    });
    expect(second.items.length).toBe(3);
    expect(second.items.map((o) => o.metadata.name)).not.toContain(first.items[0]?.metadata.name);
    const all = await c.client.list('ConfigMap', {
      namespace: c.namespace,
      labelSelector: 'suite=page',
      pageSize: 2,
    });
    expect(all.items.map((o) => o.metadata.name).sort()).toEqual(
      [0, 1, 2, 3, 4, 5, 6].map((i) => `page-${i}`),
    );
    expect(all.metadata.resourceVersion).toMatch(/^\d+$/);
  });
});

describe('retry helpers', () => {
  it('updateWithRetry survives concurrent writers (every increment lands)', async () => {
    await c.client.create(cm('counter', { n: '0' }));
    const other = c.newClient();
    const bump = (client: typeof c.client) =>
      updateWithRetry(
        client,
        { kind: 'ConfigMap', name: 'counter', namespace: c.namespace },
        (o) => {
          o.data = { n: String(Number(o.data?.n ?? '0') + 1) };
        },
        { attempts: 20, delayMs: 1 },
      );
    await Promise.all([
      bump(c.client),
      bump(other),
      bump(c.client),
      bump(other),
      bump(c.client),
      bump(other),
    ]);
    expect((await c.client.get('ConfigMap', 'counter', c.namespace)).data?.n).toBe('6');
    other.close();
  });

  it('updateWithRetry with NO_CHANGE does not write', async () => {
    const before = await c.client.create(cm('nochange', { a: '1' }));
    const res = await updateWithRetry(
      c.client,
      { kind: 'ConfigMap', name: 'nochange', namespace: c.namespace },
      () => NO_CHANGE,
    );
    expect(res.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('patchWithRetry (merge and json) is conditional on the read resourceVersion', async () => {
    await c.client.create(cm('pcounter', { n: '0' }));
    const ref = { kind: 'ConfigMap' as const, name: 'pcounter', namespace: c.namespace };
    const other = c.newClient();
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        patchWithRetry(
          i % 2 ? c.client : other,
          ref,
          (o) =>
            i % 3 === 0
              ? {
                  type: 'json',
                  patch: [{ op: 'replace', path: '/data/n', value: String(Number(o.data?.n) + 1) }],
                }
              : { type: 'merge', patch: { data: { n: String(Number(o.data?.n) + 1) } } },
          { attempts: 30, delayMs: 1 },
        ),
      ),
    );
    expect((await c.client.get('ConfigMap', 'pcounter', c.namespace)).data?.n).toBe('6');
    other.close();
  });
});
