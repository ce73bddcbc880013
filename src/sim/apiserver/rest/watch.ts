/**
 * WATCH: a chunked stream of newline-delimited JSON events (`ADDED`/`MODIFIED`/`DELETED`, `BOOKMARK`
 * with `allowWatchBookmarks`, the initial-events-end bookmark with `sendInitialEvents`), `Table` rows for
 * kubectl. The events of one event-loop tick are written as one chunk; a client that falls more than
 * 64 MiB behind is disconnected (it relists, like after a real server's watch cache overflow).
 */

import type { JsonObject } from '../../../apis/builtin/types.ts';
import type { WatchEvent, WatchType } from '../store.ts';
import { checkFieldLabels } from '../validation.ts';
import type { RequestContext } from './context.ts';
import { acceptsTable, apiVersionOf, tableOf } from './encoding.ts';

const MAX_BUFFERED_WATCH_BYTES = 64 * 1024 * 1024;

/** Lines of one watch stream: buffered until headers are out, then coalesced per event-loop tick. */
class WatchWriter {
  private pending: string[] = [];
  private batch: string[] = [];
  private started = false;
  closed = false;

  constructor(
    private readonly ctx: RequestContext,
    private readonly onOverflow: () => void,
  ) {}

  /** Queue one line (written on the next tick, together with the other lines of this tick). */
  write(line: string): void {
    if (this.closed) return;
    if (!this.started) {
      this.pending.push(line);
      return;
    }
    if (this.batch.length === 0) setImmediate(() => this.flush());
    this.batch.push(line);
  }

  /** Send the headers, then the lines queued before them and `first` (the initial-events bookmark). */
  start(first: string | undefined): void {
    const res = this.ctx.res;
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    });
    this.started = true;
    if (this.pending.length > 0) res.write(this.pending.join(''));
    this.pending = [];
    if (first) res.write(first);
    if (typeof res.flushHeaders === 'function') res.flushHeaders();
  }

  private flush(): void {
    const lines = this.batch;
    this.batch = [];
    if (this.closed || lines.length === 0) return;
    const res = this.ctx.res;
    if (res.inMemory) for (const line of lines) res.write(line);
    else res.write(lines.length === 1 ? lines[0]! : lines.join(''));
    if (res.writableLength > MAX_BUFFERED_WATCH_BYTES) {
      this.ctx.server.log.warn?.(
        { resource: this.ctx.route.def.plural },
        'watch client too slow; closing the watch',
      );
      this.onOverflow();
    }
  }

  /** Write what is left and end the response. */
  end(): void {
    this.closed = true;
    const rest = this.batch;
    this.batch = [];
    if (rest.length > 0 && !this.ctx.res.destroyed) this.ctx.res.write(rest.join(''));
    this.ctx.res.end();
  }
}

/** WATCH of a collection, or of one object (`fieldSelector=metadata.name=<name>` added). */
export function watch(ctx: RequestContext): undefined {
  const { def, name, namespace } = ctx.route;
  const { store } = ctx;
  const q = ctx.query;
  const av = apiVersionOf(def);
  const asTable = acceptsTable(ctx.req);
  const sendInitial = q.get('sendInitialEvents') === 'true';
  const bookmarks = q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1';
  checkFieldLabels(def, q.get('fieldSelector') ?? undefined);
  const fieldSelector = name
    ? `metadata.name=${name}${q.get('fieldSelector') ? `,${q.get('fieldSelector')}` : ''}`
    : (q.get('fieldSelector') ?? undefined);
  const out = new WatchWriter(ctx, () => stop());
  const deliver = (type: WatchType, ev: WatchEvent): void => {
    if (asTable) {
      const t = tableOf(store, def, [ev.obj], q, ev.obj.metadata.resourceVersion);
      out.write(`{"type":"${type}","object":${JSON.stringify(t)}}\n`);
    } else out.write(store.eventLine(ev, type, av));
  };
  const handle = store.watch(
    def,
    {
      namespace,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector,
      resourceVersion: q.get('resourceVersion') ?? undefined,
      sendInitialEvents: sendInitial,
    },
    deliver,
  );
  const bookmarkLine = (initialEnd: boolean): string => {
    const meta: JsonObject = { resourceVersion: String(store.resourceVersion) };
    if (initialEnd) meta.annotations = { 'k8s.io/initial-events-end': 'true' };
    return `{"type":"BOOKMARK","object":${JSON.stringify({ kind: def.kind, apiVersion: av, metadata: meta })}}\n`;
  };
  out.start(sendInitial && bookmarks ? bookmarkLine(true) : undefined);
  const timers: NodeJS.Timeout[] = [];
  if (bookmarks) timers.push(setInterval(() => out.write(bookmarkLine(false)), ctx.server.bookmarkMs));
  const timeout = Number(q.get('timeoutSeconds') ?? '0');
  if (Number.isFinite(timeout) && timeout > 0) timers.push(setTimeout(() => stop(), timeout * 1000));
  const watches = ctx.server.watches;
  function stop(): void {
    if (out.closed) return;
    handle.stop();
    for (const t of timers) clearTimeout(t);
    watches.delete(stop);
    out.end();
  }
  watches.add(stop);
  ctx.res.on('close', stop);
  ctx.req.on('close', () => {
    if (ctx.req.destroyed && !ctx.res.writableEnded) stop();
  });
  return undefined;
}
