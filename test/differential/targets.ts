/**
 * The servers the differential suite talks to: the embedded API server (always) and a real control plane
 * (when `CAPENTER_TEST_KUBECONFIG` names its kubeconfig). Both get the same raw HTTPS requests, with the
 * kubeconfig's credentials (client certificate or bearer token), no credentials, or a wrong token.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { type EmbeddedCluster, startEmbeddedCluster } from '../../src/sim/apiserver/index.ts';

/** Which credentials a request carries. */
export type Auth = 'default' | 'none' | 'bad-token';

/** One request (`body` is sent as JSON unless it is a string). */
export interface Req {
  method: string;
  path: string;
  body?: unknown;
  contentType?: string;
  auth?: Auth;
  headers?: Record<string, string>;
}

/** A decoded response. */
export interface Resp {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: responses are arbitrary JSON
  body: any;
}

/** A server under test. */
export interface Target {
  name: 'embedded' | 'real';
  send(req: Req): Promise<Resp>;
  stop(): Promise<void>;
}

interface Creds {
  server: URL;
  ca?: Buffer | undefined;
  insecure: boolean;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  token?: string | undefined;
}

function credsOf(kubeconfigYaml: string): Creds {
  // biome-ignore lint/suspicious/noExplicitAny: kubeconfig YAML
  const kc = parseYaml(kubeconfigYaml) as any;
  const ctx = kc.contexts.find((c: { name: string }) => c.name === kc['current-context'])?.context;
  const cluster = kc.clusters.find((c: { name: string }) => c.name === ctx.cluster).cluster;
  const user = kc.users.find((u: { name: string }) => u.name === ctx.user)?.user ?? {};
  const b64 = (v: string | undefined): Buffer | undefined => (v ? Buffer.from(v, 'base64') : undefined);
  const file = (v: string | undefined): Buffer | undefined => (v ? readFileSync(v) : undefined);
  return {
    server: new URL(cluster.server),
    ca: b64(cluster['certificate-authority-data']) ?? file(cluster['certificate-authority']),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    cert: b64(user['client-certificate-data']) ?? file(user['client-certificate']),
    key: b64(user['client-key-data']) ?? file(user['client-key']),
    token: user.token,
  };
}

function sender(c: Creds): Target['send'] {
  return (r) =>
    new Promise((resolve, reject) => {
      const auth = r.auth ?? 'default';
      const payload =
        r.body === undefined ? undefined : typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
      const headers: Record<string, string | number> = { Accept: 'application/json', ...r.headers };
      if (payload !== undefined) {
        headers['Content-Type'] = r.contentType ?? 'application/json';
        headers['Content-Length'] = Buffer.byteLength(payload);
      }
      if (auth === 'default' && c.token) headers.Authorization = `Bearer ${c.token}`;
      if (auth === 'bad-token') headers.Authorization = 'Bearer not-a-valid-token';
      const req = request(
        {
          host: c.server.hostname,
          port: c.server.port,
          path: r.path,
          method: r.method,
          headers,
          ...(c.ca ? { ca: c.ca } : {}),
          rejectUnauthorized: !c.insecure,
          ...(auth === 'default' && c.cert && c.key ? { cert: c.cert, key: c.key } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            try {
              body = JSON.parse(text);
            } catch {
              body = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
          });
        },
      );
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
}

/** The CRDs of the repository (crds/*.yaml) as objects. */
export function repoCrds(): object[] {
  const dir = join(import.meta.dirname, '../../crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as object));
}

/** The embedded API server with the repository's CRDs installed. */
export async function embeddedTarget(): Promise<Target & { cluster: EmbeddedCluster }> {
  const cluster = await startEmbeddedCluster();
  for (const crd of repoCrds()) cluster.installCRD(crd);
  return { name: 'embedded', cluster, send: sender(credsOf(cluster.kubeconfig)), stop: () => cluster.stop() };
}

/**
 * The real control plane of `kubeconfigPath`, with the repository's CRDs created (or already there) and
 * Established.
 */
export async function realTarget(kubeconfigPath: string): Promise<Target> {
  const send = sender(credsOf(readFileSync(kubeconfigPath, 'utf8')));
  for (const crd of repoCrds()) {
    const r = await send({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: crd,
    });
    if (r.status !== 201 && r.status !== 409)
      throw new Error(`installing a CRD on the real server: ${r.text}`);
  }
  for (const crd of repoCrds() as { metadata: { name: string } }[]) {
    for (;;) {
      const r = await send({
        method: 'GET',
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
      });
      // biome-ignore lint/suspicious/noExplicitAny: Status JSON
      if (r.body?.status?.conditions?.some((c: any) => c.type === 'Established' && c.status === 'True'))
        break;
      await new Promise((res) => setTimeout(res, 200));
    }
  }
  return { name: 'real', send, stop: async () => {} };
}
