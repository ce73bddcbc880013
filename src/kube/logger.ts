/**
 * JSON logging with levels (pino), in upstream Karpenter's zap JSON shape (kubernetes-sigs/karpenter
 * `pkg/operator/logging/logging.go` `DefaultZapConfig`): keys `level` (zap's CapitalLevelEncoder: `DEBUG`, `INFO`,
 * `WARN`, `ERROR`), `time` (ISO-8601 UTC with milliseconds, `2026-12-03T08:52:32.123Z`), `logger` (`controller`, the
 * name upstream's operator gives its logger), `message`, `commit` (the build's revision, when known), then the
 * controller-runtime reconcile keys (`controller`, and for a typed controller `controllerGroup`, `controllerKind`,
 * `<Kind>: {name}`, `namespace`, `name`) and the line's own fields. Object references are klog `KObj` shapes:
 * `{"NodeClaim":{"name":"x"}}`, `{"Pod":{"name":"p","namespace":"ns"}}` (see {@link objectRef}).
 * Controllers receive a `Logger` and log with `logger.child({controller})`. Bootstrap user data and Secrets are
 * never logged: the redact list below strips them even when an object is logged by mistake.
 */
import { randomUUID } from 'node:crypto';
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
  /** The `commit` key of every line (upstream's `WithCommit`); default `$CAPENTER_COMMIT`, omitted when empty. */
  commit?: string;
  /** The clock of the `time` key, epoch milliseconds (default `Date.now`; tests pass a fake clock). */
  now?: () => number;
}

/** The logger name upstream's operator gives its zap logger (`logging.NewLogger(ctx, "controller")`). */
export const LOGGER_NAME = 'controller';

/**
 * A klog `ObjectRef` as zap renders it (`klog.KObj`/`klog.KRef`): `{name}` for a cluster-scoped object,
 * `{name, namespace}` when `namespace` is non-empty. Log it under the object's Kind: `{NodeClaim: objectRef(n)}`.
 */
export function objectRef(
  name: string | undefined,
  namespace?: string,
): { name: string; namespace?: string } {
  return namespace ? { name: name ?? '', namespace } : { name: name ?? '' };
}

/**
 * The keys controller-runtime's builder puts on a typed controller's reconcile logger (controller-runtime
 * `pkg/builder/controller.go` `LogConstructor`, and `pkg/internal/controller/controller.go`, which adds a fresh
 * `reconcileID` UUID to every reconcile): `controller`, `controllerGroup`, `controllerKind`,
 * `<kind>: {name[, namespace]}`, `namespace`, `name`, `reconcileID`. Call it once per reconcile; `reconcileID`
 * defaults to a new random (v4) UUID, as controller-runtime's `uuid.NewUUID()` gives one per reconcile.
 */
export function reconcileFields(
  controller: string,
  group: string,
  kind: string,
  name: string | undefined,
  namespace = '',
  reconcileID: string = randomUUID(),
): Record<string, unknown> {
  return {
    controller,
    controllerGroup: group,
    controllerKind: kind,
    [kind]: objectRef(name, namespace),
    namespace,
    name: name ?? '',
    reconcileID,
  };
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

/**
 * Creates the process logger: one JSON object a line with upstream's keys (see the module comment); pino's own
 * `pid`/`hostname` are not emitted. Key order differs from zap's (`message` comes last); consumers key by name.
 */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const commit = opts.commit ?? process.env.CAPENTER_COMMIT ?? '';
  const now = opts.now ?? Date.now;
  return pino(
    {
      level: opts.level ?? 'info',
      base: commit ? { logger: LOGGER_NAME, commit } : { logger: LOGGER_NAME },
      messageKey: 'message',
      timestamp: () => `,"time":"${new Date(now()).toISOString()}"`,
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
