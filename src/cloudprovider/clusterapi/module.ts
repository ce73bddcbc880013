/**
 * The `clusterapi` provider module (`--cloud-provider clusterapi`): NodeClaims become Machines of the management
 * cluster's MachineDeployments (scaled up and down); NodePools reference `ClusterAPINodeClass`es. Settings:
 * {@link CLUSTERAPI_SETTINGS} (docs/clusterapi.md). The implementation (`./setup.ts`) is loaded by
 * {@link clusterAPIModule}'s `load`, which opens a client of the management cluster.
 */
import type { ProviderModule } from '../module.ts';
import { clusterAPINodeClassKinds, clusterAPIProviderName } from './kinds.ts';
import { CLUSTERAPI_SETTINGS, type ClusterAPISettings, resolveClusterAPISettings } from './settings.ts';

/** The clusterapi provider module. */
export const clusterAPIModule: ProviderModule<ClusterAPISettings> = {
  name: clusterAPIProviderName,
  summary: 'Machines of CAPI MachineDeployments',
  nodeClassKinds: clusterAPINodeClassKinds,
  settings: CLUSTERAPI_SETTINGS,
  configure: (src) => resolveClusterAPISettings(src),
  embedded: { summary: 'Machines of CAPI MachineDeployments (two embedded clusters)' },
  async load(settings, deps) {
    const [{ KubeClient }, { clusterAPISetup }] = await Promise.all([
      import('../../kube/client.ts'),
      import('./setup.ts'),
    ]);
    const management = settings.clusterAPIKubeconfig
      ? KubeClient.fromKubeconfig(settings.clusterAPIKubeconfig, { userAgent: 'capenter-clusterapi' })
      : KubeClient.fromCluster({ userAgent: 'capenter-clusterapi' });
    const setup = clusterAPISetup({
      management,
      workload: deps.client,
      namespace: settings.clusterAPINamespace,
      ...(settings.clusterAPIClusterName ? { clusterName: settings.clusterAPIClusterName } : {}),
      machineTimeoutSeconds: settings.clusterAPIMachineTimeoutSeconds,
      region: deps.region,
      logger: deps.logger,
    });
    return { ...setup, close: () => management.close() };
  },
};
