/**
 * Non-resource endpoints served on GET: /version, health checks, discovery (/api, /apis, group and
 * group/version documents) and OpenAPI (/openapi/v2, /openapi/v3 and one document per group/version).
 */

import { pageNotFound } from '../../../apis/builtin/errors.ts';
import {
  apiGroup,
  apiGroupList,
  apiVersions,
  openapiV2Doc,
  openapiV3Doc,
  openapiV3Root,
  resourceList,
  SERVER_VERSION,
} from '../discovery.ts';
import type { RequestContext } from './context.ts';
import type { Reply } from './encoding.ts';

type NonResource = (ctx: RequestContext) => Reply | undefined;

const health: NonResource = () => ({ code: 200, body: 'ok', headers: { 'Content-Type': 'text/plain' } });

/** Exact paths → handler. */
const EXACT: ReadonlyMap<string, NonResource> = new Map<string, NonResource>([
  ['/version', () => ({ code: 200, body: SERVER_VERSION })],
  ['/healthz', health],
  ['/livez', health],
  ['/readyz', health],
  ['/api', (ctx) => ({ code: 200, body: apiVersions(ctx.server.serverAddress()) })],
  ['/apis', (ctx) => ({ code: 200, body: apiGroupList(ctx.store) })],
  ['/api/v1', (ctx) => ({ code: 200, body: resourceList(ctx.store, '', 'v1')! })],
  ['/openapi/v2', openapiV2],
  ['/openapi/v3', (ctx) => ({ code: 200, body: openapiV3Root(ctx.store, ctx.server.openapiHash()) })],
]);

const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

/** Protobuf length-delimited field `n` (wire type 2) holding `payload`. */
function field(n: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(n << 3) | 2, payload.length]), payload]);
}

/**
 * gnostic `openapi_v2.Document` {swagger: "2.0", info: {title: "Kubernetes", version}, paths: {},
 * definitions: {}} in protobuf (fields 1, 2, 8, 9).
 */
const EMPTY_V2_PROTOBUF = Buffer.concat([
  field(1, Buffer.from('2.0')),
  field(
    2,
    Buffer.concat([field(1, Buffer.from('Kubernetes')), field(2, Buffer.from(SERVER_VERSION.gitVersion))]),
  ),
  field(8, Buffer.alloc(0)),
  field(9, Buffer.alloc(0)),
]);

function openapiV2(ctx: RequestContext): Reply {
  const accept = ctx.req.headers.accept ?? '';
  // kubectl asks for protobuf only when a group/version is missing from /openapi/v3: it gets an OpenAPI v2
  // document without definitions, finds no schema for the kind, and reports "no matches for kind" from
  // the REST mapping, as against a real server
  if (!/json|\*\/\*/.test(accept) && accept !== '')
    return { code: 200, body: EMPTY_V2_PROTOBUF, headers: { 'Content-Type': OPENAPI_V2_PROTOBUF } };
  return { code: 200, body: openapiV2Doc(ctx.store) };
}

function byShape(ctx: RequestContext): Reply | undefined {
  const segs = ctx.segments;
  if (segs[0] === 'apis' && segs.length === 2) {
    const g = apiGroup(ctx.store, segs[1]!);
    return g ? { code: 200, body: g } : undefined;
  }
  if (segs[0] === 'apis' && segs.length === 3) {
    const l = resourceList(ctx.store, segs[1]!, segs[2]!);
    return l ? { code: 200, body: l } : undefined;
  }
  if (segs[0] === 'openapi' && segs[1] === 'v3') {
    const rest = segs.slice(2);
    const [g, v] = rest[0] === 'api' ? ['', rest[1] ?? ''] : [rest[1] ?? '', rest[2] ?? ''];
    const doc = openapiV3Doc(ctx.store, g, v);
    // a group/version not served: an empty 404 (kubectl then reports "no matches for kind")
    if (!doc) throw pageNotFound('');
    return { code: 200, body: doc, headers: { Etag: `"${ctx.server.openapiHash()}"` } };
  }
  return undefined;
}

/**
 * The reply for a non-resource GET, or undefined when the path is not one (then it is a resource path).
 */
export function nonResource(ctx: RequestContext): Reply | undefined {
  if (ctx.method !== 'GET') return undefined;
  const exact = EXACT.get(ctx.path);
  return exact ? exact(ctx) : byShape(ctx);
}
