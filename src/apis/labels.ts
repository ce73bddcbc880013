/**
 * Well-known label, taint and annotation keys, spelled as upstream Karpenter v1 and Kubernetes spell them.
 * Sources: kubernetes-sigs/karpenter `pkg/apis/v1/labels.go`, aws/karpenter-provider-aws
 * `pkg/apis/v1/labels.go`, Kubernetes `k8s.io/api/core/v1/well_known_labels.go`.
 */

export const LabelHostname = 'kubernetes.io/hostname';
export const LabelArch = 'kubernetes.io/arch';
export const LabelOS = 'kubernetes.io/os';
export const LabelInstanceType = 'node.kubernetes.io/instance-type';
export const LabelTopologyZone = 'topology.kubernetes.io/zone';
export const LabelTopologyRegion = 'topology.kubernetes.io/region';
export const LabelWindowsBuild = 'node.kubernetes.io/windows-build';

export const Group = 'karpenter.sh';
export const LabelNodePool = 'karpenter.sh/nodepool';
export const LabelCapacityType = 'karpenter.sh/capacity-type';
export const LabelNodeRegistered = 'karpenter.sh/registered';
/**
 * Node label: when `"true"` at registration, the NodeClaim's taints and startup taints are not synced onto the
 * Node (the provider manages them); the `karpenter.sh/unregistered` taint is still removed (upstream
 * `NodeDoNotSyncTaintsLabelKey`).
 */
export const LabelNodeDoNotSyncTaints = 'karpenter.sh/do-not-sync-taints';
export const LabelNodeInitialized = 'karpenter.sh/initialized';
export const LabelDoNotSync = 'karpenter.sh/do-not-sync-taints';

export const CapacityTypeOnDemand = 'on-demand';
export const CapacityTypeSpot = 'spot';
export const CapacityTypeReserved = 'reserved';

export const AnnotationDoNotDisrupt = 'karpenter.sh/do-not-disrupt';
/** On a NodeClaim whose instance-type options include a NodeOverlay-priced one (upstream v1alpha1 labels.go). */
export const AnnotationPriceOverlayApplied = 'karpenter.sh/price-overlay-applied';
/** On a NodeClaim whose instance-type options include one with NodeOverlay capacity (upstream v1alpha1 labels.go). */
export const AnnotationCapacityOverlayApplied = 'karpenter.sh/capacity-overlay-applied';
export const AnnotationNodePoolHash = 'karpenter.sh/nodepool-hash';
export const AnnotationNodePoolHashVersion = 'karpenter.sh/nodepool-hash-version';
export const AnnotationNodeClaimTerminationTimestamp = 'karpenter.sh/nodeclaim-termination-timestamp';
/**
 * Upstream `NodeClaimMinValuesRelaxedAnnotationKey` (`pkg/apis/v1/labels.go`): `"true"` on a NodeClaim whose
 * `minValues` the scheduler lowered under `MIN_VALUES_POLICY=BestEffort`, `"false"` on every other NodeClaim it
 * plans; read back as the `min_values_relaxed` label of `karpenter_nodeclaims_created_total`.
 */
export const AnnotationNodeClaimMinValuesRelaxed = 'karpenter.sh/nodeclaim-min-values-relaxed';

export const TaintUnregistered = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' } as const;
export const TaintDisrupted = { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' } as const;
export const TaintCAPIUninitialized = {
  key: 'node.cluster.x-k8s.io/uninitialized',
  effect: 'NoSchedule',
} as const;

export const FinalizerTermination = 'karpenter.sh/termination';

/** AWS provider labels (`karpenter.k8s.aws/*`), as set on nodes and usable in NodePool requirements. */
export const AWSGroup = 'karpenter.k8s.aws';
export const LabelEC2NodeClass = 'karpenter.k8s.aws/ec2nodeclass';
export const LabelInstanceCategory = 'karpenter.k8s.aws/instance-category';
export const LabelInstanceFamily = 'karpenter.k8s.aws/instance-family';
export const LabelInstanceGeneration = 'karpenter.k8s.aws/instance-generation';
export const LabelInstanceSize = 'karpenter.k8s.aws/instance-size';
export const LabelInstanceCPU = 'karpenter.k8s.aws/instance-cpu';
export const LabelInstanceMemory = 'karpenter.k8s.aws/instance-memory';
/** The capacity reservation a `reserved` node runs in (upstream `v1.LabelCapacityReservationID`). */
export const LabelCapacityReservationID = 'karpenter.k8s.aws/capacity-reservation-id';
/** `default` (an ODCR) or `capacity-block` (upstream `v1.LabelCapacityReservationType`). */
export const LabelCapacityReservationType = 'karpenter.k8s.aws/capacity-reservation-type';
/** `true` when the reservation is interruptible (upstream `v1.LabelCapacityReservationInterruptible`). */
export const LabelCapacityReservationInterruptible = 'karpenter.k8s.aws/capacity-reservation-interruptible';
/**
 * `default` (shared hardware) or `dedicated` (Dedicated Instances): a requirement picks the launch's
 * `Placement.Tenancy` (upstream aws/karpenter-provider-aws v1.14.1 `pkg/apis/v1/labels.go` `LabelInstanceTenancy`).
 */
export const LabelInstanceTenancy = 'karpenter.k8s.aws/instance-tenancy';
/** The values a {@link LabelInstanceTenancy} requirement may name (upstream `WellKnownValuesForRequirements`). */
export const InstanceTenancies: readonly string[] = ['default', 'dedicated'];
/**
 * The zone ID of a node's availability zone, e.g. `usw2-az1` (the same physical zone in every account, unlike the
 * zone name); from the EC2NodeClass's `status.subnets[].zoneID` (upstream `v1.LabelTopologyZoneID`).
 */
export const LabelTopologyZoneID = 'topology.k8s.aws/zone-id';

/** Well-known instance-type label of the clusterapi provider: vCPUs (whole cores, from the capacity). */
export const LabelClusterAPIInstanceCPU = 'karpenter.cluster.x-k8s.io/instance-cpu';
/** Well-known instance-type label of the clusterapi provider: memory in MiB (from the capacity). */
export const LabelClusterAPIInstanceMemory = 'karpenter.cluster.x-k8s.io/instance-memory';
/** Well-known instance-type label of the clusterapi provider: GPUs per node (a `<vendor>/gpu` resource). */
export const LabelClusterAPIInstanceGPUCount = 'karpenter.cluster.x-k8s.io/instance-gpu-count';
/** Well-known instance-type label of the clusterapi provider: the GPU resource name with `/` as `.`. */
export const LabelClusterAPIInstanceGPUType = 'karpenter.cluster.x-k8s.io/instance-gpu-type';

/**
 * Labels Karpenter knows and may narrow by NodePool or pod (upstream `WellKnownLabels`: the core's eight of
 * kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1/labels.go`, the aws provider's registrations of
 * aws/karpenter-provider-aws v1.14.1 `pkg/apis/v1/labels.go` `init`, and the clusterapi provider's `karpenter.cluster.x-k8s.io/instance-*`). A requirement key in
 * one of the {@link RestrictedLabelDomains} that is not listed here is refused ({@link isRestrictedLabel}).
 */
export const WellKnownLabels: ReadonlySet<string> = wellKnown([
  LabelNodePool,
  LabelTopologyZone,
  LabelTopologyRegion,
  LabelInstanceType,
  LabelArch,
  LabelOS,
  LabelCapacityType,
  LabelWindowsBuild,
  LabelTopologyZoneID,
  LabelInstanceTenancy,
  'karpenter.k8s.aws/capacity-reservation-id',
  'karpenter.k8s.aws/capacity-reservation-type',
  'karpenter.k8s.aws/capacity-reservation-interruptible',
  'karpenter.k8s.aws/placement-group-id',
  'karpenter.k8s.aws/placement-group-partition',
  'karpenter.k8s.aws/instance-hypervisor',
  'karpenter.k8s.aws/instance-encryption-in-transit-supported',
  LabelInstanceCategory,
  LabelInstanceFamily,
  LabelInstanceGeneration,
  'karpenter.k8s.aws/instance-local-nvme',
  LabelInstanceSize,
  LabelInstanceCPU,
  'karpenter.k8s.aws/instance-cpu-manufacturer',
  'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz',
  LabelInstanceMemory,
  'karpenter.k8s.aws/instance-ebs-bandwidth',
  'karpenter.k8s.aws/instance-network-bandwidth',
  'karpenter.k8s.aws/instance-gpu-name',
  'karpenter.k8s.aws/instance-gpu-manufacturer',
  'karpenter.k8s.aws/instance-gpu-count',
  'karpenter.k8s.aws/instance-gpu-memory',
  'karpenter.k8s.aws/instance-accelerator-name',
  'karpenter.k8s.aws/instance-accelerator-manufacturer',
  'karpenter.k8s.aws/instance-accelerator-count',
  'karpenter.k8s.aws/instance-capability-flex',
  // The clusterapi provider's (`karpenter.cluster.x-k8s.io` ends with the restricted `k8s.io`, as upstream matches
  // domains by suffix; upstream karpenter-provider-cluster-api registers its labels the same way).
  LabelClusterAPIInstanceCPU,
  LabelClusterAPIInstanceMemory,
  LabelClusterAPIInstanceGPUCount,
  LabelClusterAPIInstanceGPUType,
]);

/**
 * Label domains whose every key is well-known: Cluster API propagates `node.cluster.x-k8s.io/*` labels from a
 * Machine's template to its Node (cluster-api v1.14 `getManagedLabels`), so the clusterapi provider's instance types
 * carry them and pods may select them without the NodePool listing them (issue 29); a NodePool may require them
 * too (their domain is not restricted).
 */
export const WellKnownLabelDomains: readonly string[] = ['node.cluster.x-k8s.io'];

/** True when `key` is in one of {@link WellKnownLabelDomains} (or a subdomain of one). */
export function inWellKnownLabelDomain(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return WellKnownLabelDomains.some((d) => domain === d || domain.endsWith(`.${d}`));
}

/** A set of label keys that also contains every key of {@link WellKnownLabelDomains}. */
function wellKnown(keys: readonly string[]): ReadonlySet<string> {
  const set = new Set(keys);
  return new (class extends Set<string> {
    override has(key: string): boolean {
      return set.has(key) || inWellKnownLabelDomain(key);
    }
  })(keys);
}

/**
 * Label domains reserved by Karpenter (upstream `RestrictedLabelDomains`: the core's `karpenter.sh`, kubernetes-sigs/
 * karpenter v1.14.1 `pkg/apis/v1/labels.go`, plus the aws provider's `karpenter.k8s.aws` that its `init` inserts,
 * aws/karpenter-provider-aws v1.14.1 `pkg/apis/v1/labels.go`), sorted as upstream's `sets.List` prints them. A key
 * in one of them, or in a subdomain of one, must be one of {@link WellKnownLabels}. Since upstream v1.14
 * (kubernetes-sigs/karpenter#2586) `kubernetes.io` and `k8s.io` are not restricted and there are no
 * `LabelDomainExceptions`.
 */
export const RestrictedLabelDomains: readonly string[] = ['karpenter.k8s.aws', 'karpenter.sh'];

/** Labels that may not be used at all, whatever their domain (upstream `RestrictedLabels`). */
export const RestrictedLabels: ReadonlySet<string> = new Set([LabelHostname]);

/** Upstream `GetLabelDomain`: the part of a key before its first `/`, `""` without one. */
function labelDomainOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

/** The explicit {@link WellKnownLabels} keys, sorted (upstream `sets.List(WellKnownLabels)`), for the message below. */
const wellKnownSorted = [...WellKnownLabels].sort();

/**
 * Upstream `IsRestrictedLabel` (kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1/labels.go`): undefined for a
 * {@link WellKnownLabels} key; else upstream's message when the key's domain is one of the
 * {@link RestrictedLabelDomains} or a subdomain of one (`d` or `*.d`), or the key is one of the
 * {@link RestrictedLabels}: `using label K is not allowed as it might interfere with the internal provisioning
 * logic; specify a well known label: [...], or a custom label that does not use a restricted domain: [...]` (lists
 * printed as Go's `%v` of a sorted slice). Any other key, e.g. `kubernetes.io/foo` or `example.k8s.io/x`, is allowed.
 */
export function isRestrictedLabel(key: string): string | undefined {
  if (WellKnownLabels.has(key)) return undefined;
  const domain = labelDomainOf(key);
  const inRestrictedDomain = RestrictedLabelDomains.some((d) => domain === d || domain.endsWith(`.${d}`));
  if (!inRestrictedDomain && !RestrictedLabels.has(key)) return undefined;
  return (
    `using label ${key} is not allowed as it might interfere with the internal provisioning logic; ` +
    `specify a well known label: [${wellKnownSorted.join(' ')}], or a custom label that does not use a ` +
    `restricted domain: [${RestrictedLabelDomains.join(' ')}]`
  );
}

/**
 * Deprecated label keys Karpenter translates to their well-known equivalents in pod requirements
 * (nodeSelector, node affinity), so `beta.kubernetes.io/os: linux` means `kubernetes.io/os: linux`
 * (upstream `v1.NormalizedLabels`, kubernetes-sigs/karpenter `pkg/apis/v1/labels.go`).
 */
export const NormalizedLabels: Readonly<Record<string, string>> = {
  'failure-domain.beta.kubernetes.io/zone': LabelTopologyZone,
  'beta.kubernetes.io/arch': LabelArch,
  'beta.kubernetes.io/os': LabelOS,
  'beta.kubernetes.io/instance-type': LabelInstanceType,
  'failure-domain.beta.kubernetes.io/region': LabelTopologyRegion,
};

/** NodeClaim condition whose reason names why Karpenter disrupted it (upstream `ConditionTypeDisruptionReason`). */
export const ConditionDisruptionReason = 'DisruptionReason';

/**
 * Values a requirement key accepts: upstream core `WellKnownValuesForRequirements` (kubernetes-sigs/karpenter
 * v1.14.1 `pkg/apis/v1/labels.go`: `karpenter.sh/capacity-type` → `on-demand`, `spot`, `reserved`) plus the aws
 * provider's `karpenter.k8s.aws/instance-tenancy` → `dedicated`, `default` (aws/karpenter-provider-aws
 * `pkg/apis/v1/labels.go` init). An `In` requirement naming none of them, or fewer known values than its
 * `minValues`, is refused (upstream `pkg/apis/v1/nodeclaim_validation.go` `validateWellKnownValues`, which the
 * `nodepool.validation` controller reports as `ValidationSucceeded=False` reason `NodePoolValidationFailed`; the
 * upstream CRD carries no CEL rule for it, so the API server accepts the NodePool).
 */
export const WellKnownValuesForRequirements: Readonly<Record<string, readonly string[]>> = {
  [LabelCapacityType]: [CapacityTypeOnDemand, CapacityTypeSpot, CapacityTypeReserved],
  [LabelInstanceTenancy]: InstanceTenancies,
};

/**
 * Upstream `validateWellKnownValues` (kubernetes-sigs/karpenter v1.14.1 `pkg/apis/v1/nodeclaim_validation.go`) for
 * one requirement: undefined unless `key` has {@link WellKnownValuesForRequirements} and `operator` is `In`; else
 * a message when none of `values` is known, or when fewer known values than `minValues` remain (upstream logs and
 * drops unknown values when enough known ones are left).
 */
export function wellKnownValuesProblem(
  key: unknown,
  operator: unknown,
  values: readonly unknown[],
  minValues: unknown,
): string | undefined {
  const known = typeof key === 'string' ? WellKnownValuesForRequirements[key] : undefined;
  if (!known || operator !== 'In' || values.length === 0) return undefined;
  const sorted = [...known].sort();
  const valid = values.filter((x) => typeof x === 'string' && known.includes(x));
  if (valid.length === 0)
    return (
      `no valid values found in [${values.join(' ')}] for ${key as string}, expected one of: ` +
      `[${sorted.join(' ')}]; use ${sorted.join(' or ')}`
    );
  if (typeof minValues === 'number' && valid.length < minValues)
    return (
      `not enough valid values found in [${values.join(' ')}] for ${key as string}, expected at least ` +
      `${minValues} valid values from: [${sorted.join(' ')}], got: ${valid.length}; list at least ${minValues} of them or lower minValues`
    );
  return undefined;
}
