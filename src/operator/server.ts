/**
 * The operator's HTTP endpoints, as upstream Karpenter serves them: `/metrics` (Prometheus text format from a
 * prom-client registry) on the metrics port, `/healthz` (liveness: the process serves) and `/readyz` (readiness:
 * the check returns undefined) on the health-probe port. When both ports are equal one server serves all three.
 * Port 0 binds a random free port; the bound ports are reported back.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { nodeHttp } from '../kube/nodehttp.ts';

/** Options of {@link startHttpEndpoints}. */
export interface HttpEndpointsOptions {
  registry: Registry;
  /** Metrics port (0 = random). */
  metricsPort: number;
  /** Health-probe port (0 = random; equal to `metricsPort` (≠ 0) to share one server). */
  healthProbePort: number;
  /** Bind address (default `127.0.0.1`). */
  host?: string;
  /** Readiness: `undefined` when ready, else the reason (served with HTTP 503). */
  readiness: () => string | undefined;
}

/** Running endpoints. */
export interface HttpEndpoints {
  /** Bound metrics port. */
  metricsPort: number;
  /** Bound health-probe port. */
  healthProbePort: number;
  /** Closes the servers. */
  close(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Starts the endpoints. Routes: `GET /metrics`, `GET /healthz`, `GET /readyz` (on both servers, so either
 * port answers every probe); anything else 404.
 * @throws when a port cannot be bound (message names the port).
 */
export async function startHttpEndpoints(opts: HttpEndpointsOptions): Promise<HttpEndpoints> {
  const host = opts.host ?? '127.0.0.1';
  const handler = (
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
  ): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/metrics') {
      opts.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': opts.registry.contentType });
          res.end(text);
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`metrics: ${(err as Error).message}\n`);
        });
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok\n');
      return;
    }
    if (path === '/readyz') {
      const why = opts.readiness();
      res.writeHead(why === undefined ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(why === undefined ? 'ok\n' : `not ready: ${why}\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found\n');
  };
  const servers: Server[] = [];
  const bind = async (port: number, what: string): Promise<number> => {
    const s = nodeHttp.createServer(handler);
    s.keepAliveTimeout = 5_000;
    try {
      const bound = await listen(s, port, host);
      servers.push(s);
      return bound;
    } catch (err) {
      throw new Error(`cannot serve ${what} on ${host}:${port}: ${(err as Error).message}`);
    }
  };
  const close = async (): Promise<void> => {
    await Promise.all(
      servers.splice(0).map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeAllConnections();
          }),
      ),
    );
  };
  try {
    const metricsPort = await bind(opts.metricsPort, 'metrics');
    const healthProbePort =
      opts.healthProbePort !== 0 && opts.healthProbePort === opts.metricsPort
        ? metricsPort
        : await bind(opts.healthProbePort, 'health probes');
    return { metricsPort, healthProbePort, close };
  } catch (err) {
    await close();
    throw err;
  }
}
