/**
 * The dashboard's HTTP server (thin): `GET /` the page (`page.ts`), `GET /events` the live feed as server-sent
 * events (a `snapshot` on connect, then `patch` and `decision` events from the {@link DashboardHub}),
 * `GET /api/view` the current view as JSON, `GET /assets/uplot.js` and `/assets/uplot.css` uPlot (npm `uplot`,
 * read once from `node_modules`, which the esbuild bundle keeps external). Read-only: any other method gets 405.
 * Binds `127.0.0.1` unless told otherwise (`capenter controller --dashboard-address`).
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { nodeHttp } from '../kube/nodehttp.ts';
import {
  type DashboardHub,
  type DashboardHubOptions,
  type DashboardSources,
  DashboardHub as Hub,
} from './hub.ts';
import { dashboardPage } from './page.ts';

/** Options of {@link startDashboard}. */
export interface DashboardOptions extends DashboardHubOptions {
  /** Port (0: any free one). */
  port: number;
  /** Bind address (default `127.0.0.1`: loopback only). */
  address?: string;
}

/** A running dashboard. */
export interface Dashboard {
  /** The bound port. */
  port: number;
  /** `http://<address>:<port>/`. */
  url: string;
  hub: DashboardHub;
  /** Stops serving, ends the viewers' streams and unsubscribes the hub. */
  close(): Promise<void>;
}

/** uPlot's script and stylesheet, or why they are missing (the page then shows the tables without charts). */
export interface UPlotAssets {
  js?: string;
  css?: string;
  missing?: string;
}

let assets: UPlotAssets | undefined;

/** Reads uPlot's files from `node_modules/uplot/dist` once. Never throws. */
export function uplotAssets(): UPlotAssets {
  if (assets) return assets;
  try {
    const req = createRequire(import.meta.url);
    const js = readFileSync(req.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
    const css = readFileSync(req.resolve('uplot/dist/uPlot.min.css'), 'utf8');
    assets = { js, css };
  } catch (err) {
    assets = {
      missing: `uPlot (npm package "uplot") is not installed: ${(err as Error).message}; run npm ci to get the charts`,
    };
  }
  return assets;
}

function send(res: ServerResponse, code: number, type: string, body: string): void {
  res.writeHead(code, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

function events(
  hub: DashboardHub,
  req: IncomingMessage,
  res: ServerResponse,
  streams: Set<ServerResponse>,
): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  streams.add(res);
  const off = hub.connect((m) => res.write(`event: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`));
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  keepAlive.unref();
  req.on('close', () => {
    off();
    clearInterval(keepAlive);
    streams.delete(res);
  });
}

function handler(hub: DashboardHub, streams: Set<ServerResponse>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain', 'the dashboard is read-only\n');
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    const a = uplotAssets();
    if (path === '/' || path === '/index.html')
      send(res, 200, 'text/html; charset=utf-8', dashboardPage(a.missing));
    else if (path === '/events') events(hub, req, res, streams);
    else if (path === '/api/view') send(res, 200, 'application/json', JSON.stringify(hub.view()));
    else if (path === '/assets/uplot.js' && a.js) send(res, 200, 'text/javascript', a.js);
    else if (path === '/assets/uplot.css' && a.css) send(res, 200, 'text/css', a.css);
    else send(res, 404, 'text/plain', 'not found\n');
  };
}

/**
 * Starts the dashboard over `sources` (an operator's cluster, client, provider, provisioner and disruption
 * controller).
 * @throws Error naming the address and port when they cannot be bound.
 */
export async function startDashboard(sources: DashboardSources, opts: DashboardOptions): Promise<Dashboard> {
  const address = opts.address ?? '127.0.0.1';
  const hub = new Hub(sources, opts);
  const streams = new Set<ServerResponse>();
  const server: Server = nodeHttp.createServer(handler(hub, streams));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port, address, () => resolve());
    });
  } catch (err) {
    hub.close();
    throw new Error(`cannot serve the dashboard on ${address}:${opts.port}: ${(err as Error).message}`);
  }
  const port = (server.address() as AddressInfo).port;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    port,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/`,
    hub,
    close: async () => {
      hub.close();
      for (const s of streams) s.end();
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
    },
  };
}
