/**
 * The request context every REST handler receives: the parsed request (method, path segments, query),
 * the resolved resource route, the store and the server-wide state, plus the helpers handlers share
 * (body decoding, dryRun/fieldValidation/fieldManager query parameters, object replies).
 */
import {
  type ApiError,
  badRequest,
  methodNotAllowed,
  unsupportedMediaType,
} from '../../../apis/builtin/errors.ts';
import type { ApiServerLogger, Json, ResourceDef, StoredObj } from '../../../apis/builtin/types.ts';
import type { ClusterStore } from '../store.ts';
import {
  acceptsTable,
  apiVersionOf,
  decode,
  mediaType,
  type Reply,
  readBody,
  tableOf,
  warningHeaders,
} from './encoding.ts';
import type { RestRequest, RestResponse } from './io.ts';

export type { RestRequest, RestResponse } from './io.ts';

/** Server-wide state shared by all requests of one handler. */
export interface ServerState {
  store: ClusterStore;
  log: ApiServerLogger;
  /** BOOKMARK interval for watches with allowWatchBookmarks (ms) */
  bookmarkMs: number;
  /** maximum request body (bytes) */
  maxBody: number;
  /** `host:port` reported in /api */
  serverAddress: () => string;
  /** stop functions of the open watches */
  watches: Set<() => void>;
  /** current OpenAPI v3 document hash (changes when CRDs change) */
  openapiHash: () => string;
}

/**
 * Shape of a resource path: a collection (`/api/v1/namespaces/x/pods`), one object (`…/pods/p`) or a
 * subresource of one object (`…/pods/p/status`).
 */
export type RouteShape = 'collection' | 'object' | 'status' | 'scale' | 'binding' | 'eviction';

/** A resolved resource path. */
export interface ResourceRoute {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  /** `/watch/` path prefix (deprecated form) */
  legacyWatch: boolean;
  shape: RouteShape;
}

/** One request as handlers see it. */
export class RequestContext {
  readonly method: string;
  readonly url: URL;
  readonly query: URLSearchParams;
  /** decoded, non-empty path segments */
  readonly segments: string[];
  /** path without trailing slashes (`/` for the root) */
  readonly path: string;
  /** the resource route, set for resource requests */
  route!: ResourceRoute;

  constructor(
    readonly req: RestRequest,
    readonly res: RestResponse,
    readonly server: ServerState,
  ) {
    this.url = new URL(req.url ?? '/', 'https://embedded');
    this.query = this.url.searchParams;
    this.method = (req.method ?? 'GET').toUpperCase();
    this.segments = this.url.pathname
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
    this.path = this.url.pathname.replace(/\/+$/, '') || '/';
  }

  get store(): ClusterStore {
    return this.server.store;
  }

  /** `fieldManager` query parameter. */
  get fieldManager(): string | undefined {
    return this.query.get('fieldManager') || undefined;
  }

  /**
   * The manager a write without `fieldManager` is recorded under: the program name of the User-Agent
   * (`kubectl/v1.34 …` → `kubectl`), else `unknown` (apiserver fieldmanager defaulting).
   */
  get defaultFieldManager(): string {
    const ua = (this.req.headers['user-agent'] ?? '').split('/')[0]!.trim();
    return ua ? ua.slice(0, 128) : 'unknown';
  }

  /** `apiVersion` of the request's resource (`v1`, `apps/v1`), recorded in managedFields. */
  get apiVersion(): string {
    return apiVersionOf(this.route.def);
  }

  /**
   * Decode the body when its media type is one of `allowed`.
   * @throws ApiError 415 for another media type, 400 for an empty/unparsable body, 413 past the size limit
   */
  async body(allowed: string[]): Promise<Json> {
    const media = mediaType(this.req);
    if (!allowed.includes(media)) throw unsupportedMediaType(media);
    return decode(await readBody(this.req, this.server.maxBody), media);
  }

  /** The raw body text (empty string when none). */
  rawBody(): Promise<string> {
    return readBody(this.req, this.server.maxBody);
  }

  /**
   * `dryRun` query parameter.
   * @throws ApiError 400 for any value other than `All`
   */
  dryRun(): boolean {
    const v = this.query.get('dryRun');
    if (v !== null && v !== 'All')
      throw badRequest(`dryRun: Unsupported value: "${v}": supported values: "All"`);
    return v === 'All';
  }

  /**
   * `fieldValidation` query parameter (default `Warn`).
   * @throws ApiError 400 for an unknown value
   */
  fieldValidation(): 'Strict' | 'Warn' | 'Ignore' {
    const v = this.query.get('fieldValidation') ?? 'Warn';
    if (v !== 'Strict' && v !== 'Warn' && v !== 'Ignore')
      throw badRequest(
        `fieldValidation: Unsupported value: "${v}": supported values: "Ignore", "Strict", "Warn"`,
      );
    return v;
  }

  /** Reply with one object (or a one-row Table when the client asked for one), with write warnings. */
  object(code: number, o: StoredObj, warnings: string[] = []): Reply {
    const def = this.route.def;
    const body = acceptsTable(this.req)
      ? JSON.stringify(tableOf(this.store, def, [o], this.query))
      : this.store.toJson(o, apiVersionOf(def));
    return { code, body, headers: warningHeaders(warnings) };
  }

  /** 405 MethodNotAllowed for `verb` on the route's resource. */
  notAllowed(verb: string): ApiError {
    return methodNotAllowed(
      `the server does not allow this method on the requested resource (${verb} ${this.route.def.plural})`,
    );
  }
}
