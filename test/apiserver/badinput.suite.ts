import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pod, startServer, type TestServer } from './helpers.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s.stop();
});

const PODS = '/api/v1/namespaces/default/pods';

async function stillServes(): Promise<void> {
  const r = await s.req('GET', '/api/v1/namespaces/default');
  expect(r.status).toBe(200);
}

async function podCount(): Promise<number> {
  return (await s.req('GET', PODS)).body.items.length;
}

describe('bad input', () => {
  it('malformed JSON → 400 BadRequest, nothing stored', async () => {
    const before = await podCount();
    const r = await s.req('POST', PODS, '{"apiVersion": "v1", "kind": "Pod", metadata: ');
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
    expect(r.body.message).toMatch(/^couldn't get version\/kind; json parse error: /);
    expect(await podCount()).toBe(before);
    await stillServes();
  });

  it('wrong kind or apiVersion for the path → 400 naming both', async () => {
    const r = await s.req('POST', PODS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.message).toBe(
      'the kind in the body (ConfigMap) does not match the kind of the resource (Pod) served at /api/v1/namespaces/default/pods',
    );
    const v = await s.req('POST', PODS, { ...pod('x'), apiVersion: 'apps/v1' });
    expect(v.status).toBe(400);
    expect(v.body.message).toBe(
      'the API version in the data (apps/v1) does not match the expected API version (v1)',
    );
    await stillServes();
  });

  it('invalid built-ins → 422 with causes (name, containers, labels)', async () => {
    const r = await s.req('POST', PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'Bad_Name', labels: { 'a b': 'c' } },
      spec: {},
    });
    expect(r.status).toBe(422);
    expect(r.body.reason).toBe('Invalid');
    const fields = r.body.details.causes.map(
      (c: { field: string; reason: string }) => `${c.reason}:${c.field}`,
    );
    expect(fields).toEqual([
      'FieldValueInvalid:metadata.name',
      'FieldValueInvalid:metadata.labels',
      'FieldValueRequired:spec.containers',
    ]);
    expect(r.body.message).toMatch(
      /^Pod "Bad_Name" is invalid: \[metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
    const noName = await s.req('POST', PODS, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {},
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    expect(noName.body.details.causes[0]).toEqual({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
    const noImage = await s.req('POST', PODS, { ...pod('noimg'), spec: { containers: [{ name: 'c' }] } });
    expect(noImage.body.details.causes).toEqual([
      { reason: 'FieldValueRequired', field: 'spec.containers[0].image', message: 'Required value' },
    ]);
    const sel = await s.req('POST', '/apis/apps/v1/namespaces/default/deployments', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'c' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    });
    expect(sel.status).toBe(422);
    expect(sel.body.details.causes[0].message).toContain('`selector` does not match template `labels`');
  });

  it('unknown fields on built-ins are accepted and kept harmlessly', async () => {
    const r = await s.req('POST', PODS, {
      ...pod('unknown'),
      spec: { containers: [{ name: 'c', image: 'x' }], notAField: 1 },
      extra: true,
    });
    expect(r.status).toBe(201);
    await stillServes();
  });

  it('non-object bodies, protobuf, wrong patch types → clear 4xx', async () => {
    expect((await s.req('POST', PODS, '[1,2]')).status).toBe(400);
    expect((await s.req('POST', PODS, '"str"')).status).toBe(400);
    expect((await s.req('POST', PODS, '')).status).toBe(400);
    const proto = await s.req('POST', PODS, 'k8s\u0000binary', 'application/vnd.kubernetes.protobuf');
    expect(proto.status).toBe(415);
    expect(proto.body.reason).toBe('UnsupportedMediaType');
    expect(proto.body.message).toContain('protobuf is not supported');
    await s.req('POST', PODS, pod('patchme'));
    const wrongType = await s.req('PATCH', `${PODS}/patchme`, { a: 1 }, 'application/json');
    expect(wrongType.status).toBe(415);
    const notArray = await s.req('PATCH', `${PODS}/patchme`, { op: 'add' }, 'application/json-patch+json');
    expect(notArray.status).toBe(400);
    const rename = await s.req(
      'PATCH',
      `${PODS}/patchme`,
      { metadata: { name: 'other' } },
      'application/merge-patch+json',
    );
    expect(rename.status).toBe(400);
    const badYaml = await s.req(
      'PATCH',
      `${PODS}/patchme?fieldManager=t`,
      'a: [unclosed',
      'application/apply-patch+yaml',
    );
    expect(badYaml.status).toBe(400);
    await stillServes();
  });

  it('unknown paths → 404, unsupported verbs → 405, bad query values → 400', async () => {
    // a group/version not served: the mux's plain-text 404, like a real server
    const r = await s.req('GET', '/apis/nope.example.com/v1/things');
    expect(r.status).toBe(404);
    expect(r.text).toBe('404 page not found\n');
    // a served group/version without that resource: a NotFound Status
    const missing = await s.req('GET', '/api/v1/things');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      reason: 'NotFound',
      message: 'the server could not find the requested resource',
    });
    expect((await s.req('GET', `${PODS}/x/logs`)).status).toBe(404);
    const m = await s.req('PUT', PODS, pod('x'));
    expect(m.status).toBe(405);
    expect(m.body.reason).toBe('MethodNotAllowed');
    expect(
      (await s.req('DELETE', '/api/v1/namespaces/default/pods?propagationPolicy=Sometimes')).status,
    ).toBe(400);
    expect((await s.req('GET', `${PODS}?watch=1&resourceVersion=abc`)).status).toBe(400);
    expect((await s.req('GET', `${PODS}?continue=%%%`)).status).toBe(400);
    expect((await s.req('POST', `${PODS}?dryRun=Some`, pod('dr'))).status).toBe(400);
    await stillServes();
  });

  it('dryRun=All validates without storing', async () => {
    const r = await s.req('POST', `${PODS}?dryRun=All`, pod('dry'));
    expect(r.status).toBe(201);
    expect((await s.req('GET', `${PODS}/dry`)).status).toBe(404);
  });

  it('survives a burst of garbage requests', async () => {
    const junk = [
      '{',
      'null',
      '{"metadata": 5}',
      '{"metadata": {"name": 5}}',
      '{"metadata": {"labels": [1]}}',
      '\u0000\u0001',
    ];
    const rs = await Promise.all(junk.map((j) => s.req('POST', PODS, j)));
    for (const r of rs) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.kind).toBe('Status');
    }
    await stillServes();
  });
});
