/**
 * Event recorder writing core/v1 Events with client-go's aggregation semantics (`tools/record`
 * EventCorrelator): an event equal to one recorded within the dedupe window (same involved object, type,
 * reason, message) bumps `count` and `lastTimestamp` of the existing Event by a merge patch instead of
 * creating another. Source component defaults to `karpenter` as upstream Karpenter's recorder.
 * Recording never throws: failures go to `onError`, events are best effort like upstream.
 */
import type { KubeObject } from '../apis/core.ts';
import type { KubeClient } from './client.ts';
import type { Clock } from './clock.ts';
import { isNotFound } from './errors.ts';
import type { KubeEvent, ObjectReference } from './types.ts';

/** Options of {@link EventRecorder}. */
export interface EventRecorderOptions {
  clock: Clock;
  /** `source.component` / `reportingComponent` (default `karpenter`). */
  component?: string;
  /** `source.host` / `reportingInstance` (e.g. the pod name). */
  host?: string;
  /** Aggregation window in seconds (default 600, client-go's `maxIntervalInSeconds`). */
  dedupeWindowSeconds?: number;
  /** Max remembered event keys (default 4096; oldest dropped). */
  maxEntries?: number;
  /** Receives errors of event writes (default: ignore). */
  onError?: (err: unknown) => void;
}

/**
 * Something that records Events (upstream's `events.Recorder`; {@link EventRecorder} fits). Controllers and the
 * providers' own controllers take this, so tests can pass a recording fake.
 */
export interface Recorder {
  /** Publishes (or deduplicates) one Event about `obj`; resolves to the Event written, if any. */
  publish(
    obj: KubeObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<KubeEvent | undefined>;
}

/** Normal or Warning, as core/v1. */
export type EventType = 'Normal' | 'Warning';

interface Seen {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  lastSeenMs: number;
}

/** Records Events about objects. */
export class EventRecorder {
  private readonly seen = new Map<string, Seen>();
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly inflight = new Set<Promise<unknown>>();
  private seq = 0n;
  private readonly component: string;
  private readonly windowMs: number;
  private readonly maxEntries: number;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: EventRecorderOptions,
  ) {
    this.component = opts.component ?? 'karpenter';
    this.windowMs = (opts.dedupeWindowSeconds ?? 600) * 1000;
    this.maxEntries = opts.maxEntries ?? 4096;
  }

  /**
   * Records an event about `obj`. Resolves with the created or updated Event, or `undefined` when the
   * write failed (reported to `onError`). Calls for the same key are serialised, so concurrent duplicates
   * aggregate instead of racing.
   */
  publish(obj: KubeObject, type: EventType, reason: string, message: string): Promise<KubeEvent | undefined> {
    const ref = referenceTo(obj);
    const key = [
      ref.apiVersion,
      ref.kind,
      ref.namespace ?? '',
      ref.name,
      ref.uid ?? '',
      type,
      reason,
      message,
    ].join('\u0000');
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev.then(() => this.write(key, ref, type, reason, message));
    const tracked = next.finally(() => {
      this.inflight.delete(tracked);
      if (this.chains.get(key) === tracked) this.chains.delete(key);
    });
    this.chains.set(key, tracked);
    this.inflight.add(tracked);
    return tracked;
  }

  /** `publish(obj, 'Normal', reason, message)`. */
  normal(obj: KubeObject, reason: string, message: string): Promise<KubeEvent | undefined> {
    return this.publish(obj, 'Normal', reason, message);
  }

  /** `publish(obj, 'Warning', reason, message)`. */
  warning(obj: KubeObject, reason: string, message: string): Promise<KubeEvent | undefined> {
    return this.publish(obj, 'Warning', reason, message);
  }

  /** Resolves when every event write started so far has finished. */
  async flush(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  private async write(
    key: string,
    ref: ObjectReference,
    type: EventType,
    reason: string,
    message: string,
  ): Promise<KubeEvent | undefined> {
    const nowMs = this.opts.clock.now();
    const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const prior = this.seen.get(key);
    try {
      if (prior && nowMs - prior.lastSeenMs <= this.windowMs) {
        try {
          const ev = await this.client.patch(
            'Event',
            prior.name,
            prior.namespace,
            { count: prior.count + 1, lastTimestamp: now },
            { type: 'merge' },
          );
          prior.count = ev.count ?? prior.count + 1;
          prior.lastSeenMs = nowMs;
          this.touch(key, prior);
          return ev;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          // the Event expired (TTL) or was deleted: create a fresh one below
        }
      }
      const namespace = ref.namespace || 'default';
      const name = `${ref.name}.${(BigInt(nowMs) * 1_000_000n + (this.seq++ % 1_000_000n)).toString(16)}`;
      const ev: KubeEvent = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: ref,
        reason,
        message,
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: this.component, ...(this.opts.host ? { host: this.opts.host } : {}) },
        reportingComponent: this.component,
        reportingInstance: this.opts.host ?? '',
      };
      const created = await this.client.create(ev);
      this.touch(key, { name, namespace, count: 1, firstTimestamp: now, lastSeenMs: nowMs });
      return created;
    } catch (err) {
      this.opts.onError?.(err);
      return undefined;
    }
  }

  private touch(key: string, s: Seen): void {
    this.seen.delete(key);
    this.seen.set(key, s);
    while (this.seen.size > this.maxEntries) {
      const oldest = this.seen.keys().next().value;
      if (oldest === undefined) break;
      this.seen.delete(oldest);
    }
  }
}

/** The ObjectReference of an object for `involvedObject` (apiVersion, kind, name, namespace, uid, resourceVersion). */
export function referenceTo(obj: KubeObject): ObjectReference {
  const m = obj.metadata ?? {};
  const ref: ObjectReference = { name: m.name ?? '' };
  if (obj.apiVersion) ref.apiVersion = obj.apiVersion;
  if (obj.kind) ref.kind = obj.kind;
  if (m.namespace) ref.namespace = m.namespace;
  if (m.uid) ref.uid = m.uid;
  if (m.resourceVersion) ref.resourceVersion = m.resourceVersion;
  return ref;
}
