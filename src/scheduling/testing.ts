/**
 * Test factories for the scheduling core: small instance types with labels shaped like the AWS ones
 * (`node.kubernetes.io/instance-type`, `kubernetes.io/arch`, `karpenter.k8s.aws/instance-*`), offerings in
 * zones `test-zone-a/b/c`, pods, NodePools, nodes and DaemonSets. Only for tests and benchmarks.
 */
import type { DaemonSet, Node, Pod, PodSpec, Taint } from '../apis/core.ts';
import type { CapacityType, InstanceType, Offering } from '../apis/instancetype.ts';
import type { NodePool, NodeSelectorRequirementWithMinValues } from '../apis/karpenter.ts';
import { daemonOverheadGroups } from './daemonoverhead.ts';
import { providerKeys, ResourceIndex, typeInfos } from './instancetypes.ts';
import { PoolContext } from './nodeclaim.ts';
import { nodeClaimTemplateRequirements } from './nodeclaimtemplate.ts';
import { Topology } from './topology.ts';

export const TEST_ZONES = ['test-zone-a', 'test-zone-b', 'test-zone-c'] as const;
const GiB = 2 ** 30;

/** Options of {@link makeInstanceType}; cpu in vCPUs, memory in GiB, price USD/hour (on-demand). */
export interface TypeOptions {
  name: string;
  cpu: number;
  memoryGiB: number;
  pods?: number;
  price: number;
  arch?: 'amd64' | 'arm64';
  zones?: readonly string[];
  /** Spot offerings at this fraction of the on-demand price (none when undefined). */
  spotFactor?: number;
  /** Zones whose offerings are unavailable (ICE). */
  unavailableZones?: readonly string[];
  extra?: Record<string, number>;
  labels?: Record<string, string>;
}

/**
 * An instance type with allocatable = capacity − (100m cpu, 10% memory), `family.size` naming, offerings in
 * `zones` (default all test zones).
 */
export function makeInstanceType(o: TypeOptions): InstanceType {
  const [family = o.name, size = 'large'] = o.name.split('.');
  const category = family.replace(/[0-9].*$/, '');
  const generation = /[0-9]+/.exec(family)?.[0] ?? '1';
  const capacity = { cpu: o.cpu * 1000, memory: o.memoryGiB * GiB, pods: o.pods ?? 110, ...(o.extra ?? {}) };
  const allocatable = { ...capacity, cpu: capacity.cpu - 100, memory: Math.floor(capacity.memory * 0.9) };
  const offerings: Offering[] = [];
  for (const zone of o.zones ?? TEST_ZONES) {
    const available = !(o.unavailableZones ?? []).includes(zone);
    const add = (capacityType: CapacityType, price: number) =>
      offerings.push({ zone, capacityType, priceUSDPerHour: price, available, priceSource: 'provider' });
    add('on-demand', o.price);
    if (o.spotFactor !== undefined) add('spot', o.price * o.spotFactor);
  }
  return {
    name: o.name,
    labels: {
      'node.kubernetes.io/instance-type': o.name,
      'kubernetes.io/arch': o.arch ?? 'amd64',
      'kubernetes.io/os': 'linux',
      'karpenter.k8s.aws/instance-family': family,
      'karpenter.k8s.aws/instance-size': size,
      'karpenter.k8s.aws/instance-category': category,
      'karpenter.k8s.aws/instance-generation': generation,
      'karpenter.k8s.aws/instance-cpu': String(o.cpu),
      ...(o.labels ?? {}),
    },
    capacity,
    overhead: { kubeReserved: { cpu: 100 }, systemReserved: {}, evictionThreshold: {} },
    allocatable,
    offerings,
  };
}

/** A small catalog: c/m/r families in sizes large..4xlarge with linear prices (and one arm64 family). */
export function smallCatalog(): InstanceType[] {
  const sizes: [string, number][] = [
    ['large', 2],
    ['xlarge', 4],
    ['2xlarge', 8],
    ['4xlarge', 16],
  ];
  const out: InstanceType[] = [];
  for (const [fam, gibPerCpu, perCpu, arch] of [
    ['c5', 2, 0.0425, 'amd64'],
    ['m5', 4, 0.048, 'amd64'],
    ['r5', 8, 0.063, 'amd64'],
    ['c6g', 2, 0.034, 'arm64'],
  ] as const) {
    for (const [size, cpu] of sizes) {
      out.push(
        makeInstanceType({
          name: `${fam}.${size}`,
          cpu,
          memoryGiB: cpu * gibPerCpu,
          price: cpu * perCpu,
          arch,
          spotFactor: 0.4,
        }),
      );
    }
  }
  return out;
}

/** Options of {@link makePod}: cpu/memory as quantities. */
export interface PodOptions {
  cpu?: string;
  memory?: string;
  namespace?: string;
  labels?: Record<string, string>;
  creationTimestamp?: string;
  spec?: Partial<PodSpec>;
}

/** A pending pod with one container. */
export function makePod(name: string, o: PodOptions = {}): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      uid: `uid-${name}`,
      labels: o.labels ?? {},
      ...(o.creationTimestamp ? { creationTimestamp: o.creationTimestamp } : {}),
    },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests } }],
      ...(o.spec ?? {}),
    },
    status: { phase: 'Pending' },
  };
}

/** Options of {@link makeNodePool}. */
export interface NodePoolOptions {
  requirements?: NodeSelectorRequirementWithMinValues[];
  weight?: number;
  limits?: Record<string, string>;
  taints?: Taint[];
  startupTaints?: Taint[];
  labels?: Record<string, string>;
}

/** A defaulted NodePool (on-demand unless requirements say otherwise). */
export function makeNodePool(name: string, o: NodePoolOptions = {}): NodePool {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        ...(o.labels ? { metadata: { labels: o.labels } } : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: o.requirements ?? [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          ],
          ...(o.taints ? { taints: o.taints } : {}),
          ...(o.startupTaints ? { startupTaints: o.startupTaints } : {}),
          expireAfter: '720h',
        },
      },
      disruption: {
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
        consolidateAfter: '0s',
        budgets: [{ nodes: '10%' }],
      },
      ...(o.limits ? { limits: o.limits } : {}),
      ...(o.weight !== undefined ? { weight: o.weight } : {}),
    },
  };
}

/** A Ready node with the given labels and allocatable (quantities). */
export function makeNode(
  name: string,
  o: { labels?: Record<string, string>; allocatable?: Record<string, string>; taints?: Taint[] } = {},
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(o.labels ?? {}) } },
    spec: { ...(o.taints ? { taints: o.taints } : {}) },
    status: {
      allocatable: o.allocatable ?? { cpu: '1930m', memory: '6903Mi', pods: '29' },
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

/** A DaemonSet whose pod template requests cpu/memory; `spec` overrides template spec fields. */
export function makeDaemonSet(
  name: string,
  cpu: string,
  memory?: string,
  spec: Partial<PodSpec> = {},
): DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: 'kube-system' },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            {
              name,
              image: `registry.example/${name}:1`,
              resources: { requests: { cpu, ...(memory ? { memory } : {}) } },
            },
          ],
          ...spec,
        },
      },
    },
  };
}

/**
 * The scheduling context of one NodePool over `types` (no DaemonSets, no limits, nothing in use), with the resource
 * index and an empty topology, as the NewNodeClaim and repack tests need it.
 */
export function poolFixture(
  np: NodePool,
  types: InstanceType[],
): { index: ResourceIndex; pool: PoolContext; topology: Topology } {
  const index = new ResourceIndex();
  for (const t of types) index.register(t.allocatable);
  const pool = new PoolContext(
    np,
    nodeClaimTemplateRequirements(np),
    typeInfos(types, index),
    providerKeys(types),
    daemonOverheadGroups(np, types, providerKeys(types), []),
    index,
    undefined,
    undefined,
  );
  return { index, pool, topology: new Topology(() => new Set()) };
}
