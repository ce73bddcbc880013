/**
 * The aws provider's name (`--cloud-provider aws`) and NodeClass kinds, shared by its module (`./module.ts`) and the
 * setup the module loads lazily (`./setup.ts`), so neither imports the other.
 */
import { AWSGroup } from '../../apis/labels.ts';
import type { ProviderNodeClassKind } from '../module.ts';
import { EC2NodeClassResolvedConditions } from './nodeclass/types.ts';

/** The `--cloud-provider` value of the aws provider. */
export const awsProviderName = 'aws';

/** The NodeClass kinds the aws provider launches from, with the conditions their `Ready` depends on. */
export const awsNodeClassKinds: readonly ProviderNodeClassKind[] = [
  { group: AWSGroup, version: 'v1', kind: 'EC2NodeClass', readyDependents: EC2NodeClassResolvedConditions },
];
