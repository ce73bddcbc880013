/**
 * `instanceprofile.garbagecollection` of the aws provider (upstream aws/karpenter-provider-aws v1.14.1
 * `pkg/controllers/nodeclass/garbagecollection/controller.go`): every 30 minutes, the instance profiles capenter
 * created for this cluster (IAM path under `/karpenter/<region>/<cluster>/`, see `../nodeclass/instanceprofile.ts`)
 * that nothing uses any more are deleted (role removed first). Such orphans are left by a role change (the class
 * moves to a new profile), a crash between CreateInstanceProfile and the status write, or a class moving to
 * `spec.instanceProfile`. A profile is kept when:
 * - an EC2NodeClass's `status.instanceProfile` names it (upstream `getCurrentProfiles`);
 * - it is protected: created or replaced less than an hour ago (upstream `IsProtected`, `ProtectedProfilesTTL`);
 * - a NodeClaim's `karpenter.k8s.aws/instance-profile-name` annotation names it (upstream `getActiveProfiles`);
 * - (capenter's addition) an instance of the cluster (tag `kubernetes.io/cluster/<cluster>`, not terminated)
 *   carries it, which also covers NodeClaims launched before the annotation existed.
 * Profiles outside the cluster's path (unmanaged ones, other clusters', other regions') are never listed, so never
 * touched.
 */
import { DescribeInstancesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import type { EC2NodeClass, NodeClaim } from '../../../apis/karpenter.ts';
import { SingletonController } from '../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import type { Logger } from '../../../kube/logger.ts';
import { clusterInstanceProfilePath, type InstanceProfileResolver } from '../nodeclass/instanceprofile.ts';
import { ec2NodeClassStatus } from '../nodeclass/types.ts';
import { AnnotationInstanceProfile } from '../provider.ts';
import { withThrottleRetry } from '../retry.ts';

/** Dependencies of {@link garbageCollectInstanceProfiles} and {@link instanceProfileGCController}. */
export interface InstanceProfileGCDeps {
  client: KubeClient;
  ec2: EC2Client;
  /** The resolver the EC2NodeClass controller uses (its protected profiles are kept). */
  profiles: InstanceProfileResolver;
  region: string;
  clusterName: string;
  clock: Clock;
  logger: Logger;
  /** Seconds between passes (default 1800, upstream's 30 minutes). */
  periodSeconds?: number;
}

/** Names of the instance profiles carried by the cluster's instances that are not terminated. */
async function profilesOfInstances(ec2: EC2Client, clusterName: string): Promise<Set<string>> {
  const out = new Set<string>();
  let token: string | undefined;
  do {
    const page = await withThrottleRetry(() =>
      ec2.send(
        new DescribeInstancesCommand({
          Filters: [
            { Name: `tag:kubernetes.io/cluster/${clusterName}`, Values: ['owned'] },
            {
              Name: 'instance-state-name',
              Values: ['pending', 'running', 'stopping', 'stopped', 'shutting-down'],
            },
          ],
          ...(token ? { NextToken: token } : {}),
        }),
      ),
    );
    for (const r of page.Reservations ?? [])
      for (const i of r.Instances ?? []) {
        const arn = i.IamInstanceProfile?.Arn;
        if (arn) out.add(arn.slice(arn.lastIndexOf('/') + 1));
      }
    token = page.NextToken;
  } while (token);
  return out;
}

/** Profiles in use: classes' `status.instanceProfile`, NodeClaims' annotation and the cluster's instances. */
async function profilesInUse(deps: InstanceProfileGCDeps): Promise<Set<string>> {
  const used = new Set<string>();
  for (const nc of (await deps.client.list('EC2NodeClass')).items as EC2NodeClass[]) {
    const name = ec2NodeClassStatus(nc).instanceProfile;
    if (name) used.add(name);
  }
  for (const nc of (await deps.client.list('NodeClaim')).items as NodeClaim[]) {
    const name = nc.metadata.annotations?.[AnnotationInstanceProfile];
    if (name) used.add(name);
  }
  for (const name of await profilesOfInstances(deps.ec2, deps.clusterName)) used.add(name);
  return used;
}

/**
 * One pass: deletes the cluster's managed instance profiles that are neither in use nor protected; returns their
 * names (sorted).
 * @throws on API, IAM or EC2 errors (the controller retries; nothing is deleted when listing what is in use fails).
 */
export async function garbageCollectInstanceProfiles(deps: InstanceProfileGCDeps): Promise<string[]> {
  const used = await profilesInUse(deps);
  const managed = await deps.profiles.list(clusterInstanceProfilePath(deps.region, deps.clusterName));
  const deleted: string[] = [];
  for (const p of managed) {
    const name = p.InstanceProfileName;
    if (!name || used.has(name) || deps.profiles.isProtected(name)) continue;
    try {
      await deps.profiles.delete(name);
    } catch (err) {
      throw new Error(`deleting instance profile ${name}: ${(err as Error).message}`, { cause: err });
    }
    deleted.push(name);
  }
  return deleted.sort();
}

/** The `instanceprofile.garbagecollection` singleton controller (a pass every `periodSeconds`, default 30 min). */
export function instanceProfileGCController(deps: InstanceProfileGCDeps): SingletonController {
  return new SingletonController({
    name: 'instanceprofile.garbagecollection',
    clock: deps.clock,
    logger: deps.logger,
    reconcile: async () => {
      const deleted = await garbageCollectInstanceProfiles(deps);
      for (const name of deleted)
        deps.logger.debug(
          { controller: 'instanceprofile.garbagecollection', 'instance-profile': name },
          'deleted instance profile',
        );
      return { requeueAfter: deps.periodSeconds ?? 1800 };
    },
  });
}
