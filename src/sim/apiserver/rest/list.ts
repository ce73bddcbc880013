/**
 * Reads: GET of one object and LIST of a collection (label/field selectors, `limit`/`continue` paging
 * with an opaque token, `Table` output for kubectl).
 */
import { badRequest } from '../../../apis/builtin/errors.ts';
import type { JsonObject, StoredObj } from '../../../apis/builtin/types.ts';
import { checkFieldLabels } from '../validation.ts';
import type { RequestContext } from './context.ts';
import { acceptsTable, listJson, type Reply, tableOf } from './encoding.ts';

/** GET of one object (also `/status`). */
export function getObject(ctx: RequestContext): Reply {
  const r = ctx.route;
  return ctx.object(200, ctx.store.get(r.def, r.namespace, r.name!));
}

interface Page {
  items: StoredObj[];
  continueToken: string;
  remaining: number;
}

const keyOf = (o: StoredObj): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/**
 * One page of `items` (sorted by namespace/name) after the `continue` token, at most `limit` long.
 * @throws ApiError 400 for a malformed continue token
 */
function paginate(items: StoredObj[], q: URLSearchParams, resourceVersion: string): Page {
  let page = items;
  const token = q.get('continue');
  if (token) {
    let after = '';
    try {
      after = String((JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { k: string }).k);
    } catch {
      throw badRequest('continue key is not valid: malformed token');
    }
    page = page.filter((o) => keyOf(o) > after);
  }
  const limit = Number(q.get('limit') ?? '0');
  if (!Number.isInteger(limit) || limit <= 0 || page.length <= limit)
    return { items: page, continueToken: '', remaining: 0 };
  const last = page[limit - 1]!;
  return {
    items: page.slice(0, limit),
    continueToken: Buffer.from(JSON.stringify({ k: keyOf(last), rv: resourceVersion })).toString('base64url'),
    remaining: page.length - limit,
  };
}

/** LIST of a collection. */
export function list(ctx: RequestContext): Reply {
  const { def, namespace } = ctx.route;
  const q = ctx.query;
  checkFieldLabels(def, q.get('fieldSelector') ?? undefined);
  const { items, resourceVersion } = ctx.store.list(def, {
    namespace,
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
  });
  const page = paginate(items, q, resourceVersion);
  if (acceptsTable(ctx.req)) {
    const t = tableOf(ctx.store, def, page.items, q);
    const meta = t.metadata as JsonObject;
    meta.resourceVersion = resourceVersion;
    if (page.continueToken) meta.continue = page.continueToken;
    return { code: 200, body: t };
  }
  const meta: JsonObject = { resourceVersion };
  if (page.continueToken) {
    meta.continue = page.continueToken;
    meta.remainingItemCount = page.remaining;
  }
  return { code: 200, body: listJson(ctx.store, def, meta, page.items) };
}
