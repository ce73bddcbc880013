/**
 * Encoding of the REST layer: request bodies (JSON, YAML, patch media types; protobuf and CBOR are
 * answered with 415), response bodies (objects, lists, `Table` for kubectl) and the one place where a
 * thrown error becomes a `Status` response.
 */
import { parse as parseYaml } from 'yaml';
import { ApiError, badRequest, internal, unsupportedMediaType } from '../../../apis/builtin/errors.ts';
import type {
  ApiServerLogger,
  Json,
  JsonObject,
  ResourceDef,
  StoredObj,
} from '../../../apis/builtin/types.ts';
import { internStrings } from '../../../kube/intern.ts';
import type { ClusterStore, PatchType } from '../store.ts';
import { type IncludeObject, toTable } from '../table.ts';
import type { RestRequest, RestResponse } from './io.ts';

/** A response a handler returns: status code, body (pre-serialised JSON text or a JSON value), headers. */
export interface Reply {
  code: number;
  body: Json | string | Buffer;
  headers?: Record<string, string>;
}

/** Media types accepted for object bodies (create, update, binding, eviction). */
export const OBJECT_MEDIA = ['application/json', 'application/yaml'];

/** Write a reply (JSON content type unless `headers` says otherwise); a no-op end when headers went out. */
export function send(res: RestResponse, reply: Reply): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text =
    typeof reply.body === 'string' || Buffer.isBuffer(reply.body) ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.code, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    ...reply.headers,
  });
  res.end(text);
}

/**
 * The edge: an {@link ApiError} becomes its `Status` (code, reason, details, extra headers); anything else
 * is logged with its stack and answered 500 InternalError.
 */
export function sendError(res: RestResponse, e: unknown, log: ApiServerLogger): void {
  if (e instanceof ApiError && e.plainText !== undefined) {
    send(res, { code: e.code, body: e.plainText, headers: { 'Content-Type': 'text/plain; charset=utf-8' } });
    return;
  }
  if (e instanceof ApiError) {
    send(res, { code: e.code, body: e.toStatus(), headers: e.headers });
    return;
  }
  log.error?.({ err: e instanceof Error ? e.stack : String(e) }, 'internal error');
  send(res, { code: 500, body: internal(e instanceof Error ? e.message : String(e)).toStatus() });
}

/**
 * Read the whole request body as UTF-8.
 * @throws ApiError 413 RequestEntityTooLarge past `maxBytes`
 */
export async function readBody(req: RestRequest, maxBytes: number): Promise<string> {
  const chunks: Array<Buffer | string> = [];
  let size = 0;
  for await (const c of req) {
    size += typeof c === 'string' ? Buffer.byteLength(c) : c.length;
    if (size > maxBytes)
      throw new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${maxBytes}`);
    chunks.push(c);
  }
  // the in-process transport hands the body over as one string
  if (chunks.length === 1 && typeof chunks[0] === 'string') return chunks[0];
  return Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString('utf8');
}

/** The request's media type without parameters, lower-cased (`application/json` when absent). */
export function mediaType(req: RestRequest): string {
  return (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
}

/**
 * Parse a body of media type `media` (YAML for the yaml types, JSON otherwise).
 * @throws ApiError 400 for an empty or unparsable body
 */
export function decode(text: string, media: string): Json {
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
    // the store keeps what a write sends: share its short strings with the other copies (kube/intern.ts)
    return internStrings(JSON.parse(text) as Json);
  } catch (e) {
    throw badRequest(
      `couldn't get version/kind; json parse error: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/**
 * The patch type of a PATCH request's content type.
 * @throws ApiError 415 for any other media type (CBOR apply included)
 */
export function patchType(req: RestRequest): PatchType {
  const m = mediaType(req);
  switch (m) {
    case 'application/merge-patch+json':
      return 'merge';
    case 'application/json-patch+json':
      return 'json';
    case 'application/strategic-merge-patch+json':
      return 'strategic';
    case 'application/apply-patch+yaml':
      return 'apply';
    default:
      throw unsupportedMediaType(m);
  }
}

/** `apiVersion` string of a served resource (`v1`, `apps/v1`). */
export function apiVersionOf(def: ResourceDef): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

/** Whether the client asked for a `Table` (kubectl get). */
export function acceptsTable(req: RestRequest): boolean {
  return /as=Table/.test(req.headers.accept ?? '');
}

/** `includeObject` query parameter of a Table request (default `Metadata`). */
export function includeObject(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

/** A `Table` of `items` as a JSON value. */
export function tableOf(
  store: ClusterStore,
  def: ResourceDef,
  items: StoredObj[],
  q: URLSearchParams,
  resourceVersion = String(store.resourceVersion),
): JsonObject {
  return toTable(def, items, {
    includeObject: includeObject(q),
    resourceVersion,
    now: store.now(),
    apiVersion: apiVersionOf(def),
  });
}

/** JSON text of a `<Kind>List` (items serialised through the store's per-object cache). */
export function listJson(
  store: ClusterStore,
  def: ResourceDef,
  meta: JsonObject,
  items: StoredObj[],
): string {
  const av = apiVersionOf(def);
  return `{"kind":"${def.kind}List","apiVersion":"${av}","metadata":${JSON.stringify(meta)},"items":[${items.map((o) => store.toJson(o, av)).join(',')}]}`;
}

/** The `Warning` header for write warnings: one value of comma-separated warn-values (RFC 7234 §5.5). */
export function warningHeaders(warnings: string[]): Record<string, string> {
  if (warnings.length === 0) return {};
  return { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ') };
}

/** `Status` Success body returned by binding and eviction. */
export function successStatus(): JsonObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
}
