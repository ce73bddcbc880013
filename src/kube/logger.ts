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
    opts.destination ?? pino.destination(2),
  );
}

/** A logger that drops everything (tests, library defaults). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
