/**
 * Deletes: DELETE of one object and of a collection, with `DeleteOptions` from the body or the query
 * (`gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`, `preconditions`, `dryRun`).
 */
import { badRequest } from '../../../apis/builtin/errors.ts';
import { asObj, asStr, type JsonObject } from '../../../apis/builtin/types.ts';
import type { DeleteOptions } from '../store.ts';
import { checkFieldLabels } from '../validation.ts';
import type { RequestContext } from './context.ts';
import { decode, listJson, mediaType, type Reply } from './encoding.ts';

const POLICIES = ['Background', 'Foreground', 'Orphan'] as const;

/**
 * The request's `DeleteOptions` (query parameters win over the body).
 * @throws ApiError 400 for a non-integer grace period or an unknown propagation policy
 */
export async function deleteOptions(ctx: RequestContext): Promise<DeleteOptions> {
  const q = ctx.query;
  const text = await ctx.rawBody();
  const o: JsonObject = text.trim() ? (asObj(decode(text, mediaType(ctx.req))) ?? {}) : {};
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
    if (!(POLICIES as readonly string[]).includes(pp))
      throw badRequest(
        `propagationPolicy: Unsupported value: "${pp}": supported values: "Background", "Foreground", "Orphan"`,
      );
    del.propagationPolicy = pp as DeleteOptions['propagationPolicy'];
  }
  if (o.orphanDependents === true || q.get('orphanDependents') === 'true') del.propagationPolicy ??= 'Orphan';
  if (o.orphanDependents === false || q.get('orphanDependents') === 'false') del.orphanDependents = false;
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

/**
 * DELETE of one object: 200 with the object while finalizers or a grace period keep it (202 when the
 * client sent `orphanDependents: false`), 200 with the object (pods, custom resources) or a Success
 * `Status` (other built-ins) once it is gone.
 */
export async function deleteObject(ctx: RequestContext): Promise<Reply> {
  const { def, namespace, name } = ctx.route;
  const del = await deleteOptions(ctx);
  const { obj, removed } = ctx.store.delete(def, namespace, name!, del);
  // like the real server: 202 only when the client asked for cascading with orphanDependents=false
  if (!removed) return ctx.object(del.orphanDependents === false ? 202 : 200, obj);
  if (def.kind === 'Pod' || def.crdName) return ctx.object(200, obj);
  return {
    code: 200,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      code: 201,
      details: { name: name!, group: def.group, kind: def.plural, uid: obj.metadata.uid },
    },
  };
}

/** DELETE of a collection (label/field selectors): the list of deleted (or terminating) objects. */
export async function deleteCollection(ctx: RequestContext): Promise<Reply> {
  const { def, namespace } = ctx.route;
  if (!def.verbs.includes('deletecollection')) throw ctx.notAllowed('DELETE');
  checkFieldLabels(def, ctx.query.get('fieldSelector') ?? undefined);
  const del = await deleteOptions(ctx);
  const items = ctx.store.deleteCollection(
    def,
    {
      namespace,
      labelSelector: ctx.query.get('labelSelector') ?? undefined,
      fieldSelector: ctx.query.get('fieldSelector') ?? undefined,
    },
    del,
  );
  return {
    code: 200,
    body: listJson(ctx.store, def, { resourceVersion: String(ctx.store.resourceVersion) }, items),
  };
}
