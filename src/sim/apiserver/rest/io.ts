/**
 * The request and response shapes REST handlers read and write: what they use of node's `IncomingMessage`
 * and `ServerResponse`. Their own module so that `encoding.ts` and `context.ts` both import them without
 * importing each other.
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The request as handlers read it: what they use of node's `IncomingMessage`, which satisfies it. The
 * in-process transport (`../inprocess.ts`) gives its own.
 */
export interface RestRequest extends AsyncIterable<Buffer | string> {
  readonly method?: string | undefined;
  /** Path and query. */
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  /** The client went away. */
  readonly destroyed: boolean;
  /** Discard the unread body. */
  resume(): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/**
 * The response as handlers write it: what they use of node's `ServerResponse`, which satisfies it. The
 * in-process transport (`../inprocess.ts`) gives its own.
 */
export interface RestResponse {
  readonly headersSent: boolean;
  /** Bytes written but not yet sent (a watch client falling behind). */
  readonly writableLength: number;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  writeHead(code: number, headers: Record<string, string>): unknown;
  write(chunk: string): unknown;
  end(chunk?: string | Buffer): unknown;
  flushHeaders?(): void;
  /**
   * True when chunks are handed to the client in memory (`sim/apiserver/inprocess.ts`): a watch then writes each
   * event line as its own chunk, the same string for every watch, so the process's in-process watches decode it
   * once (`kube/client.ts`). Over a socket lines are joined per tick instead.
   */
  readonly inMemory?: boolean;
  on(event: 'close', listener: () => void): unknown;
}
