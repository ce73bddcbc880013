/**
 * How `capenter start` runs each provider module embedded. A module runs beside the one simulated cluster
 * (`./start.ts`) with what its `load` builds (kwok, and any provider whose nodes need no simulator stand-in);
 * a provider whose nodes come from a stand-in of `src/sim/` gets hooks here, since provider folders may not import
 * the simulator: aws (the EC2 emulator's proxy and the joining-kubelet stand-in, `./aws.ts`) and clusterapi (its
 * own two-cluster topology with the MachineDeployment stand-in, `./clusterapi-start.ts`). `--capi` (the
 * KarpenterMachinePool on two clusters, `./capi-start.ts`) runs with the providers marked `capi`.
 */
import { type ProviderModule, withModuleKinds } from '../cloudprovider/module.ts';
import type { EmbeddedProviderContext, EmbeddedProviderHooks, EmbeddedProviderRun } from './hooks.ts';

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
  const setup = withModuleKinds(
    module,
    await module.load(settings, { client: ctx.client, logger: ctx.logger, region: ctx.region }),
  );
  return { setup, clusterName: core.clusterName, stop: async () => setup.close?.() };
}
