/**
 * `KubeTransport`: how a {@link KubeClient} reaches an API server when not over the network. By default the
 * client sends HTTP(S) with node's `http`/`https`; a client given a transport (`ClientOptions.transport`)
 * hands it the same request instead — method, path with query, headers (credentials included) and body
 * text — and gets back the same status code and body text. The embedded API server offers one for clients
 * in its own process (`EmbeddedCluster.transport`, the stand-ins and the operator of `capenter start`): the
 * request goes through the server's whole handler (authentication, routing, validation, admission,
 * encoding), only the sockets and HTTP framing are skipped.
 */

/** One request as a transport receives it. */
export interface TransportRequest {
  /** HTTP method, upper case. */
  method: string;
  /** Path and query (`/api/v1/namespaces/default/pods?watch=true&resourceVersion=12`), percent-encoded. */
  path: string;
  /** Request headers (lower- or mixed-case names, as the client sets them). */
  headers: Record<string, string>;
  /** Body text (JSON or YAML), absent for GET and watches. */
  body?: string | undefined;
  /** Aborts the request: the promise rejects with an `AbortError`. */
  signal?: AbortSignal | undefined;
}

/** The answer to a {@link TransportRequest}. */
export interface TransportResponse {
  /** HTTP status code. */
  status: number;
  /** Body text (`''` when empty). */
  body: string;
  /** Response headers as the server set them (`Content-Type`, `Warning`, …). */
  headers: Record<string, string>;
}

/** Receives one streamed response (a watch): the status once, then body chunks, then the end once. */
export interface StreamSink {
  /** The status code and (when the transport has them) the headers, before any chunk. */
  response(status: number, headers?: Record<string, string>): void;
  /** A chunk of the body (whole newline-delimited lines for watches, but a sink must not rely on it). */
  data(chunk: string): void;
  /** The stream ended: normally (`undefined`) or broken (`err`). Called once, also after `stop`. */
  end(err?: Error): void;
}

/** A way to an API server other than the network; see the module comment. */
export interface KubeTransport {
  /**
   * Sends one request and resolves with its answer, error statuses included. Rejects only when no answer
   * can come (the server is stopped, the signal aborted), like a connection error.
   */
  request(req: TransportRequest): Promise<TransportResponse>;
  /** Opens a streaming request (a watch). Returns the function that closes it (the sink then gets `end()`). */
  stream(req: TransportRequest, sink: StreamSink): () => void;
}
