/**
 * Error text for logs, conditions and Events: the one way a controller prints a thrown value, and the
 * message truncation upstream applies to condition and Event messages.
 */

/**
 * A printable message for any thrown value: `err.message` for an `Error`, else `String(err)` (a thrown string,
 * number or object). Never includes request bodies.
 */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Truncates a condition/event message to 300 characters plus `...` (upstream `truncateMessage`). */
export function truncateMessage(msg: string): string {
  return msg.length < 300 ? msg : `${msg.slice(0, 300)}...`;
}
