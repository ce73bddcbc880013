/**
 * The one exception type of the client layer, and predicates in the style of
 * k8s.io/apimachinery `pkg/api/errors` (IsNotFound, IsConflict, IsAlreadyExists, ...).
 */
import type { Status } from './types.ts';

/**
 * An API request failed. `code` is the HTTP status (0 when no response arrived: connection refused,
 * reset, timeout), `reason` the `Status.reason` (`NotFound`, `Conflict`, `AlreadyExists`, `Gone`,
 * `TooManyRequests`, `Invalid`, `Forbidden`, ... or `ConnectionError`), `status` the server's Status body.
 */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly status: Status;
  /** HTTP method and path of the failed request, for messages. */
  readonly request: string;

  constructor(code: number, reason: string, message: string, status: Status, request = '') {
    super(request ? `${message} (${request} → ${code} ${reason})` : message);
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
    this.status = status;
    this.request = request;
  }

  /** Builds the error from an HTTP status and (possibly empty or non-Status) body. */
  static fromResponse(code: number, body: unknown, request: string): KubeApiError {
    const st: Status =
      body && typeof body === 'object' && (body as Status).kind === 'Status'
        ? (body as Status)
        : { kind: 'Status', status: 'Failure', code, message: typeof body === 'string' ? body : '' };
    const reason = st.reason || reasonForCode(code);
    const message = st.message || `${reason}`;
    return new KubeApiError(code, reason, message, st, request);
  }

  /** Seconds the server asked the client to wait (Status.details.retryAfterSeconds), if any. */
  get retryAfterSeconds(): number | undefined {
    return this.status.details?.retryAfterSeconds;
  }
}

/** Default `Status.reason` for an HTTP code (apimachinery `reasonForCode`). */
export function reasonForCode(code: number): string {
  switch (code) {
    case 0:
      return 'ConnectionError';
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 406:
      return 'NotAcceptable';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return code >= 500 ? 'InternalError' : 'Unknown';
  }
}

function asApi(err: unknown): KubeApiError | undefined {
  return err instanceof KubeApiError ? err : undefined;
}

/** 404 / NotFound. */
export function isNotFound(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && (e.code === 404 || e.reason === 'NotFound');
}

/** 409 Conflict from a stale resourceVersion or failed precondition (not AlreadyExists, also 409). */
export function isConflict(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && e.code === 409 && e.reason !== 'AlreadyExists';
}

/** 409 AlreadyExists on create. */
export function isAlreadyExists(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && e.reason === 'AlreadyExists';
}

/** 410 Gone / Expired: a watch or list resourceVersion is older than the server keeps. */
export function isGone(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && (e.code === 410 || e.reason === 'Gone' || e.reason === 'Expired');
}

/** 429 TooManyRequests (rate limited, or an eviction blocked by a PodDisruptionBudget). */
export function isTooManyRequests(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && e.code === 429;
}

/** 422 Invalid (validation failed). */
export function isInvalid(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && (e.code === 422 || e.reason === 'Invalid');
}

/** No HTTP response at all (connection refused/reset, timeout). */
export function isConnectionError(err: unknown): boolean {
  const e = asApi(err);
  return e !== undefined && e.code === 0;
}
