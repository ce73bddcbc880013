/**
 * The REST layer's edge: builds the request context, serves non-resource endpoints, resolves resource
 * routes and dispatches them through the routing table (`rest/routes.ts`), and converts every thrown
 * error into a `Status` response in one place (`rest/encoding.ts` `sendError`). The handlers live in
 * `rest/`: list/get, watch, write (create, update, patch, scale, binding, eviction), delete.
 */

import type { ApiServerLogger } from '../../apis/builtin/types.ts';
import { anonymousAllowed, authenticate, forbiddenPath, forbiddenResource } from './rest/auth.ts';
import { RequestContext, type RestRequest, type RestResponse, type ServerState } from './rest/context.ts';
import { send, sendError } from './rest/encoding.ts';
import { nonResource } from './rest/nonresource.ts';
import { handlerFor, isResourcePath, resolveRoute } from './rest/routes.ts';
import type { ClusterStore } from './store.ts';

/** Options of the HTTP handler. */
export interface HandlerOptions {
  logger?: ApiServerLogger;
  /** BOOKMARK interval for watches with allowWatchBookmarks (ms, default 10000) */
  bookmarkIntervalMs?: number;
  /** maximum request body (bytes, default 3 MiB: kube-apiserver's `MaxRequestBodyBytes`) */
  maxBodyBytes?: number;
  /** `host:port` reported in /api */
  serverAddress: () => string;
  /**
   * The bearer token of the administrator; other tokens get 401, no credentials 403 (except /version and
   * health checks). Undefined: no authentication at all (every request is the administrator).
   */
  token?: string | undefined;
}

/** The request handler of {@link createHandler} and its watch bookkeeping. */
export interface Handler {
  handle: (req: RestRequest, res: RestResponse) => void;
  /** End every open watch (used on stop). */
  closeWatches: () => void;
  /** Number of open watches. */
  openWatches: () => number;
}

/** Builds the request handler of one embedded API server over `store`. */
export function createHandler(store: ClusterStore, opts: HandlerOptions): Handler {
  let openapiHash = String(store.resourceVersion);
  store.onDiscoveryChange.add(() => {
    openapiHash = String(store.resourceVersion);
  });
  const server: ServerState = {
    store,
    log: opts.logger ?? {},
    bookmarkMs: opts.bookmarkIntervalMs ?? 10_000,
    maxBody: opts.maxBodyBytes ?? 3 * 1024 * 1024,
    serverAddress: opts.serverAddress,
    watches: new Set(),
    openapiHash: () => openapiHash,
  };

  async function dispatch(ctx: RequestContext): Promise<void> {
    server.log.debug?.({ method: ctx.method, url: ctx.req.url }, 'request');
    const who = opts.token === undefined ? 'admin' : authenticate(ctx, opts.token);
    const anonymous = who === 'anonymous' && !anonymousAllowed(ctx);
    const plain = anonymous ? undefined : nonResource(ctx);
    if (plain) return send(ctx.res, plain);
    if (anonymous && !isResourcePath(ctx.segments)) throw forbiddenPath(ctx);
    ctx.route = resolveRoute(store, ctx.segments);
    if (anonymous) throw forbiddenResource(ctx);
    const reply = await handlerFor(ctx)(ctx);
    if (reply) send(ctx.res, reply);
  }

  return {
    handle: (req, res) => {
      let ctx: RequestContext;
      try {
        ctx = new RequestContext(req, res, server);
      } catch (e) {
        req.resume();
        sendError(res, e, server.log);
        return;
      }
      dispatch(ctx).catch((e: unknown) => {
        // drain the body so the connection stays usable after an early error
        req.resume();
        sendError(res, e, server.log);
      });
    },
    closeWatches: () => {
      for (const s of [...server.watches]) s();
    },
    openWatches: () => server.watches.size,
  };
}
