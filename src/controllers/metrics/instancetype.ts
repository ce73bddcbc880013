/**
 * `metrics.instancetype`: the instance-type catalog gauges of upstream's AWS provider, computed for every provider
 * from `CloudProvider.instanceTypes(nodePool)` of each NodePool once a minute (aws/karpenter-provider-aws
 * `pkg/controllers/metrics/controller.go` and `pkg/providers/instancetype/instancetype.go`):
 * - `karpenter_cloudprovider_instance_type_cpu_cores{instance_type}`: vCPUs (capacity `cpu`, cores);
 * - `karpenter_cloudprovider_instance_type_memory_bytes{instance_type}`: capacity `memory`, bytes;
 * - `karpenter_cloudprovider_instance_type_offering_available{instance_type, capacity_type, zone}`: 1 when any
 *   NodePool's offering with those dimensions is available, else 0;
 * - `karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type, capacity_type, zone}`: the
 *   offering's hourly price in USD.
 * A NodePool whose instance types cannot be resolved is logged and skipped (the others are still published), as
 * upstream. Series of types no NodePool offers any more are dropped on the next pass.
 *
 * With `nodeClaims`, the same pass also sets upstream's NodePool cost (kubernetes-sigs/karpenter
 * `pkg/controllers/metrics/nodepool/controller.go` `ClusterCost`, `pkg/state/cost/cost.go`):
 * - `karpenter_nodepools_cost_total{nodepool}`: the sum of the offering price (USD/hour, available or not) of each
 *   of the NodePool's NodeClaims that carries instance-type, zone and capacity-type labels (a launched one), with
 *   the prices this pass resolved (NodeOverlay prices included); 0 for a NodePool without such NodeClaims;
 * - `karpenter_nodepools_cost_tracker_errors_total{nodepool}`: +1 for each such NodeClaim whose offering is not
 *   among the NodePool's instance types (not counted in the cost), as upstream's tracker counts a missing price.
 * Upstream updates the cost on every NodeClaim event; capenter once per pass (a minute by default).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import { LabelCapacityType, LabelInstanceType, LabelNodePool, LabelTopologyZone } from '../../apis/labels.ts';
import type { CloudProvider } from '../../cloudprovider/types.ts';
import type { Clock } from '../../kube/clock.ts';
import { registeredCounter } from '../../kube/metrics.ts';
import { type Controller, errorMessage, SingletonController } from '../runtime/index.ts';
import { gauge } from './common.ts';

/** Metric names of this controller. */
export const INSTANCE_TYPE_METRICS = {
  cpu: 'karpenter_cloudprovider_instance_type_cpu_cores',
  memory: 'karpenter_cloudprovider_instance_type_memory_bytes',
  available: 'karpenter_cloudprovider_instance_type_offering_available',
  price: 'karpenter_cloudprovider_instance_type_offering_price_estimate',
  nodePoolCost: 'karpenter_nodepools_cost_total',
  costTrackerErrors: 'karpenter_nodepools_cost_tracker_errors_total',
} as const;

/** Seconds between passes (upstream: `RequeueAfter: time.Minute`). */
export const InstanceTypeMetricsPeriodSeconds = 60;

/** Dependencies of {@link InstanceTypeMetricsController}. */
export interface InstanceTypeMetricsDeps {
  cloudProvider: CloudProvider;
  /** The NodePools to resolve instance types for (cluster state's). */
  nodePools: () => readonly NodePool[];
  /** The NodeClaims whose offerings make up each NodePool's cost (cluster state's); absent: no cost metrics. */
  nodeClaims?: () => readonly NodeClaim[];
  clock: Clock;
  logger: Logger;
  registry: Registry;
  /** Seconds between passes (default {@link InstanceTypeMetricsPeriodSeconds}). */
  periodSeconds?: number;
}

type OfferingLabel = 'instance_type' | 'capacity_type' | 'zone';

/** The instance-type catalog metrics controller; see the module doc. */
export class InstanceTypeMetricsController implements Controller {
  readonly name = 'metrics.instancetype';
  private readonly loop: SingletonController;
  private readonly gauges;
  private readonly costErrors;

  constructor(private readonly deps: InstanceTypeMetricsDeps) {
    const offering: OfferingLabel[] = ['instance_type', 'capacity_type', 'zone'];
    this.gauges = {
      cpu: gauge(deps.registry, INSTANCE_TYPE_METRICS.cpu, 'VCPUs cores for a given instance type.', [
        'instance_type',
      ]),
      memory: gauge(
        deps.registry,
        INSTANCE_TYPE_METRICS.memory,
        'Memory, in bytes, for a given instance type.',
        ['instance_type'],
      ),
      available: gauge(
        deps.registry,
        INSTANCE_TYPE_METRICS.available,
        'Instance type offering availability, based on instance type, capacity type, and zone',
        offering,
      ),
      price: gauge(
        deps.registry,
        INSTANCE_TYPE_METRICS.price,
        'Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.',
        offering,
      ),
      nodePoolCost: gauge(
        deps.registry,
        INSTANCE_TYPE_METRICS.nodePoolCost,
        "Total cost of the nodepool from Karpenter's perspective. Units are determined by the cloud provider. Not an authoritative source for billing. Includes modifications due to NodeOverlays",
        ['nodepool'],
      ),
    };
    this.costErrors = registeredCounter(
      deps.registry,
      INSTANCE_TYPE_METRICS.costTrackerErrors,
      'Number of errors encountered during cost tracking operations. Labeled by nodepool and nodeclaim.',
      ['nodepool'],
    );
    this.loop = new SingletonController({
      name: this.name,
      clock: deps.clock,
      logger: deps.logger,
      reconcile: async () => {
        await this.update();
        return { requeueAfter: deps.periodSeconds ?? InstanceTypeMetricsPeriodSeconds };
      },
    });
  }

  /** Runs passes until `signal` aborts. */
  start(signal: AbortSignal): Promise<void> {
    return this.loop.start(signal);
  }

  /** One pass: resolves every NodePool's instance types, then replaces all four gauges at once. */
  async update(): Promise<void> {
    const cpu = new Map<string, number>();
    const memory = new Map<string, number>();
    const available = new Map<string, boolean>();
    const price = new Map<string, number>();
    const cost = new Map<string, number>();
    const claims = this.nodeClaimsByPool();
    for (const np of this.deps.nodePools()) {
      let types: Awaited<ReturnType<CloudProvider['instanceTypes']>>;
      try {
        types = await this.deps.cloudProvider.instanceTypes(np);
      } catch (err) {
        this.deps.logger.warn(
          { nodepool: np.metadata.name, err: errorMessage(err) },
          'getting instance types for metrics',
        );
        continue;
      }
      for (const it of types) {
        if (it.capacity.cpu !== undefined) cpu.set(it.name, it.capacity.cpu / 1000);
        if (it.capacity.memory !== undefined) memory.set(it.name, it.capacity.memory);
        for (const o of it.offerings) {
          const key = JSON.stringify([it.name, o.capacityType, o.zone]);
          available.set(key, (available.get(key) ?? false) || o.available);
          price.set(key, o.priceUSDPerHour);
        }
      }
      if (claims) cost.set(np.metadata.name, this.nodePoolCost(np.metadata.name, types, claims));
    }
    for (const g of Object.values(this.gauges)) g.reset();
    for (const [name, v] of cpu) this.gauges.cpu.set({ instance_type: name }, v);
    for (const [name, v] of memory) this.gauges.memory.set({ instance_type: name }, v);
    const labels = (key: string): Record<OfferingLabel, string> => {
      const [instance_type, capacity_type, zone] = JSON.parse(key) as string[];
      return { instance_type: instance_type!, capacity_type: capacity_type!, zone: zone! };
    };
    for (const [key, v] of available) this.gauges.available.set(labels(key), v ? 1 : 0);
    for (const [key, v] of price) this.gauges.price.set(labels(key), v);
    for (const [nodepool, v] of cost) this.gauges.nodePoolCost.set({ nodepool }, v);
  }

  /** The launched NodeClaims (instance-type, zone and capacity-type labels) by NodePool; undefined without `nodeClaims`. */
  private nodeClaimsByPool(): Map<string, NodeClaim[]> | undefined {
    if (!this.deps.nodeClaims) return undefined;
    const out = new Map<string, NodeClaim[]>();
    for (const nc of this.deps.nodeClaims()) {
      const l = nc.metadata.labels ?? {};
      const pool = l[LabelNodePool];
      if (!pool || !l[LabelInstanceType] || !l[LabelTopologyZone] || !l[LabelCapacityType]) continue;
      out.set(pool, [...(out.get(pool) ?? []), nc]);
    }
    return out;
  }

  /**
   * The NodePool's cost in USD/hour: each of its launched NodeClaims' offering price among `types`; a NodeClaim whose
   * offering is not there counts a cost-tracker error and adds nothing.
   */
  private nodePoolCost(
    nodePool: string,
    types: Awaited<ReturnType<CloudProvider['instanceTypes']>>,
    claims: ReadonlyMap<string, NodeClaim[]>,
  ): number {
    let sum = 0;
    for (const nc of claims.get(nodePool) ?? []) {
      const l = nc.metadata.labels ?? {};
      const o = types
        .find((t) => t.name === l[LabelInstanceType])
        ?.offerings.find((x) => x.zone === l[LabelTopologyZone] && x.capacityType === l[LabelCapacityType]);
      if (o) sum += o.priceUSDPerHour;
      else this.costErrors.inc({ nodepool: nodePool });
    }
    return sum;
  }
}
