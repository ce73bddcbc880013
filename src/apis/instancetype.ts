/**
 * The instance-type model every layer shares: an instance type, its offerings (zone × capacity type × price ×
 * availability) and the capacity types. It lives in `apis/` so the pure scheduling core depends on nothing
 * above `apis/`; `cloudprovider/types.ts` re-exports it for the providers.
 * Source of the model: kubernetes-sigs/karpenter `pkg/cloudprovider/types.go` (`InstanceType`, `Offering`).
 */
import type { Resources } from './quantity.ts';

/** `on-demand`, `spot` or `reserved` (label `karpenter.sh/capacity-type`). */
export type CapacityType = 'on-demand' | 'spot' | 'reserved';

/**
 * Where one instance type can be launched: a zone × capacity type, its price and whether it is available now.
 */
export interface Offering {
  /** Zone name, e.g. `us-east-1a` (label `topology.kubernetes.io/zone`). */
  zone: string;
  capacityType: CapacityType;
  /** USD per hour. */
  priceUSDPerHour: number;
  /** False when the offering is known to be out of capacity (ICE) or not offered now. */
  available: boolean;
  /**
   * How the price was obtained: `on-demand` (AWS price list for the region), `on-demand-fallback`
   * (us-east-1 table used for another region, as upstream does), `spot-estimate`
   * (on-demand × (1 − Spot Advisor savings)), `provider` (reported by the cloud), or `node-overlay`
   * (set or adjusted by a NodeOverlay, `scheduling/nodeoverlay.ts`).
   */
  priceSource: 'on-demand' | 'on-demand-fallback' | 'spot-estimate' | 'provider' | 'node-overlay';
  /**
   * A `reserved` offering's capacity reservation ID (upstream `Offering.ReservationID()`); each reservation is its own
   * offering, so one zone can hold several reserved offerings of a type.
   */
  reservationID?: string;
  /** Instances the reservation can still take (upstream `Offering.ReservationCapacity`); reserved offerings only. */
  reservationCapacity?: number;
  /**
   * Labels a node launched from this offering carries besides the instance type's, zone and capacity type (aws: the
   * `karpenter.k8s.aws/capacity-reservation-*` labels of a reserved offering).
   */
  labels?: Readonly<Record<string, string>>;
}

/**
 * One instance type as the scheduler sees it.
 * - `labels`: every label a node of this type carries that does not depend on the offering
 *   (`node.kubernetes.io/instance-type`, `kubernetes.io/arch`, `kubernetes.io/os`, `karpenter.k8s.aws/*`);
 *   zone and capacity type come from {@link Offering}.
 * - `capacity`: what the machine has (cpu millicores, memory bytes after VM overhead, pods, ephemeral-storage
 *   bytes, extended resources as counts).
 * - `overhead`: kube-reserved, system-reserved and the eviction threshold subtracted from capacity.
 * - `allocatable`: capacity − all overhead, what pods can request (internal units, see `Resources`).
 */
export interface InstanceType {
  name: string;
  labels: Readonly<Record<string, string>>;
  capacity: Resources;
  overhead: { kubeReserved: Resources; systemReserved: Resources; evictionThreshold: Resources };
  allocatable: Resources;
  offerings: Offering[];
  /**
   * True when a NodeOverlay added or replaced extended resources in `capacity` (upstream
   * `IsCapacityOverlayApplied`); price overlays show as offerings with `priceSource: 'node-overlay'`.
   */
  capacityOverlaid?: boolean;
}
