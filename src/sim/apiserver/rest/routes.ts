/**
 * Resource routing: a path (`/api/v1/namespaces/default/pods/p/status`) resolves to a
 * {@link ResourceRoute} (resource, namespace, name, subresource, shape), and the routing table maps
 * (verb, route shape) to the handler. A verb missing from the table for a shape is 405.
 */
import { ApiError, pageNotFound } from '../../../apis/builtin/errors.ts';
import type { ClusterStore } from '../store.ts';
import type { RequestContext, ResourceRoute, RouteShape } from './context.ts';
import { deleteCollection, deleteObject } from './delete.ts';
import type { Reply } from './encoding.ts';
import { getObject, list } from './list.ts';
import { watch } from './watch.ts';
import { binding, create, eviction, getScale, patch, patchScale, update, updateScale } from './write.ts';

/** A REST handler: returns the reply, or nothing when it wrote the response itself (watch streams). */
export type Handler = (ctx: RequestContext) => Reply | undefined | Promise<Reply | undefined>;

/** Verbs of the table: the HTTP methods plus `WATCH` (GET with `watch=true` or the `/watch/` prefix). */
export type Verb = 'GET' | 'WATCH' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The routing table: `VERB shape` → handler. */
export const ROUTES: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ['GET collection', list],
  ['WATCH collection', watch],
  ['WATCH object', watch],
  ['POST collection', create],
  ['DELETE collection', deleteCollection],
  ['GET object', getObject],
  ['PUT object', update],
  ['PATCH object', patch],
  ['DELETE object', deleteObject],
  ['GET status', getObject],
  ['PUT status', update],
  ['PATCH status', patch],
  ['GET scale', getScale],
  ['PUT scale', updateScale],
  ['PATCH scale', patchScale],
  ['POST binding', binding],
  ['POST eviction', eviction],
]);

const NOT_FOUND = (): ApiError =>
  new ApiError(404, 'NotFound', 'the server could not find the requested resource');

function resolveIn(
  store: ClusterStore,
  group: string,
  version: string,
  segs: string[],
): ResourceRoute | undefined {
  let rest = segs;
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
  const name = rest[1];
  const subresource = rest[2];
  let shape: RouteShape = name === undefined ? 'collection' : 'object';
  if (subresource !== undefined) {
    const known = ['status', ...(def.scale ? ['scale'] : []), ...def.postSubresources];
    if (!known.includes(subresource) || (subresource === 'status' && !def.hasStatus)) return undefined;
    shape = subresource as RouteShape;
  }
  return { def, namespace, name, subresource, legacyWatch, shape };
}

/** Whether a path has the shape of a resource request (`/api/v1/<resource>…`, `/apis/<g>/<v>/<resource>…`). */
export function isResourcePath(segs: string[]): boolean {
  return (segs[0] === 'api' && segs.length > 2) || (segs[0] === 'apis' && segs.length > 3);
}

/**
 * Resolve a resource path from its segments (`['api','v1',…]` or `['apis',group,version,…]`).
 * @throws ApiError 404 when no served resource matches
 */
export function resolveRoute(store: ClusterStore, segs: string[]): ResourceRoute {
  let route: ResourceRoute | undefined;
  if (segs[0] === 'api' && segs[1] === 'v1' && segs.length > 2)
    route = resolveIn(store, '', 'v1', segs.slice(2));
  else if (segs[0] === 'apis' && segs.length > 3) route = resolveIn(store, segs[1]!, segs[2]!, segs.slice(3));
  if (route) return route;
  // outside every served group/version the real server's mux answers, not the API machinery
  const [g, v] = segs[0] === 'api' ? ['', segs[1]] : [segs[1], segs[2]];
  if (!store.resources().some((d) => d.group === g && d.version === v)) throw pageNotFound();
  throw NOT_FOUND();
}

/**
 * The handler for a resolved route.
 * @throws ApiError 405 when the verb is not served on that route shape
 */
export function handlerFor(ctx: RequestContext): Handler {
  const r = ctx.route;
  const watching = r.legacyWatch || ctx.query.get('watch') === '1' || ctx.query.get('watch') === 'true';
  if (watching && ctx.method !== 'GET') throw ctx.notAllowed(ctx.method);
  const verb = watching ? 'WATCH' : ctx.method;
  const h = ROUTES.get(`${verb} ${r.shape}`);
  if (!h) throw ctx.notAllowed(verb === 'WATCH' ? 'GET' : verb);
  return h;
}
