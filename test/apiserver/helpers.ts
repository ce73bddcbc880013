/**
 * Test helpers: an HTTPS client that trusts the embedded server's CA, JSON requests and watch streams. After
 * {@link useInProcessTransport} the same helpers go through the server's in-process transport instead: the
 * `*.inprocess.test.ts` files run the REST suites again that way, so both paths must answer alike.
 */
import { request as httpsRequest } from 'node:https';
import { parse as parseYaml } from 'yaml';
import {
  type EmbeddedCluster,
  type EmbeddedClusterOptions,
  startEmbeddedCluster,
} from '../../src/sim/apiserver/index.ts';
import { eventually, type Truthy } from '../../src/testing/eventually.ts';

/** A decoded HTTP response. */
export interface Resp {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  body: any;
}

/** Cluster plus a request helper bound to it. */
export interface TestServer {
  cluster: EmbeddedCluster;
  ca: string;
  req(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    headers?: Record<string, string>,
  ): Promise<Resp>;
  watch(path: string): WatchStream;
  stop(): Promise<void>;
}

/** An open watch collecting parsed events. */
export interface WatchStream {
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  events: any[];
  status: Promise<number>;
  /** Wait until at least n events arrived (or time out). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  waitFor(n: number, timeoutMs?: number): Promise<any[]>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

let inProcess = false;

/**
 * From now on, {@link startServer}'s requests and watches use the server's in-process transport. Test files share
 * this module within a worker (vitest `isolate: false`), so each suite's file chooses its transport first:
 * this or {@link useHttpsTransport}.
 */
export function useInProcessTransport(): void {
  inProcess = true;
}

/** From now on, {@link startServer}'s requests and watches go over HTTPS (the default). */
export function useHttpsTransport(): void {
  inProcess = false;
}

/** Start an embedded cluster and a client trusting its CA. */
export async function startServer(opts: EmbeddedClusterOptions = {}): Promise<TestServer> {
  const cluster = await startEmbeddedCluster(inProcess ? { ...opts, loopback: true } : opts);
  const kc = parseYaml(cluster.kubeconfig) as {
    clusters: { cluster: Record<string, string> }[];
    users: { user: { token: string } }[];
  };
  const auth = { Authorization: `Bearer ${kc.users[0]!.user.token}` };
  const ca = Buffer.from(kc.clusters[0]!.cluster['certificate-authority-data']!, 'base64').toString('utf8');
  const url = new URL(cluster.url);
  if (inProcess) return inProcessServer(cluster, ca, auth);
  const req: TestServer['req'] = (method, path, body, contentType = 'application/json', headers = {}) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const r = httpsRequest(
        {
          host: url.hostname,
          port: url.port,
          path,
          method,
          ca,
          headers: {
            Accept: 'application/json',
            ...auth,
            ...(payload !== undefined
              ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) }
              : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
          });
        },
      );
      r.on('error', reject);
      if (payload !== undefined) r.write(payload);
      r.end();
    });
  const watch = (path: string): WatchStream => {
    const c = collector();
    const r = httpsRequest(
      { host: url.hostname, port: url.port, path, method: 'GET', ca, headers: auth },
      (res) => {
        c.status(res.statusCode ?? 0);
        res.on('data', (chunk: Buffer) => c.data(chunk.toString('utf8')));
        res.on('end', () => c.end());
        res.on('error', () => c.end(false));
      },
    );
    r.on('error', () => c.end(false));
    r.end();
    return c.stream(() => r.destroy());
  };
  return { cluster, ca, req, watch, stop: () => cluster.stop() };
}

/** {@link startServer}'s helpers over `cluster.transport` (see {@link useInProcessTransport}). */
function inProcessServer(cluster: EmbeddedCluster, ca: string, auth: Record<string, string>): TestServer {
  const transport = cluster.transport;
  if (!transport) throw new Error('startServer: the cluster has no in-process transport');
  const parse = (text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  };
  const lower = (h: Record<string, string> = {}) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  const req: TestServer['req'] = async (
    method,
    path,
    body,
    contentType = 'application/json',
    headers = {},
  ) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const r = await transport.request({
      method,
      path,
      headers: {
        Accept: 'application/json',
        ...auth,
        ...(payload !== undefined ? { 'Content-Type': contentType } : {}),
        ...headers,
      },
      body: payload,
    });
    return { status: r.status, headers: lower(r.headers), text: r.body, body: parse(r.body) };
  };
  const watch = (path: string): WatchStream => {
    const c = collector();
    const close = transport.stream(
      { method: 'GET', path, headers: auth },
      { response: (status) => c.status(status), data: (chunk) => c.data(chunk), end: () => c.end() },
    );
    return c.stream(close);
  };
  return { cluster, ca, req, watch, stop: () => cluster.stop() };
}

/** Collects a watch stream's newline-delimited events (both transports). */
function collector() {
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  const events: any[] = [];
  const waiters: (() => void)[] = [];
  let endResolve: () => void = () => {};
  const ended = new Promise<void>((r) => {
    endResolve = r;
  });
  let statusResolve: (n: number) => void = () => {};
  const status = new Promise<number>((r) => {
    statusResolve = r;
  });
  let buf = '';
  return {
    status: (n: number) => statusResolve(n),
    data: (chunk: string) => {
      buf += chunk;
      let i = buf.indexOf('\n');
      while (i >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) events.push(JSON.parse(line));
        i = buf.indexOf('\n');
      }
      for (const w of waiters.splice(0)) w();
    },
    /** The stream ended (`flush`: parse what is left; not after an error). */
    end: (flush = true) => {
      if (flush && buf.trim()) events.push(JSON.parse(buf));
      buf = '';
      for (const w of waiters.splice(0)) w();
      endResolve();
    },
    stream: (close: () => void): WatchStream => ({
      events,
      status,
      ended,
      close,
      waitFor: async (n, timeoutMs = 3000) => {
        const deadline = Date.now() + timeoutMs;
        while (events.length < n) {
          const left = deadline - Date.now();
          if (left <= 0)
            throw new Error(
              `timed out waiting for ${n} watch events, got ${JSON.stringify(events.map((e) => e.type))}`,
            );
          await new Promise<void>((res) => {
            const t = setTimeout(res, left);
            waiters.push(() => {
              clearTimeout(t);
              res();
            });
          });
        }
        return events;
      },
    }),
  };
}

/** A minimal pod manifest. */
export function pod(
  name: string,
  extra: Record<string, unknown> = {},
  labels: Record<string, string> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'nginx:1.27' }], ...extra },
  };
}

/** Polls `fn` until truthy (3 s by default; the shared helper, `src/testing/eventually.ts`). */
export function until<T>(fn: () => Promise<T> | T, timeoutMs = 3000): Promise<Truthy<T>> {
  return eventually(fn, 'condition', { timeoutMs, intervalMs: 10 });
}
