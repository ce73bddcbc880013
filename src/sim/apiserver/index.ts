/**
 * The embedded Kubernetes API server: a real HTTPS server on loopback speaking the Kubernetes REST and
 * watch protocol, usable unchanged by @kubernetes/client-node and kubectl.
 *
 * Authentication: the kubeconfig's bearer token is the administrator; another token → 401, none → 403
 * (unless `insecureNoAuth`). Differences from a real server are listed in docs/apiserver.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { ApiServerLogger, KObj, StoredObj } from '../../apis/builtin/types.ts';
import type { KubeTransport } from '../../kube/transport.ts';
import { serverCert } from './certs.ts';
import { createHandler } from './http.ts';
import { inProcessTransport } from './inprocess.ts';
import { ClusterStore } from './store.ts';

export { ApiError } from '../../apis/builtin/errors.ts';
export type { ApiServerLogger, KObj, ResourceDef, StoredObj } from '../../apis/builtin/types.ts';
export type {
  DeleteOptions,
  ListOptions,
  PatchType,
  StoreOptions,
  WatchEvent,
  WatchType,
  WriteOptions,
} from './store.ts';
export { ClusterStore } from './store.ts';

/** Options of {@link startEmbeddedCluster}. */
export interface EmbeddedClusterOptions {
  /** TCP port (default 0 = any free port) */
  port?: number;
  /** listen address (default 127.0.0.1) */
  host?: string;
  /** serve HTTPS with a self-signed certificate (default true); plain HTTP otherwise */
  tls?: boolean;
  /** watch events kept per resource (default 10000); older resourceVersions get 410 Gone */
  watchHistory?: number;
  /**
   * Bearer token written into the kubeconfig (default: random per server). Requests with another token
   * get 401, requests without credentials 403 (except /version and health checks), like a real server.
   */
  token?: string;
  /** Accept every request without credentials (tests and tools that speak raw HTTP); default false. */
  insecureNoAuth?: boolean;
  /** BOOKMARK interval for watches with allowWatchBookmarks, in ms (default 10000) */
  bookmarkIntervalMs?: number;
  /**
   * Also give clients inside this process (the cluster's stand-ins and the operator of `capenter start`) an
   * in-process transport into the same handler: {@link EmbeddedCluster.transport}. Like kube-apiserver's
   * loopback client, it takes the same bearer token; the TLS listener stays the one users get. Default false.
   */
  loopback?: boolean;
  logger?: ApiServerLogger;
}

/** A running embedded cluster. */
export interface EmbeddedCluster {
  /** `https://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** kubeconfig YAML (context `capenter`, with certificate-authority-data, token auth) */
  kubeconfig: string;
  /**
   * With `loopback`: the in-process transport (`inprocess.ts`) for clients in this process, used with
   * {@link kubeconfig}'s token (`KubeClient.fromKubeconfig(kubeconfig, { transport })`). At 10,000 pods
   * `capenter start` sends about 70,000 requests between its own components; their HTTP on both ends was more
   * than half of its CPU.
   */
  transport?: KubeTransport;
  /** Write the kubeconfig to `path` (parent directories created). */
  writeKubeconfig(path: string): Promise<void>;
  /** Direct in-process access to the objects (returned objects must not be mutated). */
  store: ClusterStore;
  /**
   * Install a CustomResourceDefinition (create or replace); its resources are served at once.
   * @throws ApiError 422 for an invalid CRD
   */
  installCRD(crd: object): StoredObj;
  /** Close watches and connections, stop listening. */
  stop(): Promise<void>;
}

/**
 * Start an embedded API server. Resolves once it listens (well under a second; the certificate is
 * generated once per process).
 * @throws when the port cannot be bound
 */
export async function startEmbeddedCluster(opts: EmbeddedClusterOptions = {}): Promise<EmbeddedCluster> {
  const host = opts.host ?? '127.0.0.1';
  const tls = opts.tls ?? true;
  const store = new ClusterStore({
    ...(opts.watchHistory !== undefined ? { watchHistory: opts.watchHistory } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  let port = 0;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const handler = createHandler(store, {
    serverAddress: () => `${urlHost}:${port}`,
    token: opts.insecureNoAuth ? undefined : token,
    ...(opts.bookmarkIntervalMs !== undefined ? { bookmarkIntervalMs: opts.bookmarkIntervalMs } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const cert = tls ? await serverCert() : undefined;
  const server: Server = cert
    ? createHttpsServer({ key: cert.key, cert: cert.cert }, handler.handle)
    : createHttpServer(handler.handle);
  port = await listen(server, opts.port ?? 0, host);
  const url = `${tls ? 'https' : 'http'}://${urlHost}:${port}`;
  const kubeconfig = kubeconfigFor(
    cert
      ? { server: url, 'certificate-authority-data': Buffer.from(cert.cert).toString('base64') }
      : { server: url, 'insecure-skip-tls-verify': true },
    token,
  );
  const local = opts.loopback ? inProcessTransport(handler) : undefined;
  let stopped = false;
  opts.logger?.info?.({ url }, 'embedded API server listening');
  return {
    url,
    port,
    kubeconfig,
    ...(local ? { transport: local.transport } : {}),
    store,
    installCRD: (crd) => store.installCRD(crd as KObj),
    writeKubeconfig: async (path) => {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, kubeconfig, { mode: 0o600 });
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      local?.close();
      handler.closeWatches();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Listens on `port` (0: any free one) of `host` with the server's timeouts; resolves with the port. */
async function listen(server: Server, port: number, host: string): Promise<number> {
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Kubeconfig YAML with one cluster (`cluster`: its `server` and TLS fields), the token user and context `capenter`. */
function kubeconfigFor(cluster: Record<string, unknown>, token: string): string {
  const config: JsonKubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'capenter', cluster }],
    users: [{ name: 'capenter', user: { token } }],
    contexts: [
      { name: 'capenter', context: { cluster: 'capenter', user: 'capenter', namespace: 'default' } },
    ],
    'current-context': 'capenter',
    preferences: {},
  };
  return toYaml(config);
}

interface JsonKubeconfig {
  [key: string]: unknown;
}
