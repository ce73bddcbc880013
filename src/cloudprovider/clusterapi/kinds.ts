/**
 * The clusterapi provider's name (`--cloud-provider clusterapi`) and NodeClass kinds, shared by its module (`./module.ts`) and the
 * setup the module loads lazily (`./setup.ts`), so neither imports the other.
 */
import type { ProviderNodeClassKind } from '../module.ts';

/** The `--cloud-provider` value of the clusterapi provider. */
export const clusterAPIProviderName = 'clusterapi';

/** The NodeClass kinds the clusterapi provider launches from, with the conditions their `Ready` depends on. */
export const clusterAPINodeClassKinds: readonly ProviderNodeClassKind[] = [
  {
    group: 'karpenter.cluster.x-k8s.io',
    version: 'v1alpha1',
    kind: 'ClusterAPINodeClass',
    // ConditionMachineDeploymentsReady of the ClusterAPINodeClass controller (a test checks they agree)
    readyDependents: ['MachineDeploymentsReady'],
  },
];
