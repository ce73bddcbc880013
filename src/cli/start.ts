/**
 * `capenter start [-f PATH]... [--port N] [--kubeconfig-out PATH] [--exit-when-settled] [--timeout S]
 * [-o table|json] [--region R] [--log-level L] [--cloud-provider kwok|aws|clusterapi] [--cluster-name N]`: a whole simulated
 * cluster in one process. With `--cloud-provider aws` (and `AWS_ENDPOINT_URL` naming an AWS API emulator such as
 * moto) NodeClaims become EC2 instances in the emulator, through the fault-filling proxy (`sim/aws/proxy.ts`); the
 * emulator's default network is tagged for discovery, and a joining-kubelet stand-in registers a Node for each
 * running instance (see `embedded/aws.ts`). Starts the embedded API
 * server with capenter's CRDs and the kube-scheduler / kubelet / workload-controller stand-ins, applies the
 * manifests (default: the bundled `examples/microservices-demo`), and runs the real capenter operator against it
 * with the kwok cloud provider (NodePools may reference a KWOKNodeClass or an EC2NodeClass: EC2NodeClass NodePools
 * get the AWS catalog computed for that EC2NodeClass, as `capenter simulate`; see `cloudprovider/kwok/embedded.ts`). Each
 * `--cloud-provider` is a provider module (`src/cloudprovider/modules.ts`); the runs live in `src/embedded/`.
 *
 * Prints the kubeconfig path (use `kubectl --kubeconfig PATH get nodeclaims -w` while it runs), progress lines on
 * stderr, and once every pod is Running a summary of the NodeClaims on stdout. With `--exit-when-settled` it then
 * exits 0 (1 with a summary of what is still pending, and why, after `--timeout`, default 120 s); without, it keeps
 * running until Ctrl-C. Exit 2 at once, before anything starts: invalid flags, unreadable paths or invalid
 * manifests (errors name file, document, kind/name, field and rule, as `simulate`). The temporary folder of the
 * kubeconfig is removed on exit (not the file of `--kubeconfig-out`).
 *
 * The embedded layer, the operator, the manifest loader and the provider's code are imported when the command runs
 * (every command loads this module for its flags; see scripts/build.ts).
 */
import { setFlagsFromString } from 'node:v8';
import type { Command } from 'commander';
import { isSupportedRegion, SUPPORTED_REGIONS } from '../cloudprovider/aws/catalog/index.ts';
import { ownKindsOf, type ProviderModule } from '../cloudprovider/module.ts';
import { PROVIDER_MODULES, providerNames } from '../cloudprovider/modules.ts';
import type { EmbeddedProviderHooks, EmbeddedRunFlags } from '../embedded/hooks.ts';
import type { StartIO } from '../embedded/settle.ts';
import { defaultExamplePath } from '../embedded/summary.ts';
import { limitYoungGeneration } from '../operator/heap.ts';
import { checkLogLevel } from '../operator/options.ts';

export type { StartIO } from '../embedded/settle.ts';

/** Parsed flags of `capenter start`. */
export interface StartCommandOptions {
  filename?: string[];
  port?: string;
  kubeconfigOut?: string;
  exitWhenSettled?: boolean;
  /** Seconds (default 120). */
  timeout?: string;
  output?: string;
  region?: string;
  logLevel?: string;
  metricsPort?: string;
  /** Two clusters as CAPI runs them (management + workload); see start-capi.ts. */
  capi?: boolean;
  /** With --capi: seconds before capenter removes a lingering node.cluster.x-k8s.io/uninitialized taint. */
  uninitializedTaintTimeout?: string;
  /** `kwok` (default) or `aws` (an AWS API emulator at `AWS_ENDPOINT_URL`, e.g. moto). */
  cloudProvider?: string;
  /** `--cluster-name` (aws; default `CLUSTER_NAME`, else `cluster-1`). */
  clusterName?: string;
  /** `--dashboard-port` (default any free port). */
  dashboardPort?: string;
  /** False with `--no-dashboard`. */
  dashboard?: boolean;
}

/** The flags of `capenter start` once checked. */
interface CheckedStart extends EmbeddedRunFlags {
  module: ProviderModule;
  port: number;
  /** `--uninitialized-taint-timeout` (with `--capi`). */
  taintTimeout?: number;
}

/** Checks `flags` before anything starts; returns the checked flags or the error text (exit 2). */
function checkStart(
  flags: StartCommandOptions,
  env: Readonly<Record<string, string | undefined>>,
  modules: readonly ProviderModule[],
): CheckedStart | string {
  const output = flags.output ?? 'table';
  if (output !== 'table' && output !== 'json') return `--output must be "table" or "json", got "${output}"`;
  const name = flags.cloudProvider ?? modules[0]?.name ?? '';
  const module = modules.find((m) => m.name === name);
  if (!module) return `--cloud-provider must be ${providerNames(modules)}, got "${name}"`;
  const refused = module.embedded?.check?.(env);
  if (refused) return refused;
  const region = flags.region ?? module.embedded?.defaultRegion?.(env) ?? 'us-east-1';
  if (!isSupportedRegion(region))
    return `--region "${region}" has no embedded catalog; use one of ${SUPPORTED_REGIONS.join(', ')}`;
  const timeout = flags.timeout === undefined ? 120 : Number(flags.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0)
    return `--timeout must be a positive number of seconds, got "${flags.timeout}"`;
  const port = flags.port === undefined ? 0 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return `--port must be a port number (0 = any free port), got "${flags.port}"`;
  const dash = flags.dashboardPort === undefined ? 0 : Number(flags.dashboardPort);
  if (!Number.isInteger(dash) || dash < 0 || dash > 65535)
    return `--dashboard-port must be a port number (0 = any free port), got "${flags.dashboardPort}"`;
  let logLevel: string;
  try {
    logLevel = checkLogLevel(flags.logLevel ?? 'warn');
  } catch (err) {
    return (err as Error).message;
  }
  return {
    module,
    port,
    timeout,
    output,
    region,
    logLevel,
    ...(flags.filename ? { filename: flags.filename } : {}),
    ...(flags.kubeconfigOut ? { kubeconfigOut: flags.kubeconfigOut } : {}),
    ...(flags.exitWhenSettled ? { exitWhenSettled: true } : {}),
  };
}

/** Checks and runs `capenter start --capi` with the provider of `c` (its nodes come from that provider). */
async function startCAPI(
  c: CheckedStart,
  flags: StartCommandOptions,
  hooks: EmbeddedProviderHooks,
  io: StartIO,
): Promise<number> {
  if (hooks.run) {
    io.stderr(
      `error: --capi and --cloud-provider ${c.module.name} are two different CAPI setups; choose one\n`,
    );
    return 2;
  }
  if (!hooks.capi) {
    io.stderr(`error: --capi runs its nodes on the kwok or aws provider, not "${c.module.name}"\n`);
    return 2;
  }
  const taintTimeout =
    flags.uninitializedTaintTimeout === undefined ? undefined : Number(flags.uninitializedTaintTimeout);
  if (taintTimeout !== undefined && !(Number.isFinite(taintTimeout) && taintTimeout >= 0)) {
    io.stderr(
      `error: --uninitialized-taint-timeout must be seconds >= 0, got "${flags.uninitializedTaintTimeout}"\n`,
    );
    return 2;
  }
  const { runStartCAPI } = await import('../embedded/capi-start.ts');
  const { module: _m, port: _p, taintTimeout: _t, ...run } = c;
  return runStartCAPI(
    {
      ...run,
      ...(taintTimeout !== undefined ? { uninitializedTaintTimeout: taintTimeout } : {}),
      ...(flags.dashboard !== false ? { dashboardPort: Number(flags.dashboardPort ?? 0) } : {}),
      ...hooks.capi(io.env ?? {}),
    },
    io,
  );
}

/**
 * Runs `capenter start`; returns the exit code. Never throws. `modules` are the providers `--cloud-provider` may
 * name (default the list of `src/cloudprovider/modules.ts`; a test adds its own).
 */
export async function runStart(
  flags: StartCommandOptions,
  io: StartIO,
  modules: readonly ProviderModule[] = PROVIDER_MODULES,
): Promise<number> {
  const env = io.env ?? {};
  const c = checkStart(flags, env, modules);
  if (typeof c === 'string') {
    io.stderr(`error: ${c}\n`);
    return 2;
  }
  const { embeddedHooks } = await import('../embedded/providers.ts');
  const hooks = await embeddedHooks(c.module);
  if (flags.capi) return startCAPI(c, flags, hooks, io);
  const { module: _m, port: _p, ...run } = c;
  if (hooks.run) return hooks.run(run, io);
  const paths = c.filename && c.filename.length > 0 ? c.filename : [defaultExamplePath()];
  const [{ loadManifestPaths }, { registerProviderKind }] = await Promise.all([
    import('../apis/load.ts'),
    import('../apis/provider-kinds.ts'),
  ]);
  try {
    // the module's own NodeClass kinds are validated and defaulted like the built-in ones
    for (const info of ownKindsOf(c.module.nodeClassKinds)) registerProviderKind(info);
  } catch (err) {
    io.stderr(`error: --cloud-provider ${c.module.name}: ${(err as Error).message}\n`);
    return 2;
  }
  const loaded = await loadManifestPaths(paths);
  for (const e of loaded.errors) io.stderr(`error: ${e.message}\n`);
  if (loaded.errors.length > 0) {
    io.stderr(`capenter: ${loaded.errors.length} invalid input(s); nothing started\n`);
    return 2;
  }
  const { runEmbedded } = await import('../embedded/start.ts');
  return runEmbedded(
    {
      ...run,
      paths,
      loaded,
      port: c.port,
      ...(flags.metricsPort !== undefined ? { metricsPort: Number(flags.metricsPort) } : {}),
      ...(flags.clusterName !== undefined ? { clusterName: flags.clusterName } : {}),
      ...(flags.dashboard !== false ? { dashboardPort: Number(flags.dashboardPort ?? 0) } : {}),
    },
    c.module,
    hooks,
    io,
  );
}

/**
 * Lets V8 grow its heap by 50% of the live heap after each full collection (`--heap-growing-percent=50`) instead
 * of its default, which grows up to 4× for a program that allocates as fast as this one. `capenter start` holds
 * a whole cluster in one process (the API server's objects, the stand-ins' and the operator's caches): at
 * 10,000 pods its peak RSS was 814–1,024 MB without the flag and 513–547 MB with it (three runs each, alternating,
 * 2026-12-02; 34–51 CPU-s without, 48–57 with; 25% cost 30% more CPU for no less memory on 2026-12-01). V8 reads
 * this flag at each collection, so setting it at run time takes effect. Not applied when `nodeOptions`
 * (`NODE_OPTIONS`) already sets a heap flag: the user's choice wins. Returns whether it set the flag.
 */
export function limitHeapGrowth(nodeOptions: string | undefined): boolean {
  if (/--(max-old-space-size|heap-growing-percent|optimize-for-size)/.test(nodeOptions ?? '')) return false;
  setFlagsFromString('--heap-growing-percent=50');
  return true;
}

/** Registers `capenter start`. */
export function registerStartCommand(program: Command): void {
  program
    .command('start')
    .description(
      'start a simulated cluster with the capenter controller, apply manifests and watch it provision',
    )
    .option(
      '-f, --filename <path>',
      'manifest file or folder (repeatable; default: examples/microservices-demo)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--port <n>', 'API server port (default: any free port)')
    .option('--kubeconfig-out <path>', 'where to write the kubeconfig (default: a temporary file)')
    .option('--exit-when-settled', 'exit 0 once every pod is Running (1 on --timeout)')
    .option('--timeout <seconds>', 'with --exit-when-settled: give up after this many seconds', '120')
    .option('-o, --output <format>', 'table|json', 'table')
    .option(
      '--region <region>',
      'AWS region whose catalog and prices are simulated (default us-east-1; aws: AWS_REGION)',
    )
    .option(
      '--cloud-provider <name>',
      PROVIDER_MODULES.map((m, i) =>
        i === 0 ? `${m.name} (default)` : `${m.name}: ${m.embedded?.summary ?? m.summary}`,
      ).join('; '),
      PROVIDER_MODULES[0]?.name,
    )
    .option(
      '--cluster-name <name>',
      'with --cloud-provider aws: the cluster name (env CLUSTER_NAME; default cluster-1)',
    )
    .option('--log-level <level>', 'controller log level on stderr: debug|info|warn|error|silent', 'warn')
    .option('--metrics-port <n>', 'controller /metrics port (default: any free port)')
    .option('--dashboard-port <n>', 'dashboard port on 127.0.0.1 (default: any free port)')
    .option('--no-dashboard', 'do not serve the dashboard')
    .option(
      '--capi',
      'two clusters as Cluster API runs them: management (CAPI/CAPA CRDs, KarpenterMachinePool) + workload',
    )
    .option(
      '--uninitialized-taint-timeout <seconds>',
      'with --capi: remove node.cluster.x-k8s.io/uninitialized from initialized nodes after this long (default 120)',
    )
    .action(async (flags: StartCommandOptions) => {
      limitHeapGrowth(process.env.NODE_OPTIONS);
      // and the young generation stops growing at 8 MB (operator/heap.ts; the controller's stops at 16 MB): at
      // 10,000 pods V8 let it grow to 128 MB on Node 24, peak RSS 636-688 MB; capped at 16 MB 506-545 MB, at 8 MB
      // 464-499 MB for about 10 % more CPU time (three runs each, 2026-12-02, 2-core machine, load 2-8)
      limitYoungGeneration({ nodeOptions: process.env.NODE_OPTIONS, execArgv: process.execArgv, limitMB: 8 });
      process.exitCode = await runStart(flags, {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
      });
    });
}
