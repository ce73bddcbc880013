/**
 * What `capenter bootstrap aws` reads from a Cluster API management cluster for a CAPA cluster instead of
 * asking for it: the region and additional tags from the Cluster's `AWSCluster`
 * (`infrastructure.cluster.x-k8s.io/v1beta2`, `spec.region`, `spec.additionalTags`), and the worker instance
 * profile the cluster's `AWSMachineTemplate`s (`spec.template.spec.iamInstanceProfile`) or `AWSMachinePool`s
 * (`spec.awsLaunchTemplate.iamInstanceProfile`) already use (CAPA's default is
 * `nodes.cluster-api-provider-aws.sigs.k8s.io`). Read-only.
 */
import type { KubeObject } from '../../../apis/core.ts';
import type { KubeClient } from '../../../kube/client.ts';
import { isNotFound } from '../../../kube/errors.ts';
import { Resources } from '../../../kube/resources.ts';

/** What was found for a CAPA cluster. */
export interface CapaClusterInfo {
  /** The CAPI Cluster's name (the `kubernetes.io/cluster/<name>` tag CAPA puts on instances). */
  clusterName: string;
  region?: string;
  additionalTags: Record<string, string>;
  /** Instance profile names used by the cluster's worker templates, most used first. */
  workerInstanceProfiles: string[];
  /** The objects read, as `Kind ns/name` (for the report). */
  sources: string[];
}

/** An error reading the management cluster, naming the object and the fix. */
export class CapaReadError extends Error {
  readonly code = 'CapaReadFailed';
}

function get(obj: unknown, ...path: string[]): unknown {
  let cur = obj;
  for (const p of path)
    cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

/**
 * Reads Cluster `namespace/name` and what hangs off it.
 * @throws CapaReadError when the Cluster or its AWSCluster does not exist or is not CAPA.
 */
export async function readCapaCluster(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<CapaClusterInfo> {
  let cluster: KubeObject;
  try {
    cluster = await client.get(Resources.Cluster, name, namespace);
  } catch (err) {
    if (isNotFound(err))
      throw new CapaReadError(
        `Cluster ${namespace}/${name} not found in the management cluster (--capi-cluster NAMESPACE/NAME)`,
      );
    throw err;
  }
  const infra = get(cluster, 'spec', 'infrastructureRef') as { kind?: string; name?: string } | undefined;
  if (infra?.kind !== 'AWSCluster' || !infra.name)
    throw new CapaReadError(
      `Cluster ${namespace}/${name}: spec.infrastructureRef is ${infra?.kind ?? 'unset'}, not an AWSCluster (pass --region instead)`,
    );
  let aws: KubeObject;
  try {
    aws = await client.get(Resources.AWSCluster, infra.name, namespace);
  } catch (err) {
    if (isNotFound(err))
      throw new CapaReadError(
        `AWSCluster ${namespace}/${infra.name} (from Cluster ${namespace}/${name}) not found`,
      );
    throw err;
  }
  const sources = [`Cluster ${namespace}/${name}`, `AWSCluster ${namespace}/${infra.name}`];
  const counts = new Map<string, number>();
  const selector = { 'cluster.x-k8s.io/cluster-name': name };
  for (const [ref, path] of [
    [Resources.AWSMachineTemplate, ['spec', 'template', 'spec', 'iamInstanceProfile']],
    [Resources.AWSMachinePool, ['spec', 'awsLaunchTemplate', 'iamInstanceProfile']],
  ] as const) {
    let items: KubeObject[] = [];
    try {
      items = (await client.list(ref, { namespace, labelSelector: selector })).items;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    for (const it of items) {
      const p = get(it, ...path);
      if (typeof p !== 'string' || !p) continue;
      // CAPA's control-plane profile is not a worker's.
      if (p.startsWith('control-plane.')) continue;
      const profile = p.replace(/^arn:[^:]+:iam::\d+:instance-profile\/(?:.*\/)?/, '');
      counts.set(profile, (counts.get(profile) ?? 0) + 1);
      sources.push(`${it.kind} ${namespace}/${it.metadata?.name}`);
    }
  }
  const region = get(aws, 'spec', 'region');
  return {
    clusterName: name,
    ...(typeof region === 'string' && region ? { region } : {}),
    additionalTags: (get(aws, 'spec', 'additionalTags') as Record<string, string> | undefined) ?? {},
    workerInstanceProfiles: [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([p]) => p),
    sources,
  };
}
