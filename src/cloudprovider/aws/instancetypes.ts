/**
 * Instance types of the aws provider: the specs from EC2 `DescribeInstanceTypes`, the zones from
 * `DescribeInstanceTypeOfferings` (both cached and refreshed), prices from {@link AwsPricing}, and the same
 * capacity/allocatable/labels as the embedded catalog (`catalog/index.ts` `buildInstanceType`, one implementation).
 * With `isolatedVPC` or when EC2 cannot be reached the embedded catalog's specs and zones are the fallback.
 *
 * Upstream: aws/karpenter-provider-aws `pkg/providers/instancetype/instancetype.go` (List: types × the class's
 * subnet zones × capacity types, offerings without a price left out, the unavailable-offerings cache applied) and
 * `types.go` (the spec fields). Each offering in a zone whose class subnet has a zone ID carries the label
 * `topology.k8s.aws/zone-id` (upstream `pkg/providers/instancetype/offering/base_resolver.go`: the zone ID of
 * `status.subnets`, left out when the status has none).
 */
import {
  DescribeInstanceTypeOfferingsCommand,
  DescribeInstanceTypesCommand,
  type EC2Client,
  type InstanceTypeInfo,
  type NetworkCardInfo,
} from '@aws-sdk/client-ec2';
import type { EC2NodeClass } from '../../apis/karpenter.ts';
import {
  LabelCapacityReservationID,
  LabelCapacityReservationInterruptible,
  LabelCapacityReservationType,
  LabelTopologyZoneID,
} from '../../apis/labels.ts';
import type { NowClock, UnavailableOfferings } from '../offerings.ts';
import type { CapacityType, InstanceType, Offering } from '../types.ts';
import { loadCatalogData } from './catalog/data.ts';
import {
  allocatableOptionsFor,
  buildInstanceType,
  compatibleWithNodeClass,
  getInstanceTypeSpec,
  type InstanceTypeSpec,
  isSupportedRegion,
  listInstanceTypeSpecs,
  regionZones,
  resolveAMIFamily,
} from './catalog/index.ts';
import type {
  CapacityReservationAvailability,
  CapacityReservationStatus,
} from './nodeclass/capacityreservations.ts';
import { ec2NodeClassStatus } from './nodeclass/types.ts';
import type { AwsPricing } from './pricing.ts';
import { withThrottleRetry } from './retry.ts';

const CATEGORY_RE = /(^[a-z]+)(-[0-9]+tb)?([0-9]+).*\./;

/**
 * `MaximumNetworkInterfaces` of each card of `NetworkInfo.NetworkCards`, indexed by `NetworkCardIndex` (a card
 * missing from the list allows 0); undefined when EC2 lists no cards.
 */
function networkCardMaxENIs(cards: NetworkCardInfo[] | undefined): number[] | undefined {
  if (!cards || cards.length === 0) return undefined;
  const out: number[] = [];
  for (const c of cards) out[c.NetworkCardIndex ?? 0] = c.MaximumNetworkInterfaces ?? 0;
  return Array.from(out, (n) => n ?? 0);
}

/**
 * Maps one `DescribeInstanceTypes` entry to an {@link InstanceTypeSpec} as the catalog generator does (field rules in
 * `shared/data/README.md`). `networkBandwidthMbps`, `trunkingCompatible` and `branchENIs` are not in the EC2 API
 * (upstream keeps them in generated tables); they are copied from the embedded spec of the same name when there is
 * one. Falsy values are omitted as in the embedded JSON (except `hypervisor`, `trunkingCompatible`).
 */
export function specFromEC2(info: InstanceTypeInfo, known?: InstanceTypeSpec): InstanceTypeSpec {
  const name = info.InstanceType ?? '';
  const [family = '', size = ''] = name.split('.');
  const archs = (info.ProcessorInfo?.SupportedArchitectures ?? []) as string[];
  const gpus = info.GpuInfo?.Gpus ?? [];
  const neuron = info.NeuronInfo?.NeuronDevices ?? [];
  const inference = info.InferenceAcceleratorInfo?.Accelerators ?? [];
  const net = info.NetworkInfo;
  const defaultCard = net?.NetworkCards?.find(
    (c) => c.NetworkCardIndex === (net.DefaultNetworkCardIndex ?? 0),
  );
  const m = CATEGORY_RE.exec(name);
  const storage = info.InstanceStorageInfo;
  const out: Record<string, unknown> = {
    name,
    family,
    size,
    category: m?.[1],
    generation: m?.[3],
    capabilityFlex: family.includes('-flex'),
    architecture: archs.some((a) => a.startsWith('arm64')) ? 'arm64' : 'amd64',
    supportedArchitectures: archs,
    cpuManufacturer: info.ProcessorInfo?.Manufacturer,
    clockSpeedGHz: info.ProcessorInfo?.SustainedClockSpeedInGhz,
    vcpu: info.VCpuInfo?.DefaultVCpus ?? 0,
    memoryMiB: info.MemoryInfo?.SizeInMiB ?? 0,
    gpuCount: gpus.reduce((n, g) => n + (g.Count ?? 0), 0),
    gpuName: gpus.length === 1 ? gpus[0]!.Name : undefined,
    gpuManufacturer: gpus.length === 1 ? gpus[0]!.Manufacturer : undefined,
    gpuMemoryMiB: gpus.length === 1 ? gpus[0]!.MemoryInfo?.SizeInMiB : undefined,
    neuronDeviceCount: neuron.reduce((n, d) => n + (d.Count ?? 0), 0),
    neuronCoreCount: neuron.reduce((n, d) => n + (d.Count ?? 0) * (d.CoreInfo?.Count ?? 0), 0),
    localStorageGB: storage?.TotalSizeInGB ?? 0,
    localNvmeGB: storage && storage.NvmeSupport !== 'unsupported' ? storage.TotalSizeInGB : undefined,
    networkBandwidthMbps: known?.networkBandwidthMbps,
    defaultCardMaxENIs: defaultCard?.MaximumNetworkInterfaces ?? net?.MaximumNetworkInterfaces ?? 0,
    maxNetworkCards: net?.MaximumNetworkCards,
    networkCardMaxENIs: networkCardMaxENIs(net?.NetworkCards),
    ipv4PerENI: net?.Ipv4AddressesPerInterface ?? 0,
    efaMaxInterfaces: net?.EfaInfo?.MaximumEfaInterfaces,
    encryptionInTransitSupported: net?.EncryptionInTransitSupported,
    trunkingCompatible: known?.trunkingCompatible,
    branchENIs: known?.branchENIs,
    ebsBandwidthMbps:
      info.EbsInfo?.EbsOptimizedSupport === 'default'
        ? info.EbsInfo.EbsOptimizedInfo?.MaximumBandwidthInMbps
        : undefined,
    hypervisor: info.Hypervisor ?? '',
    bareMetal: info.BareMetal,
    supportedUsageClasses: (info.SupportedUsageClasses ?? []) as string[],
  };
  if (neuron.length === 1) {
    out.acceleratorName = neuron[0]!.Name;
    out.acceleratorManufacturer = 'AWS';
    out.acceleratorCount = neuron[0]!.Count;
  } else if (inference.length === 1 && neuron.length === 0) {
    out.acceleratorName = inference[0]!.Name;
    out.acceleratorManufacturer = inference[0]!.Manufacturer;
    out.acceleratorCount = inference[0]!.Count;
  }
  for (const [k, v] of Object.entries(out)) {
    if (k === 'hypervisor') continue;
    if (k === 'trunkingCompatible') {
      if (v === undefined || v === null) delete out[k];
      continue;
    }
    if (v === undefined || v === null || v === false || v === 0 || (Array.isArray(v) && v.length === 0))
      delete out[k];
  }
  return out as unknown as InstanceTypeSpec;
}

/**
 * Zone name → zone ID (e.g. `us-west-2b` → `usw2-az1`) of an EC2NodeClass's `status.subnets` (written from
 * DescribeSubnets `AvailabilityZoneId`); subnets without a zone ID are left out.
 */
export function subnetZoneIDs(
  subnets: readonly { zone: string; zoneID?: string | undefined }[],
): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of subnets) if (s.zoneID && !out.has(s.zone)) out.set(s.zone, s.zoneID);
  return out;
}

/** Specs and zones the provider knows, with where they came from. */
export interface InstanceTypeInventory {
  specs: ReadonlyMap<string, InstanceTypeSpec>;
  /** Instance type → zones offering it. */
  zones: ReadonlyMap<string, readonly string[]>;
  /** `ec2` (DescribeInstanceTypes/Offerings) or `catalog` (embedded fallback). */
  source: 'ec2' | 'catalog';
  /** ms since epoch. */
  fetchedAt: number;
}

/** Dependencies of {@link AwsInstanceTypes}. */
export interface AwsInstanceTypesDeps {
  ec2: EC2Client;
  region: string;
  clock: NowClock;
  pricing: AwsPricing;
  unavailable: UnavailableOfferings;
  /** Use the embedded catalog only (no DescribeInstanceTypes); default false. */
  embeddedOnly?: boolean;
  vmMemoryOverheadPercent?: number;
  reservedENIs?: number;
  /**
   * Free counts of capacity reservations; with it, each `status.capacityReservations[]` entry of a class becomes a
   * `reserved` offering (the `ReservedCapacity` feature gate). Without it no reserved offering is listed.
   */
  reservations?: CapacityReservationAvailability;
  /**
   * Instance type name → USD/hour for offerings that have no price of their own (preview types listed by
   * `DescribeInstanceTypes` but absent from the pricing data): the prices validated NodeOverlays give them
   * (`NodeOverlay` gate; the nodeoverlay store, upstream aws `GetOverlayPrice`). Absent: such offerings are left out.
   */
  overlayPrices?: () => ReadonlyMap<string, number>;
  /** Seconds between refreshes of the specs and zones, default 3600 (upstream refreshes them in a controller). */
  refreshSeconds?: number;
  onError?: (err: unknown, context: string) => void;
}

/**
 * The instance types of one region, per EC2NodeClass. `list(nodeClass)` is cached per class inputs; a refresh of
 * the inventory or the prices, or a change in the unavailable-offerings cache, rebuilds the list.
 */
export class AwsInstanceTypes {
  private inventory: InstanceTypeInventory | undefined;
  private loading: Promise<InstanceTypeInventory> | undefined;
  private readonly memo = new Map<string, { key: string; types: InstanceType[] }>();

  constructor(private readonly deps: AwsInstanceTypesDeps) {}

  /**
   * Starts from an inventory fetched elsewhere (another provider of the same region: tests, benchmarks, a restarted
   * provider); it is refreshed when older than the refresh period like a fetched one.
   */
  seed(inventory: InstanceTypeInventory): void {
    this.inventory = inventory;
    this.memo.clear();
  }

  /** The current inventory, fetching or refreshing it when stale (one fetch at a time). */
  async getInventory(): Promise<InstanceTypeInventory> {
    const ttl = (this.deps.refreshSeconds ?? 3600) * 1000;
    const inv = this.inventory;
    if (inv && this.deps.clock.now() - inv.fetchedAt < ttl) return inv;
    this.loading ??= this.fetch().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async fetch(): Promise<InstanceTypeInventory> {
    let inv: InstanceTypeInventory;
    if (this.deps.embeddedOnly) inv = this.catalogInventory();
    else {
      try {
        inv = await this.ec2Inventory();
      } catch (err) {
        this.deps.onError?.(
          err,
          'DescribeInstanceTypes/DescribeInstanceTypeOfferings failed; using the embedded catalog',
        );
        if (this.inventory) return this.inventory;
        inv = this.catalogInventory();
      }
    }
    this.inventory = inv;
    this.memo.clear();
    return inv;
  }

  private catalogInventory(): InstanceTypeInventory {
    const region = isSupportedRegion(this.deps.region) ? this.deps.region : 'us-east-1';
    const data = loadCatalogData().offerings[region]!;
    const zones = new Map<string, string[]>();
    const specs = new Map<string, InstanceTypeSpec>();
    for (const spec of listInstanceTypeSpecs()) {
      const letters = data.types[spec.name];
      if (!letters) continue;
      specs.set(spec.name, spec);
      zones.set(
        spec.name,
        [...letters].map((l) => `${this.deps.region}${l}`),
      );
    }
    void regionZones;
    return { specs, zones, source: 'catalog', fetchedAt: this.deps.clock.now() };
  }

  private async ec2Inventory(): Promise<InstanceTypeInventory> {
    const ec2 = this.deps.ec2;
    const specs = new Map<string, InstanceTypeSpec>();
    let token: string | undefined;
    do {
      const page = await withThrottleRetry(() =>
        ec2.send(
          new DescribeInstanceTypesCommand({
            Filters: [
              { Name: 'supported-virtualization-type', Values: ['hvm'] },
              { Name: 'processor-info.supported-architecture', Values: ['x86_64', 'arm64'] },
            ],
            MaxResults: 100,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const info of page.InstanceTypes ?? []) {
        if (!info.InstanceType) continue;
        specs.set(info.InstanceType, specFromEC2(info, getInstanceTypeSpec(info.InstanceType)));
      }
      token = page.NextToken;
    } while (token);
    const zones = new Map<string, string[]>();
    token = undefined;
    do {
      const page = await withThrottleRetry(() =>
        ec2.send(
          new DescribeInstanceTypeOfferingsCommand({
            LocationType: 'availability-zone',
            MaxResults: 1000,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const o of page.InstanceTypeOfferings ?? []) {
        if (!o.InstanceType || !o.Location) continue;
        const list = zones.get(o.InstanceType) ?? [];
        list.push(o.Location);
        zones.set(o.InstanceType, list);
      }
      token = page.NextToken;
    } while (token);
    for (const z of zones.values()) z.sort();
    if (specs.size === 0) throw new Error('DescribeInstanceTypes returned no instance types');
    return { specs, zones, source: 'ec2', fetchedAt: this.deps.clock.now() };
  }

  /**
   * Every instance type offered in the class's zones (the zones of `status.subnets`; all zones of the region when the
   * class has no resolved subnets), with offerings per zone × capacity type (on-demand, spot, as the type supports)
   * priced by {@link AwsPricing}; an offering without a price takes the price a NodeOverlay gives its type
   * (`overlayPrices`, priceSource `node-overlay`: upstream aws v1.14 `BaseResolver` + `GetOverlayPrice`, preview
   * instance types) and is otherwise left out (upstream lists it unavailable), and types left without offerings are
   * still listed (upstream returns them all). Offerings in the unavailable-offerings cache come back `available: false`.
   * @throws InvalidNodeClassValueError naming a bad kubelet/blockDeviceMappings value of the class.
   */
  async list(nodeClass: EC2NodeClass | undefined): Promise<InstanceType[]> {
    const inv = await this.getInventory();
    await this.deps.pricing.ensureFresh();
    const subnets = nodeClass ? (ec2NodeClassStatus(nodeClass).subnets ?? []) : [];
    const allowedZones = subnets.length > 0 ? new Set(subnets.map((s) => s.zone)) : undefined;
    const zoneIDs = subnetZoneIDs(subnets);
    const family = resolveAMIFamily(nodeClass);
    const opts = allocatableOptionsFor(nodeClass, family, {
      ...(this.deps.vmMemoryOverheadPercent !== undefined
        ? { vmMemoryOverheadPercent: this.deps.vmMemoryOverheadPercent }
        : {}),
      ...(this.deps.reservedENIs !== undefined ? { reservedENIs: this.deps.reservedENIs } : {}),
    });
    const classKey = JSON.stringify([
      nodeClass?.metadata.name,
      opts,
      nodeClass?.spec.connectionTracking !== undefined,
      allowedZones ? [...allowedZones].sort() : null,
      [...zoneIDs].sort(),
    ]);
    const overlayPrices = this.deps.overlayPrices?.() ?? new Map<string, number>();
    const overlayKey = JSON.stringify([...overlayPrices].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    const key = `${inv.fetchedAt}|${this.deps.pricing.generation}|${classKey}|${overlayKey}`;
    const memoKey = nodeClass?.metadata.name ?? '';
    const hit = this.memo.get(memoKey);
    let types: InstanceType[];
    if (hit && hit.key === key) types = hit.types;
    else {
      types = [];
      for (const spec of inv.specs.values()) {
        if (family.startsWith('Windows') && spec.architecture !== 'amd64') continue;
        if (!compatibleWithNodeClass(spec, nodeClass)) continue;
        const zones = (inv.zones.get(spec.name) ?? []).filter((z) => !allowedZones || allowedZones.has(z));
        if (zones.length === 0) continue;
        const offerings: Offering[] = [];
        for (const zone of zones) {
          for (const ct of ['on-demand', 'spot'] as CapacityType[]) {
            if (!spec.supportedUsageClasses.includes(ct)) continue;
            const overlaid = overlayPrices.get(spec.name);
            const price =
              this.deps.pricing.price(spec.name, zone, ct) ??
              (overlaid !== undefined
                ? { priceUSDPerHour: overlaid, priceSource: 'node-overlay' as const }
                : undefined);
            if (!price) continue;
            const zoneID = zoneIDs.get(zone);
            offerings.push({
              zone,
              capacityType: ct,
              priceUSDPerHour: price.priceUSDPerHour,
              available: true,
              priceSource: price.priceSource,
              ...(zoneID ? { labels: { [LabelTopologyZoneID]: zoneID } } : {}),
            });
          }
        }
        types.push(buildInstanceType(spec, opts, offerings));
      }
      types.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      this.memo.set(memoKey, { key, types });
    }
    return this.deps.unavailable.apply(this.withReservedOfferings(types, nodeClass, allowedZones, zoneIDs));
  }

  /**
   * `types` with one `reserved` offering per `status.capacityReservations[]` entry of the class on its instance
   * type (upstream `ReservedCapacityResolver`): priced at the type's on-demand price / 10,000,000 (so a reservation
   * is all but free and still ordered by size for consolidation; 0 without an on-demand price), labelled with the
   * reservation's ID, type and interruptibility, available while the reservation has room, is in one of the
   * class's zones and is not `expiring`. Types without a reservation are returned as they are.
   */
  private withReservedOfferings(
    types: InstanceType[],
    nodeClass: EC2NodeClass | undefined,
    allowedZones: ReadonlySet<string> | undefined,
    zoneIDs: ReadonlyMap<string, string>,
  ): InstanceType[] {
    const avail = this.deps.reservations;
    const crs = nodeClass
      ? ((ec2NodeClassStatus(nodeClass).capacityReservations ?? []) as CapacityReservationStatus[])
      : [];
    if (!avail || crs.length === 0) return types;
    const byType = new Map<string, CapacityReservationStatus[]>();
    for (const cr of crs) byType.set(cr.instanceType, [...(byType.get(cr.instanceType) ?? []), cr]);
    return types.map((it) => {
      const mine = byType.get(it.name);
      if (!mine) return it;
      const od = this.deps.pricing.price(it.name, mine[0]!.availabilityZone, 'on-demand');
      const reserved: Offering[] = mine.map((cr) => {
        const capacity = avail.available(cr.id);
        return {
          zone: cr.availabilityZone,
          capacityType: 'reserved' as CapacityType,
          priceUSDPerHour: od ? od.priceUSDPerHour / 10_000_000 : 0,
          available:
            capacity > 0 &&
            cr.state !== 'expiring' &&
            (!allowedZones || allowedZones.has(cr.availabilityZone)),
          priceSource: od?.priceSource ?? 'provider',
          reservationID: cr.id,
          reservationCapacity: capacity,
          labels: {
            ...(zoneIDs.has(cr.availabilityZone)
              ? { [LabelTopologyZoneID]: zoneIDs.get(cr.availabilityZone)! }
              : {}),
            [LabelCapacityReservationID]: cr.id,
            [LabelCapacityReservationType]: cr.reservationType,
            [LabelCapacityReservationInterruptible]: String(cr.interruptible === true),
          },
        };
      });
      return { ...it, offerings: [...it.offerings, ...reserved] };
    });
  }
}
