/**
 * Builds the input of the pure disruption core (`src/disruption` `computeDisruption`) from cluster state: every
 * Node with its NodeClaim and bound pods (StateNodes), pending pods, NodePools (`spec.disruption` defaulted), DaemonSets, PDBs,
 * namespaces, the NodePool usage of in-flight NodeClaims, instance types per NodePool (`CloudProvider.instanceTypes`) and provider drift
 * (`CloudProvider.isDrifted`), at `clock.now()`. Mirrors what upstream kubernetes-sigs/karpenter
 * `pkg/controllers/disruption/helpers.go` `GetCandidates` / `SimulateScheduling` read from state.
 */
import type { Pod } from '../../apis/core.ts';
import { applyDefaults } from '../../apis/defaults.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import type { CloudProvider, InstanceType } from '../../cloudprovider/types.ts';
import type {
  DisruptionFeatureGates,
  DisruptionInput,
  DisruptionNode,
  DisruptionOptions,
} from '../../disruption/index.ts';
import { usageByPool } from '../../scheduling/limits.ts';
import type { ClusterSnapshot } from '../../state/cluster.ts';
import { podKey } from '../../state/pods.ts';
import { instanceTypeIndex } from '../provisioning/input.ts';
import { errorMessage } from '../runtime/index.ts';

/** What {@link buildDisruptionInput} needs besides the snapshot. */
export interface DisruptionInputDeps {
  cloudProvider: Pick<CloudProvider, 'instanceTypes' | 'isDrifted'>;
  featureGates?: DisruptionFeatureGates;
  options?: DisruptionOptions;
  /** Receives NodePools whose instance types could not be resolved (they get an empty list). */
  onInstanceTypeError?: (nodePool: string, message: string) => void;
}

/**
 * The core's input for `snapshot` (time = `snapshot.takenAt`). Instance types are resolved per NodePool (errors →
 * empty list, reported through `onInstanceTypeError`); provider drift is asked for every NodeClaim with a Node
 * (errors → not drifted). Never throws for provider failures.
 */
export async function buildDisruptionInput(
  snapshot: ClusterSnapshot,
  deps: DisruptionInputDeps,
): Promise<DisruptionInput> {
  const nodePools: NodePool[] = snapshot.nodePools
    .filter((np) => !np.metadata.deletionTimestamp)
    .map((np) => {
      // disruption defaults only: the template stays as stored so the NodePool hash (drift) is unchanged
      const d = applyDefaults({ ...np, apiVersion: 'karpenter.sh/v1', kind: 'NodePool' } as NodePool);
      d.spec.template = np.spec.template;
      return d;
    });
  const instanceTypes: Record<string, InstanceType[]> = {};
  await Promise.all(
    nodePools.map(async (np) => {
      try {
        instanceTypes[np.metadata.name] = await deps.cloudProvider.instanceTypes(np);
      } catch (err) {
        instanceTypes[np.metadata.name] = [];
        deps.onInstanceTypeError?.(np.metadata.name, errorMessage(err));
      }
    }),
  );
  const nodes: DisruptionNode[] = [];
  await Promise.all(
    snapshot.stateNodes.map(async (sn) => {
      if (!sn.node) return;
      const dn: DisruptionNode = { node: sn.node, pods: sn.pods };
      if (sn.nodeClaim) dn.nodeClaim = sn.nodeClaim;
      if (sn.markedForDeletion) dn.markedForDeletion = true;
      if (sn.nominated) dn.nominated = true;
      if (sn.nodeClaim && !sn.markedForDeletion) {
        try {
          const drift = await deps.cloudProvider.isDrifted(sn.nodeClaim);
          if (drift) dn.providerDrifted = drift;
        } catch {
          // a provider that cannot tell is not drifted this pass
        }
      }
      nodes.push(dn);
    }),
  );
  nodes.sort((a, b) => ((a.node.metadata.name ?? '') < (b.node.metadata.name ?? '') ? -1 : 1));
  // pending pods, except those nominated to an in-flight NodeClaim: capacity is already on its way for them, and
  // sizing replacements for them too would launch twice for the same pods
  const pendingPods: Pod[] = snapshot.pods.filter(
    (p) => !p.spec?.nodeName && snapshot.nominations?.get(podKey(p))?.target.kind !== 'nodeclaim',
  );
  // in-flight NodeClaims (no Node yet) count against the NodePool limits of replacements
  const inFlight = snapshot.stateNodes.filter((sn) => !sn.node && sn.nodeClaim && !sn.markedForDeletion);
  const inFlightUsage = usageByPool(inFlight, instanceTypeIndex(instanceTypes));
  const input: DisruptionInput = {
    nodes,
    pendingPods,
    ...(Object.keys(inFlightUsage).length > 0 ? { inFlightUsage } : {}),
    nodePools,
    instanceTypes,
    daemonSets: snapshot.daemonSets,
    pdbs: snapshot.podDisruptionBudgets,
    namespaces: snapshot.namespaces,
    now: snapshot.takenAt,
  };
  if (snapshot.volumes) input.volumes = snapshot.volumes;
  if (deps.featureGates) input.featureGates = deps.featureGates;
  if (deps.options) input.options = deps.options;
  return input;
}
