/**
 * The `kwok` provider module (`--cloud-provider kwok`, the default): NodeClaims become Node objects with the AWS
 * catalog of the operator's region; NodePools may reference a `KWOKNodeClass` or an `EC2NodeClass` (see
 * `./embedded.ts`). No settings of its own (the region is a core setting). Its implementation is loaded by
 * {@link kwokModule}'s `load` (`./setup.ts`).
 */
import { AWSGroup } from '../../apis/labels.ts';
import type { ProviderModule } from '../module.ts';

/** The kwok provider module. */
export const kwokModule: ProviderModule<Record<string, never>> = {
  name: 'kwok',
  summary: 'NodeClaims become Node objects',
  nodeClassKinds: [
    { group: 'karpenter.kwok.sh', version: 'v1alpha1', kind: 'KWOKNodeClass', readyDependents: [] },
    // an EC2NodeClass is simulated with the catalog computed for it; it has no subnets or AMIs to resolve here
    { group: AWSGroup, version: 'v1', kind: 'EC2NodeClass', readyDependents: [] },
  ],
  settings: [],
  configure: () => ({}),
  load: async () => (await import('./setup.ts')).kwokSetup(),
};
