/**
 * Settings of the `clusterapi` provider (`capenter controller --cloud-provider clusterapi`), declared next to it and
 * plugged into the settings table (docs/settings.md) by `cli/controller.ts`. Same shape as the operator registry's
 * `Setting`; resolved with `resolveSettings` (flags win over variables, an empty variable counts as unset).
 * Upstream karpenter-provider-cluster-api reads the management cluster from `--cluster-api-kubeconfig`
 * (in-cluster when empty); the others are capenter's.
 */

/** One setting (same shape as `operator/settings.ts` `Setting`). */
export interface ClusterAPISetting<K extends string = string, T = unknown> {
  env: string;
  flag: string;
  key: K;
  description: string;
  default: T;
  defaultText?: string;
  accepts: string;
  parse: (text: string) => T;
  group: 'clusterapi';
}

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

function nonEmpty(text: string): string {
  const t = text.trim();
  if (!t) throw new Error('empty');
  return t;
}

function dnsLabel(text: string): string {
  const t = text.trim();
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t) || t.length > 63) throw new Error('not a DNS label');
  return t;
}

function seconds(text: string): number {
  const t = text.trim();
  let total = 0;
  if (/^\d+(\.\d+)?$/.test(t)) total = Number(t);
  else {
    let consumed = 0;
    for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
      const v = Number(m[1]);
      total += m[2] === 'ms' ? v / 1000 : m[2] === 's' ? v : m[2] === 'm' ? v * 60 : v * 3600;
      consumed += m[0].length;
    }
    if (consumed === 0 || consumed !== t.length) throw new Error('not a duration');
  }
  if (total <= 0) throw new Error('must be positive');
  return total;
}

/** The clusterapi provider's settings. */
export const CLUSTERAPI_SETTINGS = [
  {
    env: 'CLUSTER_API_KUBECONFIG',
    flag: 'cluster-api-kubeconfig',
    key: 'clusterAPIKubeconfig',
    description:
      'kubeconfig of the Cluster API management cluster (MachineDeployments, Machines); empty: the in-cluster config.',
    default: '',
    defaultText: '(in-cluster)',
    accepts: 'a kubeconfig file path',
    parse: nonEmpty,
    group: 'clusterapi',
  } satisfies ClusterAPISetting<'clusterAPIKubeconfig', string>,
  {
    env: 'CLUSTER_API_NAMESPACE',
    flag: 'cluster-api-namespace',
    key: 'clusterAPINamespace',
    description: 'namespace of the Cluster served: only its MachineDeployments and Machines are used.',
    default: 'default',
    accepts: 'a namespace name',
    parse: dnsLabel,
    group: 'clusterapi',
  } satisfies ClusterAPISetting<'clusterAPINamespace', string>,
  {
    env: 'CLUSTER_API_CLUSTER_NAME',
    flag: 'cluster-api-cluster-name',
    key: 'clusterAPIClusterName',
    description:
      'only MachineDeployments of this Cluster (spec.clusterName); empty: every one of the namespace.',
    default: '',
    accepts: 'a Cluster name',
    parse: nonEmpty,
    group: 'clusterapi',
  } satisfies ClusterAPISetting<'clusterAPIClusterName', string>,
  {
    env: 'CLUSTER_API_MACHINE_TIMEOUT',
    flag: 'cluster-api-machine-timeout',
    key: 'clusterAPIMachineTimeoutSeconds',
    description:
      'how long a launch waits for a Machine with a provider ID before failing MachineNotReady (retried; the replicas stay).',
    default: 600,
    defaultText: '10m',
    accepts: 'a positive duration ("90s", "10m") or seconds',
    parse: seconds,
    group: 'clusterapi',
  } satisfies ClusterAPISetting<'clusterAPIMachineTimeoutSeconds', number>,
] as const;
