/**
 * Where nodes find the API server: the endpoint, CA bundle and service CIDR written into user data. Mirrors
 * aws/karpenter-provider-aws `pkg/operator/operator.go` (`ResolveClusterEndpoint`, `GetCABundle`): the settings
 * first (`CLUSTER_ENDPOINT`, `CLUSTER_CA_BUNDLE`), then the CA of the controller's own kubeconfig, then EKS
 * DescribeCluster for what is still missing — never DescribeCluster with `EKS_CONTROL_PLANE=false`.
 */
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import type { AwsSettings } from './settings.ts';

/** The cluster as user data needs it; `endpoint` or `caBundle` may be empty when nothing knew them. */
export interface ClusterInfo {
  /** The API server URL nodes join. */
  endpoint: string;
  /** Base64 PEM of the cluster CA. */
  caBundle: string;
  /** The service IPv4 CIDR, when known. */
  cidr?: string;
}

/** Inputs of {@link discoverCluster}. */
export interface DiscoverClusterDeps {
  settings: Pick<AwsSettings, 'clusterName' | 'clusterEndpoint' | 'clusterCABundle' | 'eksControlPlane'>;
  eks: Pick<EKSClient, 'send'>;
  /** Service CIDR given by configuration (skips asking EKS for it). */
  clusterCIDR?: string;
  /** Base64 PEM CA of the controller's kubeconfig, used when `CLUSTER_CA_BUNDLE` is empty (upstream `GetCABundle`). */
  kubeconfigCABundle?: string;
  /** Called when DescribeCluster fails (the configured values are used). */
  onError?: (err: unknown, context: string) => void;
}

/**
 * The endpoint, CA and CIDR of the cluster: from the settings (and the kubeconfig's CA) alone when they give the
 * endpoint, CA and CIDR or `EKS_CONTROL_PLANE=false`; else one EKS DescribeCluster fills what is missing. Never
 * throws (a failed DescribeCluster is reported to `onError`).
 */
export async function discoverCluster(deps: DiscoverClusterDeps): Promise<ClusterInfo> {
  const s = deps.settings;
  const caBundle = s.clusterCABundle || deps.kubeconfigCABundle || '';
  const configured: ClusterInfo = {
    endpoint: s.clusterEndpoint,
    caBundle,
    ...(deps.clusterCIDR ? { cidr: deps.clusterCIDR } : {}),
  };
  const complete = s.clusterEndpoint && caBundle && deps.clusterCIDR !== undefined;
  if (complete || s.eksControlPlane === false) return configured;
  try {
    const out = await deps.eks.send(new DescribeClusterCommand({ name: s.clusterName }));
    const c = out.cluster;
    // upstream ResolveClusterCIDR: the IPv4 service CIDR, else the IPv6 one (an IPv6 cluster)
    const net = c?.kubernetesNetworkConfig;
    const cidr = deps.clusterCIDR ?? net?.serviceIpv4Cidr ?? net?.serviceIpv6Cidr;
    return {
      endpoint: s.clusterEndpoint || c?.endpoint || '',
      caBundle: caBundle || c?.certificateAuthority?.data || '',
      ...(cidr ? { cidr } : {}),
    };
  } catch (err) {
    deps.onError?.(err, `EKS DescribeCluster ${s.clusterName} failed; using the configured endpoint/CA`);
    return configured;
  }
}

/** Inputs of {@link resolveClusterCIDR}. */
export interface ResolveClusterCIDRDeps {
  settings: Pick<AwsSettings, 'clusterName' | 'eksControlPlane'>;
  eks: Pick<EKSClient, 'send'>;
}

/**
 * The cluster's service CIDR from EKS DescribeCluster: `kubernetesNetworkConfig.serviceIpv4Cidr`, else
 * `serviceIpv6Cidr` (an IPv6 cluster). Upstream `launchtemplate.DefaultProvider.ResolveClusterCIDR`, which the
 * EC2NodeClass validation runs for AL2023 classes (nodeadm needs `spec.cluster.cidr`).
 * @throws the DescribeCluster error as the SDK raised it (`$fault: 'server'` for a 5xx, which callers retry);
 *   Error `no CIDR found in DescribeCluster response` when EKS gives neither CIDR; Error naming
 *   `EKS_CONTROL_PLANE=false` (capenter never asks EKS then).
 */
export async function resolveClusterCIDR(deps: ResolveClusterCIDRDeps): Promise<string> {
  if (deps.settings.eksControlPlane === false) {
    throw new Error(
      'EKS_CONTROL_PLANE=false: capenter never calls EKS DescribeCluster, so the service CIDR AL2023 nodes need ' +
        '(nodeadm spec.cluster.cidr) is unknown; use another AMI family (AL2, Bottlerocket) for this cluster',
    );
  }
  const out = await deps.eks.send(new DescribeClusterCommand({ name: deps.settings.clusterName }));
  const net = out.cluster?.kubernetesNetworkConfig;
  const cidr = net?.serviceIpv4Cidr ?? net?.serviceIpv6Cidr;
  if (!cidr) throw new Error('no CIDR found in DescribeCluster response');
  return cidr;
}

/** Whether an AWS SDK error is a server fault (5xx; upstream `awserrors.IsServerError`). */
export function isServerFault(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { $fault?: unknown }).$fault === 'server';
}
