/**
 * A small fault-injecting HTTP proxy in front of the embedded API server (plain HTTP on 127.0.0.1, random
 * port). The soak points the operator's kubeconfig at it; the stand-ins and the invariant checker keep talking
 * to the server directly. Faults are "armed" by the soak driver (`arm(kind, n)`) and consumed by the next
 * matching requests; every injection is counted per kind.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** API-server fault kinds the proxy injects. */
export type ApiFaultKind = 'conflict409' | 'error500' | 'error503' | 'slow' | 'watchClose' | 'gone410';

/** Every API fault kind, in a stable order. */
export const API_FAULT_KINDS: readonly ApiFaultKind[] = [
  'conflict409',
  'error500',
  'error503',
  'slow',
  'watchClose',
  'gone410',
];

/** A request the proxy lets the soak inspect before forwarding (pod evictions and pod deletions). */
export interface InspectedRequest {
  method: string;
  /** URL path without the query. */
  path: string;
}

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** Upstream base URL, `http://127.0.0.1:<port>`. */
  upstream: string;
  /** Called (and awaited) before forwarding requests for which `inspectWhen` is true. Must not throw. */
  inspect?: (req: InspectedRequest) => Promise<void>;
  /** Real milliseconds a `slow` fault delays a response (default 150). */
  slowMs?: number;
}

/** A running proxy. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Arms `n` injections of `kind` (consumed by the next matching requests; `watchClose` acts at once). */
  arm(kind: ApiFaultKind, n: number): void;
  /** Drops every armed fault. */
  disarm(): void;
  /** Injections done so far, per kind. */
  readonly injected: Record<ApiFaultKind, number>;
  stop(): Promise<void>;
}

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
}

const MUTATING = new Set(['PUT', 'PATCH']);

/** Starts the proxy; resolves once it listens. */
export async function startFaultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  const up = new URL(opts.upstream);
  const armed: Record<ApiFaultKind, number> = {
    conflict409: 0,
    error500: 0,
    error503: 0,
    slow: 0,
    watchClose: 0,
    gone410: 0,
  };
  const injected: Record<ApiFaultKind, number> = { ...armed };
  const watches = new Set<ServerResponse>();
  const slowMs = opts.slowMs ?? 150;

  const take = (kind: ApiFaultKind): boolean => {
    if (armed[kind] <= 0) return false;
    armed[kind]--;
    injected[kind]++;
    return true;
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, isWatch: boolean): void => {
    const headers = { ...req.headers, host: up.host };
    const out = httpRequest(
      { host: up.hostname, port: up.port, method: req.method, path: req.url, headers },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        if (isWatch) {
          watches.add(res);
          res.on('close', () => watches.delete(res));
        }
        upRes.pipe(res);
        res.on('close', () => upRes.destroy());
      },
    );
    out.on('error', () => res.destroy());
    out.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const u = new URL(req.url ?? '/', 'http://x');
        const method = req.method ?? 'GET';
        const isWatch = u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1';
        const reply = (code: number, reason: string) => {
          res.writeHead(code, { 'content-type': 'application/json' });
          res.end(status(code, reason, `injected by the soak fault proxy (${code})`));
        };
        if (isWatch && take('gone410')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          const ev = {
            type: 'ERROR',
            object: JSON.parse(status(410, 'Expired', 'too old resource version')),
          };
          res.end(`${JSON.stringify(ev)}\n`);
          return;
        }
        if (!isWatch && MUTATING.has(method) && take('conflict409')) return reply(409, 'Conflict');
        if (!isWatch && take('error500')) return reply(500, 'InternalError');
        if (!isWatch && take('error503')) return reply(503, 'ServiceUnavailable');
        if (!isWatch && take('slow')) await new Promise((r) => setTimeout(r, slowMs));
        if (
          opts.inspect &&
          ((method === 'POST' && /\/pods\/[^/]+\/eviction$/.test(u.pathname)) ||
            (method === 'DELETE' && /\/pods\/[^/]+$/.test(u.pathname)))
        )
          await opts.inspect({ method, path: u.pathname });
        forward(req, res, body, isWatch);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    injected,
    arm(kind, n) {
      if (kind === 'watchClose') {
        // close up to n open watch streams now (the clients must re-list / re-watch)
        let closed = 0;
        for (const w of [...watches]) {
          if (closed >= n) break;
          w.destroy();
          watches.delete(w);
          closed++;
        }
        injected.watchClose += closed;
        return;
      }
      armed[kind] += n;
      if (kind === 'gone410') {
        // drop n watch streams so their clients re-watch from their last resourceVersion and meet the 410
        let closed = 0;
        for (const w of [...watches]) {
          if (closed++ >= n) break;
          w.destroy();
          watches.delete(w);
        }
      }
    },
    disarm() {
      for (const k of API_FAULT_KINDS) armed[k] = 0;
    },
    async stop() {
      for (const w of watches) w.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
