/**
 * `capenter controller [--kubeconfig PATH] [--context C] [SETTINGS...]`: runs the controller alone against any
 * cluster (the embedded one of `capenter start`/`capenter apiserver`, or a real one), with the kwok cloud provider
 * (NodeClaims become Node objects). Every setting of the registry (`src/operator/options.ts`, `SETTINGS`;
 * table in docs/settings.md) is a flag and an upstream environment variable (`BATCH_IDLE_DURATION`,
 * `METRICS_PORT`, `DISABLE_LEADER_ELECTION`, ...); flags win. Runs until SIGINT/SIGTERM (then stops the
 * controllers and releases the leader Lease); exits 1 on lost leadership (to be restarted, as upstream) or a
 * startup failure, 2 on an invalid setting. Against a cluster without capenter's CRDs it logs one error naming them
 * and the fix (`kubectl apply -f crds/`), reports them on `/readyz` and waits; `--install-crds` applies them first
 * (off by default). `--bind-address` sets where `/metrics`, `/healthz` and `/readyz` listen (default 0.0.0.0).
 * `--cloud-provider NAME` runs the provider module of that name (`src/cloudprovider/modules.ts`: kwok, aws,
 * clusterapi) with its settings, which are flags and variables here too (aws: CLUSTER_NAME, INTERRUPTION_QUEUE,
 * ISOLATED_VPC, ...; SDK endpoints and credentials from the SDK's default chain. clusterapi: CLUSTER_API_KUBECONFIG,
 * CLUSTER_API_NAMESPACE, ...; docs/clusterapi.md).
 *
 * This module is loaded with every command (for its flags): the operator, the logger and each provider's module
 * are imported when the controller runs (`ProviderModule.load`), and only the chosen provider's, so `--cloud-provider
 * kwok` never loads the AWS SDK (~100 MB of RSS) and no command pays for the controllers at start-up (see scripts/build.ts).
 */
import { type Command, Option } from 'commander';
import {
  type ClusterIdentityCheck,
  type ProviderModule,
  type ProviderSetup,
  withModuleKinds,
} from '../cloudprovider/module.ts';
import { orList, PROVIDER_MODULES, providerModule, providerNames } from '../cloudprovider/modules.ts';
import { addSettingFlags, checkMisspelledEnv, checkSettingList, type Setting } from '../config/settings.ts';
import { KubeClient } from '../kube/client.ts';
import type { Logger } from '../kube/logger.ts';
import { CAPI_SETTINGS, type CAPISettings, resolveCAPISettings } from '../operator/capi-settings.ts';
import { limitYoungGeneration } from '../operator/heap.ts';
import type { Operator } from '../operator/operator.ts';
import { type OperatorOptions, resolveOperatorOptions, SETTINGS } from '../operator/options.ts';

/**
 * Every setting of `capenter controller`: the core ones, the KarpenterMachinePool mode's
 * (src/operator/capi-settings.ts), then each provider module's (docs/settings.md lists them in this order).
 * Checked for duplicate names at load.
 */
export const CONTROLLER_SETTINGS: readonly Setting[] = [
  ...SETTINGS,
  ...CAPI_SETTINGS,
  ...PROVIDER_MODULES.flatMap((m) => m.settings),
];
checkSettingList(CONTROLLER_SETTINGS);

/** Parsed flags of `capenter controller`: the connection flags plus one camelCase entry per setting flag. */
export interface ControllerCommandOptions {
  kubeconfig?: string;
  context?: string;
  /** Apply capenter's CRDs (`crds/`) at start (default false). */
  installCrds?: boolean;
  /** Address `/metrics`, `/healthz` and `/readyz` listen on (default 0.0.0.0, as in a pod). */
  bindAddress?: string;
  /** A provider module's name (default `kwok`; `src/cloudprovider/modules.ts`). */
  cloudProvider?: string;
  /** CAPI: kubeconfig of the management cluster; runs the KarpenterMachinePool controller (docs/capi.md). */
  capiManagementKubeconfig?: string;
  /** Serve the dashboard (docs/dashboard.md) on this port (text from the flag; default: no dashboard). */
  dashboardPort?: string;
  /** Address the dashboard listens on (default 127.0.0.1). */
  dashboardAddress?: string;
  /** Setting flags by commander attribute name (`metricsPort`, `batchIdleDuration`, `disableLeaderElection`). */
  [setting: string]: unknown;
}

/**
 * Options from `env` then `flags` (flags win).
 * @throws SettingError naming the bad flag or variable and what it accepts.
 */
export function controllerOptions(
  flags: ControllerCommandOptions,
  env: Readonly<Record<string, string | undefined>>,
  warn?: (message: string) => void,
): OperatorOptions {
  const o = resolveOperatorOptions({ flags, env, ...(warn ? { warn } : {}) });
  if (flags.bindAddress) o.bindAddress = flags.bindAddress;
  // `--no-leader-elect` (before the registry; commander sets leaderElect=false): DISABLE_LEADER_ELECTION's alias
  if (flags.leaderElect === false) o.leaderElect = false;
  return o;
}

/** A provider module with its resolved settings and the operator options they refine. */
interface ResolvedController {
  options: OperatorOptions;
  module: ProviderModule;
  settings: unknown;
  /** The KarpenterMachinePool mode's settings (`CAPI_WATCH_NAMESPACE`). */
  capi: CAPISettings;
  /** One-line warnings about accepted settings without effect (`ENABLE_PROFILING=true: has no effect ...`). */
  warnings: string[];
}

/**
 * The options and the provider module of `flags` and `env`, with the module's settings resolved, and the warnings
 * about accepted settings that have no effect. Nothing is resolved when a variable looks like a misspelled setting.
 * @throws SettingError naming a bad flag or variable; Error for an unknown `--cloud-provider` or a misspelled
 * variable (naming the closest setting).
 */
function resolveController(
  flags: ControllerCommandOptions,
  env: Readonly<Record<string, string | undefined>>,
): ResolvedController {
  checkMisspelledEnv(CONTROLLER_SETTINGS, env);
  const warnings: string[] = [];
  const warn = (m: string): void => {
    warnings.push(m);
  };
  const options = controllerOptions(flags, env, warn);
  const capi = resolveCAPISettings({ flags, env, warn });
  if (capi.capiWatchNamespace && !flags.capiManagementKubeconfig)
    warn(
      `CAPI_WATCH_NAMESPACE=${capi.capiWatchNamespace}: has no effect without --capi-management-kubeconfig (no KarpenterMachinePool controller runs)`,
    );
  const name = (flags.cloudProvider as string | undefined) ?? PROVIDER_MODULES[0]?.name ?? '';
  const module = providerModule(name);
  if (!module) throw new Error(`--cloud-provider must be ${providerNames()}, got "${name}"`);
  const settings = module.configure({ flags, env, warn }, options);
  return { options, module, settings, capi, warnings };
}

/** The client of `--kubeconfig` (else `$KUBECONFIG`, else the in-cluster config). @throws on an unusable config. */
function controllerClient(
  flags: ControllerCommandOptions,
  env: Readonly<Record<string, string | undefined>>,
  options: OperatorOptions,
): KubeClient {
  const kubeconfig = (flags.kubeconfig as string | undefined) ?? env.KUBECONFIG;
  const limits = {
    userAgent: 'capenter-controller',
    qps: options.kubeClientQPS,
    burst: options.kubeClientBurst,
  };
  return kubeconfig
    ? KubeClient.fromKubeconfig(kubeconfig, {
        ...limits,
        ...(flags.context ? { context: flags.context } : {}),
      })
    : KubeClient.fromCluster(limits);
}

/** The management-cluster side of `--capi-management-kubeconfig`, built before the operator starts. */
interface CAPIManagement {
  management: KubeClient;
  /** `CAPI_WATCH_NAMESPACE`: the one namespace reconciled (every informer namespaced to it); undefined: all. */
  watchNamespace?: string;
  /** The provider's identity check (aws: `AWSCluster.spec.identityRef`); building it gates the provider's calls. */
  clusterIdentity?: ClusterIdentityCheck;
}

/**
 * The management client and the provider's identity check of `--capi-management-kubeconfig`, built before the
 * operator starts: the aws provider then makes no AWS call before the cluster's identity is resolved (a launch right
 * after a restart never signs with the controller's own credentials). `controllerNamespace` (the pod's,
 * `LEADER_ELECTION_NAMESPACE`) is where an AWSClusterStaticIdentity's Secret is read on the management cluster.
 */
function capiManagement(
  path: string,
  setup: ProviderSetup,
  controllerNamespace: string,
  watchNamespace: string,
): CAPIManagement {
  const management = KubeClient.fromKubeconfig(path, { userAgent: 'capenter-capi' });
  const clusterIdentity = setup.capi?.clusterIdentity?.({ management, controllerNamespace });
  return {
    management,
    ...(clusterIdentity ? { clusterIdentity } : {}),
    ...(watchNamespace ? { watchNamespace } : {}),
  };
}

/**
 * With `--capi-management-kubeconfig`: runs the KarpenterMachinePool controllers on the leader only, like every other
 * controller, until `signal` aborts; bootstrap data goes to the provider's store (aws: S3), else to memory. Closes
 * the management client when done.
 */
async function runCAPIWhenLeading(
  op: Operator,
  capi: CAPIManagement,
  setup: ProviderSetup,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const { management } = capi;
  try {
    const leading = await op.leading();
    if (!leading || signal.aborted) return;
    const [{ runCAPIControllers }, { InMemoryBootstrapStore }] = await Promise.all([
      import('../operator/capi.ts'),
      import('../controllers/capi/bootstrap.ts'),
    ]);
    await runCAPIControllers(op, {
      management,
      logger,
      signal: AbortSignal.any([leading, signal]),
      ...(setup.capi ? { clusterName: setup.capi.clusterName } : {}),
      bootstrapStore: setup.capi?.bootstrapStore() ?? new InMemoryBootstrapStore(),
      ...(capi.clusterIdentity ? { clusterIdentity: capi.clusterIdentity } : {}),
      ...(capi.watchNamespace ? { watchNamespace: capi.watchNamespace } : {}),
    });
  } finally {
    management.close();
  }
}

/**
 * The `--dashboard-port` value as a port number, undefined when the flag is absent.
 * @throws Error naming the flag and the accepted range when it is not an integer in 0–65535.
 */
export function dashboardPort(flags: ControllerCommandOptions): number | undefined {
  const text = flags.dashboardPort;
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(String(text)) || n > 65535)
    throw new Error(`--dashboard-port must be a port number 0–65535 (0: any free one), got "${text}"`);
  return n;
}

/**
 * Starts the dashboard of `op` when `port` is set and prints its URL; undefined otherwise. With
 * `capiManagementKubeconfig` it also watches that cluster's KarpenterMachinePools and MachinePools for the
 * dashboard's CAPI rows (its own informers, stopped with it; in `watchNamespace` only when set).
 */
async function serveDashboard(
  op: Operator,
  flags: ControllerCommandOptions,
  port: number | undefined,
  stderr: (t: string) => void,
  watchNamespace: string,
): Promise<{ close(): Promise<void> } | undefined> {
  if (port === undefined) return undefined;
  const { startDashboard } = await import('../dashboard/server.ts');
  const address = flags.dashboardAddress;
  const path = flags.capiManagementKubeconfig;
  if (!path) {
    const d = await startDashboard(op, { port, ...(address ? { address } : {}) });
    stderr(`capenter controller: dashboard ${d.url}\n`);
    return d;
  }
  const [{ machinePoolSource }, { SharedInformers }, { RealClock }] = await Promise.all([
    import('../dashboard/capi.ts'),
    import('../kube/informer.ts'),
    import('../kube/clock.ts'),
  ]);
  const management = KubeClient.fromKubeconfig(path, { userAgent: 'capenter-dashboard' });
  const informers = new SharedInformers(management, {
    clock: new RealClock(),
    ...(watchNamespace ? { namespace: watchNamespace } : {}),
  });
  const source = machinePoolSource(informers);
  const d = await startDashboard(
    { ...op, machinePools: source.machinePools },
    { port, ...(address ? { address } : {}) },
  );
  source.follow(d.hub);
  informers.start();
  stderr(`capenter controller: dashboard ${d.url}\n`);
  return {
    close: async () => {
      await d.close();
      await informers.stop();
      management.close();
    },
  };
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
  let resolved: ResolvedController;
  let dashPort: number | undefined;
  try {
    resolved = resolveController(flags, io.env);
    dashPort = dashboardPort(flags);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const { options, module, settings } = resolved;
  for (const w of resolved.warnings) io.stderr(`warning: ${w}\n`);
  try {
    const [{ createLogger }, { createOperator }] = await Promise.all([
      import('../kube/logger.ts'),
      import('../operator/operator.ts'),
    ]);
    const logger = createLogger({ level: options.logLevel, outputPaths: options.logOutputPaths });
    const client = controllerClient(flags, io.env, options);
    const setup = withModuleKinds(
      module,
      await module.load(settings, { client, logger, region: options.region }),
    );
    if (setup.region) options.region = setup.region;
    const op = createOperator({
      client,
      logger,
      options,
      provider: setup,
      installCRDs: flags.installCrds === true,
    });
    const ac = new AbortController();
    if (io.signal?.aborted) ac.abort();
    else io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
    let interrupted = false;
    const onSignal = (): void => {
      interrupted = true;
      ac.abort();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const management = flags.capiManagementKubeconfig
      ? capiManagement(
          flags.capiManagementKubeconfig,
          setup,
          options.leaderElectionNamespace,
          resolved.capi.capiWatchNamespace,
        )
      : undefined;
    await op.start(ac.signal);
    const capi = management ? runCAPIWhenLeading(op, management, setup, logger, ac.signal) : undefined;
    io.stderr(
      `capenter controller: ${client.server}, region ${options.region}, metrics :${op.metricsPort}/metrics, health :${op.healthProbePort}/healthz\n`,
    );
    const dashboard = await serveDashboard(
      op,
      flags,
      dashPort,
      io.stderr,
      resolved.capi.capiWatchNamespace,
    ).catch(async (err: unknown) => {
      await op.stop(); // a port in use: stop what started, then report it (exit 1)
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      client.close();
      setup.close?.();
      throw err;
    });
    await op.done;
    await dashboard?.close();
    const stoppedBySignal = interrupted || ac.signal.aborted;
    ac.abort(); // stops the KarpenterMachinePool controllers too
    await capi;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    client.close();
    setup.close?.();
    if (stoppedBySignal) return 0;
    io.stderr('capenter controller: leadership lost; exiting so the process is restarted\n');
    return 1;
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
}

/** Registers `capenter controller`. */
export function registerControllerCommand(program: Command): void {
  const cmd = program
    .command('controller')
    .description(
      `run the controller (${orList(PROVIDER_MODULES.map((m) => m.name))} provider) against a cluster until interrupted`,
    )
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else the in-cluster config)')
    .option('--context <name>', 'kubeconfig context')
    .option('--cloud-provider <name>', cloudProviderHelp())
    .option('--install-crds', "apply capenter's CRDs (as `kubectl apply -f crds/`) at start (default off)")
    .option(
      '--capi-management-kubeconfig <path>',
      'run the KarpenterMachinePool controller against this management cluster (--kubeconfig is the workload cluster)',
    )
    .option('--bind-address <addr>', 'address of /metrics, /healthz, /readyz (default 0.0.0.0)')
    .option(
      '--dashboard-port <port>',
      'serve the read-only dashboard on this port (default off; 0: any free port)',
    )
    .option('--dashboard-address <addr>', 'address the dashboard listens on (default 127.0.0.1)')
    .addOption(
      new Option('--no-leader-elect', 'same as --disable-leader-election (kept for scripts)').hideHelp(),
    );
  addSettingFlags(cmd, CONTROLLER_SETTINGS).action(async (flags: ControllerCommandOptions) => {
    // the young generation stops growing at 16 MB (operator/heap.ts: 131–133 MB peak RSS at 1,000 pods on Node 24
    // instead of 168–175 MB, for the same CPU time)
    limitYoungGeneration({ nodeOptions: process.env.NODE_OPTIONS, execArgv: process.execArgv });
    const code = await runController(flags, {
      stderr: (t) => process.stderr.write(t),
      env: process.env,
    });
    // The controller has stopped (Lease released, informers closed): end the process even if a library left a
    // handle open, so a supervisor sees the exit at once.
    process.exit(code);
  });
}

/** `--cloud-provider`'s help: each module's name and what a NodeClaim becomes, the default first. */
function cloudProviderHelp(): string {
  return orList(PROVIDER_MODULES.map((m, i) => `${m.name} (${i === 0 ? 'default: ' : ''}${m.summary})`));
}
