/**
 * The `kwok` CloudProvider: a launch creates only a Node object (no machine), after the KWOKNodeClass's
 * simulated registration delay. Instance types and prices are the real AWS catalog of the chosen region, so
 * simulations pick the same types at the same prices as on AWS.
 *
 * Behaviour modelled on kubernetes-sigs/karpenter `kwok/cloudprovider/cloudprovider.go` (cheapest compatible
 * available offering among the NodeClaim's instance types; Node with the `karpenter.sh/unregistered:NoExecute`
 * taint, the instance labels, capacity and allocatable; `kwok.x-k8s.io/node: fake` marker), extended with a
 * provider-ID per instance, the unavailable-offerings cache, a registration delay and drift detection.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Node, Taint } from '../../apis/core.ts';
import { parseDuration } from '../../apis/duration.ts';
import type { Condition, KWOKNodeClass, NodeClaim, NodePool } from '../../apis/karpenter.ts';
import {
  LabelArch,
  LabelCapacityType,
  LabelHostname,
  LabelInstanceType,
  LabelOS,
  LabelTopologyRegion,
  LabelTopologyZone,
  TaintUnregistered,
} from '../../apis/labels.ts';
import { formatResources } from '../../apis/quantity.ts';
import { getInstanceTypes, isSupportedRegion, UnsupportedRegionError } from '../aws/catalog/index.ts';
import {
  describeOfferings,
  type LaunchSelection,
  type NowClock,
  offeringLabels,
  selectLaunchOption,
  UnavailableOfferings,
} from '../offerings.ts';
import {
  type CapacityType,
  type CloudProvider,
  CreateError,
  type InstanceType,
  InsufficientCapacityError,
  NodeClaimNotFoundError,
  type NodeClassKind,
  NodeClassNotReadyError,
  type Offering,
  type RepairPolicy,
} from '../types.ts';
import type { NodeWriter } from './nodes.ts';

/** API group of the KWOKNodeClass. */
export const KwokGroup = 'karpenter.kwok.sh';
/** Kind of the kwok NodeClass. */
export const KwokNodeClassKind = 'KWOKNodeClass';
/** Provider-ID scheme: `kwok://<region>/<zone>/<instance-id>`. */
export const KwokProviderIDPrefix = 'kwok://';
/** Label and annotation upstream kwok puts on its fake nodes (value `fake`), recognised by the kwok controller. */
export const KwokNodeMarker = 'kwok.x-k8s.io/node';
/** NodeClaim annotation: hash of the KWOKNodeClass spec the instance was launched with (drift detection). */
export const AnnotationKwokNodeClassHash = 'karpenter.kwok.sh/kwoknodeclass-hash';
/** NodeClaim annotation: version of the hashing scheme; drift is only compared when versions match. */
export const AnnotationKwokNodeClassHashVersion = 'karpenter.kwok.sh/kwoknodeclass-hash-version';
/** Node annotation: name of the KWOKNodeClass the instance was launched from (read back when adopting Nodes). */
export const AnnotationKwokNodeClass = 'karpenter.kwok.sh/kwoknodeclass';
/** Current {@link AnnotationKwokNodeClassHashVersion}. */
export const KwokNodeClassHashVersion = 'v1';
/** Drift reason when the KWOKNodeClass spec changed since launch. */
export const DriftNodeClass = 'NodeClassDrift';
/** Drift reason when the instance type (or its zone × capacity type offering) left the catalog. */
export const DriftInstanceTypeNotOffered = 'InstanceTypeNotOffered';

/**
 * The clock the provider needs: time plus timers (ms). `kube/clock.ts` `Clock`/`FakeClock` satisfy it.
 * Declared structurally so the provider does not depend on `kube/`.
 */
export interface KwokClock extends NowClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: never): void;
}

/**
 * Where instance types come from: all types launchable in the provider's region, with offerings and prices.
 * Called on every `create`, `instanceTypes` and `isDrifted` (memoize inside when expensive); `nodePool` is
 * given when known (kwok's types do not depend on it).
 */
export type KwokInstanceTypeSource = (
  nodePool?: NodePool,
  /** The NodeClaim being launched or checked for drift (`create`, `isDrifted`), when there is one. */
  nodeClaim?: NodeClaim,
) => InstanceType[] | Promise<InstanceType[]>;

/** Constructor dependencies of {@link KwokCloudProvider}. */
export interface KwokCloudProviderDeps {
  /** AWS region whose catalog is simulated, e.g. `us-east-1` (label `topology.kubernetes.io/region`). */
  region: string;
  /** Where Nodes are written. */
  nodes: NodeWriter;
  /** Time and timers (registration delay, ICE TTL, launch timestamps). */
  clock: KwokClock;
  /**
   * Instance types of the region; see {@link KwokInstanceTypeSource}. Default: the embedded AWS catalog
   * (`aws/catalog` `getInstanceTypes({region})`, AL2023 overhead, on-demand and estimated spot prices).
   */
  instanceTypes?: KwokInstanceTypeSource;
  /** KWOKNodeClass lookup by name; without it every NodeClaim is launched with an empty NodeClass spec. */
  nodeClass?: (name: string) => KWOKNodeClass | undefined;
  /**
   * Registration delay in seconds for a NodeClaim whose KWOKNodeClass sets no `spec.nodeRegistrationDelay`
   * (the NodeClass value wins). Default 0: the Node is created before `create` resolves.
   */
  registrationDelaySeconds?: (nodeClaim: NodeClaim) => number;
  /** The ICE cache; default a private cache with upstream's 3-minute TTL on `clock`. */
  unavailableOfferings?: UnavailableOfferings;
  /** Instance-ID generator; default `i-` + 17 random hex digits. See {@link sequentialInstanceIds}. */
  instanceId?: () => string;
  /** Seconds between retries when writing a Node fails (default 5); at most 5 attempts. */
  registrationRetrySeconds?: number;
  /** Called when writing or deleting a Node fails (the provider retries or gives up on its own). */
  onError?: (err: unknown, context: { nodeClaim: string; action: 'createNode' | 'deleteNode' }) => void;
}

/** Instance IDs `i-00000000000000001`, `i-00000000000000002`, ... (deterministic, for tests and simulations). */
export function sequentialInstanceIds(start = 1): () => string {
  let n = start;
  return () => `i-${(n++).toString(16).padStart(17, '0')}`;
}

function randomInstanceId(): string {
  return `i-${randomUUID().replaceAll('-', '').slice(0, 17)}`;
}

/**
 * Hash of a KWOKNodeClass spec (stable JSON with sorted keys, SHA-256, first 16 hex digits). Stamped on launched
 * NodeClaims as {@link AnnotationKwokNodeClassHash}; a different current hash means `NodeClassDrift`.
 */
export function kwokNodeClassHash(nodeClass: KWOKNodeClass): string {
  return createHash('sha256')
    .update(stableJSON(nodeClass.spec ?? {}))
    .digest('hex')
    .slice(0, 16);
}

function isCapacityType(v: string | undefined): v is CapacityType {
  return v === 'on-demand' || v === 'spot' || v === 'reserved';
}

function stableJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJSON).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * Parses `kwok://<region>/<zone>/<instance-id>`.
 * @returns the parts, or `undefined` when `providerID` is not a kwok provider ID.
 */
export function parseKwokProviderID(
  providerID: string,
): { region: string; zone: string; instanceId: string } | undefined {
  if (!providerID.startsWith(KwokProviderIDPrefix)) return undefined;
  const parts = providerID.slice(KwokProviderIDPrefix.length).split('/');
  if (parts.length !== 3 || parts.some((p) => p === '')) return undefined;
  return { region: parts[0]!, zone: parts[1]!, instanceId: parts[2]! };
}

/** What the provider remembers about one launched instance. */
interface InstanceRecord {
  providerID: string;
  nodeClaimName: string;
  /** The launched NodeClaim as returned by `create` (cloned on the way out). */
  launched: NodeClaim;
  /** The Node to write at registration. */
  node: Node;
  instanceType: string;
  zone: string;
  capacityType: CapacityType;
  launchedAt: number;
  /** `pending` until the Node was written, `registered` after, `failed` after the last retry failed. */
  state: 'pending' | 'registered' | 'failed';
  attempts: number;
  timer: unknown;
  deleted: boolean;
}

/**
 * The Node a kwok instance registers as, named like its NodeClaim: the launched NodeClaim's labels plus the
 * hostname and the kwok marker, its provider ID, capacity and allocatable; taints `karpenter.sh/unregistered`
 * then the NodeClaim's taints and startup taints (each key and effect once); `Ready=False` until the kubelet
 * stand-in reports it Ready; `launchedAt` in epoch ms.
 */
function kwokNode(
  nodeClaim: NodeClaim,
  launched: NodeClaim,
  nodeClassName: string,
  launchedAt: number,
): Node {
  const name = launched.metadata.name!;
  const labels = launched.metadata.labels ?? {};
  const status = launched.status!;
  const taints: Taint[] = [{ key: TaintUnregistered.key, effect: TaintUnregistered.effect }];
  for (const t of [...(nodeClaim.spec.taints ?? []), ...(nodeClaim.spec.startupTaints ?? [])]) {
    if (!taints.some((x) => x.key === t.key && x.effect === t.effect)) taints.push({ ...t });
  }
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: { ...labels, [LabelHostname]: name, [KwokNodeMarker]: 'fake' },
      annotations: { [KwokNodeMarker]: 'fake', [AnnotationKwokNodeClass]: nodeClassName },
    },
    spec: { providerID: status.providerID!, taints },
    status: {
      capacity: status.capacity!,
      allocatable: status.allocatable!,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          message: 'kwok node registered; waiting for the kubelet stand-in to report Ready',
          lastTransitionTime: new Date(launchedAt).toISOString(),
          lastHeartbeatTime: new Date(launchedAt).toISOString(),
        },
      ],
      nodeInfo: {
        architecture: labels[LabelArch] ?? 'amd64',
        operatingSystem: labels[LabelOS] ?? 'linux',
        kubeletVersion: 'v0.0.0-kwok',
      },
    },
  };
}

const MAX_REGISTRATION_ATTEMPTS = 5;

/**
 * The kwok CloudProvider. Instances live in the provider's memory (so `get`/`list` find instances whose Node is
 * not written yet, and garbage collection can find leaked ones); the Node is their only outside trace. On first
 * use the provider adopts existing kwok Nodes of its region (a restarted controller keeps its nodes); launches
 * whose Node was not yet written when the previous process stopped are lost, and garbage collection deletes
 * their NodeClaims.
 * Extra test hooks beyond {@link CloudProvider}: {@link markUnavailable}, {@link idle}, {@link instanceCount}.
 */
export class KwokCloudProvider implements CloudProvider {
  readonly name = 'kwok';
  private readonly deps: KwokCloudProviderDeps;
  private readonly ice: UnavailableOfferings;
  private readonly newInstanceId: () => string;
  private readonly source: KwokInstanceTypeSource;
  private readonly byProviderID = new Map<string, InstanceRecord>();
  private readonly byNodeClaim = new Map<string, InstanceRecord>();
  private readonly inflight = new Set<Promise<void>>();
  private restored: Promise<void> | undefined;

  /** @throws Error when `region` is empty, or not in the embedded catalog while no `instanceTypes` is injected. */
  constructor(deps: KwokCloudProviderDeps) {
    if (!deps.region) throw new Error('KwokCloudProvider: region is required (e.g. "us-east-1")');
    if (deps.instanceTypes) this.source = deps.instanceTypes;
    else {
      const region = deps.region;
      if (!isSupportedRegion(region)) throw new UnsupportedRegionError(region);
      this.source = () => getInstanceTypes({ region }).instanceTypes as InstanceType[];
    }
    this.deps = deps;
    this.ice = deps.unavailableOfferings ?? new UnavailableOfferings({ clock: deps.clock });
    this.newInstanceId = deps.instanceId ?? randomInstanceId;
  }

  /** The ICE cache this provider consults. */
  get unavailableOfferings(): UnavailableOfferings {
    return this.ice;
  }

  supportedNodeClasses(): NodeClassKind[] {
    return [{ group: KwokGroup, kind: KwokNodeClassKind }];
  }

  /**
   * Upstream kwok's node repair policies (kubernetes-sigs/karpenter v1.14.1 `kwok/cloudprovider/cloudprovider.go`):
   * `Ready` False or Unknown for 10 min.
   */
  repairPolicies(): RepairPolicy[] {
    return [
      { conditionType: 'Ready', conditionStatus: 'False', tolerationDurationSeconds: 10 * 60 },
      { conditionType: 'Ready', conditionStatus: 'Unknown', tolerationDurationSeconds: 10 * 60 },
    ];
  }

  /**
   * Marks one offering unavailable (as if its launch had failed with ICE) for the cache TTL: `create` skips it
   * and `instanceTypes` reports it `available: false`.
   */
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType, reason?: string): void {
    this.ice.markUnavailable(instanceType, zone, capacityType, reason);
  }

  /** Resolves when no Node write started by this provider is in flight (tests: after advancing the clock). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** Number of live (not terminating) instances. */
  get instanceCount(): number {
    let n = 0;
    for (const r of this.byProviderID.values()) if (!r.deleted) n++;
    return n;
  }

  async instanceTypes(nodePool: NodePool): Promise<InstanceType[]> {
    const ref = nodePool.spec.template.spec.nodeClassRef;
    if (ref.kind === KwokNodeClassKind && ref.group === KwokGroup) this.resolveNodeClass(ref.name);
    return this.ice.apply(await this.source(nodePool));
  }

  /**
   * Launches: validates the NodeClass, picks the cheapest compatible available offering, records the instance
   * and schedules its Node. See {@link CloudProvider.create} for the contract. Idempotent per NodeClaim name:
   * a second call for a NodeClaim that already has a live instance returns that launch.
   * @throws CreateError `InvalidNodeClaim` (no `metadata.name`), `NodeClassNotSupported`, `InvalidNodeClass`.
   * @throws NodeClassNotReadyError when the KWOKNodeClass is missing, deleting or not Ready.
   * @throws InsufficientCapacityError when no compatible offering is available.
   */
  async create(nodeClaim: NodeClaim): Promise<NodeClaim> {
    const name = nodeClaim.metadata.name;
    if (!name) {
      throw new CreateError(
        'NodeClaim has no metadata.name; set a name (or generateName resolved by the API server) before launching',
        'InvalidNodeClaim',
      );
    }
    await this.ensureRestored();
    const existing = this.byNodeClaim.get(name);
    if (existing && !existing.deleted) return structuredClone(existing.launched);

    const ref = nodeClaim.spec.nodeClassRef;
    if (ref.group !== KwokGroup || ref.kind !== KwokNodeClassKind) {
      throw new CreateError(
        `NodeClaim "${name}" spec.nodeClassRef is ${ref.group}/${ref.kind} "${ref.name}", but the kwok provider ` +
          `launches only ${KwokGroup}/${KwokNodeClassKind}; point the NodePool at a KWOKNodeClass`,
        'NodeClassNotSupported',
      );
    }
    const nodeClass = this.resolveNodeClass(ref.name);
    const delaySeconds = this.registrationDelay(nodeClaim, nodeClass);

    const types = await this.source(undefined, nodeClaim);
    // A concurrent create for the same NodeClaim may have finished while we awaited the catalog.
    const raced = this.byNodeClaim.get(name);
    if (raced && !raced.deleted) return structuredClone(raced.launched);
    const { instanceType, offering } = this.selectOffering(name, types, nodeClaim.spec.requirements ?? []);

    const providerID = `${KwokProviderIDPrefix}${this.deps.region}/${offering.zone}/${this.newInstanceId()}`;
    const launchedAt = this.deps.clock.now();
    const launched = this.launchedNodeClaim(nodeClaim, nodeClass, instanceType, offering, providerID);
    const record: InstanceRecord = {
      providerID,
      nodeClaimName: name,
      launched,
      node: kwokNode(nodeClaim, launched, ref.name, launchedAt),
      instanceType: instanceType.name,
      zone: offering.zone,
      capacityType: offering.capacityType,
      launchedAt,
      state: 'pending',
      attempts: 0,
      timer: undefined,
      deleted: false,
    };
    this.byProviderID.set(providerID, record);
    this.byNodeClaim.set(name, record);

    if (delaySeconds > 0) this.schedule(record, delaySeconds * 1000);
    else await this.track(this.register(record));
    return structuredClone(launched);
  }

  /**
   * The cheapest compatible available offering among `types` for NodeClaim `name`'s requirements.
   * @throws CreateError `InvalidRequirements` when they are malformed.
   * @throws InsufficientCapacityError when none is compatible (naming requested types not in the catalog) or
   *   every compatible one is unavailable.
   */
  private selectOffering(
    name: string,
    types: InstanceType[],
    requirements: NonNullable<NodeClaim['spec']['requirements']>,
  ): { instanceType: InstanceType; offering: Offering } {
    let selection: LaunchSelection;
    try {
      selection = selectLaunchOption(types, requirements, (it, zone, ct) =>
        this.ice.isUnavailable(it, zone, ct),
      );
    } catch (err) {
      throw new CreateError(
        `NodeClaim "${name}" spec.requirements are malformed: ${(err as Error).message}`,
        'InvalidRequirements',
        undefined,
        { cause: err },
      );
    }
    if (!selection.ok) {
      const unknown =
        selection.unknownInstanceTypes.length > 0
          ? `; not in the ${this.deps.region} catalog: ${selection.unknownInstanceTypes.join(', ')}`
          : '';
      throw new InsufficientCapacityError(
        selection.reason === 'NoCompatibleOffering'
          ? `NodeClaim "${name}": no offering in ${this.deps.region} satisfies its requirements${unknown}`
          : `NodeClaim "${name}": all ${selection.compatible.length} compatible offerings are unavailable: ` +
              describeOfferings(selection.compatible),
        selection.compatible,
      );
    }
    return selection.option;
  }

  /**
   * The launched NodeClaim: labels = single-value `In` requirements, then the NodeClaim's labels, then the
   * offering's and the region (facts win); the KWOKNodeClass hash annotations when there is a class; status
   * `providerID`, `capacity`, `allocatable`.
   */
  private launchedNodeClaim(
    nodeClaim: NodeClaim,
    nodeClass: KWOKNodeClass | undefined,
    instanceType: InstanceType,
    offering: Offering,
    providerID: string,
  ): NodeClaim {
    const facts: Record<string, string> = {
      ...offeringLabels(instanceType, offering),
      [LabelTopologyRegion]: this.deps.region,
    };
    const requirementLabels: Record<string, string> = {};
    for (const r of nodeClaim.spec.requirements ?? []) {
      if (r.operator === 'In' && r.values?.length === 1) requirementLabels[r.key] = r.values[0]!;
    }
    const launched: NodeClaim = structuredClone(nodeClaim);
    launched.metadata.labels = { ...requirementLabels, ...(nodeClaim.metadata.labels ?? {}), ...facts };
    if (nodeClass) {
      launched.metadata.annotations = {
        ...(launched.metadata.annotations ?? {}),
        [AnnotationKwokNodeClassHash]: kwokNodeClassHash(nodeClass),
        [AnnotationKwokNodeClassHashVersion]: KwokNodeClassHashVersion,
      };
    }
    launched.status = {
      ...(launched.status ?? {}),
      providerID,
      capacity: formatResources(instanceType.capacity),
      allocatable: formatResources(instanceType.allocatable),
    };
    return launched;
  }

  /**
   * Terminates the instance: cancels a pending registration, deletes its Node, then forgets it. Looks the
   * instance up by `status.providerID`, else by NodeClaim name (a launch whose status was never written).
   * When deleting the Node fails the error propagates and the instance stays (terminating: hidden from
   * `get`/`list`), so the termination controller's retry deletes it again.
   * @throws NodeClaimNotFoundError when there is no such instance (already deleted, or never launched).
   */
  async delete(nodeClaim: NodeClaim): Promise<void> {
    await this.ensureRestored();
    const providerID = nodeClaim.status?.providerID;
    const record = providerID
      ? this.byProviderID.get(providerID)
      : this.byNodeClaim.get(nodeClaim.metadata.name ?? '');
    if (!record) {
      const id = providerID ?? nodeClaim.metadata.name ?? '<unnamed>';
      throw new NodeClaimNotFoundError(`kwok instance ${id} does not exist`, { providerID: id });
    }
    record.deleted = true;
    if (record.timer !== undefined) this.deps.clock.clearTimeout(record.timer as never);
    record.timer = undefined;
    try {
      await this.deps.nodes.deleteNode(record.node.metadata.name!);
    } catch (err) {
      this.deps.onError?.(err, { nodeClaim: record.nodeClaimName, action: 'deleteNode' });
      throw err;
    }
    this.forget(record);
  }

  /** @throws NodeClaimNotFoundError when `providerID` is not a live kwok instance of this provider. */
  async get(providerID: string): Promise<NodeClaim> {
    await this.ensureRestored();
    const record = this.byProviderID.get(providerID);
    if (!record || record.deleted) {
      const why = parseKwokProviderID(providerID) ? 'does not exist' : 'is not a kwok provider ID';
      throw new NodeClaimNotFoundError(`kwok instance ${providerID} ${why}`, { providerID });
    }
    return this.toNodeClaim(record);
  }

  async list(): Promise<NodeClaim[]> {
    await this.ensureRestored();
    return [...this.byProviderID.values()]
      .filter((r) => !r.deleted)
      .sort((a, b) => a.launchedAt - b.launchedAt || a.providerID.localeCompare(b.providerID))
      .map((r) => this.toNodeClaim(r));
  }

  /**
   * `NodeClassDrift` when the KWOKNodeClass spec hash differs from the one stamped at launch (same hash
   * version only); `InstanceTypeNotOffered` when the NodeClaim's instance type, or its zone × capacity type
   * offering, is no longer in the catalog (availability/ICE does not count). Otherwise `undefined`.
   * A missing NodeClass is not drift (its absence is handled by the NodeClass/NodePool controllers).
   */
  async isDrifted(nodeClaim: NodeClaim): Promise<string | undefined> {
    const ref = nodeClaim.spec.nodeClassRef;
    const annotations = nodeClaim.metadata.annotations ?? {};
    const stamped = annotations[AnnotationKwokNodeClassHash];
    if (
      stamped !== undefined &&
      annotations[AnnotationKwokNodeClassHashVersion] === KwokNodeClassHashVersion &&
      this.deps.nodeClass &&
      ref.group === KwokGroup &&
      ref.kind === KwokNodeClassKind
    ) {
      const nc = this.deps.nodeClass(ref.name);
      if (nc && kwokNodeClassHash(nc) !== stamped) return DriftNodeClass;
    }
    const record = nodeClaim.status?.providerID
      ? this.byProviderID.get(nodeClaim.status.providerID)
      : undefined;
    const labels = nodeClaim.metadata.labels ?? {};
    const typeName = record?.instanceType ?? labels[LabelInstanceType];
    const zone = record?.zone ?? labels[LabelTopologyZone];
    const capacityType = record?.capacityType ?? labels[LabelCapacityType];
    if (!typeName) return undefined;
    const types = await this.source(undefined, nodeClaim);
    const it = types.find((t) => t.name === typeName);
    if (!it) return DriftInstanceTypeNotOffered;
    if (zone !== undefined && capacityType !== undefined) {
      if (!it.offerings.some((o) => o.zone === zone && o.capacityType === capacityType)) {
        return DriftInstanceTypeNotOffered;
      }
    }
    return undefined;
  }

  /**
   * Once per provider: adopts the kwok Nodes of this region already in the cluster (launched by an earlier
   * process), so that after a restart `get`/`list`/`delete` still see them and garbage collection does not
   * delete healthy NodeClaims. A failed listing is retried on the next call.
   */
  private ensureRestored(): Promise<void> {
    this.restored ??= this.restoreFromNodes().catch((err: unknown) => {
      this.restored = undefined;
      throw err;
    });
    return this.restored;
  }

  private async restoreFromNodes(): Promise<void> {
    const nodes = await this.deps.nodes.listNodes({ [KwokNodeMarker]: 'fake' });
    for (const node of nodes) {
      const providerID = node.spec?.providerID;
      const name = node.metadata.name;
      if (!providerID || !name || node.metadata.deletionTimestamp) continue;
      const parsed = parseKwokProviderID(providerID);
      if (!parsed || parsed.region !== this.deps.region || this.byProviderID.has(providerID)) continue;
      if (this.byNodeClaim.has(name)) continue;
      const labels = { ...(node.metadata.labels ?? {}) };
      delete labels[LabelHostname];
      delete labels[KwokNodeMarker];
      const capacityType = labels[LabelCapacityType];
      const created = Date.parse(node.metadata.creationTimestamp ?? '');
      const launchedAt = Number.isFinite(created) ? created : this.deps.clock.now();
      const launched: NodeClaim = {
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name, labels },
        spec: {
          nodeClassRef: {
            group: KwokGroup,
            kind: KwokNodeClassKind,
            name: node.metadata.annotations?.[AnnotationKwokNodeClass] ?? 'default',
          },
          requirements: [],
        },
        status: {
          providerID,
          nodeName: name,
          ...(node.status?.capacity ? { capacity: node.status.capacity } : {}),
          ...(node.status?.allocatable ? { allocatable: node.status.allocatable } : {}),
        },
      };
      const record: InstanceRecord = {
        providerID,
        nodeClaimName: name,
        launched,
        node: structuredClone(node),
        instanceType: labels[LabelInstanceType] ?? '',
        zone: labels[LabelTopologyZone] ?? parsed.zone,
        capacityType: isCapacityType(capacityType) ? capacityType : 'on-demand',
        launchedAt,
        state: 'registered',
        attempts: 0,
        timer: undefined,
        deleted: false,
      };
      this.byProviderID.set(providerID, record);
      this.byNodeClaim.set(name, record);
    }
  }

  private resolveNodeClass(name: string): KWOKNodeClass | undefined {
    if (!this.deps.nodeClass) return undefined;
    const id = `${KwokNodeClassKind}/${name}`;
    const nc = this.deps.nodeClass(name);
    if (!nc) {
      throw new NodeClassNotReadyError(
        `${id} not found; create it or fix spec.template.spec.nodeClassRef.name`,
        {
          nodeClass: id,
        },
      );
    }
    if (nc.metadata.deletionTimestamp) {
      throw new NodeClassNotReadyError(`${id} is being deleted`, { nodeClass: id });
    }
    const conditions = (nc.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
    const ready = conditions.find((c) => c.type === 'Ready');
    if (ready && ready.status !== 'True') {
      throw new NodeClassNotReadyError(
        `${id} has Ready=${ready.status}${ready.reason ? ` (${ready.reason}${ready.message ? `: ${ready.message}` : ''})` : ''}`,
        { nodeClass: id },
      );
    }
    return nc;
  }

  private registrationDelay(nodeClaim: NodeClaim, nodeClass: KWOKNodeClass | undefined): number {
    const text = nodeClass?.spec?.nodeRegistrationDelay;
    if (text !== undefined) {
      let seconds: number;
      try {
        seconds = parseDuration(text);
      } catch (err) {
        throw new CreateError(
          `${KwokNodeClassKind}/${nodeClass?.metadata.name} spec.nodeRegistrationDelay "${text}" is not a duration; ` +
            'use e.g. "30s" or "1m30s"',
          'InvalidNodeClass',
          undefined,
          { cause: err },
        );
      }
      if (!Number.isFinite(seconds) || seconds < 0) {
        throw new CreateError(
          `${KwokNodeClassKind}/${nodeClass?.metadata.name} spec.nodeRegistrationDelay "${text}" must be a finite, ` +
            'non-negative duration such as "30s"',
          'InvalidNodeClass',
        );
      }
      return seconds;
    }
    const fallback = this.deps.registrationDelaySeconds?.(nodeClaim) ?? 0;
    return Number.isFinite(fallback) && fallback > 0 ? fallback : 0;
  }

  private schedule(record: InstanceRecord, ms: number): void {
    record.timer = this.deps.clock.setTimeout(() => {
      record.timer = undefined;
      void this.track(this.register(record));
    }, ms);
  }

  private track(p: Promise<void>): Promise<void> {
    this.inflight.add(p);
    return p.finally(() => this.inflight.delete(p));
  }

  /** Writes the Node; on failure retries up to {@link MAX_REGISTRATION_ATTEMPTS} times. Never rejects. */
  private async register(record: InstanceRecord): Promise<void> {
    if (record.deleted || record.state !== 'pending') return;
    record.attempts++;
    try {
      await this.deps.nodes.createNode(structuredClone(record.node));
      record.state = 'registered';
      record.launched.status = { ...(record.launched.status ?? {}), nodeName: record.node.metadata.name! };
    } catch (err) {
      this.deps.onError?.(err, { nodeClaim: record.nodeClaimName, action: 'createNode' });
      if (record.deleted) return;
      if (record.attempts >= MAX_REGISTRATION_ATTEMPTS) record.state = 'failed';
      else this.schedule(record, (this.deps.registrationRetrySeconds ?? 5) * 1000);
      return;
    }
    // Deleted while the write was in flight: remove the Node we just created.
    if (record.deleted) {
      await this.deps.nodes.deleteNode(record.node.metadata.name!).catch((err: unknown) => {
        this.deps.onError?.(err, { nodeClaim: record.nodeClaimName, action: 'deleteNode' });
      });
    }
  }

  private forget(record: InstanceRecord): void {
    record.deleted = true;
    this.byProviderID.delete(record.providerID);
    if (this.byNodeClaim.get(record.nodeClaimName) === record) this.byNodeClaim.delete(record.nodeClaimName);
  }

  private toNodeClaim(record: InstanceRecord): NodeClaim {
    const nc = structuredClone(record.launched);
    nc.metadata.creationTimestamp = new Date(record.launchedAt).toISOString();
    return nc;
  }
}
