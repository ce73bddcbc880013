/**
 * How `capenter start` runs each provider module embedded. A module runs beside the one simulated cluster
 * (`./start.ts`) with what its `load` builds (kwok, and any provider whose nodes need no simulator stand-in);
 * a provider whose nodes come from a stand-in of `src/sim/` gets hooks here, since provider folders may not import
 * the simulator: aws (the EC2 emulator's proxy and the joining-kubelet stand-in, `./aws.ts`) and clusterapi (its
 * own two-cluster topology with the MachineDeployment stand-in, `./clusterapi-start.ts`). `--capi` (the
 * KarpenterMachinePool on two clusters, `./capi-start.ts`) runs with the providers marked `capi`.
 */
import type { ProviderModule, ProviderSetup } from '../cloudprovider/module.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import type { Logger } from '../kube/logger.ts';
import type { StartIO } from './settle.ts';

/** What a provider's hooks get beside the one embedded cluster. */
export interface EmbeddedProviderContext {
  /** Client of the embedded cluster. */
  client: KubeClient;
  clock: Clock;
  /** The embedded API server's URL and kubeconfig (YAML). */
  apiServerURL: string;
  kubeconfig: string;
  region: string;
  /** The core cluster name (`CLUSTER_NAME`, default `cluster-1`) and `--cluster-name` when given. */
  clusterName: string;
  clusterNameFlag?: string;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  stderr: (t: string) => void;
}

/** What a provider started beside the embedded cluster. */
export interface EmbeddedProviderRun {
  /** The operator's provider. */
  setup: ProviderSetup;
  /** The cluster name the operator runs with, when the provider decided it. */
  clusterName?: string;
  stop(): Promise<void>;
}

/** Flags of a run with its own topology (already checked by `capenter start`). */
export interface EmbeddedRunFlags {
  filename?: string[];
  kubeconfigOut?: string;
  exitWhenSettled?: boolean;
  /** Seconds. */
  timeout: number;
  output: 'table' | 'json';
  region: string;
  logLevel: string;
}

/** A provider's embedded hooks (see the module comment). */
export interface EmbeddedProviderHooks {
  /** Starts the provider's stand-ins beside the one embedded cluster and builds the operator's provider. */
  start?(ctx: EmbeddedProviderContext): Promise<EmbeddedProviderRun>;
  /** Runs the whole of `capenter start` on the provider's own topology instead; resolves with the exit code. */
  run?(flags: EmbeddedRunFlags, io: StartIO): Promise<number>;
  /**
   * Runs under `--capi` (the KarpenterMachinePool's nodes come from this provider): what the CAPI stack needs from
   * the environment for it (aws: the emulator's endpoint). Absent: `--capi` is refused with this provider.
   */
  capi?(env: Readonly<Record<string, string | undefined>>): CAPIProviderOptions;
}

/** Provider options of the `--capi` stack (`./capi-start.ts`). */
export interface CAPIProviderOptions {
  /** Run the nodes on the aws provider against this AWS API emulator endpoint (moto) instead of kwok. */
  awsEmulatorEndpoint?: string;
}

/** Hooks of the providers that need the simulator's stand-ins (loaded when `capenter start` runs them). */
const HOOKS: Record<string, () => Promise<EmbeddedProviderHooks>> = {
  kwok: async () => ({ capi: () => ({}) }),
  aws: async () => (await import('./aws.ts')).awsEmbedded,
  clusterapi: async () => (await import('./clusterapi-start.ts')).clusterAPIEmbedded,
};

/** The hooks of `module` (none for a provider that runs with its `load` alone). */
export async function embeddedHooks(module: ProviderModule): Promise<EmbeddedProviderHooks> {
  return (await HOOKS[module.name]?.()) ?? {};
}

/**
 * The provider of a module without a `start` hook: its settings from the environment (flags of `capenter start`
 * are not its settings), then its `load`. @throws SettingError for an invalid variable.
 */
export async function loadedProvider(
  module: ProviderModule,
  ctx: EmbeddedProviderContext,
): Promise<EmbeddedProviderRun> {
  const core = { region: ctx.region, clusterName: ctx.clusterName };
  const settings = module.configure({ env: ctx.env }, core);
  const setup = await module.load(settings, { client: ctx.client, logger: ctx.logger, region: ctx.region });
  return { setup, clusterName: core.clusterName, stop: async () => setup.close?.() };
}
