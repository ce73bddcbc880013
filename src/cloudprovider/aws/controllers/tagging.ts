/**
 * `nodeclaim.tagging` of the aws provider (upstream aws/karpenter-provider-aws v1.14.1
 * `pkg/controllers/nodeclaim/tagging/controller.go`): once a NodeClaim's Node is known (`status.nodeName`), its
 * instance is tagged `Name=<node name>`, `karpenter.sh/nodeclaim=<nodeclaim>` and
 * `eks:eks-cluster-name=<cluster>` (only the tags the instance does not carry yet; the launch already sets the last
 * two), and the NodeClaim is annotated `karpenter.k8s.aws/tagged: "true"` and
 * `karpenter.k8s.aws/cluster-name-tagged: "true"` so it is not looked at again. NodeClaims being deleted, without
 * a node name, or whose instance EC2 no longer knows are skipped.
 *
 * EC2 calls per pass: one DescribeInstances for all NodeClaims to tag (upstream one per NodeClaim), then one
 * CreateTags per instance that misses a tag. Upstream sleeps a second after each CreateTags to spare the mutating
 * API bucket it shares with CreateFleet; here the pass tags at most {@link TaggingDeps.maxPerPass} instances and
 * leaves the rest to the next pass (no wall-clock sleep).
 */
import {
  CreateTagsCommand,
  DescribeInstancesCommand,
  type EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import type { NodeClaim } from '../../../apis/karpenter.ts';
import { SingletonController } from '../../../controllers/runtime/index.ts';
import type { KubeClient } from '../../../kube/client.ts';
import type { Clock } from '../../../kube/clock.ts';
import { isNotFound } from '../../../kube/errors.ts';
import type { Logger } from '../../../kube/logger.ts';
import { parseAwsProviderID } from '../provider.ts';
import { isAwsNotFound, withThrottleRetry } from '../retry.ts';

/** NodeClaim annotation: the instance carries the Name and nodeclaim tags (upstream `v1.AnnotationInstanceTagged`). */
export const AnnotationInstanceTagged = 'karpenter.k8s.aws/tagged';
/** NodeClaim annotation: the instance carries `eks:eks-cluster-name` (upstream `AnnotationClusterNameTaggedCompatability`). */
export const AnnotationClusterNameTagged = 'karpenter.k8s.aws/cluster-name-tagged';

/** Dependencies of {@link tagInstances} and {@link taggingController}. */
export interface TaggingDeps {
  client: KubeClient;
  ec2: EC2Client;
  clusterName: string;
  clock: Clock;
  logger: Logger;
  /** Seconds between passes (default 10; upstream reacts to NodeClaim events). */
  periodSeconds?: number;
  /** CreateTags calls per pass at most (default 20). */
  maxPerPass?: number;
}

/** Upstream `isTaggable`: a node name, not deleting, and not both annotations `"true"`. */
function isTaggable(nc: NodeClaim): boolean {
  const a = nc.metadata.annotations ?? {};
  if (a[AnnotationInstanceTagged] === 'true' && a[AnnotationClusterNameTagged] === 'true') return false;
  return !!nc.status?.nodeName && !nc.metadata.deletionTimestamp;
}

/** The instances `ids` that EC2 knows, by ID (one DescribeInstances; unknown IDs are described one by one). */
async function describe(ec2: EC2Client, ids: string[]): Promise<Map<string, Instance>> {
  const one = async (list: string[]): Promise<Instance[]> => {
    const out = await withThrottleRetry(() => ec2.send(new DescribeInstancesCommand({ InstanceIds: list })));
    return (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
  };
  let found: Instance[];
  try {
    found = await one(ids);
  } catch (err) {
    if (!isAwsNotFound(err)) throw err;
    found = [];
    for (const id of ids)
      found.push(...(await one([id]).catch((e) => (isAwsNotFound(e) ? [] : Promise.reject(e)))));
  }
  return new Map(found.filter((i) => i.InstanceId).map((i) => [i.InstanceId!, i]));
}

/**
 * One pass: tags the instances of taggable NodeClaims and annotates those NodeClaims; returns the names of the
 * NodeClaims annotated (sorted).
 * @throws on API or EC2 errors other than not-found (the controller retries).
 */
export async function tagInstances(deps: TaggingDeps): Promise<string[]> {
  const claims: Array<{ nc: NodeClaim; id: string }> = [];
  for (const nc of (await deps.client.list('NodeClaim')).items as NodeClaim[]) {
    const id = isTaggable(nc) ? parseAwsProviderID(nc.status?.providerID ?? '')?.instanceId : undefined;
    if (id) claims.push({ nc, id });
  }
  if (claims.length === 0) return [];
  const instances = await describe(deps.ec2, [...new Set(claims.map((c) => c.id))].sort());
  const done: string[] = [];
  let calls = 0;
  for (const { nc, id } of claims) {
    const inst = instances.get(id);
    if (!inst) continue;
    const have = new Set((inst.Tags ?? []).map((t) => t.Key));
    const want: Record<string, string> = {
      Name: nc.status!.nodeName!,
      'karpenter.sh/nodeclaim': nc.metadata.name!,
      'eks:eks-cluster-name': deps.clusterName,
    };
    const missing = Object.entries(want).filter(([k]) => !have.has(k));
    if (missing.length > 0) {
      if (calls >= (deps.maxPerPass ?? 20)) break;
      calls++;
      const Tags = missing.map(([Key, Value]) => ({ Key, Value }));
      await withThrottleRetry(() => deps.ec2.send(new CreateTagsCommand({ Resources: [id], Tags })));
    }
    try {
      await deps.client.patch('NodeClaim', nc.metadata.name!, undefined, {
        metadata: {
          annotations: { [AnnotationInstanceTagged]: 'true', [AnnotationClusterNameTagged]: 'true' },
        },
      });
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    done.push(nc.metadata.name!);
  }
  return done.sort();
}

/** The `nodeclaim.tagging` singleton controller (a pass every `periodSeconds`). */
export function taggingController(deps: TaggingDeps): SingletonController {
  return new SingletonController({
    name: 'nodeclaim.tagging',
    clock: deps.clock,
    logger: deps.logger,
    reconcile: async () => {
      const tagged = await tagInstances(deps);
      if (tagged.length > 0)
        deps.logger.debug({ controller: 'nodeclaim.tagging', tagged }, 'tagged instances');
      return { requeueAfter: deps.periodSeconds ?? 10 };
    },
  });
}
