/**
 * Reads the {@link DoctorSnapshot} from a cluster: one list per kind, all in parallel, read-only. A kind
 * whose API is not served (CRD not installed: Karpenter's, Cluster API's, CABPK's) reads as `[]`.
 */
import type { KubeObject } from '../apis/core.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import { isNotFound } from '../kube/errors.ts';
import { type ResourceRef, Resources, type ResourceType } from '../kube/resources.ts';
import type { DoctorSnapshot } from './types.ts';

/** CABPK's KubeadmConfigTemplate (bootstrap config of MachineDeployments; not pre-registered in kube/). */
const KubeadmConfigTemplate: ResourceType = {
  group: 'bootstrap.cluster.x-k8s.io',
  version: 'v1beta2',
  plural: 'kubeadmconfigtemplates',
  kind: 'KubeadmConfigTemplate',
  namespaced: true,
};

async function listOrEmpty<T extends KubeObject>(client: KubeClient, ref: ResourceRef): Promise<T[]> {
  try {
    return (await client.list(ref)).items as unknown as T[];
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}

/**
 * Objects the caller already holds (informer caches), read instead of a list: `capenter start` passes its Nodes,
 * Pods and NodeClaims, so the doctor line after its summary does not list 10,000 pods again (a 28-MB answer
 * parsed into a second copy of every pod: the run's peak RSS).
 */
export interface CachedKinds {
  nodes?: readonly KubeObject[];
  pods?: readonly KubeObject[];
  nodeClaims?: readonly KubeObject[];
}

/**
 * Lists everything the checks read (the kinds in `cached` are taken from there instead).
 * @throws KubeApiError / connection errors other than "kind not served" (404).
 */
export async function readSnapshot(
  client: KubeClient,
  clock: Clock,
  cached: CachedKinds = {},
): Promise<DoctorSnapshot> {
  const held = async <T extends KubeObject>(have: readonly KubeObject[] | undefined, ref: ResourceRef) =>
    have ? ([...have] as T[]) : listOrEmpty<T>(client, ref);
  const [
    nodes,
    pods,
    pdbs,
    deployments,
    statefulSets,
    replicaSets,
    daemonSets,
    nodePools,
    nodeClaims,
    ec2NodeClasses,
    machinePools,
    kubeadmConfigs,
    kubeadmConfigTemplates,
  ] = await Promise.all([
    held(cached.nodes, Resources.Node),
    held(cached.pods, Resources.Pod),
    listOrEmpty(client, Resources.PodDisruptionBudget),
    listOrEmpty(client, Resources.Deployment),
    listOrEmpty(client, Resources.StatefulSet),
    listOrEmpty(client, Resources.ReplicaSet),
    listOrEmpty(client, Resources.DaemonSet),
    listOrEmpty(client, Resources.NodePool),
    held(cached.nodeClaims, Resources.NodeClaim),
    listOrEmpty(client, Resources.EC2NodeClass),
    listOrEmpty(client, Resources.MachinePool),
    listOrEmpty(client, Resources.KubeadmConfig),
    listOrEmpty(client, KubeadmConfigTemplate),
  ]);
  return {
    now: new Date(clock.now()),
    nodes,
    pods,
    pdbs,
    deployments,
    statefulSets,
    replicaSets,
    daemonSets,
    nodePools,
    nodeClaims,
    ec2NodeClasses,
    machinePools,
    kubeadmConfigs,
    kubeadmConfigTemplates,
  } as DoctorSnapshot;
}
