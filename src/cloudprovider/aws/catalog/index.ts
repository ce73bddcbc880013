/**
 * capenter's embedded AWS instance-type catalog: every EC2 instance type offered in a supported region, with
 * upstream Karpenter's labels, capacity, overhead and allocatable for a given EC2NodeClass, and its offerings
 * (zone × capacity type × price). Synchronous and pure once the embedded JSON is loaded (first call).
 *
 * Data and sources: `./data/` (`SOURCES.md`). Semantics: aws/karpenter-provider-aws
 * `pkg/providers/instancetype/{types.go,instancetype.go}` and `pkg/providers/pricing/pricing.go`.
 */
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import type { InstanceType, Offering } from '../../types.ts';
import {
  type AllocatableOptions,
  type AMIFamily,
  amiFamilyTraits,
  computeAllocatable,
  type NodeClassNetworkInterface,
  resolveAMIFamily,
} from './allocatable.ts';
import { type InstanceTypeSpec, loadCatalogData } from './data.ts';
import { computeLabels } from './labels.ts';

export {
  type AllocatableOptions,
  type AllocatableResult,
  type AMIFamily,
  type AMIFamilyTraits,
  amiFamilyTraits,
  computeAllocatable,
  efaCount,
  eniLimitedPods,
  InvalidNodeClassValueError,
  kubeReservedCPU,
  memoryCapacityBytes,
  type NodeClassNetworkInterface,
  resolveAMIFamily,
} from './allocatable.ts';
export type { InstanceTypeSpec } from './data.ts';
export { computeLabels } from './labels.ts';

/** Regions whose zone offerings are embedded. */
export const SUPPORTED_REGIONS = ['us-east-1', 'us-west-2', 'eu-west-1', 'eu-central-1'] as const;
/** A region in {@link SUPPORTED_REGIONS}. */
export type SupportedRegion = (typeof SUPPORTED_REGIONS)[number];
/** The region used when none is given. */
export const DEFAULT_REGION: SupportedRegion = 'us-east-1';

/** Options of {@link getInstanceTypes}. */
export interface CatalogOptions {
  /** One of {@link SUPPORTED_REGIONS}. */
  region: string;
  /**
   * Its kubelet, blockDeviceMappings, instanceStorePolicy and AMI family change capacity/allocatable/labels;
   * absent/undefined means AL2023 defaults.
   */
  nodeClass?: EC2NodeClass | undefined;
}

/** What {@link getInstanceTypes} returns. */
export interface CatalogResult {
  region: SupportedRegion;
  /** The AMI family the node class resolved to. */
  amiFamily: AMIFamily;
  /**
   * Instance types offered in at least one zone of the region, sorted by name. Shared between calls with the same
   * inputs and deeply frozen: copy before changing anything (e.g. marking an offering unavailable).
   */
  instanceTypes: readonly InstanceType[];
  /** Human-readable caveats about this result (price fallbacks, estimated spot prices, exclusions). */
  notices: readonly string[];
}

/** Failure of {@link lookupInstanceTypes}. */
export type CatalogError =
  | { code: 'UnsupportedRegion'; region: string; message: string }
  | { code: 'InvalidNodeClassValue'; field: string; message: string };

/** Thrown by {@link getInstanceTypes} for a region without embedded data. */
export class UnsupportedRegionError extends Error {
  readonly code = 'UnsupportedRegion' as const;
  constructor(readonly region: string) {
    super(
      `region "${region}" is not in capenter's embedded AWS catalog; supported regions: ${SUPPORTED_REGIONS.join(', ')}`,
    );
  }
}

/** True when `region` is one of {@link SUPPORTED_REGIONS}. */
export function isSupportedRegion(region: string): region is SupportedRegion {
  return (SUPPORTED_REGIONS as readonly string[]).includes(region);
}

/** Round a USD/hour price to 1e-6 so estimates do not print float noise. */
function roundPrice(p: number): number {
  return Math.round(p * 1e6) / 1e6;
}

/**
 * Linux on-demand price of an instance type in USD/hour and where it comes from, or undefined when unknown.
 * Only us-east-1 prices are embedded; other regions use them as `on-demand-fallback` (upstream falls back to its
 * static table when the pricing API cannot be used).
 */
export function onDemandPrice(
  name: string,
  region: string = DEFAULT_REGION,
): { priceUSDPerHour: number; priceSource: 'on-demand' | 'on-demand-fallback' } | undefined {
  const { prices } = loadCatalogData();
  const p = prices.onDemand[name];
  if (p === undefined) return undefined;
  return {
    priceUSDPerHour: p,
    priceSource: region === prices.onDemandRegion ? 'on-demand' : 'on-demand-fallback',
  };
}

/**
 * Estimated spot price in USD/hour: on-demand (see {@link onDemandPrice}) × (1 − Spot Advisor savings % / 100),
 * rounded to 1e-6, with the advisor's savings percent and interruption bucket label (`<5%` ... `>20%`).
 * Undefined when the type has no on-demand price or the advisor does not list it for the region.
 */
export function spotPriceEstimate(
  name: string,
  region: string = DEFAULT_REGION,
): { priceUSDPerHour: number; savingsPercent: number; interruption: string } | undefined {
  const { prices } = loadCatalogData();
  const od = prices.onDemand[name];
  const adv = prices.spotSavings[region]?.[name];
  if (od === undefined || adv === undefined) return undefined;
  return {
    priceUSDPerHour: roundPrice(od * (1 - adv[0] / 100)),
    savingsPercent: adv[0],
    interruption: prices.spotInterruptionRanges[adv[1]] ?? 'unknown',
  };
}

/** The embedded specs of one instance type, or undefined for an unknown name. */
export function getInstanceTypeSpec(name: string): InstanceTypeSpec | undefined {
  return loadCatalogData().specsByName.get(name);
}

/** All 1,373 embedded instance-type specs, sorted by name (including types offered in no supported region). */
export function listInstanceTypeSpecs(): readonly InstanceTypeSpec[] {
  return loadCatalogData().specs;
}

/** The zones of a supported region that offer at least one instance type, sorted. */
export function regionZones(region: SupportedRegion): readonly string[] {
  return loadCatalogData().offerings[region]?.zones ?? [];
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** Canonical JSON (sorted keys) for cache keys. */
function canonical(v: unknown): string {
  if (v === undefined) return 'null';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

/** Memo of results by region + the node-class fields that change them (upstream `Resolver.CacheKey`). */
const memo = new Map<string, CatalogResult>();
const MEMO_LIMIT = 256;

function cacheKey(region: string, family: AMIFamily, nodeClass: EC2NodeClass | undefined): string {
  const k = nodeClass?.spec.kubelet;
  // Only the kubelet fields that change capacity or overhead: a stanza with e.g. only image GC settings shares
  // the entry of no stanza at all.
  return canonical({
    region,
    family,
    kubelet: {
      maxPods: k?.maxPods,
      podsPerCore: k?.podsPerCore,
      kubeReserved: k?.kubeReserved,
      systemReserved: k?.systemReserved,
      evictionHard: k?.evictionHard,
    },
    bdm: nodeClass?.spec.blockDeviceMappings,
    isp: nodeClass?.spec.instanceStorePolicy,
    nis: nodeClass?.spec.networkInterfaces,
    nitroOnly: nitroOnly(nodeClass) || undefined,
  });
}

/** True when the class sets `spec.connectionTracking`, which only Nitro instances support. */
function nitroOnly(nodeClass: EC2NodeClass | undefined): boolean {
  return nodeClass?.spec.connectionTracking !== undefined;
}

/**
 * Whether instances of `spec` can launch with `nodeClass`'s launch options (upstream aws/karpenter-provider-aws
 * v1.14.1 `pkg/providers/instancetype/compatibility/compatibility.go` `IsCompatibleWithNodeClass`): with
 * `spec.connectionTracking` only Nitro types (`connectionTrackingCompatibility`); with `spec.networkInterfaces` only
 * types that fit the layout ({@link networkInterfacesFit}). Upstream's nested-virtualization check is not needed:
 * capenter refuses `cpuOptions.nestedVirtualization: enabled` (`src/apis/schemas.ts`). Its placement-group check
 * (the type's supported strategies) is not made: the instance-type data does not carry them.
 */
export function compatibleWithNodeClass(
  spec: InstanceTypeSpec,
  nodeClass: EC2NodeClass | undefined,
): boolean {
  if (nitroOnly(nodeClass) && spec.hypervisor !== 'nitro') return false;
  const nis = nodeClass?.spec.networkInterfaces;
  return !nis || networkInterfacesFit(spec, nis);
}

/**
 * Upstream `networkInterfaceCheck.compatibleCheck`: the type has a network card (`defaultCardMaxENIs` > 0), every interface's
 * `networkCardIndex` is below the type's card count (`maxNetworkCards`, 1 when absent) and its `deviceIndex` below
 * that card's `MaximumNetworkInterfaces` (`networkCardMaxENIs`; without it, as in the embedded catalog, the default
 * card's `defaultCardMaxENIs`), and the `efa-only` interfaces are at most `MaximumEfaInterfaces` (none without EFA).
 * Upstream's secondary-IP check does not apply: the v1 API has no per-interface IP counts.
 */
export function networkInterfacesFit(
  spec: InstanceTypeSpec,
  networkInterfaces: readonly NodeClassNetworkInterface[],
): boolean {
  if (spec.defaultCardMaxENIs === 0) return false;
  const cards = spec.maxNetworkCards ?? 1;
  for (const ni of networkInterfaces) {
    if (ni.networkCardIndex >= cards) return false;
    const max = spec.networkCardMaxENIs?.[ni.networkCardIndex] ?? spec.defaultCardMaxENIs;
    if (ni.deviceIndex >= max) return false;
  }
  const efaOnly = networkInterfaces.filter((n) => n.interfaceType === 'efa-only').length;
  return efaOnly === 0 || efaOnly <= (spec.efaMaxInterfaces ?? 0);
}

/** Offerings of every type offered in a region (independent of the node class), built once per region and frozen. */
const offeringsByRegion = new Map<SupportedRegion, ReadonlyMap<string, readonly Offering[]>>();

function regionOfferings(region: SupportedRegion): ReadonlyMap<string, readonly Offering[]> {
  const hit = offeringsByRegion.get(region);
  if (hit) return hit;
  const data = loadCatalogData();
  const offered = data.offerings[region]!;
  const odSource: Offering['priceSource'] =
    region === data.prices.onDemandRegion ? 'on-demand' : 'on-demand-fallback';
  const spot = data.prices.spotSavings[region] ?? {};
  const out = new Map<string, readonly Offering[]>();
  for (const spec of data.specs) {
    const letters = offered.types[spec.name];
    if (!letters) continue;
    const od = data.prices.onDemand[spec.name];
    const adv = spot[spec.name];
    const hasOD = od !== undefined && spec.supportedUsageClasses.includes('on-demand');
    const hasSpot = od !== undefined && adv !== undefined && spec.supportedUsageClasses.includes('spot');
    const spotPrice = hasSpot ? roundPrice(od * (1 - adv[0] / 100)) : 0;
    const offerings: Offering[] = [];
    for (const letter of letters) {
      const zone = `${region}${letter}`;
      if (hasOD) {
        offerings.push({
          zone,
          capacityType: 'on-demand',
          priceUSDPerHour: od,
          available: true,
          priceSource: odSource,
        });
      }
      if (hasSpot) {
        offerings.push({
          zone,
          capacityType: 'spot',
          priceUSDPerHour: spotPrice,
          available: true,
          priceSource: 'spot-estimate',
        });
      }
    }
    out.set(spec.name, deepFreeze(offerings));
  }
  offeringsByRegion.set(region, out);
  return out;
}

/** Labels per AMI family and type (independent of region and kubelet), built once per family and frozen. */
const labelsByFamily = new Map<AMIFamily, Map<string, Readonly<Record<string, string>>>>();

function familyLabels(family: AMIFamily, spec: InstanceTypeSpec): Readonly<Record<string, string>> {
  let m = labelsByFamily.get(family);
  if (!m) {
    m = new Map();
    labelsByFamily.set(family, m);
  }
  let l = m.get(spec.name);
  if (!l) {
    l = Object.freeze(computeLabels(spec, amiFamilyTraits(family)));
    m.set(spec.name, l);
  }
  return l;
}

/**
 * The {@link AllocatableOptions} of an EC2NodeClass under an AMI family: its kubelet, blockDeviceMappings,
 * instanceStorePolicy and networkInterfaces, plus the operator's `vmMemoryOverheadPercent` / `reservedENIs` when given (defaults 0.075 / 0).
 * Shared by the embedded catalog and the aws provider so both compute allocatable the same way.
 */
export function allocatableOptionsFor(
  nodeClass: EC2NodeClass | undefined,
  family: AMIFamily,
  operator: { vmMemoryOverheadPercent?: number; reservedENIs?: number } = {},
): AllocatableOptions {
  const spec = nodeClass?.spec;
  return {
    amiFamily: family,
    ...(spec?.kubelet ? { kubelet: spec.kubelet } : {}),
    ...(spec?.blockDeviceMappings ? { blockDeviceMappings: spec.blockDeviceMappings } : {}),
    ...(spec?.instanceStorePolicy ? { instanceStorePolicy: spec.instanceStorePolicy } : {}),
    ...(spec?.networkInterfaces ? { networkInterfaces: spec.networkInterfaces } : {}),
    ...(operator.vmMemoryOverheadPercent !== undefined
      ? { vmMemoryOverheadPercent: operator.vmMemoryOverheadPercent }
      : {}),
    ...(operator.reservedENIs !== undefined ? { reservedENIs: operator.reservedENIs } : {}),
  };
}

/**
 * One frozen {@link InstanceType} from a spec: labels (given, or {@link computeLabels} for the options' AMI family),
 * capacity/overhead/allocatable by {@link computeAllocatable}, and the given offerings (not copied).
 * The one place the catalog and the aws provider turn a spec into an instance type.
 * @throws InvalidNodeClassValueError naming the EC2NodeClass field whose quantity/percentage is invalid.
 */
export function buildInstanceType(
  spec: InstanceTypeSpec,
  opts: AllocatableOptions,
  offerings: Offering[],
  labels?: Readonly<Record<string, string>>,
): InstanceType {
  const { capacity, overhead, allocatable } = computeAllocatable(spec, opts);
  return Object.freeze({
    name: spec.name,
    labels: labels ?? Object.freeze(computeLabels(spec, amiFamilyTraits(opts.amiFamily ?? 'AL2023'))),
    capacity: Object.freeze(capacity),
    overhead: Object.freeze({
      kubeReserved: Object.freeze(overhead.kubeReserved),
      systemReserved: Object.freeze(overhead.systemReserved),
      evictionThreshold: Object.freeze(overhead.evictionThreshold),
    }),
    allocatable: Object.freeze(allocatable),
    offerings,
  });
}

function build(
  region: SupportedRegion,
  family: AMIFamily,
  nodeClass: EC2NodeClass | undefined,
): CatalogResult {
  const data = loadCatalogData();
  const traits = amiFamilyTraits(family);
  const offeringsOf = regionOfferings(region);
  const odRegion = data.prices.onDemandRegion;
  const notices: string[] = [];
  if (region !== odRegion) {
    notices.push(
      `No on-demand prices are embedded for ${region}; using the ${odRegion} table (priceSource "on-demand-fallback"), ` +
        'as upstream Karpenter falls back to its static prices when the AWS pricing API is unavailable.',
    );
  }
  notices.push(
    `Spot prices are estimates: on-demand × (1 − AWS Spot Instance Advisor savings %) for ${region} ` +
      '(priceSource "spot-estimate"); types the advisor does not list have no spot offering.',
  );

  const opts = allocatableOptionsFor(nodeClass, family);
  const out: InstanceType[] = [];
  const unpriced: string[] = [];
  let windowsArm = 0;
  for (const spec of data.specs) {
    const offerings = offeringsOf.get(spec.name);
    if (!offerings) continue;
    if (traits.os === 'windows' && spec.architecture !== 'amd64') {
      windowsArm++;
      continue;
    }
    if (!compatibleWithNodeClass(spec, nodeClass)) continue;
    if (offerings.length === 0) unpriced.push(spec.name);
    // Offerings are shared, frozen per region; the contract type is mutable-looking, callers copy before changing.
    out.push(buildInstanceType(spec, opts, offerings as Offering[], familyLabels(family, spec)));
  }
  if (windowsArm > 0) {
    notices.push(`${windowsArm} arm64 instance types are left out: ${family} nodes run on amd64 only.`);
  }
  if (unpriced.length > 0) {
    notices.push(
      `${unpriced.length} instance types have no known price in ${region} and therefore no offerings: ${unpriced.join(', ')}.`,
    );
  }
  return Object.freeze({
    region,
    amiFamily: family,
    instanceTypes: Object.freeze(out),
    notices: Object.freeze(notices),
  });
}

/**
 * Every instance type offered in `region` (types offered in none of its zones are left out), with labels, capacity,
 * overhead and allocatable for `nodeClass` (AL2023 defaults without one) and offerings per zone: on-demand at the
 * us-east-1 Linux price (`on-demand`, or `on-demand-fallback` in other regions) and spot at the Spot Advisor estimate
 * (`spot-estimate`); a capacity type without a known price gets no offering. Memoized per region and the node-class
 * fields that change the result (kubelet maxPods/podsPerCore/kubeReserved/systemReserved/evictionHard,
 * blockDeviceMappings, instanceStorePolicy, AMI family, connectionTracking: Nitro types only), so repeated calls return the same frozen object.
 * @throws UnsupportedRegionError listing the supported regions.
 * @throws InvalidNodeClassValueError naming the EC2NodeClass field whose quantity/percentage is invalid.
 */
export function getInstanceTypes(opts: CatalogOptions): CatalogResult {
  if (!isSupportedRegion(opts.region)) throw new UnsupportedRegionError(opts.region);
  const family = resolveAMIFamily(opts.nodeClass);
  const key = cacheKey(opts.region, family, opts.nodeClass);
  const hit = memo.get(key);
  if (hit) return hit;
  const result = build(opts.region, family, opts.nodeClass);
  if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value!);
  memo.set(key, result);
  return result;
}

/**
 * Value-returning variant of {@link getInstanceTypes}: `{ok: true, value}` or `{ok: false, error}` with
 * `UnsupportedRegion` / `InvalidNodeClassValue` (other exceptions, i.e. a broken install, still propagate).
 */
export function lookupInstanceTypes(
  opts: CatalogOptions,
): { ok: true; value: CatalogResult } | { ok: false; error: CatalogError } {
  try {
    return { ok: true, value: getInstanceTypes(opts) };
  } catch (e) {
    if (e instanceof UnsupportedRegionError) {
      return { ok: false, error: { code: 'UnsupportedRegion', region: e.region, message: e.message } };
    }
    if (e instanceof Error && (e as { code?: string }).code === 'InvalidNodeClassValue') {
      return {
        ok: false,
        error: {
          code: 'InvalidNodeClassValue',
          field: (e as unknown as { field: string }).field,
          message: e.message,
        },
      };
    }
    throw e;
  }
}
