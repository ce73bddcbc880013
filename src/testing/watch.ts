/**
 * Event-driven waits on API objects for the tests: an {@link Informer} (list, then watch) on one kind whose every
 * change re-evaluates the test's function, instead of polling on a timer. A wait takes as long as the cluster takes
 * (the test's own timeout is the bound for a hang), and an observer sees every state the watch delivers, not the
 * ones a 50-ms sampler happened to catch. Test support only; never imported by library code.
 */
import type { KubeObject } from '../apis/core.ts';
import type { KubeClient } from '../kube/client.ts';
import { RealClock } from '../kube/clock.ts';
import { Informer } from '../kube/informer.ts';
import type { ObjectOf, ResourceRef } from '../kube/resources.ts';
import type { FieldSelectorInput, LabelSelectorInput } from '../kube/selectors.ts';
import type { Truthy } from './eventually.ts';

/** Which objects of the kind to watch. */
export interface WatchScope {
  namespace?: string;
  labelSelector?: LabelSelectorInput;
  fieldSelector?: FieldSelectorInput;
}

type Obj<R> = ObjectOf<R> & KubeObject;

/** A started, synced informer on `ref` (the wall clock only paces its reconnect backoff after an error). */
async function informer<R extends ResourceRef>(
  client: KubeClient,
  ref: R,
  scope: WatchScope,
): Promise<Informer<R, Obj<R>>> {
  const inf = new Informer<R, Obj<R>>(client, ref, { clock: new RealClock(), ...scope });
  inf.start();
  await inf.waitForSync();
  return inf;
}

/**
 * Resolves with the first truthy value of `fn` over the objects of `ref` in `scope`, evaluated on the synced list
 * and again after every change the watch delivers. Rejects with what `fn` throws. No timer: the test's timeout
 * bounds a wait for something that never happens.
 */
export async function whenObjects<R extends ResourceRef, V>(
  client: KubeClient,
  ref: R,
  fn: (objects: Obj<R>[]) => V,
  scope: WatchScope = {},
): Promise<Truthy<V>> {
  const inf = await informer(client, ref, scope);
  try {
    return await new Promise<Truthy<V>>((resolve, reject) => {
      let done = false;
      const check = (): void => {
        if (done) return;
        try {
          const v = fn(inf.cache.list());
          if (!v) return;
          done = true;
          resolve(v as Truthy<V>);
        } catch (err) {
          done = true;
          reject(err);
        }
      };
      // `on` replays the synced objects as adds first: each re-evaluates on the full cache
      inf.on({ add: check, update: check, delete: check });
      check();
    });
  } finally {
    await inf.stop();
  }
}

/** A running {@link observe}: the values so far (the synced state first, then one per change). */
export interface Observation<V> {
  readonly values: V[];
  /** Stops watching; resolves with every value observed. */
  stop(): Promise<V[]>;
}

/**
 * Records `fn` over the objects of `ref` in `scope` once synced and after every change the watch delivers (each
 * write of the API server is one event), until `stop()`: e.g. the least number of Running pods during a disruption.
 * Resolves once the first value is recorded, so what the test does next is observed. `stop()` records a last value
 * from a fresh LIST, then rethrows what `fn` threw.
 */
export async function observe<R extends ResourceRef, V>(
  client: KubeClient,
  ref: R,
  fn: (objects: Obj<R>[]) => V,
  scope: WatchScope = {},
): Promise<Observation<V>> {
  const inf = await informer(client, ref, scope);
  const values: V[] = [];
  let live = false;
  let failed: { err: unknown } | undefined;
  const record = (): void => {
    if (!live || failed) return;
    try {
      values.push(fn(inf.cache.list()));
    } catch (err) {
      failed = { err };
    }
  };
  // the replayed adds of the synced objects are one state, recorded once below
  const off = inf.on({ add: record, update: record, delete: record });
  live = true;
  record();
  return {
    values,
    async stop() {
      off();
      await inf.stop();
      // the state now, from a fresh LIST: a watch in its reconnect backoff at the end (a loaded machine) would
      // otherwise leave the last changes unrecorded
      if (!failed) {
        const now = await client.list(ref, {
          ...(scope.namespace !== undefined ? { namespace: scope.namespace } : {}),
          ...(scope.labelSelector !== undefined ? { labelSelector: scope.labelSelector } : {}),
          ...(scope.fieldSelector !== undefined ? { fieldSelector: scope.fieldSelector } : {}),
        });
        try {
          values.push(fn(now.items as Obj<R>[]));
        } catch (err) {
          failed = { err };
        }
      }
      if (failed) throw failed.err;
      return values;
    },
  };
}
