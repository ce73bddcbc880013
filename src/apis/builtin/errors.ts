/**
 * API errors as `metav1.Status` objects with the reason/code pairs of the real API server
 * (k8s.io/apimachinery/pkg/api/errors).
 */
import type { JsonObject } from './types.ts';

/** One `details.causes[]` entry. */
export interface StatusCause {
  reason: string;
  field?: string;
  message: string;
}

/** Error carrying a Kubernetes Status; thrown inside the server, rendered by the HTTP layer. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: JsonObject | undefined;
  /** extra response headers (Retry-After on 429) */
  readonly headers: Record<string, string>;
  /** answered as this plain-text body instead of a Status (the real server's non-API 404s) */
  plainText: string | undefined;
  constructor(
    code: number,
    reason: string,
    message: string,
    details?: JsonObject,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.headers = headers;
  }
  /** The `Status` object for the response body. */
  toStatus(): JsonObject {
    const s: JsonObject = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) s.details = this.details;
    return s;
  }
}

/** `group` suffix form used in messages: `pods` or `deployments.apps`. */
function qualified(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

/** 404 NotFound: `pods "x" not found`. */
export function notFound(group: string, plural: string, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(group, plural)} "${name}" not found`, {
    name,
    group,
    kind: plural,
  });
}

/** 409 AlreadyExists: `pods "x" already exists`. */
export function alreadyExists(group: string, plural: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualified(group, plural)} "${name}" already exists`, {
    name,
    group,
    kind: plural,
  });
}

/** 409 Conflict for a stale resourceVersion (the message kubectl and controllers look for). */
export function conflict(group: string, plural: string, name: string, why?: string): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(group, plural)} "${name}": ${
      why ?? 'the object has been modified; please apply your changes to the latest version and try again'
    }`,
    { name, group, kind: plural },
  );
}

/** 422 Invalid: `Kind.group "name" is invalid: [causes]`. */
export function invalid(group: string, kind: string, name: string, causes: StatusCause[]): ApiError {
  const q = group ? `${kind}.${group}` : kind;
  const parts = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const joined = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${q} "${name}" is invalid: ${joined}`, {
    name,
    group,
    kind,
    causes: causes.map((c) => ({ ...c })),
  });
}

/** 400 BadRequest. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(message: string): ApiError {
  return new ApiError(405, 'MethodNotAllowed', message);
}

/** 415 UnsupportedMediaType. */
export function unsupportedMediaType(contentType: string): ApiError {
  return new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got "${contentType}"; protobuf is not supported by the embedded API server)`,
  );
}

/** 410 Gone / Expired for watches from a resourceVersion outside the history window. */
export function expired(rv: string, oldest: number): ApiError {
  return new ApiError(410, 'Expired', `too old resource version: ${rv} (${oldest})`);
}

/** 500 InternalError. */
export function internal(message: string): ApiError {
  return new ApiError(500, 'InternalError', message);
}

/** 403 Forbidden. */
export function forbidden(message: string): ApiError {
  return new ApiError(403, 'Forbidden', message);
}

/**
 * 404 for a path outside every served group/version, answered like the real server's mux: plain text
 * `404 page not found` (an empty body for /openapi/v3 documents), not a Status.
 */
export function pageNotFound(body = '404 page not found\n'): ApiError {
  const e = new ApiError(404, 'NotFound', '404 page not found');
  e.plainText = body;
  return e;
}
