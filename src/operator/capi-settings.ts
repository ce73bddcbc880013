/**
 * Settings of the KarpenterMachinePool mode (`capenter controller --capi-management-kubeconfig`), a settings
 * registry list (`Setting`, `src/config/settings.ts`) in `CONTROLLER_SETTINGS` (src/cli/controller.ts) and the
 * settings table (docs/settings.md), group `capi`.
 *
 * `CAPI_WATCH_NAMESPACE` mirrors Cluster API's `--namespace` (cluster-api `main.go`: "Namespace that the controller
 * watches to reconcile cluster-api objects. If unspecified, the controller watches for cluster-api objects across
 * all namespaces", controller-runtime's `cache.Options.DefaultNamespaces`, which CAPA's `--namespace` sets too):
 * every management-cluster informer of the KMP controller (KarpenterMachinePool, MachinePool, Cluster, AWSCluster,
 * the labelled Secrets) lists and watches that namespace only, so the management cluster need grant Secrets only
 * there (a Role instead of a ClusterRole rule; the chart's `capi.watchNamespace`).
 */
import { defineSetting, resolveSettings, type SettingSources } from '../config/settings.ts';

/** The resolved settings of the KarpenterMachinePool mode. */
export interface CAPISettings {
  /** `CAPI_WATCH_NAMESPACE`: the one management-cluster namespace reconciled; empty = every namespace. */
  capiWatchNamespace: string;
}

/**
 * A namespace name (an RFC 1123 DNS label, at most 63 characters). One only, as Cluster API's `--namespace`.
 * @throws Error saying why the text is not one.
 */
export function parseNamespaceName(text: string): string {
  const t = text.trim();
  if (t.includes(',')) throw new Error('one namespace only (as Cluster API --namespace), not a list');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(t) || t.length > 63)
    throw new Error('not a namespace name (lowercase letters, digits and "-", at most 63)');
  return t;
}

/** The KarpenterMachinePool mode's settings. */
export const CAPI_SETTINGS = [
  defineSetting({
    env: 'CAPI_WATCH_NAMESPACE',
    flag: 'capi-watch-namespace',
    key: 'capiWatchNamespace',
    description:
      "with --capi-management-kubeconfig: the only management-cluster namespace whose KarpenterMachinePools, MachinePools, Clusters, AWSClusters and Secrets are watched and reconciled (Cluster API's --namespace); Secrets then need RBAC in that namespace only. Empty: every namespace.",
    default: '',
    defaultText: '(all namespaces)',
    accepts: 'a namespace name',
    parse: parseNamespaceName,
    group: 'capi',
  }),
] as const;

/**
 * The KarpenterMachinePool mode's settings from flags and environment (flags win; an empty variable is unset).
 * @throws SettingError naming the flag or variable, the value and what it accepts.
 */
export function resolveCAPISettings(src: SettingSources): CAPISettings {
  return resolveSettings(CAPI_SETTINGS, src);
}
