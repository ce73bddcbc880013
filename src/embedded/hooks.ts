/**
 * The types of a provider's embedded hooks (`./providers.ts` maps a module to them): what `capenter start` gives a
 * provider beside the one embedded cluster and what the provider gives back. A file of its own so the hooks'
 * implementations (`./aws.ts`, `./clusterapi-start.ts`), which `./providers.ts` loads, need not import it.
 */
import type { ProviderSetup } from '../cloudprovider/module.ts';
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
