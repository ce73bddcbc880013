/**
 * `KubeClient`: typed, plain-JSON access to the Kubernetes REST API. Kubeconfig contexts with certificates,
 * tokens or basic auth (and the in-cluster service account) are resolved by `kubeconfig.ts`; users with
 * `exec`/`auth-provider` plugins and clusters with `proxy-url` get their request options from
 * @kubernetes/client-node's `KubeConfig` (`applyToHTTPSOptions`), imported only then (it costs ~55 MB).
 * Requests are issued with node's http/https over a keep-alive agent and bodies are parsed as plain JSON (no
 * model classes, no Date conversion). Watches are streamed newline-delimited JSON over a separate agent (a
 * long-lived watch never takes a request socket). With `transport` (`transport.ts`) the same requests go
 * through it instead of the network: the embedded API server's in-process one, for clients in its process.
 * The client never knows whether the server is the embedded one or a real cluster.
 */
import { readFileSync } from 'node:fs';
import type * as http from 'node:http';
import * as https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject, ObjectMeta } from '../apis/core.ts';
import { type Clock, RealClock } from './clock.ts';
import { KubeApiError } from './errors.ts';
import { internStrings } from './intern.ts';
import {
  connectionOptions,
  inClusterKubeconfig,
  type ResolvedKubeconfig,
  resolveKubeconfig,
} from './kubeconfig.ts';
import { nodeHttp } from './nodehttp.ts';
import {
  apiVersionOf,
  type ObjectOf,
  parseApiVersion,
  type ResourceRef,
  ResourceRegistry,
  type ResourceType,
} from './resources.ts';
import {
  type FieldSelectorInput,
  formatFieldSelector,
  formatLabelSelector,
  type LabelSelectorInput,
} from './selectors.ts';
import type { KubeTransport, StreamSink } from './transport.ts';
import type { ObjectList, Status, WatchEvent } from './types.ts';

/** Patch flavours: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge, server-side apply. */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

/** Options of {@link KubeClient.list}. */
export interface ListOptions {
  /** Namespace to list in; omitted lists across all namespaces (namespaced kinds). */
  namespace?: string;
  labelSelector?: LabelSelectorInput;
  fieldSelector?: FieldSelectorInput;
  /** Return one page of at most `limit` items (caller follows `metadata.continue`). */
  limit?: number;
  /** Continue token from a previous page. */
  continue?: string;
  /**
   * Fetch everything in pages of this size, following `continue` tokens (ignored when `limit` is set).
   * Without `limit` or `pageSize` a single unpaginated request is made.
   */
  pageSize?: number;
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  signal?: AbortSignal;
}

/** Options of create/update/patch writes. */
export interface WriteOptions {
  /** Field manager recorded in managedFields (required for `apply`; default `capenter`). */
  fieldManager?: string;
  /** Server-side dry run (`dryRun=All`). */
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** Options of {@link KubeClient.patch}. */
export interface PatchOptions extends WriteOptions {
  /** Patch flavour (default `merge`). */
  type?: PatchType;
  /** Apply only: take ownership of conflicting fields. */
  force?: boolean;
  /** Patch a subresource (`status`, `scale`). */
  subresource?: string;
}

/** Options of {@link KubeClient.delete} (metav1.DeleteOptions). */
export interface DeleteOptions {
  /** `Background` (default for most kinds), `Foreground` or `Orphan`. */
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  /** Seconds before the object is deleted; 0 deletes immediately. */
  gracePeriodSeconds?: number;
  /** Delete only if the object still has this uid / resourceVersion (else 409). */
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** Options of {@link KubeClient.watch}. */
export interface WatchOptions {
  namespace?: string;
  /** Start after this resourceVersion; omitted or `''` starts with synthetic ADDED events of the current state. */
  resourceVersion?: string;
  labelSelector?: LabelSelectorInput;
  fieldSelector?: FieldSelectorInput;
  /** Ask for BOOKMARK events (default true). */
  allowWatchBookmarks?: boolean;
  /** Server closes the watch after this many seconds. */
  timeoutSeconds?: number;
  /**
   * Share decoded events with the other watches of this process that pass the same token (compared with `===`),
   * over the in-process transport only (see {@link decodeShared}): each event's object is then given to all of
   * them, so none may change it, except by a change that is idempotent and the same for every holder of the token
   * (an informer's transform passes itself). Absent: this watch's objects are its own.
   */
  shareDecoded?: object;
}

/** A running watch; `stop()` closes it (the done callback then receives `undefined`). */
export interface WatchHandle {
  stop(): void;
}

/** Result of {@link KubeClient.evict}: a value, never thrown for API refusals. */
export type EvictionResult =
  | { ok: true }
  | {
      ok: false;
      code: 'TooManyRequests' | 'NotFound' | 'Conflict' | 'Error';
      message: string;
      httpStatus: number;
    };

/** Options of {@link KubeClient.fromKubeconfig}. */
export interface ClientOptions {
  /** Kubeconfig context to use (default: current-context). */
  context?: string;
  /** Registry to resolve kinds (default: a fresh one with the built-in kinds). */
  registry?: ResourceRegistry;
  /** Max concurrent sockets to the API server (default 64). */
  maxSockets?: number;
  /** Per-request timeout in ms (default 60 000). */
  timeoutMs?: number;
  /** User-Agent header (default `capenter`). */
  userAgent?: string;
  /** Field manager for writes that do not name one (default `capenter`). */
  fieldManager?: string;
  /** Clock for the credential cache (default {@link RealClock}). */
  clock?: Clock;
  /**
   * Client-side rate limit (client-go's token bucket, upstream `KUBE_CLIENT_QPS`/`KUBE_CLIENT_BURST`): sustained
   * requests per second and the burst above it. Applies to every request except watch streams; wall-clock time.
   * Default: unlimited.
   */
  qps?: number;
  burst?: number;
  /**
   * Send requests through this transport instead of the network (see `transport.ts`): the embedded API
   * server's in-process one for clients in its own process. Credentials still come from the kubeconfig.
   * Default: HTTP(S) to the kubeconfig's server.
   */
  transport?: KubeTransport;
}

/** What the server returns for a written object: the input's type with full metadata (uid, resourceVersion, ...). */
export type Stored<T extends KubeObject> = T & { metadata: ObjectMeta };

type Query = Record<string, string | number | boolean | undefined>;

interface RawRequest {
  query?: Query;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal | undefined;
  /**
   * The caller does not read a successful answer: its body is not decoded and the request resolves `undefined`
   * (an error answer is still decoded into its `KubeApiError`). At 10,000 pods the stand-ins' status writes and
   * bindings answered with 55 MB of pods that nothing read.
   */
  discardBody?: boolean;
}

/**
 * Receives a raw request's method, result code, URL path (no query) and latency in seconds (wall time from sending
 * to the parsed answer or the failure; see {@link KubeClient.observeRequests}).
 */
export type RequestObserver = (method: string, code: string, path: string, seconds: number) => void;

/** The labels of `client_go_request_duration_seconds` for one request (see {@link requestLatencyLabels}). */
export interface RequestLatencyLabels {
  verb: string;
  group: string;
  version: string;
  kind: string;
  subresource: string;
}

/**
 * The `client_go_request_duration_seconds` labels of a request to `path` with HTTP `method`, as awslabs/operatorpkg
 * `metrics/client.go` (`LatencyAdapter.Observe`, `parsePath`) derives them from client-go's URL: `group` (empty for
 * the core API), `version`, `kind` (the resource, e.g. `pods`, `nodeclaims`), `subresource` (e.g. `status`,
 * `eviction`); `verb` POST → CREATE, GET without a name → LIST, PUT → UPDATE (CREATE without a name), other methods
 * as they are. Undefined for paths outside `/api` and `/apis` or too short to name a resource (discovery), as
 * operatorpkg observes none of those.
 */
export function requestLatencyLabels(method: string, path: string): RequestLatencyLabels | undefined {
  const parts = path.split('/').slice(1);
  let groupIdx: number;
  if (parts[0] === 'api') groupIdx = 0;
  else if (parts[0] === 'apis') groupIdx = 1;
  else return undefined;
  if (parts.length < groupIdx + 3) return undefined;
  const versionIdx = groupIdx + 1;
  // a namespaced resource (not the namespace itself)
  const kindIdx =
    parts[groupIdx + 2] === 'namespaces' && parts.length > groupIdx + 4 ? versionIdx + 3 : versionIdx + 1;
  const named = parts.length > kindIdx + 1;
  let verb = method;
  if (method === 'POST') verb = 'CREATE';
  else if (method === 'GET' && !named) verb = 'LIST';
  else if (method === 'PUT') verb = named ? 'UPDATE' : 'CREATE';
  return {
    verb,
    group: groupIdx === 0 ? '' : (parts[groupIdx] ?? ''),
    version: parts[versionIdx] ?? '',
    kind: parts[kindIdx] ?? '',
    subresource: parts.length === kindIdx + 3 ? (parts[kindIdx + 2] ?? '') : '',
  };
}

/**
 * The Kubernetes client used by every controller. Objects in and out are plain JSON. Errors from the API
 * are thrown as {@link KubeApiError} (see `errors.ts` for `isNotFound`, `isConflict`, ...); `evict`
 * returns a value instead.
 */
export class KubeClient {
  /** The resolved kubeconfig context (server, TLS, credentials). */
  readonly config: ResolvedKubeconfig;
  readonly registry: ResourceRegistry;
  /** Base URL of the API server, without trailing slash. */
  readonly server: string;
  private readonly maxSockets: number;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly fieldManager: string;
  private agent: http.Agent | undefined;
  private watchAgent: http.Agent | undefined;
  private cachedOpts: { at: number; opts: https.RequestOptions } | undefined;
  /** client-node's KubeConfig, loaded on first use for `needsClientNode` configs only. */
  private clientNodeConfig: Promise<KubeConfig> | undefined;
  private readonly clock: Clock;
  private readonly limiter: TokenBucket | undefined;
  private readonly transport: KubeTransport | undefined;
  private readonly requestObservers = new Set<RequestObserver>();

  constructor(config: ResolvedKubeconfig, opts: Omit<ClientOptions, 'context'> = {}) {
    this.config = config;
    this.server = config.server.replace(/\/+$/, '');
    this.registry = opts.registry ?? new ResourceRegistry();
    this.maxSockets = opts.maxSockets ?? 64;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.userAgent = opts.userAgent ?? 'capenter';
    this.fieldManager = opts.fieldManager ?? 'capenter';
    this.clock = opts.clock ?? new RealClock();
    this.limiter =
      opts.qps !== undefined ? new TokenBucket(opts.qps, opts.burst ?? Math.ceil(opts.qps)) : undefined;
    this.transport = opts.transport;
  }

  /**
   * Builds a client from a kubeconfig file path or its YAML text (anything containing a newline or starting
   * with `apiVersion` is taken as YAML). Throws when the file is unreadable or has no usable cluster.
   */
  static fromKubeconfig(pathOrYaml: string, opts: ClientOptions = {}): KubeClient {
    const isYaml = pathOrYaml.includes('\n') || /^\s*(apiVersion|\{)/.test(pathOrYaml);
    let text = pathOrYaml;
    if (!isYaml) {
      try {
        text = readFileSync(pathOrYaml, 'utf8');
      } catch (err) {
        throw new Error(`kubeconfig: cannot read "${pathOrYaml}": ${(err as Error).message}`);
      }
    }
    return new KubeClient(resolveKubeconfig(text, opts.context), opts);
  }

  /**
   * Builds a client from the in-cluster service account (the token and CA under
   * /var/run/secrets/kubernetes.io/serviceaccount and `KUBERNETES_SERVICE_HOST`/`_PORT` of `env`, default
   * `process.env`; the token is re-read as it rotates). Throws when not running in a pod.
   */
  static fromCluster(
    opts: Omit<ClientOptions, 'context'> = {},
    env: Readonly<Record<string, string | undefined>> = process.env,
  ): KubeClient {
    return new KubeClient(inClusterKubeconfig(env), opts);
  }

  /**
   * Base64 of the PEM CA bundle this client trusts (the kubeconfig's `certificate-authority(-data)`, the in-cluster
   * `ca.crt`), as user data wants it; `''` when it trusts the system CAs only. Mirrors upstream's `GetCABundle`
   * (aws:`pkg/operator/operator.go`, the rest config's TLS CAData). @throws Error when a CA file is unreadable.
   */
  async caBundleBase64(): Promise<string> {
    const ca = (await this.requestOptions(false)).ca;
    if (!ca) return '';
    const parts = Array.isArray(ca) ? ca : [ca];
    return Buffer.concat(parts.map((p) => Buffer.from(p))).toString('base64');
  }

  /** Namespace of the kubeconfig's current context, or `default`. */
  defaultNamespace(): string {
    return this.config.namespace;
  }

  // ---------------------------------------------------------------- resource resolution

  /** Resolves a kind name or descriptor; throws naming the kind when it is not registered. */
  resource<R extends ResourceRef>(ref: R): ResourceType<ObjectOf<R>> {
    if (typeof ref !== 'string') return ref as ResourceType<ObjectOf<R>>;
    const r = this.registry.forKind(ref);
    if (!r)
      throw new Error(
        `unknown kind "${ref}": register it with client.registry.register({group, version, plural, kind, namespaced}) or use client.discover()`,
      );
    return r as ResourceType<ObjectOf<R>>;
  }

  /**
   * Finds the descriptor for `apiVersion` + `kind`: from the registry, else by API discovery
   * (`GET /api/v1` or `/apis/{group}/{version}`), registering what it finds. Throws `KubeApiError` (404)
   * when the group/version is not served and `Error` when the kind is not in it.
   */
  async discover(apiVersion: string, kind: string): Promise<ResourceType> {
    const known = this.registry.forApiVersionKind(apiVersion, kind);
    if (known) return known;
    const { group, version } = parseApiVersion(apiVersion);
    const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const list = await this.request<{
      resources?: Array<{ name: string; kind: string; namespaced: boolean }>;
    }>('GET', path);
    const res = (list.resources ?? []).find((r) => r.kind === kind && !r.name.includes('/'));
    if (!res) throw new Error(`API discovery: kind "${kind}" is not served by ${apiVersion}`);
    const rt: ResourceType = { group, version, plural: res.name, kind, namespaced: res.namespaced };
    this.registry.register(rt);
    return rt;
  }

  private async resourceForObject(obj: KubeObject): Promise<ResourceType> {
    if (!obj.apiVersion || !obj.kind)
      throw new Error(
        `object "${obj.metadata?.name ?? obj.metadata?.generateName ?? '?'}" has no apiVersion/kind; set both (e.g. apiVersion: v1, kind: Pod)`,
      );
    return this.discover(obj.apiVersion, obj.kind);
  }

  /** REST path of a collection (`/api/v1/namespaces/ns/pods`) or, with `name`, of one object. */
  path(rt: ResourceType, namespace?: string, name?: string, subresource?: string): string {
    const base = rt.group === '' ? `/api/${rt.version}` : `/apis/${rt.group}/${rt.version}`;
    let p = base;
    if (rt.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
    else if (rt.namespaced && name !== undefined)
      throw new Error(`${rt.kind} "${name}" is namespaced: pass its namespace`);
    p += `/${rt.plural}`;
    if (name !== undefined) {
      if (name === '') throw new Error(`${rt.kind}: empty name`);
      p += `/${encodeURIComponent(name)}`;
      if (subresource) p += `/${subresource}`;
    }
    return p;
  }

  // ---------------------------------------------------------------- CRUD

  /** GETs one object. Throws `KubeApiError` 404 when it does not exist. */
  async get<R extends ResourceRef>(ref: R, name: string, namespace?: string): Promise<ObjectOf<R>> {
    const rt = this.resource(ref);
    return this.withTypeMeta(rt, await this.request<ObjectOf<R>>('GET', this.path(rt, namespace, name)));
  }

  /** Like `get` but resolves `undefined` on 404. */
  async tryGet<R extends ResourceRef>(
    ref: R,
    name: string,
    namespace?: string,
  ): Promise<ObjectOf<R> | undefined> {
    try {
      return await this.get(ref, name, namespace);
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 404) return undefined;
      throw err;
    }
  }

  /**
   * Lists objects. Items get `apiVersion`/`kind` filled in (the API omits them in lists). See
   * {@link ListOptions} for paging; `metadata.resourceVersion` is the list's, usable to start a watch.
   */
  async list<R extends ResourceRef>(ref: R, opts: ListOptions = {}): Promise<ObjectList<ObjectOf<R>>> {
    const rt = this.resource(ref);
    const path = this.path(rt, opts.namespace);
    const baseQuery: Query = {
      labelSelector:
        opts.labelSelector !== undefined ? formatLabelSelector(opts.labelSelector) || undefined : undefined,
      fieldSelector:
        opts.fieldSelector !== undefined ? formatFieldSelector(opts.fieldSelector) || undefined : undefined,
      resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch,
    };
    const fill = (l: ObjectList<ObjectOf<R>>): ObjectList<ObjectOf<R>> => {
      l.items = (l.items ?? []).map((o) => this.withTypeMeta(rt, o));
      l.metadata = l.metadata ?? {};
      return l;
    };
    if (opts.limit !== undefined || opts.pageSize === undefined) {
      const q = { ...baseQuery, limit: opts.limit, continue: opts.continue };
      return fill(
        await this.request<ObjectList<ObjectOf<R>>>('GET', path, { query: q, signal: opts.signal }),
      );
    }
    const items: ObjectOf<R>[] = [];
    let cont: string | undefined = opts.continue;
    let first: ObjectList<ObjectOf<R>> | undefined;
    do {
      const page = fill(
        await this.request<ObjectList<ObjectOf<R>>>('GET', path, {
          query: { ...baseQuery, limit: opts.pageSize, continue: cont },
          signal: opts.signal,
        }),
      );
      first ??= page;
      for (const it of page.items) items.push(it);
      cont = page.metadata.continue || undefined;
    } while (cont);
    const out = first as ObjectList<ObjectOf<R>>;
    out.items = items;
    out.metadata = { ...out.metadata };
    delete out.metadata.continue;
    return out;
  }

  /**
   * Creates `obj` (kind from its `apiVersion`/`kind`, namespace from `metadata.namespace`). Returns the
   * stored object (uid, resourceVersion, creationTimestamp, generated name). Throws 409 AlreadyExists.
   */
  async create<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    const rt = await this.resourceForObject(obj);
    const ns = this.namespaceOf(rt, obj);
    return this.withTypeMeta(
      rt,
      await this.request<Stored<T>>('POST', this.path(rt, ns), {
        body: obj,
        query: this.writeQuery(opts, false),
        signal: opts.signal,
      }),
    );
  }

  /**
   * Replaces `obj` (PUT). With `metadata.resourceVersion` set the write is conditional: a stale version
   * throws 409 Conflict. Changes to `status` are ignored by kinds with a status subresource.
   */
  async update<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    return this.put(obj, undefined, opts);
  }

  /** Replaces the `status` subresource of `obj` (PUT …/status); spec changes are ignored by the server. */
  async updateStatus<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    return this.put(obj, 'status', opts);
  }

  private async put<T extends KubeObject>(
    obj: T,
    sub: string | undefined,
    opts: WriteOptions,
  ): Promise<Stored<T>> {
    const rt = await this.resourceForObject(obj);
    const name = obj.metadata?.name;
    if (!name) throw new Error(`update ${rt.kind}: metadata.name is required`);
    return this.withTypeMeta(
      rt,
      await this.request<Stored<T>>('PUT', this.path(rt, this.namespaceOf(rt, obj), name, sub), {
        body: obj,
        query: this.writeQuery(opts, false),
        signal: opts.signal,
      }),
    );
  }

  /**
   * Patches one object. `patch` is an object for merge/strategic/apply and an operation array for `json`.
   * `apply` is server-side apply: `patch` must carry apiVersion/kind/metadata.name; `fieldManager` is
   * required (defaults to the client's), `force` takes over conflicting fields.
   */
  async patch<R extends ResourceRef>(
    ref: R,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<ObjectOf<R>> {
    const { rt, path, req } = this.patchRequest(ref, name, namespace, patch, opts);
    return this.withTypeMeta(rt, await this.request<ObjectOf<R>>('PATCH', path, req));
  }

  /** The resource, path and request of a {@link patch}. @throws Error for a `json` patch that is not an array */
  private patchRequest(
    ref: ResourceRef,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions,
  ): { rt: ResourceType; path: string; req: RawRequest } {
    const rt = this.resource(ref);
    const type = opts.type ?? 'merge';
    if (type === 'json' && !Array.isArray(patch))
      throw new Error(`json patch of ${rt.kind} "${name}": the patch must be an array of operations`);
    const query = this.writeQuery(opts, type === 'apply');
    if (type === 'apply' && opts.force) query.force = true;
    const path = this.path(rt, namespace, name, opts.subresource);
    return {
      rt,
      path,
      req: { body: patch, contentType: PATCH_CONTENT_TYPES[type], query, signal: opts.signal },
    };
  }

  /**
   * {@link patch} for a caller that does not read the answer: the same request, resolving once the server has
   * answered, without decoding the patched object (see `RawRequest.discardBody`). Errors throw as from `patch`.
   */
  async patchNoResult<R extends ResourceRef>(
    ref: R,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<void> {
    const { path, req } = this.patchRequest(ref, name, namespace, patch, opts);
    await this.request('PATCH', path, { ...req, discardBody: true });
  }

  /** `patch` on the `status` subresource. */
  async patchStatus<R extends ResourceRef>(
    ref: R,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: Omit<PatchOptions, 'subresource'> = {},
  ): Promise<ObjectOf<R>> {
    return this.patch(ref, name, namespace, patch, { ...opts, subresource: 'status' });
  }

  /**
   * Server-side apply of a whole object (kind from its apiVersion/kind). Creates it if absent.
   * Throws 409 Conflict when another manager owns a field and `force` is not set.
   */
  async apply<T extends KubeObject>(obj: T, opts: Omit<PatchOptions, 'type'> = {}): Promise<Stored<T>> {
    const rt = await this.resourceForObject(obj);
    const name = obj.metadata?.name;
    if (!name) throw new Error(`apply ${rt.kind}: metadata.name is required`);
    return (await this.patch(rt, name, this.namespaceOf(rt, obj), obj, {
      ...opts,
      type: 'apply',
    })) as Stored<T>;
  }

  /**
   * Deletes one object. Returns the object as the server answered: with `deletionTimestamp` when
   * finalizers (or foreground deletion) keep it, else the deleted object or a `Status`.
   * Throws 404 when absent, 409 when a precondition fails.
   */
  async delete<R extends ResourceRef>(
    ref: R,
    name: string,
    namespace?: string,
    opts: DeleteOptions = {},
  ): Promise<ObjectOf<R> | Status> {
    const rt = this.resource(ref);
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.dryRun) body.dryRun = ['All'];
    const res = await this.request<ObjectOf<R> | Status>('DELETE', this.path(rt, namespace, name), {
      body,
      signal: opts.signal,
    });
    return res && (res as KubeObject).kind !== 'Status' ? this.withTypeMeta(rt, res as ObjectOf<R>) : res;
  }

  /** Like `delete` but resolves `false` on 404 instead of throwing, `true` otherwise. */
  async tryDelete(
    ref: ResourceRef,
    name: string,
    namespace?: string,
    opts: DeleteOptions = {},
  ): Promise<boolean> {
    try {
      await this.delete(ref, name, namespace, opts);
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 404) return false;
      throw err;
    }
  }

  /**
   * Evicts a pod through the Eviction API (`POST …/pods/{name}/eviction`, policy/v1), which honours
   * PodDisruptionBudgets. Refusals are values: 429 `TooManyRequests` (a PDB blocks it now; retry later),
   * `NotFound`, `Conflict`, `Error` (e.g. 500 when several PDBs select the pod). Connection failures throw.
   */
  async evict(
    pod: { metadata?: { name?: string; namespace?: string } } | { name: string; namespace: string },
    opts: { gracePeriodSeconds?: number; dryRun?: boolean; signal?: AbortSignal } = {},
  ): Promise<EvictionResult> {
    const name = 'metadata' in pod ? pod.metadata?.name : (pod as { name: string }).name;
    const namespace = 'metadata' in pod ? pod.metadata?.namespace : (pod as { namespace: string }).namespace;
    if (!name || !namespace) throw new Error('evict: the pod needs metadata.name and metadata.namespace');
    const body: Record<string, unknown> = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
    };
    const del: Record<string, unknown> = {};
    if (opts.gracePeriodSeconds !== undefined) del.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.dryRun) del.dryRun = ['All'];
    if (Object.keys(del).length > 0) body.deleteOptions = del;
    try {
      await this.request('POST', `${this.path(this.resource('Pod'), namespace, name)}/eviction`, {
        body,
        signal: opts.signal,
      });
      return { ok: true };
    } catch (err) {
      if (!(err instanceof KubeApiError) || err.code === 0) throw err;
      const code =
        err.code === 429
          ? 'TooManyRequests'
          : err.code === 404
            ? 'NotFound'
            : err.code === 409
              ? 'Conflict'
              : 'Error';
      return { ok: false, code, message: err.status.message || err.message, httpStatus: err.code };
    }
  }

  // ---------------------------------------------------------------- watch

  /**
   * Opens a watch (`?watch=true`, newline-delimited JSON). `onEvent` gets each event (ERROR events carry a `Status`, e.g.
   * code 410 when `resourceVersion` is too old); `onDone(err)` once when the stream ends: `undefined` on a
   * normal close or `stop()`, a `KubeApiError` for HTTP errors (410 Gone included), else the error.
   */
  async watch<R extends ResourceRef>(
    ref: R,
    opts: WatchOptions,
    onEvent: (ev: WatchEvent<ObjectOf<R>>) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle> {
    const rt = this.resource(ref);
    const path = this.path(rt, opts.namespace);
    let stopped = false;
    let done = false;
    const finish = (err: unknown): void => {
      if (done) return;
      done = true;
      onDone(stopped ? undefined : err);
    };
    const query: Query = {
      resourceVersion: opts.resourceVersion || undefined,
      labelSelector:
        opts.labelSelector !== undefined ? formatLabelSelector(opts.labelSelector) || undefined : undefined,
      fieldSelector:
        opts.fieldSelector !== undefined ? formatFieldSelector(opts.fieldSelector) || undefined : undefined,
      allowWatchBookmarks: opts.allowWatchBookmarks ?? true,
      timeoutSeconds: opts.timeoutSeconds,
    };
    const url = new URL(this.server + path);
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const desc = `WATCH ${path}`;
    const sink = watchSink(
      desc,
      finish,
      () => done,
      (type, obj) => {
        if (type !== 'ERROR' && type !== 'BOOKMARK' && obj && typeof obj === 'object')
          this.withTypeMeta(rt, obj);
        onEvent({ type: type as WatchEvent['type'], object: obj as ObjectOf<R> });
      },
      this.transport !== undefined ? opts.shareDecoded : undefined,
    );
    let close: (() => void) | undefined;
    try {
      const o = await this.requestOptions(false);
      const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': this.userAgent };
      for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = String(v);
      if (this.transport) {
        close = this.transport.stream({ method: 'GET', path: url.pathname + url.search, headers }, sink);
      } else {
        const isHttps = url.protocol === 'https:';
        const options: https.RequestOptions = {
          method: 'GET',
          headers,
          agent: this.agentFor(o, isHttps, true),
          ...(o.auth ? { auth: o.auth } : {}),
        };
        const onResponse = (res: http.IncomingMessage): void => {
          sink.response(res.statusCode ?? 0);
          if (res.statusCode === 200) res.socket?.setKeepAlive(true, 30_000);
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => sink.data(chunk));
          res.on('error', (e) => sink.end(e));
          res.on('end', () => sink.end());
          res.on('close', () => sink.end());
        };
        const req = isHttps
          ? https.request(url, options, onResponse)
          : nodeHttp.request(url, options, onResponse);
        req.on('error', (e) => sink.end(e));
        req.end();
        close = () => req.destroy();
      }
    } catch (err) {
      finish(err);
    }
    return {
      stop: () => {
        if (stopped) return;
        stopped = true;
        close?.();
        finish(undefined);
      },
    };
  }

  // ---------------------------------------------------------------- raw requests

  /**
   * Raw JSON request against the API server (`path` starting with `/`). Resolves the parsed body
   * (`undefined` when empty); throws `KubeApiError` for HTTP ≥ 400 (with the server's Status) and with
   * code 0 when no response arrives. Retries once on 401 with freshly computed credentials.
   */
  async request<T = unknown>(method: string, path: string, req: RawRequest = {}): Promise<T> {
    if (this.limiter) await this.limiter.take();
    try {
      return await this.doRequest<T>(method, path, req, false);
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 401) return this.doRequest<T>(method, path, req, true);
      throw err;
    }
  }

  /**
   * Calls `observer` after every raw request (not watches) with its method and result: the HTTP status code as
   * a string, or `<error>` when no response arrived (client-go's `RequestResult` codes). Returns the function
   * that removes it. Observers must not throw; one that does is removed.
   */
  observeRequests(observer: RequestObserver): () => void {
    this.requestObservers.add(observer);
    return () => this.requestObservers.delete(observer);
  }

  private notify(method: string, code: string, path: string, seconds: number): void {
    for (const o of this.requestObservers) {
      try {
        o(method, code, path, seconds);
      } catch {
        this.requestObservers.delete(o);
      }
    }
  }

  /** Credentials and TLS options from the kubeconfig, recomputed at most every 5 s (and on 401). */
  private async requestOptions(fresh: boolean): Promise<https.RequestOptions> {
    const now = this.clock.now();
    if (!fresh && this.cachedOpts && now - this.cachedOpts.at < 5000) return this.cachedOpts.opts;
    let o: https.RequestOptions = {};
    if (this.config.needsClientNode) {
      this.clientNodeConfig ??= this.loadClientNodeConfig();
      await (await this.clientNodeConfig).applyToHTTPSOptions(o);
    } else {
      const c = connectionOptions(this.config);
      o = { ...c.tls, headers: c.headers, ...(c.auth ? { auth: c.auth } : {}) };
    }
    this.cachedOpts = { at: now, opts: o };
    return o;
  }

  private async loadClientNodeConfig(): Promise<KubeConfig> {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromString(this.config.text ?? '');
    if (this.config.context) kc.setCurrentContext(this.config.context);
    return kc;
  }

  private agentFor(o: https.RequestOptions, isHttps: boolean, forWatch = false): http.Agent {
    if (this.config.needsClientNode && o.agent) return o.agent as http.Agent;
    if (forWatch ? this.watchAgent : this.agent)
      return (forWatch ? this.watchAgent : this.agent) as http.Agent;
    const common = forWatch
      ? { keepAlive: true }
      : { keepAlive: true, maxSockets: this.maxSockets, maxFreeSockets: this.maxSockets };
    const servername = o.servername ?? this.config.tlsServerName;
    const agent = isHttps
      ? new https.Agent({
          ...common,
          ...(o.ca !== undefined ? { ca: o.ca } : {}),
          ...(o.cert !== undefined ? { cert: o.cert } : {}),
          ...(o.key !== undefined ? { key: o.key } : {}),
          ...(o.pfx !== undefined ? { pfx: o.pfx } : {}),
          ...(o.passphrase !== undefined ? { passphrase: o.passphrase } : {}),
          ...(o.rejectUnauthorized !== undefined ? { rejectUnauthorized: o.rejectUnauthorized } : {}),
          ...(servername ? { servername } : {}),
        })
      : new nodeHttp.Agent(common);
    if (forWatch) this.watchAgent = agent;
    else this.agent = agent;
    return agent;
  }

  private async doRequest<T>(method: string, path: string, req: RawRequest, fresh: boolean): Promise<T> {
    const status = { code: 0 };
    if (this.requestObservers.size === 0) return this.send<T>(method, path, req, fresh, status);
    const t0 = performance.now();
    const seconds = (): number => (performance.now() - t0) / 1000;
    try {
      const out = await this.send<T>(method, path, req, fresh, status);
      this.notify(method, String(status.code), path, seconds());
      return out;
    } catch (err) {
      this.notify(method, status.code > 0 ? String(status.code) : '<error>', path, seconds());
      throw err;
    }
  }

  /** One request; `status.code` receives the HTTP status when a response arrives. */
  private async send<T>(
    method: string,
    path: string,
    req: RawRequest,
    fresh: boolean,
    status: { code: number },
  ): Promise<T> {
    const o = await this.requestOptions(fresh);
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': this.userAgent };
    for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) headers[k] = String(v);
    let text: string | undefined;
    if (req.body !== undefined) {
      text = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
      headers['Content-Type'] = req.contentType ?? 'application/json';
    }
    const reqDesc = `${method} ${path}`;
    const answer = (code: number, body: string): T => {
      status.code = code;
      if (req.discardBody && code >= 200 && code < 300) return undefined as T;
      let parsed: unknown;
      if (body.length > 0) {
        try {
          parsed = JSON.parse(body);
        } catch {
          parsed = body;
        }
      }
      if (code >= 400 || code === 0) throw KubeApiError.fromResponse(code, parsed, reqDesc);
      return parsed as T;
    };
    if (this.transport) {
      let res: { status: number; body: string };
      try {
        res = await this.transport.request({
          method,
          path: url.pathname + url.search,
          headers,
          body: text,
          signal: req.signal,
        });
      } catch (e) {
        throw connErr(e as Error, reqDesc);
      }
      return answer(res.status, res.body);
    }
    const payload = text !== undefined ? Buffer.from(text) : undefined;
    if (payload) headers['Content-Length'] = String(payload.length);
    const isHttps = url.protocol === 'https:';
    const options: https.RequestOptions = {
      method,
      headers,
      agent: this.agentFor(o, isHttps),
      ...(o.auth ? { auth: o.auth } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    };
    return new Promise<T>((resolve, reject) => {
      const onResponse = (res: http.IncomingMessage): void => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(connErr(e, reqDesc)));
        res.on('end', () => {
          try {
            resolve(answer(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
          } catch (e) {
            reject(e);
          }
        });
      };
      const r = isHttps
        ? https.request(url, options, onResponse)
        : nodeHttp.request(url, options, onResponse);
      r.setTimeout(this.timeoutMs, () => r.destroy(new Error(`timed out after ${this.timeoutMs} ms`)));
      r.on('error', (e) => reject(connErr(e, reqDesc)));
      if (payload) r.end(payload);
      else r.end();
    });
  }

  /** Closes idle keep-alive sockets. The client stays usable (new sockets open on demand). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
    this.watchAgent?.destroy();
    this.watchAgent = undefined;
  }

  // ---------------------------------------------------------------- helpers

  private namespaceOf(rt: ResourceType, obj: KubeObject): string | undefined {
    if (!rt.namespaced) return undefined;
    const ns = obj.metadata?.namespace;
    if (!ns)
      throw new Error(
        `${rt.kind} "${obj.metadata?.name ?? obj.metadata?.generateName ?? '?'}" is namespaced: set metadata.namespace`,
      );
    return ns;
  }

  private writeQuery(opts: WriteOptions, requireManager: boolean): Query {
    const q: Query = {};
    const fm = opts.fieldManager ?? (requireManager ? this.fieldManager : undefined);
    if (fm) q.fieldManager = fm;
    if (opts.dryRun) q.dryRun = 'All';
    return q;
  }

  private withTypeMeta<T>(rt: ResourceType, obj: T): T {
    if (obj && typeof obj === 'object') {
      const o = obj as KubeObject;
      if (!o.apiVersion) o.apiVersion = apiVersionOf(rt);
      if (!o.kind) o.kind = rt.kind;
    }
    return obj;
  }
}

function connErr(e: Error, req: string): KubeApiError {
  if (e instanceof KubeApiError) return e;
  const aborted = e.name === 'AbortError';
  return new KubeApiError(
    0,
    aborted ? 'Aborted' : 'ConnectionError',
    `${aborted ? 'request aborted' : 'cannot reach the API server'}: ${e.message}`,
    { kind: 'Status', status: 'Failure', message: e.message },
    req,
  );
}

/**
 * The receiving end of a watch, for both the HTTP and the transport path: a 200 stream is split into
 * newline-delimited JSON events for `emit` (a malformed line is skipped and the watch goes on); any other
 * status collects the body and ends with its `KubeApiError`. `finish` gets the outcome once: `undefined`
 * for a normal end, the error otherwise; nothing is emitted once `isDone()`.
 */
function watchSink(
  desc: string,
  finish: (err: unknown) => void,
  isDone: () => boolean,
  emit: (type: string, obj: unknown) => void,
  shareToken?: object,
): StreamSink {
  let code = 0;
  let buf = '';
  return {
    response: (status) => {
      code = status;
    },
    data: (chunk) => {
      if (shareToken && code === 200 && buf === '' && chunk.indexOf('\n') === chunk.length - 1) {
        // one whole event line, as the embedded API server writes them in process: decoded once per turn
        if (isDone() || chunk.length === 1) return;
        const ev = decodeShared(shareToken, chunk);
        if (ev) emit(ev.type, ev.object);
        return;
      }
      buf += chunk;
      if (code !== 200) return;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
        if (isDone() || line.trim() === '') continue;
        let ev: { type?: string; object?: unknown };
        try {
          ev = JSON.parse(line) as { type?: string; object?: unknown };
        } catch {
          continue; // a malformed line is skipped, like client-go's decoder would fail the watch: resume instead
        }
        // informers keep what a watch delivers: share its short strings with the other copies (kube/intern.ts)
        emit(ev.type ?? '', internStrings(ev.object));
      }
    },
    end: (err) => {
      if (err) return finish(connErr(err, desc));
      if (code === 200 || code === 0) return finish(undefined);
      let body: unknown = buf;
      try {
        body = JSON.parse(buf);
      } catch {
        // not JSON: keep the text
      }
      finish(KubeApiError.fromResponse(code, body, desc));
    },
  };
}

/**
 * Watch event lines decoded in this turn of the event loop, by share token and line. The embedded API server writes
 * an event as one line, the same string for every watch it matches (`sim/apiserver/store.ts` `eventLine`), and in
 * `capenter start` the stand-ins' and the operator's informers both watch pods (and nodes, NodeClaims): each line
 * was parsed and interned twice, and both caches held their own copy of every pod. Watches that pass the same
 * {@link WatchOptions.shareDecoded} token share the first decode instead. Emptied at the next turn, so it keeps
 * no line or object past its delivery.
 */
const decodedThisTurn = new Map<object, Map<string, { type: string; object: unknown }>>();
let decodedClearArmed = false;

/**
 * The decoded watch event of `line` (one JSON event and its newline) for the watches of `token`: from
 * {@link decodedThisTurn}, or parsed and interned now; `undefined` for a malformed line (skipped, as the line
 * splitter of {@link watchSink} skips it).
 */
function decodeShared(token: object, line: string): { type: string; object: unknown } | undefined {
  let lines = decodedThisTurn.get(token);
  const have = lines?.get(line);
  if (have) return have;
  let ev: { type?: string; object?: unknown };
  try {
    ev = JSON.parse(line) as { type?: string; object?: unknown };
  } catch {
    return undefined;
  }
  const out = { type: ev.type ?? '', object: internStrings(ev.object) };
  if (!decodedClearArmed) {
    decodedClearArmed = true;
    setImmediate(() => {
      decodedClearArmed = false;
      decodedThisTurn.clear();
    });
  }
  if (!lines) {
    lines = new Map();
    decodedThisTurn.set(token, lines);
  }
  lines.set(line, out);
  return out;
}

/** `namespace/name` (or `name` for cluster-scoped objects): the cache and work-queue key of an object. */
export function objectKey(obj: KubeObject | { metadata?: { name?: string; namespace?: string } }): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** Splits an {@link objectKey} back into namespace (undefined for cluster-scoped) and name. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/**
 * A token bucket (client-go `flowcontrol.NewTokenBucketRateLimiter`): `burst` tokens, refilled at `qps` per
 * second (wall clock); `take()` resolves when a token is available, in call order.
 */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    /** Tokens per second (> 0). */
    private readonly qps: number,
    /** Bucket size (≥ 1). */
    private readonly burst: number,
  ) {
    if (!(qps > 0)) throw new Error(`rate limit: qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new Error(`rate limit: burst must be ≥ 1, got ${burst}`);
    this.tokens = burst;
  }

  /** Waits for a token. */
  take(): Promise<void> {
    const next = this.queue.then(async () => {
      const refill = (): void => {
        const now = performance.now();
        this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
        this.last = now;
      };
      refill();
      if (this.tokens < 1) {
        await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.qps) * 1000)));
        refill();
      }
      this.tokens -= 1;
    });
    this.queue = next;
    return next;
  }
}
