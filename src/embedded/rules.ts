/**
 * The declared face between capenter and its simulator: the one product file whose rules the stand-ins of
 * `src/sim` evaluate. sim imports only `apis/` and `kube/` and declares what it needs as interfaces
 * (`sim/kubescheduler/rules.ts` `SchedulingRules`, `sim/capi/machinedeployment.ts` `DeploymentNodeShapeResolver`,
 * `sim/aws/prices.ts` `PriceTable`); this module implements them with capenter's own code, and
 * `src/embedded/cluster.ts` (or a caller building a stand-in itself) injects them.
 *
 * Why capenter's own rules: the kube-scheduler and DaemonSet stand-ins then agree with the provisioner on what
 * fits by construction. The price of it (DESIGN.md, docs/architecture.md): a scheduling predicate that differs
 * from kube-scheduler's differs the same way in the stand-in, so the embedded ring cannot catch it; the real
 * kube-scheduler of `npm run test:cluster` is the independent check, and every provisioning case runs there too.
 */
import { DEFAULT_REGION, getInstanceTypes, isSupportedRegion } from '../cloudprovider/aws/catalog/index.ts';
import { resolveDeployment } from '../cloudprovider/clusterapi/deployments.ts';
import { HostPortUsage, podHostPorts } from '../scheduling/hostports.ts';
import {
  daemonSetNodeFit,
  daemonSetPodTolerations,
  firstUntoleratedTaint,
  nodeMatchesNodeAffinity,
  nodeMatchesTerm,
  selectorKey,
  selectorMatches,
  selectorWithLabelKeys,
  spreadCountsNode,
  toleratesKey,
} from '../scheduling/predicates.ts';
import { addInto, podRequests } from '../scheduling/resources.ts';
import { selectKeyOf, TopologyGroup } from '../scheduling/topology.ts';
import { hasClaimVolumes, podVolumeTopology, VolumeIndex } from '../scheduling/volumetopology.ts';
import type { PriceTable } from '../sim/aws/prices.ts';
import type { DeploymentNodeShapeResolver } from '../sim/capi/machinedeployment.ts';
import type { SchedulingRules } from '../sim/kubescheduler/rules.ts';

/** The scheduling core's predicates (`src/scheduling/{predicates,resources,hostports,topology,volumetopology}.ts`). */
export const schedulingRules: SchedulingRules = {
  podRequests,
  addInto,
  podHostPorts,
  hostPortSet: () => new HostPortUsage(),
  selectKeyOf,
  podGroup: (id, kind, selector, namespaces) => new TopologyGroup(id, kind, '', selector, namespaces),
  firstUntoleratedTaint,
  nodeMatchesNodeAffinity,
  nodeMatchesTerm,
  selectorKey,
  selectorMatches,
  selectorWithLabelKeys,
  spreadCountsNode,
  toleratesKey,
  daemonSetNodeFit,
  daemonSetPodTolerations,
  hasClaimVolumes,
  volumeTopology: (objects) => {
    const index = new VolumeIndex(objects);
    return (pod) => podVolumeTopology(pod, index);
  },
};

/** The clusterapi provider's reading of a MachineDeployment (`resolveDeployment`), for the MachineDeployment stand-in. */
export const machineDeploymentNodeShape: DeploymentNodeShapeResolver = (deployment, template) => {
  const r = resolveDeployment({ deployment, template });
  return r.ok ? r.deployment : undefined;
};

/**
 * The embedded AWS catalog's prices for `region` (the default region's table when the region is not embedded):
 * on-demand from the price list, spot from the Spot Advisor estimate (types without an estimate have no spot
 * price). For the AWS emulator proxy (`AwsEmulatorProxyOptions.prices`).
 */
export function catalogPriceTable(region: string): PriceTable {
  const r = isSupportedRegion(region) ? region : DEFAULT_REGION;
  const onDemand = new Map<string, number>();
  const spot = new Map<string, number>();
  for (const it of getInstanceTypes({ region: r }).instanceTypes) {
    for (const o of it.offerings) {
      if (o.capacityType === 'on-demand') onDemand.set(it.name, o.priceUSDPerHour);
      else if (o.capacityType === 'spot') spot.set(it.name, o.priceUSDPerHour);
    }
  }
  return { onDemand, spot };
}
