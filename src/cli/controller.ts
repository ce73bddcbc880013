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
 * `--cloud-provider aws` runs the aws provider (EC2 instances) with the aws settings (`CONTROLLER_AWS_SETTINGS`:
 * CLUSTER_NAME, INTERRUPTION_QUEUE, ISOLATED_VPC, ...); SDK endpoints and credentials come from the SDK's default
 * chain (AWS_ENDPOINT_URL, profiles, IRSA, IMDS). `--cloud-provider clusterapi` runs the clusterapi provider
 * (NodeClaims become Machines of the management cluster's MachineDeployments; settings
 * `CONTROLLER_CLUSTERAPI_SETTINGS`: CLUSTER_API_KUBECONFIG, CLUSTER_API_NAMESPACE, ...; docs/clusterapi.md).
 *
 * This module is loaded with every command (for its flags): the operator, the logger and each provider's module
 * are imported when the controller runs, and only the chosen provider's, so `--cloud-provider kwok` never loads
 * the AWS SDK (~100 MB of RSS) and no command pays for the controllers at start-up (see scripts/build.ts).
 */
import { type Command, Option } from 'commander';
import {
  AWS_SETTINGS,
  type AwsSettings,
  resolveAwsSettings,
  validateAwsSettings,
} from '../cloudprovider/aws/settings.ts';
import { CLUSTERAPI_SETTINGS, type ClusterAPISettings } from '../cloudprovider/clusterapi/settings.ts';
import { KubeClient } from '../kube/client.ts';
import { limitYoungGeneration } from '../operator/heap.ts';
import type { OperatorConfig } from '../operator/operator.ts';
import { type OperatorOptions, resolveOperatorOptions, SETTINGS } from '../operator/options.ts';
import { addSettingFlags, resolveSettings, type Setting } from '../operator/settings.ts';

/** The aws provider's settings that the core registry does not already carry (CLUSTER_NAME, AWS_REGION are core). */
export const CONTROLLER_AWS_SETTINGS: readonly Setting[] = (AWS_SETTINGS as readonly Setting[]).filter(
  (a) => !SETTINGS.some((s) => s.env === a.env),
);

/** The clusterapi provider's settings (`--cloud-provider clusterapi`; docs/clusterapi.md). */
export const CONTROLLER_CLUSTERAPI_SETTINGS: readonly Setting[] = CLUSTERAPI_SETTINGS as readonly Setting[];

/** Parsed flags of `capenter controller`: the connection flags plus one camelCase entry per setting flag. */
export interface ControllerCommandOptions {
  kubeconfig?: string;
  context?: string;
  /** Apply capenter's CRDs (`crds/`) at start (default false). */
  installCrds?: boolean;
  /** Address `/metrics`, `/healthz` and `/readyz` listen on (default 0.0.0.0, as in a pod). */
  bindAddress?: string;
  /** `kwok` (default), `aws` or `clusterapi`. */
  cloudProvider?: string;
  /** CAPI: kubeconfig of the management cluster; runs the KarpenterMachinePool controller (docs/capi.md). */
  capiManagementKubeconfig?: string;
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
): OperatorOptions {
  const o = resolveOperatorOptions({ flags, env });
  if (flags.bindAddress) o.bindAddress = flags.bindAddress;
  // `--no-leader-elect` (before the registry; commander sets leaderElect=false): DISABLE_LEADER_ELECTION's alias
  if (flags.leaderElect === false) o.leaderElect = false;
  return o;
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
  const cloudProvider = (flags.cloudProvider as string | undefined) ?? 'kwok';
  let awsSettings: AwsSettings | undefined;
  let capiSettings: ClusterAPISettings | undefined;
  try {
    if (cloudProvider === 'aws') {
      awsSettings = validateAwsSettings(resolveAwsSettings({ flags, env: io.env }));
      awsSettings.region ||= options.region;
      options.clusterName = awsSettings.clusterName;
    } else if (cloudProvider === 'clusterapi') {
      capiSettings = resolveSettings(CONTROLLER_CLUSTERAPI_SETTINGS, {
        flags,
        env: io.env,
      }) as unknown as ClusterAPISettings;
    } else if (cloudProvider !== 'kwok')
      throw new Error(`--cloud-provider must be "kwok", "aws" or "clusterapi", got "${cloudProvider}"`);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const [{ createLogger }, { createOperator }] = await Promise.all([
      import('../kube/logger.ts'),
      import('../operator/operator.ts'),
    ]);
    const logger = createLogger({ level: options.logLevel });
    const kubeconfig = (flags.kubeconfig as string | undefined) ?? io.env.KUBECONFIG;
    const client = kubeconfig
      ? KubeClient.fromKubeconfig(kubeconfig, {
          userAgent: 'capenter-controller',
          qps: options.kubeClientQPS,
          burst: options.kubeClientBurst,
          ...(flags.context ? { context: flags.context } : {}),
        })
      : KubeClient.fromCluster({
          userAgent: 'capenter-controller',
          qps: options.kubeClientQPS,
          burst: options.kubeClientBurst,
        });
    // aws: endpoints and credentials come from the SDK's default chain (AWS_ENDPOINT_URL, profiles, IRSA, IMDS).
    let provider: Partial<OperatorConfig> = {};
    if (awsSettings) {
      const [{ createAwsClients }, { awsOperatorConfig }] = await Promise.all([
        import('../cloudprovider/aws/clients.ts'),
        import('../operator/aws.ts'),
      ]);
      const clients = createAwsClients({ region: awsSettings.region });
      provider = awsOperatorConfig({ clients, settings: awsSettings, region: awsSettings.region });
    }
    let management: KubeClient | undefined;
    if (capiSettings) {
      management = capiSettings.clusterAPIKubeconfig
        ? KubeClient.fromKubeconfig(capiSettings.clusterAPIKubeconfig, { userAgent: 'capenter-clusterapi' })
        : KubeClient.fromCluster({ userAgent: 'capenter-clusterapi' });
      const { clusterAPIOperatorConfig } = await import('../operator/clusterapi.ts');
      provider = clusterAPIOperatorConfig({
        management,
        workload: client,
        namespace: capiSettings.clusterAPINamespace,
        ...(capiSettings.clusterAPIClusterName ? { clusterName: capiSettings.clusterAPIClusterName } : {}),
        machineTimeoutSeconds: capiSettings.clusterAPIMachineTimeoutSeconds,
        region: options.region,
        logger,
      });
    }
    const op = createOperator({
      client,
      logger,
      options,
      ...provider,
      installCRDs: flags.installCrds === true,
    });
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
    let capi: Promise<void> | undefined;
    if (flags.capiManagementKubeconfig) {
      const { runCAPIControllers } = await import('../operator/capi.ts');
      const bootstrapStore = awsSettings
        ? undefined
        : new (await import('../controllers/capi/bootstrap.ts')).InMemoryBootstrapStore();
      // the KarpenterMachinePool controllers run on the leader only, like every other controller
      capi = op.leading().then(async (leading) => {
        if (!leading || ac.signal.aborted) return;
        const management = KubeClient.fromKubeconfig(flags.capiManagementKubeconfig as string, {
          userAgent: 'capenter-capi',
        });
        await runCAPIControllers(op, {
          management,
          logger,
          signal: AbortSignal.any([leading, ac.signal]),
          ...(awsSettings ? { clusterName: awsSettings.clusterName } : {}),
          ...(bootstrapStore ? { bootstrapStore } : {}),
        }).finally(() => management.close());
      });
    }
    io.stderr(
      `capenter controller: ${client.server}, region ${options.region}, metrics :${op.metricsPort}/metrics, health :${op.healthProbePort}/healthz\n`,
    );
    await op.done;
    const stoppedBySignal = interrupted || ac.signal.aborted;
    ac.abort(); // stops the KarpenterMachinePool controllers too
    await capi;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    client.close();
    management?.close();
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
    .description('run the controller (kwok, aws or clusterapi provider) against a cluster until interrupted')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else the in-cluster config)')
    .option('--context <name>', 'kubeconfig context')
    .option(
      '--cloud-provider <name>',
      'kwok (default: NodeClaims become Node objects), aws (EC2 instances) or clusterapi (Machines of CAPI MachineDeployments)',
    )
    .option('--install-crds', "apply capenter's CRDs (as `kubectl apply -f crds/`) at start (default off)")
    .option(
      '--capi-management-kubeconfig <path>',
      'run the KarpenterMachinePool controller against this management cluster (--kubeconfig is the workload cluster)',
    )
    .option('--bind-address <addr>', 'address of /metrics, /healthz, /readyz (default 0.0.0.0)')
    .addOption(
      new Option('--no-leader-elect', 'same as --disable-leader-election (kept for scripts)').hideHelp(),
    );
  addSettingFlags(
    addSettingFlags(addSettingFlags(cmd, SETTINGS), CONTROLLER_AWS_SETTINGS),
    CONTROLLER_CLUSTERAPI_SETTINGS,
  ).action(async (flags: ControllerCommandOptions) => {
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
