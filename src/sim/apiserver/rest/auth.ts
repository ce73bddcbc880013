/**
 * Authentication and the anonymous user's authorization, as a real kube-apiserver with a static token
 * and RBAC answers them: the right bearer token is an administrator; any other token is 401
 * Unauthorized; no credentials is `system:anonymous`, which may read only /version and the health checks
 * (RBAC `system:public-info-viewer`) and gets 403 Forbidden, with the real message, for everything else.
 */
import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../../apis/builtin/errors.ts';
import type { RequestContext } from './context.ts';

/** Paths the anonymous user may GET. */
const PUBLIC = new Set(['/version', '/healthz', '/livez', '/readyz']);

/** Who sent a request. */
export type Identity = 'admin' | 'anonymous';

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The identity of a request's credentials.
 * @throws ApiError 401 Unauthorized for a bearer token other than `token`, or any other scheme
 */
export function authenticate(ctx: RequestContext, token: string): Identity {
  const h = ctx.req.headers.authorization;
  if (h === undefined || h === '') return 'anonymous';
  const m = /^Bearer\s+(.+)$/i.exec(h);
  if (m && sameToken(m[1]!.trim(), token)) return 'admin';
  throw new ApiError(401, 'Unauthorized', 'Unauthorized');
}

/** Whether the anonymous user may make this request before any route is resolved. */
export function anonymousAllowed(ctx: RequestContext): boolean {
  return ctx.method === 'GET' && PUBLIC.has(ctx.path);
}

/** 403 for the anonymous user on a non-resource path. */
export function forbiddenPath(ctx: RequestContext): ApiError {
  const verb = ctx.method === 'GET' ? 'get' : ctx.method.toLowerCase();
  return new ApiError(
    403,
    'Forbidden',
    `forbidden: User "system:anonymous" cannot ${verb} path "${ctx.path}"`,
    {},
  );
}

/** The RBAC verb of a resource request. */
function rbacVerb(ctx: RequestContext, watching: boolean): string {
  const r = ctx.route;
  switch (ctx.method) {
    case 'GET':
      return watching ? 'watch' : r.name === undefined ? 'list' : 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return r.name === undefined ? 'deletecollection' : 'delete';
    default:
      return ctx.method.toLowerCase();
  }
}

/** 403 for the anonymous user on the request's resource (message of the RBAC authorizer). */
export function forbiddenResource(ctx: RequestContext): ApiError {
  const r = ctx.route;
  const watching = r.legacyWatch || ctx.query.get('watch') === 'true' || ctx.query.get('watch') === '1';
  const resource = r.subresource ? `${r.def.plural}/${r.subresource}` : r.def.plural;
  const qualified = r.def.group ? `${r.def.plural}.${r.def.group}` : r.def.plural;
  const subject = r.name !== undefined ? `${qualified} "${r.name}"` : qualified;
  const scope = r.namespace !== undefined ? `in the namespace "${r.namespace}"` : 'at the cluster scope';
  const details: Record<string, string> = { kind: r.def.plural };
  if (r.name !== undefined) details.name = r.name;
  if (r.def.group) details.group = r.def.group;
  return new ApiError(
    403,
    'Forbidden',
    `${subject} is forbidden: User "system:anonymous" cannot ${rbacVerb(ctx, watching)} resource "${resource}" in API group "${r.def.group}" ${scope}`,
    details,
  );
}
