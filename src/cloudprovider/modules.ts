/**
 * The one list of cloud provider modules (`src/cloudprovider/module.ts`). `capenter controller`, `capenter start`,
 * the settings docs and `--help` iterate it; nothing else in the core names a provider. A new provider is a folder
 * under `src/cloudprovider/` with a `module.ts`, plus one line here (docs/architecture.md). The entries are light:
 * each module imports its implementation only in its `load`.
 */
import { awsModule } from './aws/module.ts';
import { clusterAPIModule } from './clusterapi/module.ts';
import { kwokModule } from './kwok/module.ts';
import type { ProviderModule } from './module.ts';

/** Every provider module, the default (`kwok`) first. */
export const PROVIDER_MODULES: readonly ProviderModule[] = [kwokModule, awsModule, clusterAPIModule];

/** The module named `name`, or `undefined`. */
export function providerModule(name: string): ProviderModule | undefined {
  return PROVIDER_MODULES.find((m) => m.name === name);
}

/** `items` as prose: `a, b or c`. */
export function orList(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/** `"kwok", "aws" or "clusterapi"`: the modules' names for an error message. */
export function providerNames(modules: readonly ProviderModule[] = PROVIDER_MODULES): string {
  return orList(modules.map((m) => `"${m.name}"`));
}
