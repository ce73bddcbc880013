/**
 * The offering-independent node labels of an EC2 instance type, exactly as upstream Karpenter sets them.
 * Upstream: aws/karpenter-provider-aws `pkg/providers/instancetype/types.go` `computeRequirements` (only the
 * single-valued requirements become node labels; zone, region, capacity type and the multi-valued tenancy
 * requirement are not included here).
 */
import { LabelArch, LabelInstanceType, LabelOS, LabelWindowsBuild } from '../../../apis/labels.ts';
import type { AMIFamilyTraits } from './allocatable.ts';
import type { InstanceTypeSpec } from './data.ts';

const P = 'karpenter.k8s.aws/';

/** Upstream `lowerKabobCase`: lower case, spaces → `-`. */
function kabob(s: string): string {
  return s.replaceAll(' ', '-').toLowerCase();
}

/**
 * Labels for an instance type under an AMI family: `node.kubernetes.io/instance-type`, `kubernetes.io/arch`,
 * `kubernetes.io/os`, `karpenter.k8s.aws/instance-{category,family,generation,size,cpu,cpu-manufacturer,
 * cpu-sustained-clock-speed-mhz,memory,ebs-bandwidth,network-bandwidth,hypervisor,encryption-in-transit-supported,
 * capability-flex,local-nvme,gpu-*,accelerator-*}` and, on Windows, `node.kubernetes.io/windows-build`.
 * Labels whose value upstream leaves unset (e.g. no GPU) are absent.
 */
export function computeLabels(spec: InstanceTypeSpec, traits: AMIFamilyTraits): Record<string, string> {
  const l: Record<string, string> = {
    [LabelInstanceType]: spec.name,
    [LabelArch]: spec.architecture,
    [LabelOS]: traits.os,
    [`${P}instance-cpu`]: String(spec.vcpu),
    [`${P}instance-memory`]: String(spec.memoryMiB),
    [`${P}instance-hypervisor`]: spec.hypervisor,
    [`${P}instance-encryption-in-transit-supported`]: String(spec.encryptionInTransitSupported === true),
    [`${P}instance-family`]: spec.family,
    [`${P}instance-size`]: spec.size,
    [`${P}instance-capability-flex`]: String(spec.family.includes('-flex')),
  };
  if (spec.category !== undefined && spec.generation !== undefined) {
    l[`${P}instance-category`] = spec.category;
    l[`${P}instance-generation`] = spec.generation;
  }
  if (spec.localNvmeGB !== undefined) l[`${P}instance-local-nvme`] = String(spec.localNvmeGB);
  if (spec.networkBandwidthMbps !== undefined) {
    l[`${P}instance-network-bandwidth`] = String(spec.networkBandwidthMbps);
  }
  if (spec.gpuName !== undefined) {
    l[`${P}instance-gpu-name`] = kabob(spec.gpuName);
    l[`${P}instance-gpu-manufacturer`] = kabob(spec.gpuManufacturer ?? '');
    l[`${P}instance-gpu-count`] = String(spec.gpuCount ?? 0);
    l[`${P}instance-gpu-memory`] = String(spec.gpuMemoryMiB ?? 0);
  }
  if (spec.acceleratorName !== undefined) {
    l[`${P}instance-accelerator-name`] = kabob(spec.acceleratorName);
    l[`${P}instance-accelerator-manufacturer`] = kabob(spec.acceleratorManufacturer ?? '');
    l[`${P}instance-accelerator-count`] = String(spec.acceleratorCount ?? 0);
  }
  if (traits.windowsBuild !== undefined) l[LabelWindowsBuild] = traits.windowsBuild;
  if (spec.cpuManufacturer !== undefined) l[`${P}instance-cpu-manufacturer`] = kabob(spec.cpuManufacturer);
  // GHz → MHz rounded to a whole number (Gt/Lt need integers); upstream writes 0 when AWS gives no clock speed.
  l[`${P}instance-cpu-sustained-clock-speed-mhz`] = String(Math.round((spec.clockSpeedGHz ?? 0) * 1000));
  if (spec.ebsBandwidthMbps !== undefined) l[`${P}instance-ebs-bandwidth`] = String(spec.ebsBandwidthMbps);
  return l;
}
