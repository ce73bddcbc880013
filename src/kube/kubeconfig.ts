/**
 * Kubeconfig resolution without @kubernetes/client-node for the common cases: one context's cluster (server,
 * CA, `insecure-skip-tls-verify`, `tls-server-name`) and user (client certificate/key, bearer token or token
 * file, basic auth), plus the in-cluster service account. client-node's `KubeConfig` loads its whole generated
 * API (~55 MB of RSS), so it is imported only for what this module does not handle — users with `exec` or
 * `auth-provider` plugins and clusters with `proxy-url` ({@link ResolvedKubeconfig.needsClientNode}); the
 * client then asks client-node for the request options, as before.
 *
 * Field names and precedence follow client-go/kubectl (`*-data` wins over the file path). Relative file paths
 * resolve against the process's working directory, as client-node's `loadFromString` does.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/** The TLS and credential settings of one kubeconfig context, resolved. */
export interface ResolvedKubeconfig {
  /** The kubeconfig YAML/JSON text (for the client-node fallback); undefined for in-cluster configs. */
  text: string | undefined;
  /** Context name in use (undefined in-cluster). */
  context: string | undefined;
  /** API server URL without trailing slash. */
  server: string;
  /** Namespace of the context, or `default`. */
  namespace: string;
  /** PEM CA bundle, inline (`certificate-authority-data`) or read from `caFile` on use. */
  ca?: string;
  caFile?: string;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  /** PEM client certificate/key, inline or from files. */
  cert?: string;
  certFile?: string;
  key?: string;
  keyFile?: string;
  token?: string;
  /** Read on every credential refresh (projected service-account tokens rotate). */
  tokenFile?: string;
  username?: string;
  password?: string;
  /** True when the user uses `exec`/`auth-provider` or the cluster a `proxy-url`: client-node applies them. */
  needsClientNode: boolean;
}

type Obj = Record<string, unknown>;

function asObj(v: unknown): Obj | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function named(list: unknown, name: string | undefined, field: string): Obj | undefined {
  if (!name || !Array.isArray(list)) return undefined;
  for (const e of list) {
    const o = asObj(e);
    if (o && o.name === name) return asObj(o[field]);
  }
  return undefined;
}

function b64(v: unknown): string | undefined {
  const s = str(v);
  return s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8');
}

/**
 * Resolves `context` (default: `current-context`) of a kubeconfig text (YAML or JSON).
 * @throws Error when the text is not a kubeconfig, or the context or its cluster (with `server`) is missing.
 */
export function resolveKubeconfig(text: string, context?: string): ResolvedKubeconfig {
  let doc: Obj | undefined;
  try {
    doc = asObj(parseYaml(text));
  } catch (err) {
    throw new Error(`kubeconfig: not valid YAML: ${(err as Error).message}`);
  }
  if (!doc) throw new Error('kubeconfig: expected a mapping with clusters, users and contexts');
  const ctxName = context ?? str(doc['current-context']);
  const ctx = named(doc.contexts, ctxName, 'context');
  if (context !== undefined && !ctx) throw new Error(`kubeconfig: context "${context}" not found`);
  const cluster = named(doc.clusters, str(ctx?.cluster), 'cluster');
  const server = str(cluster?.server);
  if (!cluster || !server)
    throw new Error('kubeconfig: no current cluster (set current-context or pass a context)');
  const user = named(doc.users, str(ctx?.user), 'user') ?? {};
  const out: ResolvedKubeconfig = {
    text,
    context: ctxName,
    server: server.replace(/\/+$/, ''),
    namespace: str(ctx?.namespace) ?? 'default',
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    needsClientNode: !!(user.exec || user['auth-provider'] || cluster['proxy-url']),
  };
  const set = <K extends keyof ResolvedKubeconfig>(k: K, v: ResolvedKubeconfig[K] | undefined): void => {
    if (v !== undefined) out[k] = v;
  };
  set('ca', b64(cluster['certificate-authority-data']));
  if (!out.ca) set('caFile', str(cluster['certificate-authority']));
  set('tlsServerName', str(cluster['tls-server-name']));
  set('cert', b64(user['client-certificate-data']));
  if (!out.cert) set('certFile', str(user['client-certificate']));
  set('key', b64(user['client-key-data']));
  if (!out.key) set('keyFile', str(user['client-key']));
  set('token', str(user.token));
  if (!out.token) set('tokenFile', str(user.tokenFile));
  set('username', str(user.username));
  set('password', str(user.password));
  return out;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The in-cluster config (client-go `rest.InClusterConfig`): server from `KUBERNETES_SERVICE_HOST`/`_PORT` of
 * `env`, CA and rotating token from the service-account mount, namespace from its `namespace` file.
 * @throws Error when the variables or the token file are missing (not running in a pod).
 */
export function inClusterKubeconfig(
  env: Readonly<Record<string, string | undefined>>,
  dir = SA_DIR,
): ResolvedKubeconfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error(
      'in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod?)',
    );
  try {
    readFileSync(`${dir}/token`);
  } catch (err) {
    throw new Error(`in-cluster config: cannot read the service-account token: ${(err as Error).message}`);
  }
  let namespace = 'default';
  try {
    namespace = readFileSync(`${dir}/namespace`, 'utf8').trim() || 'default';
  } catch {
    // optional
  }
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return {
    text: undefined,
    context: undefined,
    server: `https://${h}:${port}`,
    namespace,
    caFile: `${dir}/ca.crt`,
    tokenFile: `${dir}/token`,
    insecureSkipTLSVerify: false,
    needsClientNode: false,
  };
}

/**
 * TLS options and headers of a resolved config (files read now). Does not handle `needsClientNode` configs.
 * @throws Error naming the file when a referenced file cannot be read.
 */
export function connectionOptions(c: ResolvedKubeconfig): {
  tls: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean; servername?: string };
  headers: Record<string, string>;
  auth?: string;
} {
  const read = (path: string, what: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`kubeconfig: cannot read ${what} "${path}": ${(err as Error).message}`);
    }
  };
  const tls: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean; servername?: string } =
    {};
  const ca = c.ca ?? (c.caFile ? read(c.caFile, 'certificate-authority') : undefined);
  if (ca) tls.ca = ca;
  const cert = c.cert ?? (c.certFile ? read(c.certFile, 'client-certificate') : undefined);
  if (cert) tls.cert = cert;
  const key = c.key ?? (c.keyFile ? read(c.keyFile, 'client-key') : undefined);
  if (key) tls.key = key;
  if (c.insecureSkipTLSVerify) tls.rejectUnauthorized = false;
  if (c.tlsServerName) tls.servername = c.tlsServerName;
  const headers: Record<string, string> = {};
  const token = c.token ?? (c.tokenFile ? read(c.tokenFile, 'tokenFile').trim() : undefined);
  if (token) headers.Authorization = `Bearer ${token}`;
  const out: ReturnType<typeof connectionOptions> = { tls, headers };
  if (!token && c.username && c.password) out.auth = `${c.username}:${c.password}`;
  return out;
}
