/**
 * Differential suite: every row of `rows.ts` is sent to the embedded API server and, when
 * `CAPENTER_TEST_KUBECONFIG` names a real cluster's kubeconfig, to that cluster too. Each answer is checked
 * against the row's expected (real) answer; a known difference checks the embedded server's documented
 * answer instead (docs/apiserver.md lists each with its reason). With both servers, their answers are also
 * compared with each other (code, reason, causes).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABSENT, type Expect, PRESENT, ROWS } from './rows.ts';
import { embeddedTarget, type Req, type Resp, realTarget, type Target } from './targets.ts';

const id = randomBytes(3).toString('hex');
const ns = `diff-${id}`;
const targets: Target[] = [];

function subst<T>(v: T): T {
  if (typeof v === 'string') return v.replaceAll('{ns}', ns).replaceAll('{id}', id) as T;
  if (Array.isArray(v)) return v.map(subst) as T;
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [subst(k), subst(x)])) as T;
  return v;
}

function at(body: unknown, path: string): unknown {
  let cur = body;
  for (const p of path.split('.'))
    cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

/** What a response shows, in the terms of an {@link Expect}. */
function observed(r: Resp, e: Expect): Record<string, unknown> {
  const o: Record<string, unknown> = { code: r.status };
  if (e.reason !== undefined) o.reason = r.body?.reason;
  if (e.causes !== undefined)
    o.causes = (r.body?.details?.causes ?? []).map((c: { field?: string; message: string }) =>
      c.field ? `${c.field}: ${c.message}` : c.message,
    );
  if (e.message !== undefined)
    o.message = String(r.body?.message ?? '').includes(e.message) ? e.message : r.body?.message;
  for (const [p, v] of Object.entries(e.fields ?? {})) {
    const got = at(r.body, p);
    o[p] = v === PRESENT || v === ABSENT ? (got === undefined ? ABSENT : PRESENT) : got;
  }
  if (e.warning)
    o.warning = e.warning.test(String(r.headers.warning ?? '')) ? String(e.warning) : r.headers.warning;
  if (e.text) o.text = e.text.test(r.text) ? String(e.text) : r.text.slice(0, 300);
  if (e.managed)
    o.managed = (r.body?.metadata?.managedFields ?? []).map(
      (m: { manager: string; operation: string; fieldsV1: unknown }) => ({
        manager: m.manager,
        operation: m.operation,
        fieldsV1: m.fieldsV1,
      }),
    );
  return o;
}

function wanted(e: Expect): Record<string, unknown> {
  const o: Record<string, unknown> = { code: e.code };
  if (e.reason !== undefined) o.reason = e.reason;
  if (e.causes !== undefined) o.causes = e.causes;
  if (e.message !== undefined) o.message = e.message;
  for (const [p, v] of Object.entries(e.fields ?? {})) o[p] = v;
  if (e.warning) o.warning = String(e.warning);
  if (e.text) o.text = String(e.text);
  if (e.managed) o.managed = e.managed;
  return o;
}

async function setup(t: Target, reqs: Req[]): Promise<void> {
  for (const r of reqs) {
    const resp = await t.send(subst(r));
    if (resp.status >= 300 && resp.status !== 409)
      throw new Error(`setup ${r.method} ${r.path} on ${t.name}: ${resp.status} ${resp.text.slice(0, 500)}`);
  }
}

beforeAll(async () => {
  targets.push(await embeddedTarget());
  const kc = process.env.CAPENTER_TEST_KUBECONFIG;
  if (kc) targets.push(await realTarget(kc));
  for (const t of targets)
    await setup(t, [
      {
        method: 'POST',
        path: '/api/v1/namespaces',
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      },
    ]);
}, 120_000);

afterAll(async () => {
  for (const t of targets) {
    if (t.name === 'real') {
      await t.send({ method: 'DELETE', path: `/api/v1/namespaces/${ns}` });
      for (const p of ['/apis/karpenter.sh/v1/nodepools', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses'])
        await t.send({ method: 'DELETE', path: p });
    }
    await t.stop();
  }
});

describe('differential: embedded API server vs a real kube-apiserver', () => {
  for (const row of ROWS) {
    const label = row.known ? `${row.name} (known difference: ${row.known.why})` : row.name;
    it(label, async () => {
      const checks: [string, Record<string, unknown>, Record<string, unknown>][] = [];
      for (const t of targets) {
        await setup(t, row.setup ?? []);
        const resp = await t.send(subst(row.req));
        if (process.env.DIFF_PRINT) console.log(t.name, row.name, resp.status, resp.text.slice(0, 1500));
        const e = subst(t.name === 'embedded' && row.known ? row.known.embedded : row.expect);
        checks.push([t.name, observed(resp, e), wanted(e)]);
      }
      for (const [name, got, want] of checks)
        expect(got, `${name}: ${row.req.method} ${row.req.path}`).toEqual(want);
    });
  }
});
