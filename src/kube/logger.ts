/**
 * JSON logging with levels (pino), as upstream Karpenter logs with zap in JSON. Controllers receive a
 * `Logger` and log with `logger.child({controller})`. Bootstrap user data and Secrets are never logged:
 * the redact list below strips them even when an object is logged by mistake.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export type { Logger } from 'pino';

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** `debug`, `info` (default), `warn`, `error`, or `silent`. */
  level?: string;
  /** Where JSON lines go (default stderr, so command output on stdout stays clean). */
  destination?: DestinationStream;
  /**
   * Upstream's `LOG_OUTPUT_PATHS`: `stdout`, `stderr` or file paths (appended to), each line to every one; used when
   * `destination` is not given.
   */
  outputPaths?: readonly string[];
}

/** The stream of upstream's `LOG_OUTPUT_PATHS` entries: `stdout`, `stderr`, else a file (appended, created). */
export function outputPathsDestination(paths: readonly string[]): DestinationStream {
  const one = (p: string): DestinationStream =>
    pino.destination(
      p === 'stdout' ? 1 : p === 'stderr' ? 2 : { dest: p, append: true, mkdir: true, sync: true },
    );
  if (paths.length === 1) return one(paths[0]!);
  return pino.multistream(paths.map((p) => ({ stream: one(p), level: 'trace' as const })));
}

/** Paths whose values are replaced by `[redacted]` in every log line (join tokens live in user data). */
export const REDACT_PATHS = [
  'userData',
  '*.userData',
  '*.*.userData',
  'spec.userData',
  '*.spec.userData',
  'data',
  '*.data',
  'stringData',
  '*.stringData',
  'value',
  '*.value',
  'token',
  '*.token',
];

/** Creates the process logger. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: { logger: 'capenter' },
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label.toUpperCase() }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    opts.destination ??
      (opts.outputPaths?.length ? outputPathsDestination(opts.outputPaths) : pino.destination(2)),
  );
}

/** A logger that drops everything (tests, library defaults). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
