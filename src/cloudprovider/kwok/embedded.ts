/**
 * The cloud provider of the embedded (simulated) cluster: the kwok provider, extended so that NodePools may
 * reference an `EC2NodeClass` as well as a `KWOKNodeClass`. Real-world manifests (like the upstream
 * general-purpose NodePool + EC2NodeClass) then run unchanged in `capenter start` and give the same decisions as
 * `capenter simulate`:
 * - `KWOKNodeClass` NodePools get the region's AWS catalog with default (AL2023) overhead, as plain kwok;
 * - `EC2NodeClass` NodePools get the region's AWS catalog computed for that EC2NodeClass (its kubelet maxPods,
 *   podsPerCore, kubeReserved, systemReserved, evictionHard, block devices, AMI family), exactly the catalog
 *   `capenter simulate` uses; launches create kwok Nodes with that allocatable.
 * Internally an EC2NodeClass reference is handed to the kwok provider as a KWOKNodeClass named
 * `ec2nodeclass:<name>` (a name no real object can have) and translated back on every NodeClaim returned, so
 * NodeClaims, Nodes and metrics always show the user's `EC2NodeClass` reference.
 */
import type { KubeObject } from '../../apis/core.ts';
import type {
  Condition,
  EC2NodeClass,
  KWOKNodeClass,
  NodeClaim,
  NodeClassReference,
  NodePool,
} from '../../apis/karpenter.ts';
import { getInstanceTypes, isSupportedRegion, UnsupportedRegionError } from '../aws/catalog/index.ts';
import {
  type CapacityType,
  type CloudProvider,
  type InstanceType,
  type NodeClassKind,
  NodeClassNotReadyError,
  type RepairPolicy,
} from '../types.ts';
import type { NodeWriter } from './nodes.ts';
import {
  type KwokClock,
  KwokCloudProvider,
  type KwokCloudProviderDeps,
  KwokGroup,
  KwokNodeClassKind,
} from './provider.ts';

/** API group of the EC2NodeClass. */
export const EC2Group = 'karpenter.k8s.aws';
/** Kind of the AWS NodeClass. */
export const EC2NodeClassKind = 'EC2NodeClass';
/** Prefix of the internal KWOKNodeClass name standing for an EC2NodeClass. */
export const EC2AliasPrefix = 'ec2nodeclass:';

/** Constructor dependencies of {@link EmbeddedCloudProvider}. */
export interface EmbeddedCloudProviderDeps {
  /** AWS region whose catalog is simulated (e.g. `us-east-1`). */
  region: string;
  /** Where Nodes are written (the operator passes a `KubeNodeWriter`). */
  nodes: NodeWriter;
  clock: KwokClock;
  /** NodeClass lookup (KWOKNodeClass or EC2NodeClass) by reference; the operator reads cluster state. */
  nodeClass: (ref: NodeClassReference) => KubeObject | undefined;
  /** Further kwok provider options (instance IDs, registration delay, ICE cache, onError). */
  kwok?: Partial<
    Pick<
      KwokCloudProviderDeps,
      | 'instanceId'
      | 'registrationDelaySeconds'
      | 'unavailableOfferings'
      | 'registrationRetrySeconds'
      | 'onError'
    >
  >;
}

function isEC2Ref(ref: NodeClassReference | undefined): boolean {
  return ref?.group === EC2Group && ref.kind === EC2NodeClassKind;
}

function toKwokRef(ref: NodeClassReference): NodeClassReference {
  return isEC2Ref(ref)
    ? { group: KwokGroup, kind: KwokNodeClassKind, name: `${EC2AliasPrefix}${ref.name}` }
    : ref;
}

function fromKwokRef(ref: NodeClassReference): NodeClassReference {
  if (ref.group === KwokGroup && ref.kind === KwokNodeClassKind && ref.name.startsWith(EC2AliasPrefix))
    return { group: EC2Group, kind: EC2NodeClassKind, name: ref.name.slice(EC2AliasPrefix.length) };
  return ref;
}

function restore(nc: NodeClaim): NodeClaim {
  if (nc.spec?.nodeClassRef) nc.spec.nodeClassRef = fromKwokRef(nc.spec.nodeClassRef);
  return nc;
}

/**
 * kwok + EC2NodeClass; see the module comment. Besides {@link CloudProvider} it exposes the kwok test hooks
 * {@link markUnavailable}, {@link idle} and {@link instanceCount}.
 */
export class EmbeddedCloudProvider implements CloudProvider {
  readonly name = 'kwok';
  /** The wrapped kwok provider. */
  readonly kwok: KwokCloudProvider;
  private readonly deps: EmbeddedCloudProviderDeps;

  /** @throws UnsupportedRegionError when `region` has no embedded catalog. */
  constructor(deps: EmbeddedCloudProviderDeps) {
    this.deps = deps;
    const region = deps.region;
    // fail early on an unknown region; the region's catalog is computed when first asked for (a NodePool), not
    // here: an operator without NodePools never holds it (~12 MB of RSS for us-east-1 at start-up)
    if (!isSupportedRegion(region)) throw new UnsupportedRegionError(region);
    this.kwok = new KwokCloudProvider({
      ...(deps.kwok ?? {}),
      region,
      nodes: deps.nodes,
      clock: deps.clock,
      nodeClass: (name) => {
        if (name.startsWith(EC2AliasPrefix)) {
          // The EC2NodeClass was checked by the wrapper; kwok sees an empty, Ready KWOKNodeClass.
          return {
            apiVersion: 'karpenter.kwok.sh/v1alpha1',
            kind: 'KWOKNodeClass',
            metadata: { name },
            spec: {},
          } satisfies KWOKNodeClass;
        }
        return deps.nodeClass({ group: KwokGroup, kind: KwokNodeClassKind, name }) as
          | KWOKNodeClass
          | undefined;
      },
      instanceTypes: (nodePool, nodeClaim) => {
        const ref = nodePool?.spec.template.spec.nodeClassRef ?? nodeClaim?.spec.nodeClassRef;
        const ec2 = ref ? fromKwokRef(ref) : undefined;
        if (ec2 && isEC2Ref(ec2)) return this.ec2InstanceTypes(ec2.name);
        return getInstanceTypes({ region }).instanceTypes as InstanceType[];
      },
    });
  }

  private ec2NodeClass(name: string): EC2NodeClass {
    const id = `${EC2NodeClassKind}/${name}`;
    const obj = this.deps.nodeClass({ group: EC2Group, kind: EC2NodeClassKind, name }) as
      | EC2NodeClass
      | undefined;
    if (!obj)
      throw new NodeClassNotReadyError(
        `${id} not found; create it or fix spec.template.spec.nodeClassRef.name`,
        { nodeClass: id },
      );
    if (obj.metadata.deletionTimestamp)
      throw new NodeClassNotReadyError(`${id} is being deleted`, { nodeClass: id });
    const ready = ((obj.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find(
      (c) => c.type === 'Ready',
    );
    if (ready?.status === 'False')
      throw new NodeClassNotReadyError(
        `${id} has Ready=False (${ready.reason ?? ''}${ready.message ? `: ${ready.message}` : ''})`,
        {
          nodeClass: id,
        },
      );
    return obj;
  }

  private ec2InstanceTypes(name: string): InstanceType[] {
    const nodeClass = this.ec2NodeClass(name);
    try {
      return getInstanceTypes({ region: this.deps.region, nodeClass }).instanceTypes as InstanceType[];
    } catch (err) {
      throw new NodeClassNotReadyError(`${EC2NodeClassKind}/${name}: ${(err as Error).message}`, {
        nodeClass: `${EC2NodeClassKind}/${name}`,
        cause: err,
      });
    }
  }

  supportedNodeClasses(): NodeClassKind[] {
    return [
      { group: KwokGroup, kind: KwokNodeClassKind },
      { group: EC2Group, kind: EC2NodeClassKind },
    ];
  }

  repairPolicies(): RepairPolicy[] {
    return this.kwok.repairPolicies();
  }

  async instanceTypes(nodePool: NodePool): Promise<InstanceType[]> {
    const ref = nodePool.spec.template.spec.nodeClassRef;
    if (!isEC2Ref(ref)) return this.kwok.instanceTypes(nodePool);
    this.ec2NodeClass(ref.name);
    const np = structuredClone(nodePool);
    np.spec.template.spec.nodeClassRef = toKwokRef(ref);
    return this.kwok.instanceTypes(np);
  }

  async create(nodeClaim: NodeClaim): Promise<NodeClaim> {
    const ref = nodeClaim.spec.nodeClassRef;
    if (!isEC2Ref(ref)) return this.kwok.create(nodeClaim);
    this.ec2NodeClass(ref.name);
    const nc = structuredClone(nodeClaim);
    nc.spec.nodeClassRef = toKwokRef(ref);
    return restore(await this.kwok.create(nc));
  }

  async delete(nodeClaim: NodeClaim): Promise<void> {
    const nc = structuredClone(nodeClaim);
    if (nc.spec?.nodeClassRef) nc.spec.nodeClassRef = toKwokRef(nc.spec.nodeClassRef);
    return this.kwok.delete(nc);
  }

  async get(providerID: string): Promise<NodeClaim> {
    return restore(await this.kwok.get(providerID));
  }

  async list(): Promise<NodeClaim[]> {
    return (await this.kwok.list()).map(restore);
  }

  async isDrifted(nodeClaim: NodeClaim): Promise<string | undefined> {
    const nc = structuredClone(nodeClaim);
    if (nc.spec?.nodeClassRef) nc.spec.nodeClassRef = toKwokRef(nc.spec.nodeClassRef);
    return this.kwok.isDrifted(nc);
  }

  /** Marks an offering unavailable (ICE) for the cache TTL; see {@link KwokCloudProvider.markUnavailable}. */
  markUnavailable(instanceType: string, zone: string, capacityType: CapacityType, reason?: string): void {
    this.kwok.markUnavailable(instanceType, zone, capacityType, reason);
  }

  /** Resolves when no Node write is in flight. */
  idle(): Promise<void> {
    return this.kwok.idle();
  }

  /** Live instances. */
  get instanceCount(): number {
    return this.kwok.instanceCount;
  }
}
