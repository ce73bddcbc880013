/**
 * `capenter controller [--kubeconfig PATH] [--context C] [--region R] [--metrics-port N] [--health-probe-port N]
 * [--log-level L] [--no-leader-elect]`: runs the controller alone against any cluster (the embedded one of
 * `capenter start`/`capenter apiserver`, or a real one), with the kwok cloud provider (NodeClaims become Node
 * objects). Settings come from upstream's environment variables (`BATCH_IDLE_DURATION`, `BATCH_MAX_DURATION`,
 * `METRICS_PORT`, `HEALTH_PROBE_PORT`, `LOG_LEVEL`, `CLUSTER_NAME`, `LEADER_ELECT`, `FEATURE_GATES`, `AWS_REGION`),
 * then flags (flags win). Runs until SIGINT/SIGTERM; exits 1 on lost leadership (to be restarted, as upstream)
 * or a startup failure, 2 on invalid options.
 */
import type { Command } from 'commander';
import { KubeClient } from '../kube/client.ts';
import { createLogger } from '../operator/logger.ts';
import { createOperator } from '../operator/operator.ts';
import {
  checkLogLevel,
  defaultOptions,
  type OperatorOptions,
  optionsFromEnv,
  parsePreferencePolicy,
  parseSeconds,
  validateOptions,
} from '../operator/options.ts';

/** Parsed flags of `capenter controller`. */
export interface ControllerCommandOptions {
  kubeconfig?: string;
  context?: string;
  region?: string;
  metricsPort?: string;
  healthProbePort?: string;
  logLevel?: string;
  leaderElect?: boolean;
  batchIdleDuration?: string;
  batchMaxDuration?: string;
  /** `--preference-policy Respect|Ignore` (env PREFERENCE_POLICY). */
  preferencePolicy?: string;
}

/**
 * Options from `env` then `flags` (flags win).
 * @throws Error naming the bad flag or variable.
 */
export function controllerOptions(
  flags: ControllerCommandOptions,
  env: Readonly<Record<string, string | undefined>>,
): OperatorOptions {
  const o = optionsFromEnv(env, defaultOptions());
  if (flags.region) o.region = flags.region;
  if (flags.metricsPort !== undefined) o.metricsPort = portFlag(flags.metricsPort, '--metrics-port');
  if (flags.healthProbePort !== undefined)
    o.healthProbePort = portFlag(flags.healthProbePort, '--health-probe-port');
  if (flags.logLevel) o.logLevel = checkLogLevel(flags.logLevel);
  if (flags.leaderElect === false) o.leaderElect = false;
  if (flags.batchIdleDuration)
    o.batchIdleSeconds = parseSeconds(flags.batchIdleDuration, '--batch-idle-duration');
  if (flags.batchMaxDuration)
    o.batchMaxSeconds = parseSeconds(flags.batchMaxDuration, '--batch-max-duration');
  if (flags.preferencePolicy)
    o.preferencePolicy = parsePreferencePolicy(flags.preferencePolicy, '--preference-policy');
  return validateOptions(o);
}

function portFlag(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${flag}: "${v}" is not a port (0–65535; 0 = any free port)`);
  return n;
}

/** Runs the controller until a signal; returns the exit code. Never throws. */
export async function runController(
  flags: ControllerCommandOptions,
  io: {
    stderr: (t: string) => void;
    env: Readonly<Record<string, string | undefined>>;
    signal?: AbortSignal;
  },
): Promise<number> {
  let options: OperatorOptions;
  try {
    options = controllerOptions(flags, io.env);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const logger = createLogger({ level: options.logLevel });
  try {
    const kubeconfig = flags.kubeconfig ?? io.env.KUBECONFIG;
    const client = kubeconfig
      ? KubeClient.fromKubeconfig(kubeconfig, {
          userAgent: 'capenter-controller',
          ...(flags.context ? { context: flags.context } : {}),
        })
      : KubeClient.fromCluster({ userAgent: 'capenter-controller' });
    const op = createOperator({ client, logger, options });
    const ac = new AbortController();
    io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
    let interrupted = false;
    const onSignal = (): void => {
      interrupted = true;
      ac.abort();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    await op.start(ac.signal);
    io.stderr(
      `capenter controller: ${client.server}, region ${options.region}, metrics :${op.metricsPort}/metrics, health :${op.healthProbePort}/healthz\n`,
    );
    await op.done;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    client.close();
    if (interrupted || ac.signal.aborted) return 0;
    io.stderr('capenter controller: leadership lost; exiting so the process is restarted\n');
    return 1;
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

/** Registers `capenter controller`. */
export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description('run the capenter controller (kwok provider) against a cluster until interrupted')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else in-cluster config)')
    .option('--context <name>', 'kubeconfig context')
    .option('--region <region>', 'AWS region whose catalog is simulated (env AWS_REGION; default us-east-1)')
    .option('--metrics-port <n>', 'port of /metrics (env METRICS_PORT; default 8080; 0 = any free port)')
    .option('--health-probe-port <n>', 'port of /healthz and /readyz (env HEALTH_PROBE_PORT; default 8081)')
    .option('--log-level <level>', 'debug|info|warn|error (env LOG_LEVEL; default info)')
    .option('--batch-idle-duration <d>', 'env BATCH_IDLE_DURATION (default 1s)')
    .option('--batch-max-duration <d>', 'env BATCH_MAX_DURATION (default 10s)')
    .option(
      '--preference-policy <policy>',
      'Respect|Ignore preferences (env PREFERENCE_POLICY; default Respect)',
    )
    .option('--no-leader-elect', 'run controllers without the leader Lease (env LEADER_ELECT=false)')
    .action(async (flags: ControllerCommandOptions) => {
      process.exitCode = await runController(flags, {
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
