/**
 * Capacity, overhead and allocatable of an EC2 instance type, computed as upstream Karpenter computes them.
 *
 * Upstream: aws/karpenter-provider-aws `pkg/providers/instancetype/types.go` (`computeCapacity`, `memory`,
 * `ephemeralStorage`, `pods`, `ENILimitedPods`, `kubeReservedResources`, `systemReservedResources`,
 * `evictionThreshold`, `computeEvictionSignal`) and `pkg/providers/amifamily/*.go` (per-family default block
 * devices and feature flags), with the default operator options `vmMemoryOverheadPercent=0.075` and
 * `reservedENIs=0`. Verified against upstream's generated reference table for all 1,363 AL2023 types
 * (`test/catalog-golden.test.ts`).
 */
import type {
  BlockDeviceMapping,
  EC2NetworkInterface,
  EC2NodeClass,
  KubeletConfiguration,
} from '../../../apis/karpenter.ts';
import { parseResource, type Resources } from '../../../apis/quantity.ts';
import type { InstanceTypeSpec } from './data.ts';

/** The AMI families upstream distinguishes (`spec.amiFamily` values / alias families). */
export type AMIFamily =
  | 'AL2023'
  | 'AL2'
  | 'Bottlerocket'
  | 'Windows2019'
  | 'Windows2022'
  | 'Windows2025'
  | 'Custom';

/** What an AMI family changes about capacity and overhead (upstream `FeatureFlags` + default block devices). */
export interface AMIFamilyTraits {
  family: AMIFamily;
  /** Device holding the kubelet's root dir (`EphemeralBlockDevice()`); null for Custom (unknown). */
  ephemeralBlockDevice: string | null;
  /** Size of that device when no blockDeviceMappings override it (bytes). */
  defaultEphemeralBytes: number;
  /** kube-reserved memory uses the ENI-limited pod count even when maxPods/podsPerCore are set. */
  usesENILimitedMemoryOverhead: boolean;
  /** `kubelet.podsPerCore` is honoured. */
  podsPerCoreEnabled: boolean;
  /** Default pods = ENI-limited max pods (otherwise 110). */
  supportsENILimitedPodDensity: boolean;
  /** `kubernetes.io/os` value. */
  os: 'linux' | 'windows';
  /** `node.kubernetes.io/windows-build` value, Windows only. */
  windowsBuild?: string;
}

const GiB = 2 ** 30;
const MiB = 2 ** 20;
/** Upstream `amifamily.DefaultEBS.VolumeSize`. */
const DEFAULT_EBS_BYTES = 20 * GiB;

const LINUX_DEFAULT = {
  usesENILimitedMemoryOverhead: true,
  podsPerCoreEnabled: true,
  supportsENILimitedPodDensity: true,
  os: 'linux',
} as const;
const WINDOWS = {
  ephemeralBlockDevice: '/dev/sda1',
  defaultEphemeralBytes: 50 * GiB,
  usesENILimitedMemoryOverhead: false,
  podsPerCoreEnabled: true,
  supportsENILimitedPodDensity: false,
  os: 'windows',
} as const;

const TRAITS: Record<AMIFamily, AMIFamilyTraits> = {
  AL2023: {
    family: 'AL2023',
    ephemeralBlockDevice: '/dev/xvda',
    defaultEphemeralBytes: DEFAULT_EBS_BYTES,
    ...LINUX_DEFAULT,
  },
  AL2: {
    family: 'AL2',
    ephemeralBlockDevice: '/dev/xvda',
    defaultEphemeralBytes: DEFAULT_EBS_BYTES,
    ...LINUX_DEFAULT,
  },
  Bottlerocket: {
    family: 'Bottlerocket',
    ephemeralBlockDevice: '/dev/xvdb',
    defaultEphemeralBytes: DEFAULT_EBS_BYTES,
    usesENILimitedMemoryOverhead: false,
    podsPerCoreEnabled: false,
    supportsENILimitedPodDensity: true,
    os: 'linux',
  },
  Custom: {
    family: 'Custom',
    ephemeralBlockDevice: null,
    defaultEphemeralBytes: DEFAULT_EBS_BYTES,
    ...LINUX_DEFAULT,
  },
  Windows2019: { family: 'Windows2019', windowsBuild: '10.0.17763', ...WINDOWS },
  Windows2022: { family: 'Windows2022', windowsBuild: '10.0.20348', ...WINDOWS },
  Windows2025: { family: 'Windows2025', windowsBuild: '10.0.26100', ...WINDOWS },
};

const ALIAS_FAMILIES: Record<string, AMIFamily> = {
  al2023: 'AL2023',
  al2: 'AL2',
  bottlerocket: 'Bottlerocket',
  windows2019: 'Windows2019',
  windows2022: 'Windows2022',
  windows2025: 'Windows2025',
};

/**
 * The AMI family of an EC2NodeClass, as upstream `EC2NodeClass.AMIFamily()` + `amifamily.GetAMIFamily` resolve it:
 * `spec.amiFamily` when set (unknown values fall back to AL2, as upstream's `default:` case), else the family of the
 * `alias` term (`al2023@latest` → AL2023, `bottlerocket@v1.2` → Bottlerocket, `windows2022@latest` → Windows2022),
 * else `Custom` (selector terms by id/name/tags). No NodeClass at all → AL2023 (capenter's default).
 */
export function resolveAMIFamily(nodeClass?: Pick<EC2NodeClass, 'spec'>): AMIFamily {
  if (!nodeClass) return 'AL2023';
  const explicit = nodeClass.spec.amiFamily;
  if (explicit) return explicit in TRAITS ? (explicit as AMIFamily) : 'AL2';
  const alias = nodeClass.spec.amiSelectorTerms?.find((t) => typeof t.alias === 'string')?.alias;
  if (alias) {
    const fam = ALIAS_FAMILIES[alias.split('@')[0]!.toLowerCase()];
    if (fam) return fam;
  }
  return nodeClass.spec.amiSelectorTerms?.length ? 'Custom' : 'AL2023';
}

/** The {@link AMIFamilyTraits} of a family. */
export function amiFamilyTraits(family: AMIFamily): AMIFamilyTraits {
  return TRAITS[family];
}

/** Extended resource names Karpenter puts in capacity (upstream `pkg/apis/v1/labels.go`). */
export const ResourceNVIDIAGPU = 'nvidia.com/gpu';
export const ResourceAMDGPU = 'amd.com/gpu';
export const ResourceAWSNeuron = 'aws.amazon.com/neuron';
export const ResourceAWSNeuronCore = 'aws.amazon.com/neuroncore';
export const ResourceHabanaGaudi = 'habana.ai/gaudi';
export const ResourceEFA = 'vpc.amazonaws.com/efa';
export const ResourceAWSPodENI = 'vpc.amazonaws.com/pod-eni';
export const ResourcePrivateIPv4Address = 'vpc.amazonaws.com/PrivateIPv4Address';

/** One EC2NodeClass `spec.networkInterfaces[]` entry ({@link EC2NetworkInterface}). */
export type NodeClassNetworkInterface = EC2NetworkInterface;

/** Inputs of {@link computeAllocatable} besides the instance type. */
export interface AllocatableOptions {
  /** Default AL2023. */
  amiFamily?: AMIFamily;
  /** EC2NodeClass `spec.kubelet`; only maxPods, podsPerCore, kubeReserved, systemReserved, evictionHard matter. */
  kubelet?: KubeletConfiguration;
  /** EC2NodeClass `spec.blockDeviceMappings` (root volume / ephemeral device size → ephemeral-storage). */
  blockDeviceMappings?: BlockDeviceMapping[];
  /** EC2NodeClass `spec.instanceStorePolicy`; `RAID0` makes local NVMe the ephemeral storage. */
  instanceStorePolicy?: string;
  /** Fraction of memory lost to the hypervisor/OS (upstream option `--vm-memory-overhead-percent`, default 0.075). */
  vmMemoryOverheadPercent?: number;
  /** ENIs reserved for other uses (upstream option `--reserved-enis`, default 0). */
  reservedENIs?: number;
  /**
   * EC2NodeClass `spec.networkInterfaces`: when set, `vpc.amazonaws.com/efa` is its count of `efa-only` interfaces
   * (instead of the type's `MaximumEfaInterfaces`), and each `efa-only` interface on network card 0 takes one ENI
   * from the ENI-limited pods (upstream `efas`, `ENILimitedPods`).
   */
  networkInterfaces?: readonly NodeClassNetworkInterface[];
}

/** Result of {@link computeAllocatable}: all in internal units (cpu millicores, memory/storage bytes, counts). */
export interface AllocatableResult {
  /** What the machine has; zero-valued extended resources are omitted. */
  capacity: Resources;
  overhead: { kubeReserved: Resources; systemReserved: Resources; evictionThreshold: Resources };
  /** capacity − kubeReserved − systemReserved − evictionThreshold per resource, floored at 0. */
  allocatable: Resources;
}

/** Thrown for an EC2NodeClass value that cannot be used (bad quantity or percentage); names the field. */
export class InvalidNodeClassValueError extends Error {
  readonly code = 'InvalidNodeClassValue' as const;
  constructor(
    readonly field: string,
    readonly value: unknown,
    reason: string,
  ) {
    super(`EC2NodeClass ${field}: ${JSON.stringify(value)} ${reason}`);
  }
}

function quantity(field: string, resource: string, v: unknown): number {
  if (typeof v !== 'string' && typeof v !== 'number') {
    throw new InvalidNodeClassValueError(
      field,
      v,
      'is not a quantity (expected e.g. "100Mi", "500m", "20Gi")',
    );
  }
  try {
    return parseResource(resource, v);
  } catch {
    throw new InvalidNodeClassValueError(
      field,
      v,
      'is not a quantity (expected e.g. "100Mi", "500m", "20Gi")',
    );
  }
}

function resourceMap(field: string, m: Record<string, string> | undefined): Resources {
  const out: Resources = {};
  if (!m) return out;
  for (const [k, v] of Object.entries(m)) out[k] = quantity(`${field}.${k}`, k, v);
  return out;
}

/** Memory capacity in bytes: MiB (− 64 MiB CMA on Graviton) minus ceil(overhead% of it) MiB. Upstream `memory()`. */
export function memoryCapacityBytes(spec: InstanceTypeSpec, vmMemoryOverheadPercent = 0.075): number {
  let sizeMiB = spec.memoryMiB;
  // Gravitons reserve 64 MiB of CMA memory the OS cannot use (upstream checks the first architecture only).
  if (spec.supportedArchitectures[0] === 'arm64') sizeMiB -= 64;
  const bytes = sizeMiB * MiB;
  return bytes - Math.ceil((bytes * vmMemoryOverheadPercent) / 1024 / 1024) * MiB;
}

/**
 * ENI-limited max pods: `ENIs × (IPv4 per ENI − 1) + 2`, ENIs of the default card minus reserved minus the class's
 * `efa-only` interfaces on network card 0 (they take an ENI and carry no IPs). Upstream `ENILimitedPods`.
 */
export function eniLimitedPods(
  spec: InstanceTypeSpec,
  reservedENIs = 0,
  networkInterfaces: readonly NodeClassNetworkInterface[] = [],
): number {
  const efaOnly = networkInterfaces.filter(
    (n) => n.networkCardIndex === 0 && n.interfaceType === 'efa-only',
  ).length;
  const usable = Math.max(spec.defaultCardMaxENIs - reservedENIs - efaOnly, 0);
  if (usable === 0) return 0;
  return usable * (spec.ipv4PerENI - 1) + 2;
}

/** Ephemeral-storage capacity in bytes. Upstream `ephemeralStorage()`. */
export function ephemeralStorageBytes(
  spec: InstanceTypeSpec,
  traits: AMIFamilyTraits,
  blockDeviceMappings: BlockDeviceMapping[] | undefined,
  instanceStorePolicy: string | undefined,
): number {
  if (instanceStorePolicy === 'RAID0' && spec.localStorageGB) return spec.localStorageGB * 1e9;
  const bdms = blockDeviceMappings ?? [];
  if (bdms.length > 0) {
    const size = (b: BlockDeviceMapping | undefined, i: number): number | undefined =>
      b?.ebs?.volumeSize === undefined
        ? undefined
        : quantity(`spec.blockDeviceMappings[${i}].ebs.volumeSize`, 'ephemeral-storage', b.ebs.volumeSize);
    const rootIdx = bdms.findIndex((b) => b.rootVolume === true);
    const root = rootIdx >= 0 ? size(bdms[rootIdx], rootIdx) : undefined;
    if (root !== undefined) return root;
    if (traits.family === 'Custom') {
      return size(bdms[bdms.length - 1], bdms.length - 1) ?? DEFAULT_EBS_BYTES;
    }
    const devIdx = bdms.findIndex((b) => b.deviceName === traits.ephemeralBlockDevice);
    const dev = devIdx >= 0 ? size(bdms[devIdx], devIdx) : undefined;
    if (dev !== undefined) return dev;
  }
  return traits.defaultEphemeralBytes;
}

/** Pods capacity: maxPods, else ENI-limited (or 110), then capped by podsPerCore × vCPU. Upstream `pods()`. */
export function podsCapacity(
  spec: InstanceTypeSpec,
  traits: AMIFamilyTraits,
  kubelet: KubeletConfiguration | undefined,
  reservedENIs = 0,
  networkInterfaces: readonly NodeClassNetworkInterface[] = [],
): number {
  let count: number;
  if (kubelet?.maxPods !== undefined && kubelet.maxPods !== null) count = kubelet.maxPods;
  else if (traits.supportsENILimitedPodDensity) count = eniLimitedPods(spec, reservedENIs, networkInterfaces);
  else count = 110;
  const ppc = kubelet?.podsPerCore ?? 0;
  if (ppc > 0 && traits.podsPerCoreEnabled) count = Math.min(ppc * spec.vcpu, count);
  return count;
}

/**
 * Default kube-reserved cpu (millicores) for a vCPU count: 6% of the first core, 1% of the second, 0.5% of cores
 * 3–4, 0.25% of the rest, each range truncated to whole millicores. Upstream `kubeReservedResources` (from
 * Bottlerocket's and the EKS AMI's formula).
 */
export function kubeReservedCPU(vcpu: number): number {
  const cpu = vcpu * 1000;
  let total = 0;
  for (const [start, end, pct] of [
    [0, 1000, 0.06],
    [1000, 2000, 0.01],
    [2000, 4000, 0.005],
    [4000, 2 ** 31, 0.0025],
  ] as const) {
    if (cpu >= start) {
      const r = cpu < end ? cpu - start : end - start;
      total += Math.trunc(r * pct);
    }
  }
  return total;
}

/**
 * Parses an eviction signal value against a capacity: a percentage of it (ceil; `100%` disables the threshold → 0)
 * or a quantity. Upstream `computeEvictionSignal` / `mustParsePercentage`.
 * @throws InvalidNodeClassValueError when the value is neither.
 */
export function evictionSignalBytes(field: string, capacity: number, value: string): number {
  if (typeof value === 'string' && value.trim().endsWith('%')) {
    const p = Number(value.trim().slice(0, -1));
    if (!Number.isFinite(p) || value.trim() === '%') {
      throw new InvalidNodeClassValueError(field, value, 'is not a percentage (expected e.g. "10%")');
    }
    const pct = p === 100 ? 0 : p;
    return Math.ceil((capacity / 100) * pct);
  }
  return quantity(field, 'memory', value);
}

/**
 * `vpc.amazonaws.com/efa` of a type: the count of `efa-only` entries when the class sets `spec.networkInterfaces`
 * (they override what the type supports), else `EfaInfo.MaximumEfaInterfaces` (0 without EFA). Upstream `efas`.
 */
export function efaCount(
  spec: InstanceTypeSpec,
  networkInterfaces: readonly NodeClassNetworkInterface[] | undefined,
): number {
  if (networkInterfaces) return networkInterfaces.filter((n) => n.interfaceType === 'efa-only').length;
  return spec.efaMaxInterfaces ?? 0;
}

/**
 * Computes capacity, overhead and allocatable of one instance type for a node class, as upstream Karpenter does
 * (`NewInstanceType` in aws/karpenter-provider-aws `pkg/providers/instancetype/types.go`):
 * - cpu = vCPUs; memory = MiB (− 64 on arm64) − ceil(7.5%) MiB; ephemeral-storage = root/ephemeral volume
 *   (AL2023 default 20Gi); pods = maxPods, else ENI-limited pods (110 on Windows), capped by podsPerCore × vCPU;
 *   extended resources: nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi, aws.amazon.com/neuron(core),
 *   vpc.amazonaws.com/efa, vpc.amazonaws.com/pod-eni (branch ENIs of trunking-compatible types), and on Windows
 *   vpc.amazonaws.com/PrivateIPv4Address.
 * - kube-reserved: cpu by {@link kubeReservedCPU}; memory 11 × pods + 255 MiB, where pods is the ENI-limited count
 *   for AL2/AL2023/Custom (maxPods does not change it) and the pods capacity otherwise; ephemeral-storage 1Gi;
 *   `kubelet.kubeReserved` entries replace these per resource.
 * - system-reserved: `kubelet.systemReserved` only.
 * - eviction threshold: memory 100Mi, ephemeral-storage ceil(10%); `kubelet.evictionHard` `memory.available` /
 *   `nodefs.available` replace them (percentages of capacity). `evictionSoft` does not change allocatable (upstream
 *   since it stopped taking max(hard, soft)).
 * @throws InvalidNodeClassValueError naming the EC2NodeClass field when a quantity or percentage cannot be parsed.
 */
export function computeAllocatable(spec: InstanceTypeSpec, opts: AllocatableOptions = {}): AllocatableResult {
  const traits = TRAITS[opts.amiFamily ?? 'AL2023'];
  const kubelet = opts.kubelet;
  const reservedENIs = opts.reservedENIs ?? 0;

  const memory = memoryCapacityBytes(spec, opts.vmMemoryOverheadPercent ?? 0.075);
  const storage = ephemeralStorageBytes(spec, traits, opts.blockDeviceMappings, opts.instanceStorePolicy);
  const pods = podsCapacity(spec, traits, kubelet, reservedENIs, opts.networkInterfaces);

  const capacity: Resources = { cpu: spec.vcpu * 1000, memory, 'ephemeral-storage': storage, pods };
  const add = (name: string, n: number | undefined): void => {
    if (n && n > 0) capacity[name] = n;
  };
  const gpus = spec.gpuCount ?? 0;
  add(ResourceNVIDIAGPU, spec.gpuManufacturer === 'NVIDIA' ? gpus : 0);
  add(ResourceAMDGPU, spec.gpuManufacturer === 'AMD' ? gpus : 0);
  add(ResourceHabanaGaudi, spec.gpuManufacturer === 'Habana' ? gpus : 0);
  add(ResourceAWSNeuron, spec.neuronDeviceCount);
  add(ResourceAWSNeuronCore, spec.neuronCoreCount);
  add(ResourceEFA, efaCount(spec, opts.networkInterfaces));
  add(ResourceAWSPodENI, spec.trunkingCompatible ? spec.branchENIs : 0);
  if (traits.os === 'windows' && spec.trunkingCompatible !== undefined) {
    add(ResourcePrivateIPv4Address, spec.ipv4PerENI - 1);
  }

  const memoryPods = traits.usesENILimitedMemoryOverhead
    ? eniLimitedPods(spec, 0, opts.networkInterfaces)
    : pods;
  const kubeReserved: Resources = {
    cpu: kubeReservedCPU(spec.vcpu),
    memory: (11 * memoryPods + 255) * MiB,
    'ephemeral-storage': GiB,
    ...resourceMap('spec.kubelet.kubeReserved', kubelet?.kubeReserved),
  };
  const systemReserved = resourceMap('spec.kubelet.systemReserved', kubelet?.systemReserved);
  const evictionThreshold: Resources = {
    memory: 100 * MiB,
    'ephemeral-storage': Math.ceil((storage / 100) * 10),
  };
  const hard = kubelet?.evictionHard;
  if (hard?.['memory.available'] !== undefined) {
    evictionThreshold.memory = evictionSignalBytes(
      'spec.kubelet.evictionHard["memory.available"]',
      memory,
      hard['memory.available'],
    );
  }
  if (hard?.['nodefs.available'] !== undefined) {
    evictionThreshold['ephemeral-storage'] = evictionSignalBytes(
      'spec.kubelet.evictionHard["nodefs.available"]',
      storage,
      hard['nodefs.available'],
    );
  }

  const allocatable: Resources = {};
  for (const [name, cap] of Object.entries(capacity)) {
    const v = cap - (kubeReserved[name] ?? 0) - (systemReserved[name] ?? 0) - (evictionThreshold[name] ?? 0);
    allocatable[name] = Math.max(0, v);
  }
  return { capacity, overhead: { kubeReserved, systemReserved, evictionThreshold }, allocatable };
}
