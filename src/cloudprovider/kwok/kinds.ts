/**
 * The kwok provider's name (`--cloud-provider kwok`) and NodeClass kinds, shared by its module (`./module.ts`) and the
 * setup the module loads lazily (`./setup.ts`), so neither imports the other.
 */
import { AWSGroup } from '../../apis/labels.ts';
import type { ProviderNodeClassKind } from '../module.ts';

/** The `--cloud-provider` value of the kwok provider. */
export const kwokProviderName = 'kwok';

/** The NodeClass kinds the kwok provider launches from, with the conditions their `Ready` depends on. */
export const kwokNodeClassKinds: readonly ProviderNodeClassKind[] = [
  { group: 'karpenter.kwok.sh', version: 'v1alpha1', kind: 'KWOKNodeClass', readyDependents: [] },
  // an EC2NodeClass is simulated with the catalog computed for it; it has no subnets or AMIs to resolve here
  { group: AWSGroup, version: 'v1', kind: 'EC2NodeClass', readyDependents: [] },
];
