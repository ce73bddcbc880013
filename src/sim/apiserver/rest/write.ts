/**
 * Writes: create (POST), update (PUT, also `/status`), patch (merge, JSON, strategic, apply), the
 * `scale` subresource, and the pod subresources `binding` and `eviction`.
 */
import { badRequest } from '../../../apis/builtin/errors.ts';
import { asObj, asStr, type Json, type JsonObject, type KObj } from '../../../apis/builtin/types.ts';
import { jsonPatch, mergePatch, strategicMerge } from '../patch.ts';
import type { RequestContext } from './context.ts';
import { mediaType, OBJECT_MEDIA, patchType, type Reply, successStatus } from './encoding.ts';

/** POST of a collection: create (a core `Binding` POSTed to `bindings` binds the pod it names). */
export async function create(ctx: RequestContext): Promise<Reply> {
  const { def, namespace } = ctx.route;
  if (def.kind === 'Binding' && !def.group) {
    const body = asObj(await ctx.body(OBJECT_MEDIA)) ?? {};
    const podName = asStr(asObj(body.metadata)?.name) ?? '';
    ctx.store.bind(namespace ?? '', podName, body as KObj);
    return { code: 201, body: successStatus() };
  }
  if (!def.verbs.includes('create')) throw ctx.notAllowed('POST');
  const body = await ctx.body(OBJECT_MEDIA);
  const warnings: string[] = [];
  const created = ctx.store.create(def, namespace, body as KObj, {
    dryRun: ctx.dryRun(),
    fieldManager: ctx.fieldManager,
    defaultFieldManager: ctx.defaultFieldManager,
    apiVersion: ctx.apiVersion,
    fieldValidation: ctx.fieldValidation(),
    warnings,
  });
  return ctx.object(201, created, warnings);
}

/** PUT of an object or of its `status`. */
export async function update(ctx: RequestContext): Promise<Reply> {
  const { def, namespace, name, subresource } = ctx.route;
  const body = await ctx.body(OBJECT_MEDIA);
  const warnings: string[] = [];
  const o = ctx.store.update(def, namespace, name!, body as KObj, {
    dryRun: ctx.dryRun(),
    fieldManager: ctx.fieldManager,
    defaultFieldManager: ctx.defaultFieldManager,
    apiVersion: ctx.apiVersion,
    subresource,
    fieldValidation: ctx.fieldValidation(),
    warnings,
  });
  return ctx.object(200, o, warnings);
}

/**
 * PATCH of an object or of its `status`; an apply patch of a missing object creates it (201).
 * @throws ApiError 400 for an apply patch without `fieldManager`
 */
export async function patch(ctx: RequestContext): Promise<Reply> {
  const { def, namespace, name, subresource } = ctx.route;
  const type = patchType(ctx.req);
  const body = await ctx.body([mediaType(ctx.req)]);
  const fieldManager = ctx.fieldManager;
  if (type === 'apply' && !fieldManager)
    throw badRequest(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  const force = ctx.query.get('force');
  const warnings: string[] = [];
  const { obj, created } = ctx.store.patch(def, namespace, name!, type, body, {
    dryRun: ctx.dryRun(),
    fieldManager,
    defaultFieldManager: ctx.defaultFieldManager,
    apiVersion: ctx.apiVersion,
    subresource,
    fieldValidation: ctx.fieldValidation(),
    warnings,
    ...(force !== null ? { force: force === 'true' } : {}),
  });
  return ctx.object(created ? 201 : 200, obj, warnings);
}

/** GET of the `scale` subresource (an `autoscaling/v1` Scale). */
export function getScale(ctx: RequestContext): Reply {
  const { def, namespace, name } = ctx.route;
  return { code: 200, body: ctx.store.getScale(def, namespace, name!) };
}

/** PUT of the `scale` subresource. */
export async function updateScale(ctx: RequestContext): Promise<Reply> {
  const { def, namespace, name } = ctx.route;
  const body = asObj(await ctx.body(OBJECT_MEDIA)) ?? {};
  return {
    code: 200,
    body: ctx.store.updateScale(def, namespace, name!, body as KObj, {
      dryRun: ctx.dryRun(),
      fieldManager: ctx.fieldManager,
    }),
  };
}

/** PATCH of the `scale` subresource: the patch applies to the current Scale, then it is written back. */
export async function patchScale(ctx: RequestContext): Promise<Reply> {
  const { def, namespace, name } = ctx.route;
  const type = patchType(ctx.req);
  const p = await ctx.body([mediaType(ctx.req)]);
  const cur = ctx.store.getScale(def, namespace, name!);
  const next =
    type === 'json'
      ? jsonPatch(cur, p)
      : type === 'strategic' || type === 'apply'
        ? strategicMerge(cur, p)
        : mergePatch(cur, p);
  const nm = asObj(asObj(next)?.metadata);
  if (nm && asObj(cur.metadata)) {
    // only a resourceVersion the patch itself carries is a precondition
    const rv: Json | undefined = asObj(asObj(p)?.metadata)?.resourceVersion;
    if (rv === undefined || rv === null) delete nm.resourceVersion;
    else nm.resourceVersion = rv;
  }
  return {
    code: 200,
    body: ctx.store.updateScale(def, namespace, name!, (asObj(next) ?? {}) as KObj, {
      dryRun: ctx.dryRun(),
      fieldManager: ctx.fieldManager,
    }),
  };
}

async function objectBody(ctx: RequestContext): Promise<JsonObject> {
  const body = asObj(await ctx.body(OBJECT_MEDIA));
  if (!body) throw badRequest(`the ${ctx.route.subresource} body must be an object`);
  return body;
}

/** POST `pods/<name>/binding`. */
export async function binding(ctx: RequestContext): Promise<Reply> {
  const body = await objectBody(ctx);
  ctx.store.bind(ctx.route.namespace ?? '', ctx.route.name!, body as KObj);
  return { code: 201, body: successStatus() };
}

/** POST `pods/<name>/eviction` (PDBs checked by the store; 429 with Retry-After when blocked). */
export async function eviction(ctx: RequestContext): Promise<Reply> {
  const body = await objectBody(ctx);
  const kind = asStr(body.kind);
  if (kind !== undefined && kind !== 'Eviction') throw badRequest(`expected an Eviction, got ${kind}`);
  ctx.store.evict(ctx.route.namespace ?? '', ctx.route.name!, body as KObj);
  return { code: 201, body: successStatus() };
}
