/**
 * Upstream core settings capenter accepts without acting on them, or accepts only at upstream's default
 * (kubernetes-sigs/karpenter v1.14.1 `pkg/operator/options/options.go`). Each is a flag and a variable of
 * `capenter controller` like every other setting, so upstream's chart environment loads unchanged; a value that
 * would change upstream's behaviour either warns `has no effect in capenter (why)` (settings about upstream's Go
 * runtime and internals) or is refused with exit 2 (behaviour capenter lacks). docs/settings.md lists the decision
 * of each in its `accepts` column.
 */
import {
  defineSetting,
  noEffect,
  onlyDefault,
  parseBoolean,
  parseInteger,
  parseNonEmpty,
} from '../config/settings.ts';

/** The upstream core settings without effect in capenter; resolved for their warnings and refusals only. */
export const UPSTREAM_ONLY_SETTINGS = [
  defineSetting({
    env: 'KARPENTER_SERVICE',
    flag: 'karpenter-service',
    key: 'karpenterService',
    description: 'upstream: the Service of the webhook certificate. No effect: capenter serves no webhooks',
    default: '',
    accepts: 'any name (warns: no effect)',
    parse: noEffect(parseNonEmpty, undefined, 'capenter serves no webhooks'),
  }),
  defineSetting({
    env: 'ENABLE_PROFILING',
    flag: 'enable-profiling',
    key: 'enableProfiling',
    description: 'upstream: Go pprof handlers on the metrics port. No effect: capenter is a Node.js process',
    default: false,
    accepts: 'true or false (true warns: no effect)',
    boolean: true,
    parse: noEffect(parseBoolean, false, 'no pprof endpoints; profile with node --inspect or --cpu-prof'),
  }),
  defineSetting({
    env: 'DISABLE_CONTROLLER_WARMUP',
    flag: 'disable-controller-warmup',
    key: 'disableControllerWarmup',
    description: 'upstream: start informers before leader election is won. capenter has no warm-up (as true)',
    default: true,
    accepts: 'true or false (false warns: no effect)',
    boolean: true,
    parse: noEffect(parseBoolean, true, 'capenter has no controller warm-up'),
  }),
  defineSetting({
    env: 'DISABLE_CLUSTER_STATE_OBSERVABILITY',
    flag: 'disable-cluster-state-observability',
    key: 'disableClusterStateObservability',
    description: 'upstream: turn off cluster-state metrics and events. Not implemented: only false',
    default: false,
    accepts: 'false (true is refused: not implemented)',
    boolean: true,
    parse: onlyDefault(parseBoolean, false, 'cluster-state metrics and events cannot be turned off'),
  }),
  defineSetting({
    env: 'MEMORY_LIMIT',
    flag: 'memory-limit',
    key: 'memoryLimit',
    description:
      "upstream: the container's memory limit in bytes, for Go's GC soft limit. No effect in capenter",
    default: -1,
    accepts: 'an integer (other than -1 warns: no effect)',
    parse: noEffect(parseInteger, -1, 'a Go runtime setting; size the Node.js heap with NODE_OPTIONS'),
  }),
  defineSetting({
    env: 'CPU_REQUESTS',
    flag: 'cpu-requests',
    key: 'cpuRequests',
    description:
      "upstream: the container's CPU requests in millicores, for Go's GOMAXPROCS. No effect in capenter",
    default: 1000,
    accepts: 'an integer (other than 1000 warns: no effect)',
    parse: noEffect(parseInteger, 1000, 'a Go runtime setting'),
  }),
  defineSetting({
    env: 'LOG_ERROR_OUTPUT_PATHS',
    flag: 'log-error-output-paths',
    key: 'logErrorOutputPaths',
    description: "upstream: where zap's own internal errors go (default stderr). No effect in capenter",
    default: 'stderr',
    accepts: 'comma-separated paths (other than stderr warns: no effect)',
    parse: noEffect(parseNonEmpty, 'stderr', "capenter's logger reports its own errors on stderr"),
  }),
  defineSetting({
    env: 'IGNORE_DRA_REQUESTS',
    flag: 'ignore-dra-requests',
    key: 'ignoreDRARequests',
    description:
      "upstream: ignore pods' DRA resource claims when scheduling. capenter always does: only true",
    default: true,
    accepts: 'true (false is refused: not implemented)',
    boolean: true,
    parse: onlyDefault(parseBoolean, true, "pods' DRA resource claims are always ignored in scheduling"),
  }),
] as const;
