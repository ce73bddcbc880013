import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pod, startServer, type TestServer, until } from './helpers.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.stop();
});

const PODS = '/api/v1/namespaces/default/pods';
const DEPLOY = '/apis/apps/v1/namespaces/default/deployments';

function deployment(name: string, replicas = 1): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
      },
    },
  };
}

describe('object metadata', () => {
  it('assigns uid, a global resourceVersion, creationTimestamp and generation', async () => {
    const a = await s.req('POST', PODS, pod('meta-a'));
    const b = await s.req('POST', DEPLOY, deployment('meta-b'));
    expect(a.status).toBe(201);
    expect(a.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Number(b.body.metadata.resourceVersion)).toBe(Number(a.body.metadata.resourceVersion) + 1);
    expect(a.body.metadata.generation).toBeUndefined();
    expect(b.body.metadata.generation).toBe(1);
    expect(a.body.status).toEqual({ phase: 'Pending', qosClass: 'BestEffort' });
  });

  it('generates names with a 5-character suffix from the Kubernetes alphabet', async () => {
    const r = await s.req('POST', PODS, { ...pod(''), metadata: { generateName: 'gen-' } });
    expect(r.status).toBe(201);
    expect(r.body.metadata.name).toMatch(/^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('rejects a duplicate name with 409 AlreadyExists', async () => {
    await s.req('POST', PODS, pod('dup'));
    const r = await s.req('POST', PODS, pod('dup'));
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      kind: 'Status',
      reason: 'AlreadyExists',
      message: 'pods "dup" already exists',
    });
  });

  it('returns 404 NotFound with the real message', async () => {
    const r = await s.req('GET', `${PODS}/missing`);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      reason: 'NotFound',
      message: 'pods "missing" not found',
      details: { name: 'missing', kind: 'pods' },
    });
  });

  it('refuses to create in a namespace that does not exist', async () => {
    const r = await s.req('POST', '/api/v1/namespaces/nope/configmaps', { metadata: { name: 'x' } });
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('namespaces "nope" not found');
  });
});

describe('update', () => {
  it('409 Conflict on a stale resourceVersion, unconditional PUT without one', async () => {
    const c = await s.req('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'cm1' },
      data: { a: '1' },
    });
    const rv = c.body.metadata.resourceVersion;
    const u1 = await s.req('PUT', '/api/v1/namespaces/default/configmaps/cm1', {
      ...c.body,
      data: { a: '2' },
    });
    expect(u1.status).toBe(200);
    expect(Number(u1.body.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
    const stale = await s.req('PUT', '/api/v1/namespaces/default/configmaps/cm1', {
      ...c.body,
      data: { a: '3' },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.reason).toBe('Conflict');
    expect(stale.body.message).toBe(
      'Operation cannot be fulfilled on configmaps "cm1": the object has been modified; please apply your changes to the latest version and try again',
    );
    const { resourceVersion: _, ...meta } = c.body.metadata;
    const uncond = await s.req('PUT', '/api/v1/namespaces/default/configmaps/cm1', {
      ...c.body,
      metadata: meta,
      data: { a: '4' },
    });
    expect(uncond.status).toBe(200);
    expect(uncond.body.data).toEqual({ a: '4' });
  });

  it('bumps generation on spec changes only, not on metadata or status', async () => {
    const d = (await s.req('POST', DEPLOY, deployment('gen'))).body;
    const lab = await s.req(
      'PATCH',
      `${DEPLOY}/gen`,
      { metadata: { labels: { x: 'y' } } },
      'application/merge-patch+json',
    );
    expect(lab.body.metadata.generation).toBe(1);
    const st = await s.req(
      'PATCH',
      `${DEPLOY}/gen/status`,
      { status: { replicas: 1 } },
      'application/merge-patch+json',
    );
    expect(st.body.metadata.generation).toBe(1);
    expect(st.body.status.replicas).toBe(1);
    const sp = await s.req(
      'PATCH',
      `${DEPLOY}/gen`,
      { spec: { replicas: 3 } },
      'application/merge-patch+json',
    );
    expect(sp.body.metadata.generation).toBe(2);
    expect(d.metadata.uid).toBe(sp.body.metadata.uid);
  });

  it('isolates the status subresource: main writes ignore status, /status ignores spec', async () => {
    await s.req('POST', DEPLOY, deployment('iso'));
    const main = await s.req(
      'PATCH',
      `${DEPLOY}/iso`,
      { status: { replicas: 7 }, spec: { paused: true } },
      'application/merge-patch+json',
    );
    expect(main.body.status.replicas).toBeUndefined();
    expect(main.body.spec.paused).toBe(true);
    const st = await s.req(
      'PATCH',
      `${DEPLOY}/iso/status`,
      { status: { replicas: 7 }, spec: { paused: false } },
      'application/merge-patch+json',
    );
    expect(st.body.status.replicas).toBe(7);
    expect(st.body.spec.paused).toBe(true);
  });

  it('a no-op update keeps the resourceVersion', async () => {
    const c = (
      await s.req('POST', '/api/v1/namespaces/default/configmaps', {
        metadata: { name: 'noop' },
        data: { a: '1' },
      })
    ).body;
    const u = await s.req('PUT', '/api/v1/namespaces/default/configmaps/noop', c);
    expect(u.body.metadata.resourceVersion).toBe(c.metadata.resourceVersion);
  });

  it('rejects pod spec changes other than image as Forbidden', async () => {
    const p = (await s.req('POST', PODS, pod('immut'))).body;
    const r = await s.req('PUT', `${PODS}/immut`, { ...p, spec: { ...p.spec, hostNetwork: true } });
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0]).toMatchObject({ reason: 'FieldValueForbidden', field: 'spec' });
    const img = await s.req(
      'PATCH',
      `${PODS}/immut`,
      { spec: { containers: [{ name: 'c', image: 'nginx:1.28' }] } },
      'application/strategic-merge-patch+json',
    );
    expect(img.status).toBe(200);
    expect(img.body.spec.containers[0].image).toBe('nginx:1.28');
  });
});

describe('patch types', () => {
  it('json patch, merge patch and strategic merge patch with merge keys and $patch: delete', async () => {
    const d = deployment('smp');
    const tmpl = (d.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    tmpl.containers = [
      { name: 'c', image: 'nginx:1', env: [{ name: 'A', value: '1' }] },
      { name: 'side', image: 'envoy:1' },
    ];
    tmpl.tolerations = [{ key: 'a', operator: 'Exists' }];
    await s.req('POST', DEPLOY, d);
    // strategic: merge a container by name (env merged by name), delete one, tolerations replaced (atomic list)
    const r = await s.req(
      'PATCH',
      `${DEPLOY}/smp`,
      {
        metadata: { labels: { l: '1' } },
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'c', image: 'nginx:2', env: [{ name: 'B', value: '2' }] },
                { name: 'side', $patch: 'delete' },
              ],
              tolerations: [{ key: 'b', operator: 'Exists' }],
            },
          },
        },
      },
      'application/strategic-merge-patch+json',
    );
    expect(r.status).toBe(200);
    const cs = r.body.spec.template.spec.containers;
    expect(cs.map((c: { name: string; image: string }) => `${c.name}=${c.image}`)).toEqual(['c=nginx:2']);
    expect(cs[0].env).toEqual([
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ]);
    expect(r.body.spec.template.spec.tolerations).toEqual([{ key: 'b', operator: 'Exists' }]);
    expect(r.body.metadata.generation).toBe(2);
    const j = await s.req(
      'PATCH',
      `${DEPLOY}/smp`,
      [{ op: 'add', path: '/metadata/annotations', value: { a: 'b' } }],
      'application/json-patch+json',
    );
    expect(j.body.metadata.annotations).toEqual({ a: 'b' });
    const m = await s.req(
      'PATCH',
      `${DEPLOY}/smp`,
      { metadata: { labels: { l: null, k: '2' } } },
      'application/merge-patch+json',
    );
    expect(m.body.metadata.labels).toEqual({ k: '2' });
    const bad = await s.req(
      'PATCH',
      `${DEPLOY}/smp`,
      [{ op: 'test', path: '/metadata/name', value: 'other' }],
      'application/json-patch+json',
    );
    expect(bad.status).toBe(422);
  });

  it('strategic merge on node conditions merges by type and taints by key', async () => {
    await s.req('POST', '/api/v1/nodes', {
      metadata: { name: 'n-smp' },
      spec: { taints: [{ key: 'a', effect: 'NoSchedule' }] },
      status: {
        conditions: [
          { type: 'Ready', status: 'False' },
          { type: 'MemoryPressure', status: 'False' },
        ],
      },
    });
    const r = await s.req(
      'PATCH',
      '/api/v1/nodes/n-smp/status',
      { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      'application/strategic-merge-patch+json',
    );
    expect(r.body.status.conditions).toEqual([
      { type: 'Ready', status: 'True' },
      { type: 'MemoryPressure', status: 'False' },
    ]);
    const t = await s.req(
      'PATCH',
      '/api/v1/nodes/n-smp',
      { spec: { unschedulable: true, taints: [{ key: 'b', effect: 'NoExecute' }] } },
      'application/strategic-merge-patch+json',
    );
    expect(t.body.spec.taints.map((x: { key: string }) => x.key)).toEqual(['a', 'b']);
    expect(t.body.spec.unschedulable).toBe(true);
  });

  it('server-side apply creates, merges and records managedFields; needs fieldManager', async () => {
    const cfg =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n  a: "1"\n';
    const noMgr = await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/ssa',
      cfg,
      'application/apply-patch+yaml',
    );
    expect(noMgr.status).toBe(400);
    const c = await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/ssa?fieldManager=test',
      cfg,
      'application/apply-patch+yaml',
    );
    expect(c.status).toBe(201);
    expect(c.body.metadata.managedFields[0]).toMatchObject({
      manager: 'test',
      operation: 'Apply',
      fieldsV1: { 'f:data': { 'f:a': {} } },
    });
    const u = await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/ssa?fieldManager=test',
      cfg.replace('"1"', '"2"'),
      'application/apply-patch+yaml',
    );
    expect(u.status).toBe(200);
    expect(u.body.data).toEqual({ a: '2' });
  });
});

describe('list', () => {
  it('filters by equality and set-based label selectors and by field selectors', async () => {
    await s.req('POST', '/api/v1/namespaces', { metadata: { name: 'sel' } });
    const P = '/api/v1/namespaces/sel/pods';
    await s.req('POST', P, pod('s1', { nodeName: 'n1' }, { app: 'a', tier: 'web' }));
    await s.req('POST', P, pod('s2', { nodeName: 'n2' }, { app: 'b', tier: 'web' }));
    await s.req('POST', P, pod('s3', {}, { app: 'c' }));
    const names = async (q: string): Promise<string[]> =>
      (await s.req('GET', `${P}?${q}`)).body.items.map(
        (i: { metadata: { name: string } }) => i.metadata.name,
      );
    expect(await names('labelSelector=app%3Da')).toEqual(['s1']);
    expect(await names(`labelSelector=${encodeURIComponent('app in (a,c)')}`)).toEqual(['s1', 's3']);
    expect(await names(`labelSelector=${encodeURIComponent('app notin (a),tier')}`)).toEqual(['s2']);
    expect(await names(`labelSelector=${encodeURIComponent('!tier')}`)).toEqual(['s3']);
    expect(await names(`labelSelector=${encodeURIComponent('app!=a')}`)).toEqual(['s2', 's3']);
    expect(await names('fieldSelector=spec.nodeName%3Dn2')).toEqual(['s2']);
    expect(await names('fieldSelector=spec.nodeName%21%3D')).toEqual(['s1', 's2']);
    expect(await names('fieldSelector=metadata.name%3Ds3,status.phase%3DPending')).toEqual(['s3']);
    const all = await s.req('GET', `/api/v1/pods?fieldSelector=metadata.namespace%3Dsel`);
    expect(all.body.kind).toBe('PodList');
    expect(all.body.items).toHaveLength(3);
    const bad = await s.req('GET', `${P}?labelSelector=${encodeURIComponent('a in (b')}`);
    expect(bad.status).toBe(400);
  });

  it('paginates with limit and continue', async () => {
    await s.req('POST', '/api/v1/namespaces', { metadata: { name: 'page' } });
    for (let i = 0; i < 5; i++)
      await s.req('POST', '/api/v1/namespaces/page/configmaps', { metadata: { name: `c${i}` } });
    const p1 = await s.req('GET', '/api/v1/namespaces/page/configmaps?limit=2');
    expect(p1.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['c0', 'c1']);
    expect(p1.body.metadata.remainingItemCount).toBe(3);
    const p2 = await s.req(
      'GET',
      `/api/v1/namespaces/page/configmaps?limit=10&continue=${p1.body.metadata.continue}`,
    );
    expect(p2.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      'c2',
      'c3',
      'c4',
    ]);
    expect(p2.body.metadata.continue).toBeUndefined();
  });
});

describe('delete', () => {
  it('finalizers: deletionTimestamp set, object removed when the last finalizer goes', async () => {
    await s.req('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'fin', finalizers: ['a/x', 'a/y'] },
    });
    const d = await s.req('DELETE', '/api/v1/namespaces/default/configmaps/fin');
    expect(d.status).toBe(200);
    expect(d.body.metadata.deletionTimestamp).toBeDefined();
    expect(d.body.metadata.deletionGracePeriodSeconds).toBe(0);
    const add = await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/fin',
      { metadata: { finalizers: ['a/x', 'a/y', 'a/z'] } },
      'application/merge-patch+json',
    );
    expect(add.status).toBe(422);
    await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/fin',
      { metadata: { finalizers: ['a/y'] } },
      'application/merge-patch+json',
    );
    expect((await s.req('GET', '/api/v1/namespaces/default/configmaps/fin')).status).toBe(200);
    const last = await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/fin',
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    expect(last.status).toBe(200);
    expect((await s.req('GET', '/api/v1/namespaces/default/configmaps/fin')).status).toBe(404);
  });

  it('returns Status Success for configmaps and the object for pods', async () => {
    await s.req('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'del' } });
    const d = await s.req('DELETE', '/api/v1/namespaces/default/configmaps/del');
    expect(d.body).toMatchObject({
      kind: 'Status',
      status: 'Success',
      details: { name: 'del', kind: 'configmaps' },
    });
    await s.req('POST', PODS, pod('delpod'));
    const p = await s.req('DELETE', `${PODS}/delpod`);
    expect(p.status).toBe(200);
    expect(p.body.kind).toBe('Pod');
    const pre = await s.req('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'pre' } });
    const wrong = await s.req('DELETE', '/api/v1/namespaces/default/configmaps/pre', {
      preconditions: { uid: 'nope' },
    });
    expect(wrong.status).toBe(409);
    expect(pre.status).toBe(201);
  });

  it('garbage-collects dependents: background, foreground and orphan', async () => {
    const mk = async (name: string) =>
      (await s.req('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name } })).body;
    const dep = async (name: string, owner: { metadata: { name: string; uid: string } }) =>
      s.req('POST', '/api/v1/namespaces/default/configmaps', {
        metadata: {
          name,
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata.name, uid: owner.metadata.uid },
          ],
        },
      });
    const bg = await mk('owner-bg');
    await dep('dep-bg', bg);
    await s.req('DELETE', '/api/v1/namespaces/default/configmaps/owner-bg');
    await s.cluster.store.settle();
    expect((await s.req('GET', '/api/v1/namespaces/default/configmaps/dep-bg')).status).toBe(404);

    const fg = await mk('owner-fg');
    await s.req('POST', '/api/v1/namespaces/default/configmaps', {
      metadata: {
        name: 'dep-fg',
        finalizers: ['test/hold'],
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'owner-fg',
            uid: fg.metadata.uid,
            blockOwnerDeletion: true,
          },
        ],
      },
    });
    const d = await s.req('DELETE', '/api/v1/namespaces/default/configmaps/owner-fg', {
      propagationPolicy: 'Foreground',
    });
    expect(d.status).toBe(200);
    expect(d.body.metadata.finalizers).toContain('foregroundDeletion');
    await s.cluster.store.settle();
    // dependent is terminating (held by its finalizer), owner waits for it
    const depNow = await s.req('GET', '/api/v1/namespaces/default/configmaps/dep-fg');
    expect(depNow.body.metadata.deletionTimestamp).toBeDefined();
    expect((await s.req('GET', '/api/v1/namespaces/default/configmaps/owner-fg')).status).toBe(200);
    await s.req(
      'PATCH',
      '/api/v1/namespaces/default/configmaps/dep-fg',
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    await s.cluster.store.settle();
    expect((await s.req('GET', '/api/v1/namespaces/default/configmaps/owner-fg')).status).toBe(404);

    const or = await mk('owner-or');
    await dep('dep-or', or);
    await s.req('DELETE', '/api/v1/namespaces/default/configmaps/owner-or?propagationPolicy=Orphan');
    await s.cluster.store.settle();
    const orphan = await s.req('GET', '/api/v1/namespaces/default/configmaps/dep-or');
    expect(orphan.status).toBe(200);
    expect(orphan.body.metadata.ownerReferences).toBeUndefined();
  });

  it('deleting a namespace removes its objects, then the namespace', async () => {
    await s.req('POST', '/api/v1/namespaces', { metadata: { name: 'gone' } });
    await s.req('POST', '/api/v1/namespaces/gone/pods', pod('p'));
    await s.req('POST', '/api/v1/namespaces/gone/configmaps', { metadata: { name: 'c' } });
    const d = await s.req('DELETE', '/api/v1/namespaces/gone');
    expect(d.status).toBe(200);
    expect(d.body.status.phase).toBe('Terminating');
    const blocked = await s.req('POST', '/api/v1/namespaces/gone/configmaps', { metadata: { name: 'late' } });
    expect([403, 404]).toContain(blocked.status);
    await until(async () => (await s.req('GET', '/api/v1/namespaces/gone')).status === 404);
    expect((await s.req('GET', '/api/v1/namespaces/gone/pods')).body.items).toEqual([]);
    const sys = await s.req('DELETE', '/api/v1/namespaces/kube-system');
    expect(sys.status).toBe(403);
  });
});

describe('subresources', () => {
  it('scale: get and patch replicas of a deployment', async () => {
    await s.req('POST', DEPLOY, deployment('sc', 2));
    const g = await s.req('GET', `${DEPLOY}/sc/scale`);
    expect(g.body).toMatchObject({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      spec: { replicas: 2 },
      status: { replicas: 0, selector: 'app=sc' },
    });
    const p = await s.req(
      'PATCH',
      `${DEPLOY}/sc/scale`,
      { spec: { replicas: 5 } },
      'application/merge-patch+json',
    );
    expect(p.body.spec.replicas).toBe(5);
    const d = await s.req('GET', `${DEPLOY}/sc`);
    expect(d.body.spec.replicas).toBe(5);
    expect(d.body.metadata.generation).toBe(2);
    const neg = await s.req('PUT', `${DEPLOY}/sc/scale`, {
      ...g.body,
      metadata: { name: 'sc' },
      spec: { replicas: -1 },
    });
    expect(neg.status).toBe(422);
  });

  it('binding assigns a node once; a second binding conflicts', async () => {
    await s.req('POST', PODS, pod('bind'));
    const b = await s.req('POST', `${PODS}/bind/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'bind' },
      target: { kind: 'Node', name: 'n1' },
    });
    expect(b.status).toBe(201);
    const p = await s.req('GET', `${PODS}/bind`);
    expect(p.body.spec.nodeName).toBe('n1');
    expect(p.body.status.conditions[0]).toMatchObject({ type: 'PodScheduled', status: 'True' });
    const again = await s.req('POST', `${PODS}/bind/binding`, {
      metadata: { name: 'bind' },
      target: { kind: 'Node', name: 'n2' },
    });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain('is already assigned to node "n1"');
  });
});

describe('graceful pod deletion', () => {
  it('keeps a bound pod terminating until deleted with grace 0', async () => {
    await s.req('POST', PODS, pod('grace', { nodeName: 'n1', terminationGracePeriodSeconds: 20 }));
    const d = await s.req('DELETE', `${PODS}/grace`);
    expect(d.status).toBe(200);
    expect(d.body.metadata.deletionGracePeriodSeconds).toBe(20);
    expect((await s.req('GET', `${PODS}/grace`)).status).toBe(200);
    const k = await s.req('DELETE', `${PODS}/grace?gracePeriodSeconds=0`);
    expect(k.status).toBe(200);
    expect((await s.req('GET', `${PODS}/grace`)).status).toBe(404);
    // unbound pods go at once
    await s.req('POST', PODS, pod('unbound'));
    expect((await s.req('DELETE', `${PODS}/unbound`)).status).toBe(200);
    expect((await s.req('GET', `${PODS}/unbound`)).status).toBe(404);
  });
});
