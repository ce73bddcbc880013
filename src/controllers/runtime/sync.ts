/**
 * The informer sync wait of the controller kit: how an informer-fed controller starts its informers, waits for
 * their caches (as long as it takes, logging while it does), runs its queue and cleans up
 * (controller-runtime's `Controller.Start` with `WaitForCacheSync`, without its give-up; see
 * {@link waitForInformerSync}).
 */
import type { Logger } from 'pino';
import { isInformerSyncTimeout, type SharedInformers } from '../../kube/informer.ts';
import type { QueueController } from './controller.ts';
import { errorMessage } from './errors.ts';

/** The option of every informer-fed controller on how it waits for its informers ({@link runQueueWithInformers}). */
export interface InformerSyncOptions {
  /** Ms on the injected clock between the error lines while the informers have not synced (default 60,000; {@link waitForInformerSync}). */
  syncTimeoutMs?: number;
}

/** Options of {@link waitForInformerSync}. */
export interface InformerSyncWait {
  /** Controller name, for the log lines. */
  name: string;
  logger: Logger;
  informers: SharedInformers;
  /** Stops the wait (the controller is stopping). */
  signal: AbortSignal;
  /** Milliseconds on the informers' clock between two error lines (default 60,000). */
  timeoutMs?: number | undefined;
}

/**
 * Waits until every informer of `informers` has synced, however long that takes: true once synced, false when
 * `signal` aborts or the informers are stopped first. Every `timeoutMs` without sync logs one error naming the
 * kinds still unsynced and how long it has waited (`informers have not synced; the controller starts once they
 * do`), then waits again; the informers retry list/watch with backoff meanwhile, and the operator's `/readyz`
 * answers `informers have not synced`.
 *
 * controller-runtime's `CacheSyncTimeout` (2 min) makes the controller's `Start` fail instead, which stops the
 * manager so that the kubelet restarts the process. A capenter controller never stops on its own
 * (`Controller.start` never rejects), so giving up would leave it stopped inside a running operator (a clock
 * jump right after a restart can pass every controller's timeout at once).
 */
export async function waitForInformerSync(o: InformerSyncWait): Promise<boolean> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  let waitedMs = 0;
  while (!o.signal.aborted) {
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      o.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const r = await Promise.race([
        o.informers.waitForSync(timeoutMs).then(() => 'synced' as const),
        aborted,
      ]);
      return r === 'synced';
    } catch (err) {
      if (!isInformerSyncTimeout(err)) {
        if (!o.signal.aborted)
          o.logger.error(
            { controller: o.name, err: errorMessage(err) },
            'informers stopped before they synced',
          );
        return false;
      }
      waitedMs += timeoutMs;
      o.logger.error(
        { controller: o.name, kinds: o.informers.unsynced(), waitedMs },
        'informers have not synced; the controller starts once they do',
      );
    } finally {
      if (onAbort) o.signal.removeEventListener('abort', onAbort);
    }
  }
  return false;
}

/** Options of {@link runQueueWithInformers}. */
export interface InformerQueueRun {
  /** Controller name, for the log lines. */
  name: string;
  logger: Logger;
  /** The informers whose caches the controller reads (started here; idempotent when shared). */
  informers: SharedInformers;
  /** True when the controller created `informers` itself: they are stopped when it stops. */
  ownInformers: boolean;
  queue: QueueController;
  signal: AbortSignal;
  /** Unsubscribe functions of the informer handlers, called when the controller stops. */
  offs: ReadonlyArray<() => void>;
  /** Milliseconds between the error lines while the caches have not synced (default 60,000; see {@link waitForInformerSync}). */
  syncTimeoutMs?: number | undefined;
  /** Called once the caches have synced, before the first reconcile. */
  onSynced?: () => void;
}

/**
 * The common body of an informer-fed {@link QueueController}'s `start`: start the informers, wait for their
 * caches ({@link waitForInformerSync}: as long as it takes, logging while it does), run the queue until `signal`
 * aborts, then drop the handlers and stop informers it owns. Never rejects.
 */
export async function runQueueWithInformers(o: InformerQueueRun): Promise<void> {
  o.informers.start();
  try {
    const synced = await waitForInformerSync({
      name: o.name,
      logger: o.logger,
      informers: o.informers,
      signal: o.signal,
      timeoutMs: o.syncTimeoutMs,
    });
    if (!synced) return;
    o.onSynced?.();
    await o.queue.start(o.signal);
  } catch (err) {
    o.logger.error({ controller: o.name, err: errorMessage(err) }, 'controller stopped on an error');
  } finally {
    for (const off of o.offs) off();
    if (o.ownInformers) await o.informers.stop();
  }
}
