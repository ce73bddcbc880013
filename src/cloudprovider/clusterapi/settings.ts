/**
 * Settings of the `clusterapi` provider (`capenter controller --cloud-provider clusterapi`), declared next to it and
 * exposed by the clusterapi `ProviderModule` (`./module.ts`) to `capenter controller` and the settings table
 * (docs/settings.md). A settings registry list (`Setting`, `src/config/settings.ts`); resolved with `resolveSettings`
 * (flags win over variables, an empty variable counts as unset).
 * Upstream karpenter-provider-cluster-api reads the management cluster from `--cluster-api-kubeconfig`
 * (in-cluster when empty); the others are capenter's.
 */

import {
  defineSetting,
  parseNonEmpty,
  parsePositiveDuration,
  resolveSettings,
  type SettingSources,
} from '../../config/settings.ts';

/** The resolved settings of the clusterapi provider. */
export interface ClusterAPISettings {
  /** `CLUSTER_API_KUBECONFIG`: kubeconfig of the management cluster; empty = the in-cluster config. */
  clusterAPIKubeconfig: string;
  /** `CLUSTER_API_NAMESPACE`: namespace of the Cluster served (its MachineDeployments and Machines). */
  clusterAPINamespace: string;
  /** `CLUSTER_API_CLUSTER_NAME`: only MachineDeployments of this Cluster; empty = all of the namespace. */
  clusterAPIClusterName: string;
  /** `CLUSTER_API_MACHINE_TIMEOUT`: seconds a launch waits for a Machine with a provider ID. */
  clusterAPIMachineTimeoutSeconds: number;
}

function dnsLabel(text: string): string {
  const t = text.trim();
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t) || t.length > 63) throw new Error('not a DNS label');
  return t;
}

/** The clusterapi provider's settings. */
export const CLUSTERAPI_SETTINGS = [
  defineSetting({
    env: 'CLUSTER_API_KUBECONFIG',
    flag: 'cluster-api-kubeconfig',
    key: 'clusterAPIKubeconfig',
    description:
      'kubeconfig of the Cluster API management cluster (MachineDeployments, Machines); empty: the in-cluster config.',
    default: '',
    defaultText: '(in-cluster)',
    accepts: 'a kubeconfig file path',
    parse: parseNonEmpty,
    group: 'clusterapi',
  }),
  defineSetting({
    env: 'CLUSTER_API_NAMESPACE',
    flag: 'cluster-api-namespace',
    key: 'clusterAPINamespace',
    description: 'namespace of the Cluster served: only its MachineDeployments and Machines are used.',
    default: 'default',
    accepts: 'a namespace name',
    parse: dnsLabel,
    group: 'clusterapi',
  }),
  defineSetting({
    env: 'CLUSTER_API_CLUSTER_NAME',
    flag: 'cluster-api-cluster-name',
    key: 'clusterAPIClusterName',
    description:
      'only MachineDeployments of this Cluster (spec.clusterName); empty: every one of the namespace.',
    default: '',
    accepts: 'a Cluster name',
    parse: parseNonEmpty,
    group: 'clusterapi',
  }),
  defineSetting({
    env: 'CLUSTER_API_MACHINE_TIMEOUT',
    flag: 'cluster-api-machine-timeout',
    key: 'clusterAPIMachineTimeoutSeconds',
    description:
      'how long a launch waits for a Machine with a provider ID before failing MachineNotReady (retried; the replicas stay).',
    default: 600,
    defaultText: '10m',
    accepts: 'a positive duration ("90s", "10m") or seconds',
    parse: parsePositiveDuration,
    group: 'clusterapi',
  }),
] as const;

/**
 * Resolves {@link CLUSTERAPI_SETTINGS} from flags (camelCase keys) and an environment map (flags win; empty variables
 * count as unset). @throws SettingError naming the flag or variable, the value and what it accepts.
 */
export function resolveClusterAPISettings(src: SettingSources): ClusterAPISettings {
  return resolveSettings(CLUSTERAPI_SETTINGS, src);
}
