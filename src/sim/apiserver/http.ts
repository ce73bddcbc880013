/**
 * The REST layer: routes Kubernetes API paths to the {@link ClusterStore}, decodes bodies (JSON, YAML,
 * patch media types; protobuf is answered with 415), encodes responses (JSON, Table for kubectl),
 * streams watches as newline-delimited JSON, and turns every failure into a `Status` object.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import {
  apiGroup,
  apiGroupList,
  apiVersions,
  openapiV2Doc,
  openapiV3Doc,
  openapiV3Root,
  resourceList,
  SERVER_VERSION,
} from './discovery.ts';
import { ApiError, badRequest, internal, methodNotAllowed, unsupportedMediaType } from './errors.ts';
import type { ClusterStore, DeleteOptions, PatchType, WatchEvent, WatchType } from './store.ts';
import { type IncludeObject, toTable } from './table.ts';
import {
  type ApiServerLogger,
  asObj,
  asStr,
  type Json,
  type JsonObject,
  type KObj,
  type ResourceDef,
  type StoredObj,
} from './types.ts';

/** Options of the HTTP handler. */
export interface HandlerOptions {
  logger?: ApiServerLogger;
  /** BOOKMARK interval for watches with allowWatchBookmarks (ms, default 10000) */
  bookmarkIntervalMs?: number;
  /** maximum request body (bytes, default 16 MiB) */
  maxBodyBytes?: number;
  /** `host:port` reported in /api */
  serverAddress: () => string;
}

const MAX_BUFFERED_WATCH_BYTES = 64 * 1024 * 1024;

interface Route {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  legacyWatch: boolean;
}

/** Builds the request handler; `closeWatches` ends every open watch (used on stop). */
export function createHandler(
  store: ClusterStore,
  opts: HandlerOptions,
): {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  closeWatches: () => void;
  openWatches: () => number;
} {
  const watches = new Set<() => void>();
  const log = opts.logger ?? {};
  const bookmarkMs = opts.bookmarkIntervalMs ?? 10_000;
  const maxBody = opts.maxBodyBytes ?? 16 * 1024 * 1024;
  let openapiHash = String(store.resourceVersion);
  store.onDiscoveryChange.add(() => {
    openapiHash = String(store.resourceVersion);
  });

  function send(
    res: ServerResponse,
    code: number,
    body: Json | string,
    headers: Record<string, string> = {},
  ): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(code, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      ...headers,
    });
    res.end(text);
  }

  function sendError(res: ServerResponse, e: unknown): void {
    if (e instanceof ApiError) {
      send(res, e.code, e.toStatus(), e.headers);
      return;
    }
    log.error?.({ err: e instanceof Error ? e.stack : String(e) }, 'internal error');
    send(res, 500, internal(e instanceof Error ? e.message : String(e)).toStatus());
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      const b = c as Buffer;
      size += b.length;
      if (size > maxBody)
        throw new ApiError(413, 'RequestEntityTooLarge', `request body too large (limit ${maxBody} bytes)`);
      chunks.push(b);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  function mediaType(req: IncomingMessage): string {
    return (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  }

  function decode(text: string, media: string): Json {
    if (text.trim() === '') throw badRequest('the request body is empty; expected a JSON or YAML object');
    if (media === 'application/yaml' || media === 'application/apply-patch+yaml' || media === 'text/yaml') {
      try {
        return parseYaml(text) as Json;
      } catch (e) {
        throw badRequest(
          `error converting YAML to JSON: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
        );
      }
    }
    try {
      return JSON.parse(text) as Json;
    } catch (e) {
      throw badRequest(
        `couldn't get version/kind; json parse error: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }

  async function bodyOf(req: IncomingMessage, allowed: string[]): Promise<Json> {
    const media = mediaType(req);
    if (!allowed.includes(media)) throw unsupportedMediaType(media);
    return decode(await readBody(req), media);
  }

  function acceptsTable(req: IncomingMessage): boolean {
    return /as=Table/.test(req.headers.accept ?? '');
  }

  function includeObject(q: URLSearchParams): IncludeObject {
    const v = q.get('includeObject');
    return v === 'None' || v === 'Object' ? v : 'Metadata';
  }

  function apiVersionOf(def: ResourceDef): string {
    return def.group ? `${def.group}/${def.version}` : def.version;
  }

  function objJson(def: ResourceDef, o: StoredObj): string {
    return store.toJson(o, apiVersionOf(def));
  }

  function tableJson(def: ResourceDef, items: StoredObj[], q: URLSearchParams): string {
    return JSON.stringify(
      toTable(def, items, {
        includeObject: includeObject(q),
        resourceVersion: String(store.resourceVersion),
        now: store.now(),
        apiVersion: apiVersionOf(def),
      }),
    );
  }

  // ---------------------------------------------------------------- routing

  function resolveRoute(group: string, version: string, rest: string[]): Route | undefined {
    let legacyWatch = false;
    if (rest[0] === 'watch') {
      legacyWatch = true;
      rest = rest.slice(1);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      const d = store.lookup(group, version, rest[2]!);
      if (d?.namespaced) {
        namespace = rest[1];
        rest = rest.slice(2);
      }
    }
    const def = store.lookup(group, version, rest[0] ?? '');
    if (!def || rest.length > 3) return undefined;
    if (namespace === undefined && def.namespaced && rest.length > 1) return undefined;
    return { def, namespace, name: rest[1], subresource: rest[2], legacyWatch };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://embedded');
    const segs = url.pathname
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
    const q = url.searchParams;
    const method = (req.method ?? 'GET').toUpperCase();
    log.debug?.({ method, url: req.url }, 'request');

    // non-resource endpoints
    const p = url.pathname.replace(/\/+$/, '') || '/';
    if (method === 'GET') {
      if (p === '/version') return send(res, 200, SERVER_VERSION);
      if (p === '/healthz' || p === '/livez' || p === '/readyz') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      }
      if (p === '/api') return send(res, 200, apiVersions(opts.serverAddress()));
      if (p === '/apis') return send(res, 200, apiGroupList(store));
      if (p === '/api/v1') return send(res, 200, resourceList(store, '', 'v1')!);
      if (segs[0] === 'apis' && segs.length === 2) {
        const g = apiGroup(store, segs[1]!);
        if (g) return send(res, 200, g);
      }
      if (segs[0] === 'apis' && segs.length === 3) {
        const l = resourceList(store, segs[1]!, segs[2]!);
        if (l) return send(res, 200, l);
      }
      if (p === '/openapi/v2') {
        const accept = req.headers.accept ?? '';
        if (!/json|\*\/\*/.test(accept) && accept !== '')
          return send(
            res,
            406,
            new ApiError(406, 'NotAcceptable', 'only application/json is served for /openapi/v2').toStatus(),
          );
        return send(res, 200, openapiV2Doc(store));
      }
      if (p === '/openapi/v3') return send(res, 200, openapiV3Root(store, openapiHash));
      if (segs[0] === 'openapi' && segs[1] === 'v3') {
        const rest = segs.slice(2);
        const [g, v] = rest[0] === 'api' ? ['', rest[1] ?? ''] : [rest[1] ?? '', rest[2] ?? ''];
        const doc = openapiV3Doc(store, g, v);
        if (doc) return send(res, 200, doc, { Etag: `"${openapiHash}"` });
      }
    }

    let route: Route | undefined;
    if (segs[0] === 'api' && segs[1] === 'v1' && segs.length > 2)
      route = resolveRoute('', 'v1', segs.slice(2));
    else if (segs[0] === 'apis' && segs.length > 3) route = resolveRoute(segs[1]!, segs[2]!, segs.slice(3));
    if (!route) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    await handleResource(req, res, route, q, method);
  }

  // ---------------------------------------------------------------- resources

  function dryRun(q: URLSearchParams): boolean {
    const v = q.get('dryRun');
    if (v !== null && v !== 'All')
      throw badRequest(`dryRun: Unsupported value: "${v}": supported values: "All"`);
    return v === 'All';
  }

  function writeObject(
    res: ServerResponse,
    req: IncomingMessage,
    q: URLSearchParams,
    def: ResourceDef,
    code: number,
    o: StoredObj,
    warnings: string[] = [],
  ): void {
    const headers: Record<string, string> = {};
    if (warnings.length > 0) {
      // one header value with comma-separated warn-values (RFC 7234 §5.5)
      headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ');
    }
    send(res, code, acceptsTable(req) ? tableJson(def, [o], q) : objJson(def, o), headers);
  }

  function fieldValidation(q: URLSearchParams): 'Strict' | 'Warn' | 'Ignore' {
    const v = q.get('fieldValidation') ?? 'Warn';
    if (v !== 'Strict' && v !== 'Warn' && v !== 'Ignore')
      throw badRequest(
        `fieldValidation: Unsupported value: "${v}": supported values: "Ignore", "Strict", "Warn"`,
      );
    return v;
  }

  async function handleResource(
    req: IncomingMessage,
    res: ServerResponse,
    r: Route,
    q: URLSearchParams,
    method: string,
  ): Promise<void> {
    const { def, namespace, name, subresource } = r;
    const fieldManager = q.get('fieldManager') ?? undefined;
    const verbNotAllowed = (verb: string): never => {
      throw methodNotAllowed(
        `the server does not allow this method on the requested resource (${verb} ${def.plural})`,
      );
    };
    if (subresource !== undefined) {
      const known = ['status', ...(def.scale ? ['scale'] : []), ...def.postSubresources];
      if (!known.includes(subresource) || (subresource === 'status' && !def.hasStatus))
        throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (r.legacyWatch || q.get('watch') === '1' || q.get('watch') === 'true') {
      if (method !== 'GET') verbNotAllowed(method);
      return watch(req, res, r, q);
    }
    if (name === undefined) {
      switch (method) {
        case 'GET':
          return list(req, res, r, q);
        case 'POST': {
          if (def.kind === 'Binding' && !def.group) {
            const body = asObj(await bodyOf(req, ['application/json', 'application/yaml'])) ?? {};
            const podName = asStr(asObj(body.metadata)?.name) ?? '';
            store.bind(namespace ?? '', podName, body as KObj);
            return send(res, 201, successStatus());
          }
          if (!def.verbs.includes('create')) verbNotAllowed('POST');
          const body = await bodyOf(req, ['application/json', 'application/yaml']);
          const warnings: string[] = [];
          const created = store.create(def, namespace, body as KObj, {
            dryRun: dryRun(q),
            fieldManager,
            fieldValidation: fieldValidation(q),
            warnings,
          });
          return writeObject(res, req, q, def, 201, created, warnings);
        }
        case 'DELETE': {
          if (!def.verbs.includes('deletecollection')) verbNotAllowed('DELETE');
          const del = await deleteOptions(req, q);
          const items = store.deleteCollection(
            def,
            {
              namespace,
              labelSelector: q.get('labelSelector') ?? undefined,
              fieldSelector: q.get('fieldSelector') ?? undefined,
            },
            del,
          );
          return send(
            res,
            200,
            `{"kind":"${def.kind}List","apiVersion":"${apiVersionOf(def)}","metadata":{"resourceVersion":"${store.resourceVersion}"},"items":[${items.map((o) => objJson(def, o)).join(',')}]}`,
          );
        }
        default:
          return verbNotAllowed(method);
      }
    }
    if (subresource === 'binding' || subresource === 'eviction') {
      if (method !== 'POST') verbNotAllowed(method);
      const body = asObj(await bodyOf(req, ['application/json', 'application/yaml']));
      if (!body) throw badRequest(`the ${subresource} body must be an object`);
      if (subresource === 'binding') {
        store.bind(namespace ?? '', name, body as KObj);
        return send(res, 201, successStatus());
      }
      const kind = asStr(body.kind);
      if (kind !== undefined && kind !== 'Eviction') throw badRequest(`expected an Eviction, got ${kind}`);
      store.evict(namespace ?? '', name, body as KObj);
      return send(res, 201, successStatus());
    }
    if (subresource === 'scale') {
      switch (method) {
        case 'GET':
          return send(res, 200, store.getScale(def, namespace, name));
        case 'PUT': {
          const body = asObj(await bodyOf(req, ['application/json', 'application/yaml'])) ?? {};
          return send(
            res,
            200,
            store.updateScale(def, namespace, name, body as KObj, { dryRun: dryRun(q), fieldManager }),
          );
        }
        case 'PATCH': {
          const type = patchType(req);
          const patch = await bodyOf(req, [mediaType(req)]);
          const cur = store.getScale(def, namespace, name);
          const { mergePatch, jsonPatch, strategicMerge } = await import('./patch.ts');
          const next =
            type === 'json'
              ? jsonPatch(cur, patch)
              : type === 'strategic' || type === 'apply'
                ? strategicMerge(cur, patch)
                : mergePatch(cur, patch);
          const nm = asObj(asObj(next)?.metadata);
          if (nm && asObj(cur.metadata))
            nm.resourceVersion = asObj(patch)?.metadata
              ? (asObj(asObj(patch)?.metadata)?.resourceVersion ?? null)
              : null;
          if (nm && nm.resourceVersion === null) delete nm.resourceVersion;
          return send(
            res,
            200,
            store.updateScale(def, namespace, name, (asObj(next) ?? {}) as KObj, {
              dryRun: dryRun(q),
              fieldManager,
            }),
          );
        }
        default:
          return verbNotAllowed(method);
      }
    }
    switch (method) {
      case 'GET':
        return writeObject(res, req, q, def, 200, store.get(def, namespace, name));
      case 'PUT': {
        const body = await bodyOf(req, ['application/json', 'application/yaml']);
        const warnings: string[] = [];
        const o = store.update(def, namespace, name, body as KObj, {
          dryRun: dryRun(q),
          fieldManager,
          subresource,
          fieldValidation: fieldValidation(q),
          warnings,
        });
        return writeObject(res, req, q, def, 200, o, warnings);
      }
      case 'PATCH': {
        const type = patchType(req);
        const patch = await bodyOf(req, [mediaType(req)]);
        if (type === 'apply' && !fieldManager)
          throw badRequest(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
          );
        const force = q.get('force');
        const warnings: string[] = [];
        const { obj, created } = store.patch(def, namespace, name, type, patch, {
          dryRun: dryRun(q),
          fieldManager,
          subresource,
          fieldValidation: fieldValidation(q),
          warnings,
          ...(force !== null ? { force: force === 'true' } : {}),
        });
        return writeObject(res, req, q, def, created ? 201 : 200, obj, warnings);
      }
      case 'DELETE': {
        if (subresource) verbNotAllowed('DELETE');
        const del = await deleteOptions(req, q);
        const { obj, removed } = store.delete(def, namespace, name, del);
        if (!removed) return writeObject(res, req, q, def, 202, obj);
        if (def.kind === 'Pod' || def.crdName) return writeObject(res, req, q, def, 200, obj);
        return send(res, 200, {
          ...successStatus(),
          details: { name, group: def.group, kind: def.plural, uid: obj.metadata.uid },
        });
      }
      default:
        return verbNotAllowed(method);
    }
  }

  function successStatus(): JsonObject {
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  function patchType(req: IncomingMessage): PatchType {
    const m = mediaType(req);
    switch (m) {
      case 'application/merge-patch+json':
        return 'merge';
      case 'application/json-patch+json':
        return 'json';
      case 'application/strategic-merge-patch+json':
        return 'strategic';
      case 'application/apply-patch+yaml':
      case 'application/apply-patch+cbor':
        if (m.endsWith('cbor')) throw unsupportedMediaType(m);
        return 'apply';
      default:
        throw unsupportedMediaType(m);
    }
  }

  async function deleteOptions(req: IncomingMessage, q: URLSearchParams): Promise<DeleteOptions> {
    const text = await readBody(req);
    const o: JsonObject = text.trim() ? (asObj(decode(text, mediaType(req))) ?? {}) : {};
    const del: DeleteOptions = {};
    const g =
      q.get('gracePeriodSeconds') ??
      (typeof o.gracePeriodSeconds === 'number' ? String(o.gracePeriodSeconds) : null);
    if (g !== null) {
      const n = Number(g);
      if (!Number.isInteger(n)) throw badRequest(`gracePeriodSeconds: invalid value "${g}"`);
      del.gracePeriodSeconds = n;
    }
    const pp = q.get('propagationPolicy') ?? asStr(o.propagationPolicy);
    if (pp !== undefined && pp !== null) {
      if (pp !== 'Background' && pp !== 'Foreground' && pp !== 'Orphan')
        throw badRequest(
          `propagationPolicy: Unsupported value: "${pp}": supported values: "Background", "Foreground", "Orphan"`,
        );
      del.propagationPolicy = pp;
    }
    if (o.orphanDependents === true || q.get('orphanDependents') === 'true')
      del.propagationPolicy ??= 'Orphan';
    const pre = asObj(o.preconditions);
    if (pre)
      del.preconditions = {
        ...(asStr(pre.uid) ? { uid: asStr(pre.uid)! } : {}),
        ...(asStr(pre.resourceVersion) ? { resourceVersion: asStr(pre.resourceVersion)! } : {}),
      };
    const dr = q.get('dryRun') ?? (Array.isArray(o.dryRun) ? String(o.dryRun[0] ?? '') : null);
    if (dr === 'All') del.dryRun = true;
    return del;
  }

  function list(req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): void {
    const { def } = r;
    const { items, resourceVersion } = store.list(def, {
      namespace: r.namespace,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector: q.get('fieldSelector') ?? undefined,
    });
    let page = items;
    let cont = '';
    let remaining: number | undefined;
    const token = q.get('continue');
    if (token) {
      let after = '';
      try {
        after = String((JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { k: string }).k);
      } catch {
        throw badRequest('continue key is not valid: malformed token');
      }
      const key = (o: StoredObj): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      page = page.filter((o) => key(o) > after);
    }
    const limit = Number(q.get('limit') ?? '0');
    if (Number.isInteger(limit) && limit > 0 && page.length > limit) {
      const last = page[limit - 1]!;
      remaining = page.length - limit;
      page = page.slice(0, limit);
      cont = Buffer.from(
        JSON.stringify({ k: `${last.metadata.namespace ?? ''}/${last.metadata.name}`, rv: resourceVersion }),
      ).toString('base64url');
    }
    if (acceptsTable(req)) {
      const t = JSON.parse(tableJson(def, page, q)) as JsonObject;
      const meta = asObj(t.metadata)!;
      meta.resourceVersion = resourceVersion;
      if (cont) meta.continue = cont;
      send(res, 200, t);
      return;
    }
    const meta: JsonObject = { resourceVersion };
    if (cont) {
      meta.continue = cont;
      meta.remainingItemCount = remaining ?? 0;
    }
    const av = apiVersionOf(def);
    const body = `{"kind":"${def.kind}List","apiVersion":"${av}","metadata":${JSON.stringify(meta)},"items":[${page.map((o) => objJson(def, o)).join(',')}]}`;
    send(res, 200, body);
  }

  function watch(req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): void {
    const { def } = r;
    const av = apiVersionOf(def);
    const asTable = acceptsTable(req);
    const sendInitial = q.get('sendInitialEvents') === 'true';
    const bookmarks = q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1';
    const fieldSelector = r.name
      ? `metadata.name=${r.name}${q.get('fieldSelector') ? `,${q.get('fieldSelector')}` : ''}`
      : (q.get('fieldSelector') ?? undefined);
    const pendingLines: string[] = [];
    let started = false;
    let closed = false;
    /** Lines of the current tick, written as one chunk (one TLS record train, one syscall) on setImmediate. */
    let batch: string[] = [];
    const flush = (): void => {
      const lines = batch;
      batch = [];
      if (closed || lines.length === 0) return;
      res.write(lines.length === 1 ? lines[0]! : lines.join(''));
      if (res.writableLength > MAX_BUFFERED_WATCH_BYTES) {
        log.warn?.({ resource: def.plural }, 'watch client too slow; closing the watch');
        stop();
      }
    };
    const write = (line: string): void => {
      if (closed) return;
      if (!started) {
        pendingLines.push(line);
        return;
      }
      // coalesce the events of one tick into one socket write
      if (batch.length === 0) setImmediate(flush);
      batch.push(line);
    };
    const deliver = (type: WatchType, ev: WatchEvent): void => {
      if (asTable) {
        const t = toTable(def, [ev.obj], {
          includeObject: includeObject(q),
          resourceVersion: ev.obj.metadata.resourceVersion,
          now: store.now(),
          apiVersion: av,
        });
        write(`{"type":"${type}","object":${JSON.stringify(t)}}\n`);
      } else write(store.eventLine(ev, type, av));
    };
    const handle = store.watch(
      def,
      {
        namespace: r.namespace,
        labelSelector: q.get('labelSelector') ?? undefined,
        fieldSelector,
        resourceVersion: q.get('resourceVersion') ?? undefined,
        sendInitialEvents: sendInitial,
      },
      deliver,
    );
    const bookmarkLine = (initialEnd: boolean): string => {
      const meta: JsonObject = { resourceVersion: String(store.resourceVersion) };
      if (initialEnd) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
      return `{"type":"BOOKMARK","object":${JSON.stringify({ kind: def.kind, apiVersion: av, metadata: meta })}}\n`;
    };
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    });
    started = true;
    if (pendingLines.length > 0) res.write(pendingLines.join(''));
    if (sendInitial && bookmarks) res.write(bookmarkLine(true));
    if (typeof res.flushHeaders === 'function') res.flushHeaders();
    const timers: NodeJS.Timeout[] = [];
    if (bookmarks) timers.push(setInterval(() => write(bookmarkLine(false)), bookmarkMs));
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    if (Number.isFinite(timeout) && timeout > 0) timers.push(setTimeout(() => stop(), timeout * 1000));
    function stop(): void {
      if (closed) return;
      closed = true;
      handle.stop();
      for (const t of timers) clearTimeout(t);
      watches.delete(stop);
      const rest = batch;
      batch = [];
      if (rest.length > 0 && !res.destroyed) res.write(rest.join(''));
      res.end();
    }
    watches.add(stop);
    res.on('close', stop);
    req.on('close', () => {
      if (req.destroyed && !res.writableEnded) stop();
    });
  }

  return {
    handle: (req, res) => {
      handle(req, res).catch((e: unknown) => {
        // drain the body so the connection stays usable after an early error
        req.resume();
        sendError(res, e);
      });
    },
    closeWatches: () => {
      for (const s of [...watches]) s();
    },
    openWatches: () => watches.size,
  };
}
