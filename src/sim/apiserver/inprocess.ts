/**
 * The embedded API server's in-process transport (`kube/transport.ts`): clients in the server's own process
 * (the stand-ins and the operator of `capenter start`) send their requests straight into the REST handler,
 * without sockets or HTTP framing. Everything else is as over the network: the same handler authenticates
 * the bearer token, routes, validates, admits and encodes; bodies cross as JSON text both ways, so no object
 * is shared between the store and a client; a watch streams the same newline-delimited lines, one event per
 * chunk, which lets the watches of one process that ask for it share each decoded event (`kube/client.ts`
 * `decodeShared`: the stand-ins' and the operator's informers no longer each hold a copy of every pod). Requests are
 * handled in a later turn of the event loop, as a socket would deliver them, so a client never sees its
 * answer (or a watch event) before its call returned.
 *
 * At 10,000 pods `capenter start` sends about 70,000 requests between its own components; over loopback
 * HTTP, the client and server HTTP code, the socket writes and their garbage were more than half of its CPU
 * (124 CPU-s before, 42–59 after).
 */
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { KubeTransport, StreamSink, TransportRequest, TransportResponse } from '../../kube/transport.ts';
import type { Handler } from './http.ts';
import type { RestRequest, RestResponse } from './rest/context.ts';

/** An in-process transport and the switch that refuses its later requests once the server stops. */
export interface InProcessTransport {
  transport: KubeTransport;
  /** From now on requests reject and streams end at once, like connections refused. */
  close(): void;
}

/** A request handed over in memory: headers lower-cased as node's parser gives them, the body as one chunk. */
class LocalRequest extends EventEmitter implements RestRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders = {};
  destroyed = false;
  private readonly body: string | undefined;

  constructor(req: TransportRequest) {
    super();
    this.method = req.method;
    this.url = req.path;
    for (const [k, v] of Object.entries(req.headers)) this.headers[k.toLowerCase()] = v;
    this.body = req.body;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    if (this.body !== undefined && this.body !== '') yield this.body;
  }

  resume(): void {}

  /** The client went away: handlers watching `close` stop. */
  abort(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

/** What a {@link LocalResponse} reports to its client. */
interface ResponseSink {
  head(status: number, headers: Record<string, string>): void;
  /** Body chunks as written (streams); absent: collected and given to `end`. */
  data?: (chunk: string) => void;
  end(status: number, body: string, headers: Record<string, string>): void;
}

/** A response written in memory: chunks go to the sink (streams) or are joined for the end (requests). */
class LocalResponse extends EventEmitter implements RestResponse {
  headersSent = false;
  /** Chunks are handed over as they are written: nothing is ever buffered. */
  readonly writableLength = 0;
  /** See {@link RestResponse.inMemory}. */
  readonly inMemory = true;
  destroyed = false;
  writableEnded = false;
  private status = 0;
  private headers: Record<string, string> = {};
  private readonly chunks: string[] = [];

  constructor(private readonly sink: ResponseSink) {
    super();
  }

  writeHead(code: number, headers: Record<string, string>): this {
    if (this.headersSent) return this;
    this.status = code;
    this.headers = headers;
    this.headersSent = true;
    this.sink.head(code, headers);
    return this;
  }

  write(chunk: string): boolean {
    if (this.writableEnded || this.destroyed) return false;
    if (!this.headersSent) this.writeHead(200, {});
    if (this.sink.data) this.sink.data(chunk);
    else this.chunks.push(chunk);
    return true;
  }

  end(chunk?: string | Buffer): this {
    if (this.writableEnded) return this;
    if (chunk !== undefined) this.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    if (!this.headersSent) this.writeHead(200, {});
    this.writableEnded = true;
    this.sink.end(this.status, this.chunks.join(''), this.headers);
    this.emit('close');
    return this;
  }

  /** The client closed the stream. */
  abort(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

function abortError(): Error {
  const e = new Error('The operation was aborted');
  e.name = 'AbortError';
  return e;
}

function refused(): Error {
  return new Error('connect ECONNREFUSED: the embedded API server is stopped');
}

/** Builds the in-process transport of `handler` (see the module comment). */
export function inProcessTransport(handler: Pick<Handler, 'handle'>): InProcessTransport {
  let closed = false;
  const request = (req: TransportRequest): Promise<TransportResponse> =>
    new Promise<TransportResponse>((resolve, reject) => {
      if (closed) return reject(refused());
      if (req.signal?.aborted) return reject(abortError());
      const lreq = new LocalRequest(req);
      const onAbort = (): void => {
        lreq.abort();
        reject(abortError());
      };
      const lres = new LocalResponse({
        head: () => {},
        end: (status, body, headers) => {
          // a caller may pass one long-lived signal to many requests: leave no listener behind
          req.signal?.removeEventListener('abort', onAbort);
          resolve({ status, body, headers });
        },
      });
      req.signal?.addEventListener('abort', onAbort, { once: true });
      setImmediate(() => handler.handle(lreq, lres));
    });
  const stream = (req: TransportRequest, sink: StreamSink): (() => void) => {
    let ended = false;
    const end = (err?: Error): void => {
      if (ended) return;
      ended = true;
      sink.end(err);
    };
    if (closed) {
      setImmediate(() => end(refused()));
      return () => end();
    }
    const lreq = new LocalRequest(req);
    const lres = new LocalResponse({
      head: (status, headers) => sink.response(status, headers),
      data: (chunk) => {
        if (!ended) sink.data(chunk);
      },
      end: () => end(),
    });
    setImmediate(() => {
      if (!ended) handler.handle(lreq, lres);
    });
    return () => {
      lreq.abort();
      lres.abort();
      end();
    };
  };
  return {
    transport: { request, stream },
    close: () => {
      closed = true;
    },
  };
}
