/**
 * The `kwok` provider module (`--cloud-provider kwok`, the default): NodeClaims become Node objects with the AWS
 * catalog of the operator's region; NodePools may reference a `KWOKNodeClass` or an `EC2NodeClass` (see
 * `./embedded.ts`). No settings of its own (the region is a core setting). Its implementation is loaded by
 * {@link kwokModule}'s `load` (`./setup.ts`).
 */
import type { ProviderModule } from '../module.ts';
import { kwokNodeClassKinds, kwokProviderName } from './kinds.ts';

/** The kwok provider module. */
export const kwokModule: ProviderModule<Record<string, never>> = {
  name: kwokProviderName,
  summary: 'NodeClaims become Node objects',
  nodeClassKinds: kwokNodeClassKinds,
  settings: [],
  configure: () => ({}),
  load: async () => (await import('./setup.ts')).kwokSetup(),
};
