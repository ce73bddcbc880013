/**
 * Launch templates of the aws provider: one per distinct set of launch options (AMI × user data × security groups
 * × instance profile × block devices × metadata options × CPU options × network interface options × tags), named `karpenter.k8s.aws/<hash of the options>`
 * and tagged `karpenter.k8s.aws/cluster=<cluster>`, `karpenter.k8s.aws/ec2nodeclass=<class>` (upstream
 * `pkg/providers/launchtemplate/launchtemplate.go`). Reused while cached (an earlier process's templates are taken
 * into the cache when first listed); templates of this cluster that no launch used for `ttlSeconds` are deleted by
 * {@link LaunchTemplates.garbageCollect}, and all templates of a deleted
 * EC2NodeClass by {@link LaunchTemplates.deleteForNodeClass}.
 */
import { createHash } from 'node:crypto';
import {
  CreateLaunchTemplateCommand,
  DeleteLaunchTemplateCommand,
  DescribeLaunchTemplatesCommand,
  type EC2Client,
  type LaunchTemplateBlockDeviceMappingRequest,
  type LaunchTemplateInstanceNetworkInterfaceSpecificationRequest,
  type RequestLaunchTemplateData,
  type VolumeType,
} from '@aws-sdk/client-ec2';
import { type Gauge, Registry } from 'prom-client';
import type { BlockDeviceMapping, EC2NetworkInterface, EC2NodeClass } from '../../apis/karpenter.ts';
import { parseResource } from '../../apis/quantity.ts';
import { registeredGauge } from '../../kube/metrics.ts';
import type { NowClock } from '../offerings.ts';
import type { AMIFamily } from './catalog/index.ts';
import { awsErrorCode, isAwsNotFound, withThrottleRetry } from './retry.ts';

/** Tag key naming the cluster on launch templates (upstream `v1.LabelClusterTagKey`... `karpenter.k8s.aws/cluster`). */
export const TagLaunchTemplateCluster = 'karpenter.k8s.aws/cluster';
/** Tag key naming the EC2NodeClass (also a node label). */
export const TagNodeClass = 'karpenter.k8s.aws/ec2nodeclass';
/** Launch template name prefix. */
export const LaunchTemplateNamePrefix = 'karpenter.k8s.aws/';

/** The options one launch template is built from. */
export interface LaunchTemplateOptions {
  clusterName: string;
  nodeClassName: string;
  amiID: string;
  /** Plain text (base64-encoded into the template). Carries join credentials: never logged. */
  userData: string;
  securityGroupIDs: string[];
  instanceProfile?: string;
  blockDeviceMappings: LaunchTemplateBlockDeviceMappingRequest[];
  metadataOptions: NonNullable<RequestLaunchTemplateData['MetadataOptions']>;
  /** `spec.associatePublicIPAddress`: the primary network interface's `AssociatePublicIpAddress`. */
  associatePublicIPAddress?: boolean;
  /** `spec.detailedMonitoring`: `Monitoring.Enabled` (false when absent, as upstream). */
  detailedMonitoring?: boolean;
  /** `spec.cpuOptions` as the template's `CpuOptions` (absent: none, as upstream `cpuOptions`). */
  cpuOptions?: NonNullable<RequestLaunchTemplateData['CpuOptions']>;
  /**
   * `spec.ipPrefixCount` on the primary network interface: `Ipv4PrefixCount` in an IPv4 cluster, `Ipv6PrefixCount`
   * in an IPv6 one (upstream `generateNetworkInterfaces`).
   */
  ipPrefixCount?: { count: number; ipv6: boolean };
  /** `spec.connectionTracking` (seconds) as the primary network interface's `ConnectionTrackingSpecification`. */
  connectionTracking?: { TcpEstablishedTimeout?: number; UdpStreamTimeout?: number; UdpTimeout?: number };
  /**
   * `spec.networkInterfaces` (non-empty): the template's interfaces, one per entry (upstream
   * `generateNetworkInterfaces`, its first case). Takes precedence over {@link efaCount}.
   */
  networkInterfaces?: EC2NetworkInterface[];
  /**
   * EFA interfaces for a NodeClaim requesting `vpc.amazonaws.com/efa`: the instance type's EFA count, one `efa`
   * interface per network card 0..n−1 (upstream `LaunchTemplate.EFACount`). Absent (or 0): none.
   */
  efaCount?: number;
  /**
   * The cluster is IPv6 (its service CIDR): every interface that carries IPs (the primary one, those built from
   * {@link networkInterfaces} / {@link efaCount}) gets `PrimaryIpv6` and one IPv6 address, as upstream
   * `generateNetworkInterfaces`. Absent in an IPv4 cluster, so IPv4 templates keep their names.
   */
  ipv6?: boolean;
  /** Tags for the template and (via the template) the volumes and network interfaces. */
  tags: Record<string, string>;
  /**
   * A template for launches into one capacity reservation (upstream `LaunchModeTargeted` with capacity type
   * `reserved`): `CapacityReservationSpecification` `capacity-reservations-only` targeting `id`, and the market type
   * `capacity-block` (a capacity block) or `interruptible-capacity-reservation` (an interruptible reservation).
   */
  capacityReservation?: { id: string; type: 'default' | 'capacity-block'; interruptible?: boolean };
  /**
   * `dedicated`: the template's `Placement.Tenancy` is `dedicated` (Dedicated Instances; upstream
   * `pkg/providers/launchtemplate/types.go` `buildPlacement`). Absent for default tenancy, so the templates of
   * shared launches keep the names (hashes) they had before tenancy was an option.
   */
  tenancy?: 'dedicated';
  /**
   * The class's placement group (upstream `buildPlacement`): `Placement.GroupId`, and for a `partition` group the
   * `Placement.PartitionNumber` the NodeClaim asks for (absent: EC2 picks one). Absent without a group, so the
   * templates of other launches keep their names (hashes).
   */
  placementGroup?: { id: string; partition?: number };
}

/** A launch template that exists in EC2. */
export interface LaunchTemplateRef {
  id: string;
  name: string;
}

/** A launch template tagged with this cluster's name: its ID, name and the EC2NodeClass tag (if any). */
export interface ClusterTemplate extends LaunchTemplateRef {
  nodeClass: string | undefined;
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, x]) => `${JSON.stringify(k)}:${stable(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** `karpenter.k8s.aws/<decimal 64-bit hash>` of the options (upstream names templates by a 64-bit hash too). */
export function launchTemplateName(o: LaunchTemplateOptions): string {
  const digest = createHash('sha256').update(stable(o)).digest();
  return `${LaunchTemplateNamePrefix}${digest.readBigUInt64BE(0).toString()}`;
}

const GiB = 2 ** 30;

/**
 * EC2 block device mappings of a class: its `spec.blockDeviceMappings` (sizes in GiB, rounded up; `iops`,
 * `throughput`, `kmsKeyID`, `snapshotID` and `volumeInitializationRate` (MiB/s) passed through as upstream
 * `pkg/providers/launchtemplate/launchtemplate.go` `blockDeviceMappings`), or the family's
 * default (upstream `amifamily.*.DefaultBlockDeviceMappings`: 20 GiB gp3 encrypted root on `/dev/xvda`; Bottlerocket
 * a 4 GiB OS volume on `/dev/xvda` and 20 GiB data on `/dev/xvdb`; Custom none).
 * @throws Error naming `spec.blockDeviceMappings[i].ebs.volumeSize` when a size is not a quantity.
 */
export function blockDeviceMappings(
  nodeClass: EC2NodeClass,
  family: AMIFamily,
): LaunchTemplateBlockDeviceMappingRequest[] {
  const bdms: BlockDeviceMapping[] | undefined = nodeClass.spec.blockDeviceMappings;
  if (bdms && bdms.length > 0) {
    return bdms.map((b, i) => {
      const ebs = b.ebs ?? {};
      let size: number | undefined;
      if (ebs.volumeSize !== undefined) {
        try {
          size = Math.ceil(parseResource('ephemeral-storage', ebs.volumeSize) / GiB);
        } catch {
          throw new Error(
            `EC2NodeClass ${nodeClass.metadata.name} spec.blockDeviceMappings[${i}].ebs.volumeSize "${ebs.volumeSize}" ` +
              'is not a quantity (e.g. "20Gi")',
          );
        }
      }
      const extra = ebs as Record<string, unknown>;
      return {
        ...(b.deviceName ? { DeviceName: b.deviceName } : {}),
        Ebs: {
          ...(size !== undefined ? { VolumeSize: size } : {}),
          VolumeType: (ebs.volumeType ?? 'gp3') as VolumeType,
          Encrypted: (extra.encrypted as boolean | undefined) ?? true,
          DeleteOnTermination: (extra.deleteOnTermination as boolean | undefined) ?? true,
          ...(typeof extra.iops === 'number' ? { Iops: extra.iops } : {}),
          ...(typeof extra.throughput === 'number' ? { Throughput: extra.throughput } : {}),
          ...(typeof extra.kmsKeyID === 'string' ? { KmsKeyId: extra.kmsKeyID } : {}),
          ...(typeof extra.snapshotID === 'string' ? { SnapshotId: extra.snapshotID } : {}),
          ...(typeof extra.volumeInitializationRate === 'number'
            ? { VolumeInitializationRate: extra.volumeInitializationRate }
            : {}),
        },
      };
    });
  }
  const ebs = (gib: number) => ({
    VolumeSize: gib,
    VolumeType: 'gp3' as VolumeType,
    Encrypted: true,
    DeleteOnTermination: true,
  });
  switch (family) {
    case 'AL2023':
    case 'AL2':
      return [{ DeviceName: '/dev/xvda', Ebs: ebs(20) }];
    case 'Bottlerocket':
      return [
        { DeviceName: '/dev/xvda', Ebs: ebs(4) },
        { DeviceName: '/dev/xvdb', Ebs: ebs(20) },
      ];
    case 'Custom':
      return [];
    default:
      return [{ DeviceName: '/dev/sda1', Ebs: ebs(50) }];
  }
}

/**
 * IMDS options of a class with upstream's defaults (enabled, IPv6 disabled, hop limit 1, tokens required), and
 * `InstanceMetadataTags` always `disabled`: an account-wide default of `enabled` would otherwise fail the launch,
 * since tag keys like `kubernetes.io/cluster/<name>` are not valid instance-metadata tag keys (upstream
 * `pkg/providers/launchtemplate/types.go` `CreateLaunchTemplateInputBuilder.Build`).
 */
export function metadataOptions(nodeClass: EC2NodeClass): LaunchTemplateOptions['metadataOptions'] {
  const m = nodeClass.spec.metadataOptions ?? {};
  return {
    HttpEndpoint: m.httpEndpoint ?? 'enabled',
    HttpProtocolIpv6: m.httpProtocolIPv6 ?? 'disabled',
    HttpPutResponseHopLimit: m.httpPutResponseHopLimit ?? 1,
    HttpTokens: m.httpTokens ?? 'required',
    InstanceMetadataTags: 'disabled',
  };
}

/**
 * `spec.cpuOptions` as a template's `CpuOptions`: `NestedVirtualization` when set, else undefined (upstream
 * `pkg/providers/launchtemplate/launchtemplate.go` `cpuOptions`).
 */
export function cpuOptions(nodeClass: EC2NodeClass): LaunchTemplateOptions['cpuOptions'] {
  const n = nodeClass.spec.cpuOptions?.nestedVirtualization;
  return n ? { NestedVirtualization: n } : undefined;
}

/**
 * `spec.connectionTracking` as a `ConnectionTrackingSpecification` (seconds): undefined when no timeout is set
 * (upstream `pkg/providers/launchtemplate/launchtemplate.go` `connectionTrackingSpec`).
 */
export function connectionTracking(nodeClass: EC2NodeClass): LaunchTemplateOptions['connectionTracking'] {
  const ct = nodeClass.spec.connectionTracking;
  if (!ct) return undefined;
  const out = {
    ...(ct.tcpEstablishedTimeout !== undefined ? { TcpEstablishedTimeout: ct.tcpEstablishedTimeout } : {}),
    ...(ct.udpStreamTimeout !== undefined ? { UdpStreamTimeout: ct.udpStreamTimeout } : {}),
    ...(ct.udpTimeout !== undefined ? { UdpTimeout: ct.udpTimeout } : {}),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The template's primary network interface (device index 0, the security groups), carrying
 * `AssociatePublicIpAddress`, the IP prefix count, connection tracking and, in an IPv6 cluster, `PrimaryIpv6: true`
 * with one IPv6 address (upstream `pkg/providers/launchtemplate/launchtemplate.go` `generateNetworkInterfaces`, its
 * last case). Undefined when the options set none of them (so never in an IPv6 cluster): the template then names
 * `SecurityGroupIds` instead, and keeps the name (hash) it had before these options existed. (Upstream always writes
 * the interface; EC2 launches the same IPv4 instance either way.)
 */
export function primaryNetworkInterface(
  o: LaunchTemplateOptions,
): LaunchTemplateInstanceNetworkInterfaceSpecificationRequest | undefined {
  if (o.associatePublicIPAddress === undefined && !o.ipPrefixCount && !o.connectionTracking && !o.ipv6)
    return undefined;
  return {
    DeviceIndex: 0,
    Groups: o.securityGroupIDs,
    ...(o.associatePublicIPAddress !== undefined
      ? { AssociatePublicIpAddress: o.associatePublicIPAddress }
      : {}),
    ...(o.ipPrefixCount
      ? o.ipPrefixCount.ipv6
        ? { Ipv6PrefixCount: o.ipPrefixCount.count }
        : { Ipv4PrefixCount: o.ipPrefixCount.count }
      : {}),
    ...(o.ipv6 ? { PrimaryIpv6: true, Ipv6AddressCount: 1 } : {}),
    ...(o.connectionTracking ? { ConnectionTrackingSpecification: o.connectionTracking } : {}),
  };
}

type NetworkInterfaceRequest = LaunchTemplateInstanceNetworkInterfaceSpecificationRequest;

/**
 * One interface of {@link LaunchTemplateOptions.networkInterfaces} (upstream `generateNetworkInterfaces`, first
 * case): card, device index and type; the security groups; for an `interface` (not `efa-only`, where EC2 refuses
 * them) also the IP prefixes (`Ipv4PrefixCount`, or `Ipv6PrefixCount` and one IPv6 address in an IPv6 cluster),
 * `AssociatePublicIpAddress`, `PrimaryIpv6` and connection tracking.
 */
function configuredInterface(o: LaunchTemplateOptions, ni: EC2NetworkInterface): NetworkInterfaceRequest {
  const ip = ni.interfaceType !== 'efa-only';
  const count = o.ipPrefixCount?.count;
  return {
    NetworkCardIndex: ni.networkCardIndex,
    DeviceIndex: ni.deviceIndex,
    InterfaceType: ni.interfaceType,
    Groups: o.securityGroupIDs,
    ...(ip && !o.ipv6 && count !== undefined ? { Ipv4PrefixCount: count } : {}),
    ...(ip && o.ipv6
      ? { ...(count !== undefined ? { Ipv6PrefixCount: count } : {}), Ipv6AddressCount: 1 }
      : {}),
    ...(ip && o.associatePublicIPAddress !== undefined
      ? { AssociatePublicIpAddress: o.associatePublicIPAddress }
      : {}),
    ...(ip && o.ipv6 ? { PrimaryIpv6: true } : {}),
    ...(ip && o.connectionTracking ? { ConnectionTrackingSpecification: o.connectionTracking } : {}),
  };
}

/**
 * EFA interface `i` of {@link LaunchTemplateOptions.efaCount} (upstream `generateNetworkInterfaces`, second case):
 * network card `i`, device index 0 on card 0 and 1 on the others (so card 0 keeps the primary interface), type
 * `efa`, the security groups, the IP prefixes, `AssociatePublicIpAddress`, IPv6 and connection tracking.
 */
function efaInterface(o: LaunchTemplateOptions, i: number): NetworkInterfaceRequest {
  const count = o.ipPrefixCount?.count;
  return {
    NetworkCardIndex: i,
    DeviceIndex: i === 0 ? 0 : 1,
    InterfaceType: 'efa',
    Groups: o.securityGroupIDs,
    ...(count !== undefined ? (o.ipv6 ? { Ipv6PrefixCount: count } : { Ipv4PrefixCount: count }) : {}),
    ...(o.associatePublicIPAddress !== undefined
      ? { AssociatePublicIpAddress: o.associatePublicIPAddress }
      : {}),
    ...(o.ipv6 ? { PrimaryIpv6: true, Ipv6AddressCount: 1 } : {}),
    ...(o.connectionTracking ? { ConnectionTrackingSpecification: o.connectionTracking } : {}),
  };
}

/**
 * The template's `NetworkInterfaces` (upstream `pkg/providers/launchtemplate/launchtemplate.go`
 * `generateNetworkInterfaces`): the class's `spec.networkInterfaces` when set; else `efaCount` EFA interfaces; else
 * the primary interface of {@link primaryNetworkInterface} (undefined when it has nothing to carry, and then the
 * template names `SecurityGroupIds` instead).
 */
export function templateNetworkInterfaces(o: LaunchTemplateOptions): NetworkInterfaceRequest[] | undefined {
  if (o.networkInterfaces && o.networkInterfaces.length > 0) {
    return o.networkInterfaces.map((ni) => configuredInterface(o, ni));
  }
  if (o.efaCount && o.efaCount > 0) return Array.from({ length: o.efaCount }, (_, i) => efaInterface(o, i));
  const nic = primaryNetworkInterface(o);
  return nic ? [nic] : undefined;
}

/** Dependencies of {@link LaunchTemplates}. */
export interface LaunchTemplatesDeps {
  ec2: EC2Client;
  clusterName: string;
  clock: NowClock;
  /** Seconds a template may go unused before garbage collection deletes it (default 3600). */
  ttlSeconds?: number;
  /** Where `karpenter_ec2nodeclasses_userdata_bytes` is registered (default: a registry of its own). */
  registry?: Registry;
}

/**
 * `karpenter_ec2nodeclasses_userdata_bytes{nodeclass}` (aws/karpenter-provider-aws
 * `pkg/providers/launchtemplate/metrics.go`): the byte size of the user data (raw, before base64) last rendered for a
 * launch template of the EC2NodeClass, set just before `CreateLaunchTemplate` (so an oversized one is reported even
 * when EC2 refuses it) and dropped with the class's templates.
 */
export const UserDataBytesMetric = 'karpenter_ec2nodeclasses_userdata_bytes';

/** Ensures, caches and garbage-collects launch templates. */
export class LaunchTemplates {
  private readonly cache = new Map<string, { ref: LaunchTemplateRef; lastUsed: number; nodeClass: string }>();
  private readonly inflight = new Map<string, Promise<LaunchTemplateRef>>();
  /** The first cache miss of this process lists the cluster's templates once (undefined again after a failure). */
  private hydrated: Promise<void> | undefined;

  private readonly userDataBytes: Gauge<'nodeclass'>;

  constructor(private readonly deps: LaunchTemplatesDeps) {
    this.userDataBytes = registeredGauge(
      deps.registry ?? new Registry(),
      UserDataBytesMetric,
      'Size in bytes of the rendered user data (raw, pre-base64) for the EC2NodeClass',
      ['nodeclass'],
    );
  }

  /** Names of the cached templates. */
  cachedNames(): string[] {
    return [...this.cache.keys()].sort();
  }

  /**
   * The template for `opts`: from the cache, else created (or, when it already exists, described). One EC2 call
   * for a new template, none for a cached one. The first miss of a process first takes the cluster's existing
   * templates into the cache (one DescribeLaunchTemplates, as upstream's `hydrateCache` at start), so a restarted
   * process reuses its predecessor's templates instead of creating them again; when that listing fails, the
   * template is created (or described) as without it.
   * @throws the EC2 error of CreateLaunchTemplate / DescribeLaunchTemplates.
   */
  async ensure(opts: LaunchTemplateOptions): Promise<LaunchTemplateRef> {
    const name = launchTemplateName(opts);
    let hit = this.cache.get(name);
    if (!hit) {
      this.hydrated ??= this.hydrate().catch(() => {
        this.hydrated = undefined;
      });
      await this.hydrated;
      hit = this.cache.get(name);
    }
    if (hit) {
      hit.lastUsed = this.deps.clock.now();
      return hit.ref;
    }
    let p = this.inflight.get(name);
    if (!p) {
      p = this.createOrDescribe(name, opts).finally(() => this.inflight.delete(name));
      this.inflight.set(name, p);
    }
    const ref = await p;
    this.cache.set(name, { ref, lastUsed: this.deps.clock.now(), nodeClass: opts.nodeClassName });
    return ref;
  }

  /** Takes the cluster's templates not cached yet into the cache, as used now. */
  private async hydrate(): Promise<void> {
    const now = this.deps.clock.now();
    for (const lt of await this.listClusterTemplates()) if (!this.cache.has(lt.name)) this.adopt(lt, now);
  }

  /**
   * Caches a template of this cluster left by an earlier process as used at `now` (epoch ms): the template name is a
   * hash of its content, so it serves this process's launches, and it goes only after a TTL without use.
   */
  private adopt(lt: ClusterTemplate, now: number): void {
    this.cache.set(lt.name, {
      ref: { id: lt.id, name: lt.name },
      lastUsed: now,
      nodeClass: lt.nodeClass ?? '',
    });
  }

  /** Forgets a template (e.g. the launch said it does not exist any more). */
  invalidate(name: string): void {
    this.cache.delete(name);
  }

  private async createOrDescribe(name: string, o: LaunchTemplateOptions): Promise<LaunchTemplateRef> {
    const tags = Object.entries({
      ...o.tags,
      [TagLaunchTemplateCluster]: o.clusterName,
      [TagNodeClass]: o.nodeClassName,
    }).map(([Key, Value]) => ({ Key, Value }));
    const nics = templateNetworkInterfaces(o);
    const data: RequestLaunchTemplateData = {
      ImageId: o.amiID,
      UserData: Buffer.from(o.userData, 'utf8').toString('base64'),
      ...(o.instanceProfile ? { IamInstanceProfile: { Name: o.instanceProfile } } : {}),
      ...(nics ? { NetworkInterfaces: nics } : { SecurityGroupIds: o.securityGroupIDs }),
      ...(o.blockDeviceMappings.length > 0 ? { BlockDeviceMappings: o.blockDeviceMappings } : {}),
      MetadataOptions: o.metadataOptions,
      Monitoring: { Enabled: o.detailedMonitoring ?? false },
      ...(o.cpuOptions ? { CpuOptions: o.cpuOptions } : {}),
      ...(o.tenancy || o.placementGroup
        ? {
            Placement: {
              ...(o.tenancy ? { Tenancy: o.tenancy } : {}),
              ...(o.placementGroup ? { GroupId: o.placementGroup.id } : {}),
              ...(o.placementGroup?.partition ? { PartitionNumber: o.placementGroup.partition } : {}),
            },
          }
        : {}),
      ...(o.capacityReservation
        ? {
            CapacityReservationSpecification: {
              CapacityReservationPreference: 'capacity-reservations-only',
              CapacityReservationTarget: { CapacityReservationId: o.capacityReservation.id },
            },
            ...(o.capacityReservation.type === 'capacity-block'
              ? { InstanceMarketOptions: { MarketType: 'capacity-block' } }
              : o.capacityReservation.interruptible
                ? { InstanceMarketOptions: { MarketType: 'interruptible-capacity-reservation' } }
                : {}),
          }
        : {}),
      TagSpecifications: [
        { ResourceType: 'volume', Tags: tags },
        { ResourceType: 'network-interface', Tags: tags },
      ],
    };
    this.userDataBytes.set({ nodeclass: o.nodeClassName }, Buffer.byteLength(o.userData, 'utf8'));
    try {
      const out = await withThrottleRetry(() =>
        this.deps.ec2.send(
          new CreateLaunchTemplateCommand({
            LaunchTemplateName: name,
            LaunchTemplateData: data,
            TagSpecifications: [{ ResourceType: 'launch-template', Tags: tags }],
          }),
        ),
      );
      return { id: out.LaunchTemplate!.LaunchTemplateId!, name };
    } catch (err) {
      const code = awsErrorCode(err) ?? '';
      if (!code.includes('AlreadyExists')) throw err;
      const out = await withThrottleRetry(() =>
        this.deps.ec2.send(new DescribeLaunchTemplatesCommand({ LaunchTemplateNames: [name] })),
      );
      const lt = out.LaunchTemplates?.[0];
      if (!lt?.LaunchTemplateId) throw err;
      return { id: lt.LaunchTemplateId, name };
    }
  }

  /** Every template of this cluster (paged), as name → id and its EC2NodeClass tag. */
  async listClusterTemplates(): Promise<ClusterTemplate[]> {
    const out: ClusterTemplate[] = [];
    let token: string | undefined;
    do {
      const page = await withThrottleRetry(() =>
        this.deps.ec2.send(
          new DescribeLaunchTemplatesCommand({
            Filters: [{ Name: `tag:${TagLaunchTemplateCluster}`, Values: [this.deps.clusterName] }],
            MaxResults: 200,
            ...(token ? { NextToken: token } : {}),
          }),
        ),
      );
      for (const lt of page.LaunchTemplates ?? []) {
        if (!lt.LaunchTemplateId || !lt.LaunchTemplateName) continue;
        out.push({
          id: lt.LaunchTemplateId,
          name: lt.LaunchTemplateName,
          nodeClass: lt.Tags?.find((t) => t.Key === TagNodeClass)?.Value,
        });
      }
      token = page.NextToken;
    } while (token);
    return out;
  }

  private async deleteTemplate(id: string, name: string): Promise<void> {
    try {
      await withThrottleRetry(() =>
        this.deps.ec2.send(new DeleteLaunchTemplateCommand({ LaunchTemplateId: id })),
      );
    } catch (err) {
      if (!isAwsNotFound(err)) throw err;
    }
    this.cache.delete(name);
  }

  /**
   * Deletes this cluster's templates that no launch of this process used within the TTL (launched instances do not
   * need their template) — except those in `keep` and those being created. A template this process has not seen
   * yet (left by an earlier process, e.g. before a restart) is taken into the cache as if used now, and reused by
   * {@link ensure}: it goes only after a TTL without use, as upstream's `hydrateCache` at start and its cache's
   * eviction (`pkg/providers/launchtemplate`). Returns the deleted names.
   * @throws the EC2 error of DescribeLaunchTemplates or DeleteLaunchTemplate (a template already gone is not one).
   */
  async garbageCollect(keep: ReadonlySet<string> = new Set()): Promise<string[]> {
    const ttl = (this.deps.ttlSeconds ?? 3600) * 1000;
    const now = this.deps.clock.now();
    const deleted: string[] = [];
    for (const lt of await this.listClusterTemplates()) {
      if (keep.has(lt.name) || this.inflight.has(lt.name)) continue;
      const c = this.cache.get(lt.name);
      if (!c) {
        this.adopt(lt, now);
        continue;
      }
      if (now - c.lastUsed < ttl) continue;
      await this.deleteTemplate(lt.id, lt.name);
      deleted.push(lt.name);
    }
    return deleted;
  }

  /** Deletes every template of the EC2NodeClass `name` (when the class is deleted). Returns the deleted names. */
  async deleteForNodeClass(name: string): Promise<string[]> {
    this.userDataBytes.remove({ nodeclass: name });
    const deleted: string[] = [];
    for (const lt of await this.listClusterTemplates()) {
      if (lt.nodeClass !== name) continue;
      await this.deleteTemplate(lt.id, lt.name);
      deleted.push(lt.name);
    }
    return deleted;
  }
}
