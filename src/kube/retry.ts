/**
 * Optimistic-concurrency helpers after client-go `util/retry` (`RetryOnConflict` with `DefaultRetry`:
 * 5 attempts, 10 ms apart, jitter 0.1). Read → mutate → conditional write; on 409 Conflict read again.
 */
import type { KubeObject } from '../apis/core.ts';
import type { KubeClient, PatchType } from './client.ts';
import { type Clock, RealClock } from './clock.ts';
import { isConflict } from './errors.ts';
import type { ObjectOf, ResourceRef } from './resources.ts';

/** Which object to operate on. */
export interface ObjectRef<R extends ResourceRef = ResourceRef> {
  kind: R;
  name: string;
  namespace?: string;
}

/** Retry tuning: attempts (default 5), delay between them in ms (default 10), clock (default RealClock). */
export interface RetryOptions {
  attempts?: number;
  delayMs?: number;
  clock?: Clock;
  /** Write the `status` subresource instead of the main resource. */
  status?: boolean;
}

const realClock = new RealClock();

/** Returned by a mutate function to mean "nothing to change": no write is made. */
export const NO_CHANGE: unique symbol = Symbol('NO_CHANGE');

/**
 * Runs `fn` until it succeeds or throws something other than 409 Conflict, at most `attempts` times.
 * Rethrows the last conflict when attempts run out. client-go `retry.RetryOnConflict`.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 5;
  const delay = opts.delayMs ?? 10;
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConflict(err) || i >= attempts) throw err;
      await (opts.clock ?? realClock).sleep(delay * (1 + Math.random() * 0.1));
    }
  }
}

/** What a mutate function returns: a replacement object, nothing (mutated in place), or {@link NO_CHANGE}. */
// biome-ignore lint/suspicious/noConfusingVoidType: mutate functions that edit in place return nothing
export type MutateResult<T> = T | undefined | void | typeof NO_CHANGE;

/**
 * GET the object, let `mutate` change it (in place, or return a replacement), then PUT it with the
 * resourceVersion read; on 409 start over. `mutate` may return {@link NO_CHANGE} to skip the write
 * (the current object is returned). With `opts.status` writes the status subresource.
 * Throws 404 when the object does not exist and the last 409 when attempts run out.
 */
export async function updateWithRetry<R extends ResourceRef>(
  client: KubeClient,
  ref: ObjectRef<R>,
  mutate: (obj: ObjectOf<R>) => MutateResult<ObjectOf<R>> | Promise<MutateResult<ObjectOf<R>>>,
  opts: RetryOptions = {},
): Promise<ObjectOf<R>> {
  return retryOnConflict(async () => {
    const current = await client.get(ref.kind, ref.name, ref.namespace);
    const rv = (current as KubeObject).metadata?.resourceVersion;
    const res = await mutate(current);
    if (res === NO_CHANGE) return current;
    const next = (res ?? current) as ObjectOf<R> & KubeObject;
    next.metadata = { ...(next.metadata ?? {}), ...(rv !== undefined ? { resourceVersion: rv } : {}) };
    return (opts.status ? client.updateStatus(next) : client.update(next)) as Promise<ObjectOf<R>>;
  }, opts);
}

/** A patch computed from the current object. */
export interface ComputedPatch {
  type: Exclude<PatchType, 'apply'>;
  patch: unknown;
}

/**
 * GET the object, compute a patch from it, PATCH it conditionally: merge/strategic patches get the read
 * `metadata.resourceVersion` added, json patches a trailing `replace` of it (a `test` op would fail with
 * 422, not 409), so a concurrent write yields 409 and the cycle repeats. `makePatch` may return {@link NO_CHANGE}. Throws like {@link updateWithRetry}.
 */
export async function patchWithRetry<R extends ResourceRef>(
  client: KubeClient,
  ref: ObjectRef<R>,
  makePatch: (
    obj: ObjectOf<R>,
  ) => ComputedPatch | typeof NO_CHANGE | Promise<ComputedPatch | typeof NO_CHANGE>,
  opts: RetryOptions = {},
): Promise<ObjectOf<R>> {
  return retryOnConflict(async () => {
    const current = await client.get(ref.kind, ref.name, ref.namespace);
    const rv = (current as KubeObject).metadata?.resourceVersion;
    const p = await makePatch(current);
    if (p === NO_CHANGE) return current;
    let body = p.patch;
    if (rv !== undefined) {
      if (p.type === 'json') {
        if (!Array.isArray(p.patch))
          throw new Error(`patchWithRetry ${ref.name}: a json patch must be an array`);
        body = [...p.patch, { op: 'replace', path: '/metadata/resourceVersion', value: rv }];
      } else {
        const obj = (p.patch ?? {}) as Record<string, unknown>;
        body = { ...obj, metadata: { ...((obj.metadata as object | undefined) ?? {}), resourceVersion: rv } };
      }
    }
    return client.patch(ref.kind, ref.name, ref.namespace, body, {
      type: p.type,
      ...(opts.status ? { subresource: 'status' } : {}),
    });
  }, opts);
}
