/**
 * The `aws` provider module (`--cloud-provider aws`): NodeClaims become EC2 instances (CreateFleet), NodePools
 * reference `EC2NodeClass`es. Settings: {@link AWS_SETTINGS} without `CLUSTER_NAME` and `AWS_REGION`, which are core
 * settings (`src/operator/options.ts`) read again here with the aws rules; without `AWS_REGION` or `--region` the
 * region comes from the instance metadata service (`./imds.ts`), as upstream. SDK endpoints and credentials come from
 * the SDK's default chain (AWS_ENDPOINT_URL, profiles, IRSA, IMDS). The implementation (`./setup.ts`, the AWS SDK) is
 * loaded only by {@link awsModule}'s `load`.
 */
import type { ProviderLoadDeps, ProviderModule } from '../module.ts';
import { type IMDSOptions, imdsOptionsFromEnv, regionFromIMDS } from './imds.ts';
import { awsNodeClassKinds, awsProviderName } from './kinds.ts';
import {
  AWS_SETTINGS,
  AWS_UPSTREAM_ONLY_SETTINGS,
  type AwsSettings,
  resolveAwsSettings,
  validateAwsSettings,
} from './settings.ts';

/** Env names of the core settings the aws list repeats (resolved by the core; not flags of their own). */
const CORE_ENVS = new Set(['CLUSTER_NAME', 'AWS_REGION']);

/** The aws module's settings: the registry's, plus where to ask the instance metadata service for the region. */
export interface AwsModuleSettings extends AwsSettings {
  /** The SDK's IMDS variables (`AWS_EC2_METADATA_SERVICE_ENDPOINT`, `AWS_EC2_METADATA_DISABLED`). */
  imds: IMDSOptions;
}

/** The aws provider module. */
export const awsModule: ProviderModule<AwsModuleSettings> = {
  name: awsProviderName,
  summary: 'EC2 instances',
  nodeClassKinds: awsNodeClassKinds,
  settings: [...AWS_SETTINGS.filter((s) => !CORE_ENVS.has(s.env)), ...AWS_UPSTREAM_ONLY_SETTINGS],
  configure(src, core) {
    const settings = validateAwsSettings(resolveAwsSettings(src));
    // AWS_REGION or --region (a core flag); neither: the instance metadata service at load, as upstream
    if (!settings.region && src.flags?.region !== undefined) settings.region = core.region;
    core.clusterName = settings.clusterName;
    return { ...settings, imds: imdsOptionsFromEnv(src.env ?? {}) };
  },
  async load(configured, deps) {
    const settings = { ...configured, region: configured.region || (await regionFromIMDS(configured.imds)) };
    const [{ createAwsClients }, { awsSetup }, { S3BootstrapStore }, identity] = await Promise.all([
      import('./clients.ts'),
      import('./setup.ts'),
      import('./s3store.ts'),
      import('./identity.ts'),
    ]);
    const credentials = identity.defaultClusterCredentials(settings.region);
    const clients = createAwsClients({ region: settings.region, credentials: credentials.provider });
    // upstream GetCABundle: CLUSTER_CA_BUNDLE, else the CA the controller's own kubeconfig trusts
    const kubeconfigCABundle = settings.clusterCABundle ? '' : await deps.client.caBundleBase64();
    const kubeDNSIP = await kubeDNSServiceIP(deps);
    return {
      ...awsSetup({
        clients,
        settings,
        region: settings.region,
        ...(kubeconfigCABundle ? { kubeconfigCABundle } : {}),
        ...(kubeDNSIP ? { kubeDNSIP } : {}),
      }),
      region: settings.region,
      capi: {
        clusterName: settings.clusterName,
        // the bootstrap data's S3 calls sign with the cluster's identity too (CAPA's S3 bucket calls do)
        bootstrapStore: () =>
          new S3BootstrapStore((region) => ({ region, credentials: credentials.provider })),
        clusterIdentity: (d) => identity.clusterIdentityCheck(credentials, { ...d, region: settings.region }),
      },
      close: () => clients.destroy(),
    };
  },
  embedded: {
    summary: 'EC2 instances in an emulator at AWS_ENDPOINT_URL',
    check: (env) =>
      env.AWS_ENDPOINT_URL_EC2 || env.AWS_ENDPOINT_URL
        ? undefined
        : 'start --cloud-provider aws runs against an AWS API emulator only: set AWS_ENDPOINT_URL (e.g. moto_server at http://127.0.0.1:5000); use `capenter controller --cloud-provider aws` for a real account',
    defaultRegion: (env) => env.AWS_REGION,
  },
};

/**
 * The ClusterIP of the `kube-system/kube-dns` Service, the nodes' cluster DNS when a class sets no
 * `kubelet.clusterDNS` (upstream `operator.KubeDNSIP`). Undefined, with a debug log, when it cannot be read or has no
 * IP: as upstream, a cluster with custom DNS still runs (its classes set `kubelet.clusterDNS`).
 */
export async function kubeDNSServiceIP(
  deps: Pick<ProviderLoadDeps, 'client' | 'logger'>,
): Promise<string | undefined> {
  const service = { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true };
  try {
    const svc = (await deps.client.tryGet(service, 'kube-dns', 'kube-system')) as
      | { spec?: { clusterIP?: string } }
      | undefined;
    const ip = svc?.spec?.clusterIP;
    if (ip && ip !== 'None') return ip;
    deps.logger.debug(
      'unable to detect the IP of the kube-dns service: kube-system/kube-dns has no clusterIP',
    );
  } catch (err) {
    deps.logger.debug(`unable to detect the IP of the kube-dns service: ${(err as Error).message}`);
  }
  return undefined;
}
