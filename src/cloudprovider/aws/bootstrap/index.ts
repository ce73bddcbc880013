/**
 * `capenter bootstrap aws`: creates (or, with `delete`, removes) Karpenter's AWS prerequisites for one cluster —
 * see `plan.ts` for the resources, `apply.ts` for how, `cloudformation.ts` for the dry-run template, `capa.ts`
 * for what is read from a CAPA management cluster. Dependencies (SDK clients, Kubernetes client) are injected.
 */
import { GetInstanceProfileCommand } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, type STSClient } from '@aws-sdk/client-sts';
import type { KubeClient } from '../../../kube/client.ts';
import { applyBootstrap, type BootstrapClients, type BootstrapReport, deleteBootstrap } from './apply.ts';
import { readCapaCluster } from './capa.ts';
import { cloudFormationYaml } from './cloudformation.ts';
import { type BootstrapPlan, bootstrapPlan, checkClusterName, type PlanInput } from './plan.ts';

export type { BootstrapReport, ResourceOutcome } from './apply.ts';
export { BOOTSTRAP_TAG, bootstrapPlan } from './plan.ts';

/** Options of {@link runBootstrapAws} (the CLI's flags). */
export interface BootstrapAwsOptions {
  clusterName?: string;
  region?: string;
  controllerRole?: string;
  /** CAPA management cluster to read, and the Cluster (`namespace/name`) in it. */
  capi?: { client: KubeClient; namespace: string; name: string };
  dryRun?: boolean;
  delete?: boolean;
}

/** What a run produced: a dry-run plan, or an apply/delete report; plus notices for the user. */
export type BootstrapOutcome =
  | { kind: 'plan'; plan: BootstrapPlan; cloudformation: string; notices: string[] }
  | { kind: 'report'; report: BootstrapReport; notices: string[] };

/** A usage or input error (exit 2 in the CLI): names the flag and the fix. */
export class BootstrapInputError extends Error {
  readonly code = 'BootstrapInvalidInput';
}

/** AWS partition of a region (`cn-*` → `aws-cn`, `us-gov-*` → `aws-us-gov`, else `aws`). */
export function partitionOf(region: string): string {
  if (region.startsWith('cn-')) return 'aws-cn';
  if (region.startsWith('us-gov-')) return 'aws-us-gov';
  return 'aws';
}

/**
 * Resolves the inputs (CAPA, STS), builds the plan and carries it out (or only prints it when `dryRun`).
 * @param clientsFor builds the SDK clients for a region (default credential chain).
 * @throws BootstrapInputError for missing/invalid inputs; CapaReadError when the management cluster can't be read.
 */
export async function runBootstrapAws(
  opts: BootstrapAwsOptions,
  clientsFor: (region: string) => BootstrapClients & { sts: STSClient },
): Promise<BootstrapOutcome> {
  const notices: string[] = [];
  let clusterName = opts.clusterName;
  let region = opts.region;
  let tags: Record<string, string> = {};
  let profiles: string[] = [];
  if (opts.capi) {
    const info = await readCapaCluster(opts.capi.client, opts.capi.namespace, opts.capi.name);
    clusterName ??= info.clusterName;
    if (!region && info.region) region = info.region;
    tags = info.additionalTags;
    profiles = info.workerInstanceProfiles;
    notices.push(`read from the management cluster: ${info.sources.join(', ')}`);
  }
  if (!clusterName)
    throw new BootstrapInputError('--cluster-name is required (or --capi-cluster NAMESPACE/NAME)');
  const nameError = checkClusterName(clusterName);
  if (nameError) throw new BootstrapInputError(nameError);
  if (!region)
    throw new BootstrapInputError(
      'no region: pass --region or set AWS_REGION (or --capi-cluster for a CAPA cluster)',
    );
  const clients = clientsFor(region);
  let accountId = 'ACCOUNT_ID';
  try {
    accountId = (await clients.sts.send(new GetCallerIdentityCommand({}))).Account ?? accountId;
  } catch (err) {
    if (!opts.dryRun)
      throw new BootstrapInputError(
        `cannot determine the AWS account (sts:GetCallerIdentity): ${(err as Error).message}`,
      );
    notices.push('no AWS credentials: the dry run shows ACCOUNT_ID in ARNs');
  }
  let existingInstanceProfile: PlanInput['existingInstanceProfile'];
  for (const p of profiles) {
    try {
      const got = await clients.iam.send(new GetInstanceProfileCommand({ InstanceProfileName: p }));
      const roleName = got.InstanceProfile?.Roles?.[0]?.RoleName;
      if (roleName) {
        existingInstanceProfile = { name: p, roleName };
        notices.push(
          `reusing CAPA's worker instance profile ${p} (role ${roleName}): no node role is created`,
        );
        break;
      }
    } catch {
      notices.push(
        `worker instance profile ${p} (from CAPA) not found in IAM: a node role is created instead`,
      );
    }
  }
  const input: PlanInput = {
    clusterName,
    region,
    partition: partitionOf(region),
    accountId,
    tags,
    ...(opts.controllerRole ? { controllerRole: opts.controllerRole } : {}),
    ...(existingInstanceProfile ? { existingInstanceProfile } : {}),
  };
  if (!opts.controllerRole && !opts.delete)
    notices.push(
      'no --controller-role: the controller policies are created but not attached; attach them to the role the controller runs as (IRSA or EKS Pod Identity)',
    );
  const plan = bootstrapPlan(input);
  if (opts.dryRun) return { kind: 'plan', plan, cloudformation: cloudFormationYaml(input), notices };
  const report = opts.delete ? await deleteBootstrap(clients, plan) : await applyBootstrap(clients, plan);
  return { kind: 'report', report, notices };
}
