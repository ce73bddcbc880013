/**
 * The pure core of the `clusterapi` provider: a MachineDeployment (with its infrastructure template, Cluster,
 * MachineSets and, when there is one, a Node it made) → a {@link ResolvedDeployment} (capacity, labels, taints,
 * zone, capacity type, price, bounds) or the reason it cannot be used; and resolved deployments → instance types.
 * No I/O, no clock.
 *
 * Sources of the rules:
 * - scale-from-zero annotations and label propagation: kubernetes/autoscaler
 *   `cluster-autoscaler/cloudprovider/clusterapi` (`capacity.cluster-autoscaler.kubernetes.io/*`,
 *   `cluster.x-k8s.io/cluster-api-autoscaler-node-group-{min,max}-size`) and cluster-api v1.14 Machine → Node label
 *   propagation (`node-role.kubernetes.io/*`, `node-restriction.kubernetes.io/*`, `node.cluster.x-k8s.io/*`);
 * - unusable deployments: cluster-api v1.14 (`spec.paused`, the `cluster.x-k8s.io/paused` annotation, topology-owned
 *   replicas, MachineSet preflight checks).
 */
import { createHash } from 'node:crypto';
import {
  AnnotationMaxSize,
  AnnotationMinSize,
  AnnotationPaused,
  AnnotationPricePerHour,
  type AWSMachineTemplate,
  type CAPICluster,
  type CAPITaint,
  LabelTopologyDeploymentName,
  LabelTopologyOwned,
  type MachineDeployment,
  type MachineSet,
} from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import type { InstanceType, Offering } from '../../apis/instancetype.ts';
import {
  LabelArch,
  LabelCapacityType,
  LabelClusterAPIInstanceCPU,
  LabelClusterAPIInstanceGPUCount,
  LabelClusterAPIInstanceGPUType,
  LabelClusterAPIInstanceMemory,
  LabelInstanceType,
  LabelOS,
  LabelTopologyZone,
} from '../../apis/labels.ts';
import { parseResource, parseResources, type Resources } from '../../apis/quantity.ts';
import { onDemandPrice, spotPriceEstimate } from '../aws/catalog/index.ts';
import type { CapacityType } from '../types.ts';

// the MachineDeployment label and annotations are API (apis/capi.ts); re-exported for the provider's users
export {
  AnnotationMaxSize,
  AnnotationMinSize,
  AnnotationPricePerHour,
  LabelKarpenterMember,
} from '../../apis/capi.ts';

/** Prefix of cluster-autoscaler's scale-from-zero annotations. */
export const CapacityAnnotationPrefix = 'capacity.cluster-autoscaler.kubernetes.io/';
/** Price (USD/hour) of a deployment whose price is unknown: high, so that it ranks after every priced one. */
export const DefaultUnknownPriceUSDPerHour = 1000;
/** Zone of a deployment with no failure domain and no zone label. */
export const ZoneUnspecified = 'unspecified';
/** Pods per node when neither the `maxPods` annotation nor a Node says otherwise (kubelet default). */
export const DefaultMaxPods = 110;
/** Well-known instance-type labels of this provider (declared in `apis/labels.ts`, in `WellKnownLabels`). */
export const LabelInstanceCPU = LabelClusterAPIInstanceCPU;
/** Memory in MiB. */
export const LabelInstanceMemory = LabelClusterAPIInstanceMemory;
/** GPUs per node. */
export const LabelInstanceGPUCount = LabelClusterAPIInstanceGPUCount;
/** GPU resource name with `/` as `.`. */
export const LabelInstanceGPUType = LabelClusterAPIInstanceGPUType;

/** Why a MachineDeployment is not used (reported on the ClusterAPINodeClass status). */
export type UnusableReason =
  | 'Paused'
  | 'ReplicasManagedByTopology'
  | 'PreflightChecksBlocked'
  | 'CapacityUnknown'
  | 'InvalidAnnotation'
  | 'Deleting';

/** Everything the resolver reads about one MachineDeployment. */
export interface DeploymentInputs {
  deployment: MachineDeployment;
  /** Its infrastructure template (`spec.template.spec.infrastructureRef`), when found. */
  template?: AWSMachineTemplate | undefined;
  cluster?: CAPICluster | undefined;
  machineSets?: readonly MachineSet[];
  /** A Node made by this deployment (capacity fallback), when there is one. */
  node?: Node | undefined;
  /** AWS region for catalog prices (default us-east-1). */
  region?: string;
}

/** A usable MachineDeployment, resolved. Resources in internal units (millicores, bytes, counts). */
export interface ResolvedDeployment {
  namespace: string;
  name: string;
  /** The instance type it launches: capacity-annotation label, else AWSMachineTemplate instance type, else its name. */
  instanceTypeName: string;
  capacity: Resources;
  allocatable: Resources;
  /** capacity − allocatable (from a Node; zero when the capacity came from annotations or the template). */
  overhead: Resources;
  /** Node labels that do not depend on the offering (no zone, no capacity type). */
  labels: Record<string, string>;
  /** Taints its Nodes carry (annotation + `spec.template.spec.taints`). */
  taints: Taint[];
  zone: string;
  capacityType: CapacityType;
  priceUSDPerHour: number;
  priceSource: 'annotation' | 'aws-catalog' | 'default';
  minSize: number;
  /** Undefined: unbounded. */
  maxSize: number | undefined;
  /** Where the capacity came from. */
  capacitySource: 'annotations' | 'template' | 'node';
  /** Hash of what makes Machines of this deployment (infrastructure/bootstrap refs, version); drift. */
  templateHash: string;
  /** Notices (unknown price, ...), one line each. */
  notices: string[];
}

/** The resolver's verdict on one MachineDeployment. */
export type DeploymentResolution =
  | { ok: true; deployment: ResolvedDeployment }
  | {
      ok: false;
      namespace: string;
      name: string;
      reason: UnusableReason;
      message: string;
      /**
       * The deployment as it would resolve, when it is unusable only for a while (`Paused`,
       * `PreflightChecksBlocked`, `ReplicasManagedByTopology`): its instance type stays offered with every offering
       * unavailable, so running NodeClaims of it do not drift (`InstanceTypeNotFound`) during a maintenance pause
       * and nothing new launches on it (issue 29).
       */
      held?: ResolvedDeployment;
    };

/** Reasons that hold a deployment for a while (it keeps its instance type, unavailable) rather than refuse it. */
export const TemporaryUnusableReasons: ReadonlySet<UnusableReason> = new Set([
  'Paused',
  'PreflightChecksBlocked',
  'ReplicasManagedByTopology',
]);

/** Label prefixes (and `*.`-subdomains of them) CAPI propagates from Machines to Nodes (cluster-api v1.14). */
const PropagatedLabelDomains = [
  'node-role.kubernetes.io',
  'node-restriction.kubernetes.io',
  'node.cluster.x-k8s.io',
];

/** True for a label key CAPI copies from a Machine to its Node. */
export function isPropagatedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return PropagatedLabelDomains.some((d) => domain === d || domain.endsWith(`.${d}`));
}

/**
 * Parses `k1=v1,k2=v2` (the `capacity.cluster-autoscaler.kubernetes.io/labels` format).
 * @throws Error naming the bad entry.
 */
export function parseLabelList(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of s.split(',')) {
    const p = part.trim();
    if (!p) continue;
    const eq = p.indexOf('=');
    if (eq <= 0) throw new Error(`label "${p}" is not key=value`);
    out[p.slice(0, eq).trim()] = p.slice(eq + 1).trim();
  }
  return out;
}

/**
 * Parses `key=value:Effect,key2:Effect` (the `capacity.cluster-autoscaler.kubernetes.io/taints` format).
 * @throws Error naming the bad entry.
 */
export function parseTaintList(s: string): Taint[] {
  const out: Taint[] = [];
  for (const part of s.split(',')) {
    const p = part.trim();
    if (!p) continue;
    const colon = p.lastIndexOf(':');
    const effect = colon > 0 ? p.slice(colon + 1) : '';
    if (effect !== 'NoSchedule' && effect !== 'PreferNoSchedule' && effect !== 'NoExecute')
      throw new Error(`taint "${p}" needs key[=value]:NoSchedule|PreferNoSchedule|NoExecute`);
    const kv = p.slice(0, colon);
    const eq = kv.indexOf('=');
    const key = eq < 0 ? kv : kv.slice(0, eq);
    if (!key) throw new Error(`taint "${p}" has no key`);
    out.push(eq < 0 ? { key, effect } : { key, value: kv.slice(eq + 1), effect });
  }
  return out;
}

function nonNegativeInt(v: string | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v.trim())) throw new Error(`${what} "${v}" is not a non-negative integer`);
  return Number(v.trim());
}

/** The taints a deployment's Nodes carry: the `taints` capacity annotation and `spec.template.spec.taints`. */
export function deploymentTaints(md: MachineDeployment): Taint[] {
  const out: Taint[] = [];
  const ann = md.metadata.annotations?.[`${CapacityAnnotationPrefix}taints`];
  const add = (t: Taint): void => {
    if (!out.some((x) => x.key === t.key && x.effect === t.effect)) out.push(t);
  };
  if (ann) for (const t of parseTaintList(ann)) add(t);
  for (const t of md.spec.template.spec.taints ?? []) add(capiTaintToTaint(t));
  return out;
}

function capiTaintToTaint(t: CAPITaint): Taint {
  return t.value !== undefined && t.value !== ''
    ? { key: t.key, value: t.value, effect: t.effect }
    : { key: t.key, effect: t.effect };
}

/** Hash of the parts of a Machine template whose change is drift: infrastructure/bootstrap refs, version. */
export function templateHash(spec: MachineDeployment['spec']['template']['spec']): string {
  const ref = (r: { apiGroup?: string; apiVersion?: string; kind: string; name: string } | undefined) =>
    r ? `${r.apiGroup ?? r.apiVersion?.split('/')[0] ?? ''}/${r.kind}/${r.name}` : '';
  return createHash('sha256')
    .update(
      [
        ref(spec.infrastructureRef),
        ref(spec.bootstrap?.configRef),
        spec.bootstrap?.dataSecretName ?? '',
        spec.version ?? '',
      ].join('|'),
    )
    .digest('hex')
    .slice(0, 16);
}

function conditionsOf(
  ms: MachineSet,
): Array<{ type: string; status: string; reason?: string; message?: string }> {
  return [...(ms.status?.conditions ?? []), ...(ms.status?.deprecated?.v1beta1?.conditions ?? [])];
}

/** Why the deployment cannot be scaled now, or undefined. */
function unusable(inp: DeploymentInputs): { reason: UnusableReason; message: string } | undefined {
  const md = inp.deployment;
  if (md.metadata.deletionTimestamp) return { reason: 'Deleting', message: 'being deleted' };
  if (md.spec.paused || md.metadata.annotations?.[AnnotationPaused] !== undefined)
    return { reason: 'Paused', message: 'paused (spec.paused or the cluster.x-k8s.io/paused annotation)' };
  if (inp.cluster?.spec?.paused)
    return { reason: 'Paused', message: `its Cluster "${inp.cluster.metadata.name}" is paused` };
  if (md.metadata.labels?.[LabelTopologyOwned] !== undefined) {
    const topo = md.metadata.labels?.[LabelTopologyDeploymentName];
    const workers = (
      inp.cluster?.spec?.topology as
        | { workers?: { machineDeployments?: Array<{ name?: string; replicas?: number }> } }
        | undefined
    )?.workers?.machineDeployments;
    const entry = workers?.find((w) => w.name === topo);
    if (entry?.replicas !== undefined)
      return {
        reason: 'ReplicasManagedByTopology',
        message: `Cluster.spec.topology.workers.machineDeployments[${topo}].replicas is set, so the topology controller would reset the replicas; unset it to let capenter scale`,
      };
  }
  const blocked = preflightBlocked(inp.machineSets ?? []);
  if (blocked) return { reason: 'PreflightChecksBlocked', message: blocked };
  return undefined;
}

/**
 * Why MachineSet preflight checks block new Machines of a deployment (`MachineSet "<name>" preflight checks block
 * new Machines: <message>`), from the v1beta2 or v1beta1 conditions of `machineSets`; undefined when none does. Pure.
 */
export function preflightBlocked(machineSets: readonly MachineSet[]): string | undefined {
  for (const ms of machineSets) {
    const blocked = conditionsOf(ms).find(
      (c) => /PreflightCheck/.test(c.reason ?? '') && (c.status === 'False' || c.type === 'ScalingUp'),
    );
    if (blocked)
      return `MachineSet "${ms.metadata.name}" preflight checks block new Machines: ${blocked.message ?? blocked.reason}`;
  }
  return undefined;
}

/**
 * Resolves one MachineDeployment. Capacity: the `capacity.cluster-autoscaler.kubernetes.io/{cpu,memory,
 * ephemeral-disk,maxPods,gpu-count,gpu-type}` annotations, else the infrastructure template's `status.capacity`,
 * else the Node. Labels: `kubernetes.io/arch=amd64`, `kubernetes.io/os=linux` (cluster-autoscaler's defaults, or the
 * Node's), the labels CAPI propagates from `spec.template.metadata.labels`, the `labels` annotation, the instance
 * type and the `karpenter.cluster.x-k8s.io/instance-*` labels. Price: {@link AnnotationPricePerHour}, else the
 * embedded AWS catalog price of an AWSMachineTemplate's `instanceType` (spot estimate with `spotMarketOptions`),
 * else {@link DefaultUnknownPriceUSDPerHour} with a notice. Pure.
 */
export function resolveDeployment(inp: DeploymentInputs): DeploymentResolution {
  const md = inp.deployment;
  const namespace = md.metadata.namespace ?? 'default';
  const name = md.metadata.name ?? '';
  const bad = unusable(inp);
  if (bad) {
    if (!TemporaryUnusableReasons.has(bad.reason)) return { ok: false, namespace, name, ...bad };
    try {
      return { ok: false, namespace, name, ...bad, held: resolveUsable(inp, namespace, name) };
    } catch {
      return { ok: false, namespace, name, ...bad };
    }
  }
  try {
    return { ok: true, deployment: resolveUsable(inp, namespace, name) };
  } catch (err) {
    const e = err as Error & { reason?: UnusableReason };
    return { ok: false, namespace, name, reason: e.reason ?? 'InvalidAnnotation', message: e.message };
  }
}

/** Reads one `capacity.cluster-autoscaler.kubernetes.io/<key>` annotation of a deployment. */
type CapacityAnnotation = (key: string) => string | undefined;

/** An error whose `reason` says why the deployment is unusable. */
function unusableError(reason: UnusableReason, message: string): Error & { reason: UnusableReason } {
  const e = new Error(message) as Error & { reason: UnusableReason };
  e.reason = reason;
  return e;
}

/**
 * A deployment's Node capacity, allocatable and overhead (capacity - allocatable, where positive), from the
 * capacity annotations (cpu and memory together; `maxPods` default {@link DefaultMaxPods}), else the
 * infrastructure template's `status.capacity`, else the Node (whose allocatable is then used; otherwise
 * allocatable = capacity). Allocatable is capped at capacity.
 * @throws reason `CapacityUnknown` when there is no source or no cpu/memory; a plain error for bad annotations.
 */
function resolveCapacity(
  inp: DeploymentInputs,
  cap: CapacityAnnotation,
): Pick<ResolvedDeployment, 'capacity' | 'allocatable' | 'overhead' | 'capacitySource'> {
  let capacity: Resources = {};
  let allocatable: Resources | undefined;
  let capacitySource: ResolvedDeployment['capacitySource'];
  if (cap('cpu') !== undefined || cap('memory') !== undefined) {
    if (cap('cpu') === undefined || cap('memory') === undefined)
      throw new Error(`annotations ${CapacityAnnotationPrefix}cpu and memory must be set together`);
    capacity.cpu = parseResource('cpu', cap('cpu')!);
    capacity.memory = parseResource('memory', cap('memory')!);
    if (cap('ephemeral-disk') !== undefined)
      capacity['ephemeral-storage'] = parseResource('ephemeral-storage', cap('ephemeral-disk')!);
    capacity.pods =
      nonNegativeInt(cap('maxPods'), `annotation ${CapacityAnnotationPrefix}maxPods`) ?? DefaultMaxPods;
    const gpus = nonNegativeInt(cap('gpu-count'), `annotation ${CapacityAnnotationPrefix}gpu-count`);
    if (gpus !== undefined && gpus > 0) capacity[cap('gpu-type') ?? 'nvidia.com/gpu'] = gpus;
    capacitySource = 'annotations';
  } else if (inp.template?.status?.capacity && Object.keys(inp.template.status.capacity).length > 0) {
    capacity = parseResources(inp.template.status.capacity);
    capacity.pods ??=
      nonNegativeInt(cap('maxPods'), `annotation ${CapacityAnnotationPrefix}maxPods`) ?? DefaultMaxPods;
    capacitySource = 'template';
  } else if (inp.node?.status?.capacity) {
    capacity = parseResources(inp.node.status.capacity);
    allocatable = parseResources(inp.node.status.allocatable ?? inp.node.status.capacity);
    capacitySource = 'node';
  } else {
    throw unusableError(
      'CapacityUnknown',
      `no capacity: set the ${CapacityAnnotationPrefix}cpu and memory annotations (scale from zero), publish status.capacity on the infrastructure template, or run one Machine`,
    );
  }
  if (!capacity.cpu || !capacity.memory)
    throw unusableError('CapacityUnknown', 'capacity has no cpu or memory');
  allocatable ??= { ...capacity };
  const overhead: Resources = {};
  for (const [k, v] of Object.entries(capacity)) {
    const a = allocatable[k] ?? v;
    if (a > v) allocatable[k] = v;
    if (v - (allocatable[k] ?? v) > 0) overhead[k] = v - (allocatable[k] ?? v);
  }
  return { capacity, allocatable, overhead, capacitySource };
}

/**
 * A deployment's Node labels: arch and OS (the Node's, else `amd64`/`linux`), the labels CAPI propagates from
 * `spec.template.metadata.labels`, the `labels` annotation's (`annLabels`, but zone and capacity type), the
 * instance type and the `karpenter.cluster.x-k8s.io/instance-{cpu,memory,gpu-count,gpu-type}` labels
 * (cpu in cores, memory in MiB, from `capacity`).
 */
function deploymentLabels(
  inp: DeploymentInputs,
  annLabels: Record<string, string>,
  instanceTypeName: string,
  capacity: Resources,
): Record<string, string> {
  const labels: Record<string, string> = {
    [LabelArch]: inp.node?.metadata.labels?.[LabelArch] ?? 'amd64',
    [LabelOS]: inp.node?.metadata.labels?.[LabelOS] ?? 'linux',
  };
  for (const [k, v] of Object.entries(inp.deployment.spec.template.metadata?.labels ?? {}))
    if (isPropagatedLabel(k)) labels[k] = v;
  for (const [k, v] of Object.entries(annLabels))
    if (k !== LabelTopologyZone && k !== LabelCapacityType) labels[k] = v;
  labels[LabelInstanceType] = instanceTypeName;
  labels[LabelInstanceCPU] = String(Math.floor((capacity.cpu ?? 0) / 1000));
  labels[LabelInstanceMemory] = String(Math.floor((capacity.memory ?? 0) / 1024 / 1024));
  const gpuKey = Object.keys(capacity).find((k) => k.endsWith('/gpu'));
  if (gpuKey) {
    labels[LabelInstanceGPUCount] = String(capacity[gpuKey]);
    labels[LabelInstanceGPUType] = gpuKey.replaceAll('/', '.');
  }
  return labels;
}

/**
 * A deployment's price in USD/hour: {@link AnnotationPricePerHour}, else the embedded AWS catalog price of
 * `awsType` in `inp.region` (default `us-east-1`; the spot estimate when `spot`, falling back to on-demand),
 * else {@link DefaultUnknownPriceUSDPerHour} with a notice pushed to `notices`.
 * @throws when the annotation is not a non-negative number.
 */
function resolvePrice(
  inp: DeploymentInputs,
  awsType: string | undefined,
  spot: boolean,
  notices: string[],
): Pick<ResolvedDeployment, 'priceUSDPerHour' | 'priceSource'> {
  const md = inp.deployment;
  const priceAnn = md.metadata.annotations?.[AnnotationPricePerHour];
  if (priceAnn !== undefined) {
    const p = Number(priceAnn);
    if (priceAnn.trim() === '' || !Number.isFinite(p) || p < 0)
      throw new Error(
        `annotation ${AnnotationPricePerHour} "${priceAnn}" is not a non-negative number (USD/hour)`,
      );
    return { priceUSDPerHour: p, priceSource: 'annotation' };
  }
  const region = inp.region ?? 'us-east-1';
  const p = awsType
    ? spot
      ? (spotPriceEstimate(awsType, region)?.priceUSDPerHour ??
        onDemandPrice(awsType, region)?.priceUSDPerHour)
      : onDemandPrice(awsType, region)?.priceUSDPerHour
    : undefined;
  if (p !== undefined) return { priceUSDPerHour: p, priceSource: 'aws-catalog' };
  notices.push(
    `MachineDeployment ${md.metadata.namespace ?? 'default'}/${md.metadata.name ?? ''}: price unknown, using ${DefaultUnknownPriceUSDPerHour} USD/hour (ranks last); set the ${AnnotationPricePerHour} annotation`,
  );
  return { priceUSDPerHour: DefaultUnknownPriceUSDPerHour, priceSource: 'default' };
}

/** {@link resolveDeployment} for a deployment that passed `unusable`; throws what makes it unusable after all. */
function resolveUsable(inp: DeploymentInputs, namespace: string, name: string): ResolvedDeployment {
  const md = inp.deployment;
  const ann = md.metadata.annotations ?? {};
  const cap = (k: string): string | undefined => ann[`${CapacityAnnotationPrefix}${k}`];
  const annLabels = cap('labels') ? parseLabelList(cap('labels')!) : {};
  const notices: string[] = [];
  const { capacity, allocatable, overhead, capacitySource } = resolveCapacity(inp, cap);

  // Instance type, zone, capacity type.
  const awsType =
    inp.template?.kind === 'AWSMachineTemplate' ? inp.template.spec?.template?.spec?.instanceType : undefined;
  const instanceTypeName = annLabels[LabelInstanceType] ?? awsType ?? name;
  const zone = md.spec.template.spec.failureDomain ?? annLabels[LabelTopologyZone] ?? ZoneUnspecified;
  const spot =
    inp.template?.kind === 'AWSMachineTemplate' && !!inp.template.spec?.template?.spec?.spotMarketOptions;
  const ctLabel = annLabels[LabelCapacityType];
  const capacityType: CapacityType =
    ctLabel === 'spot' || ctLabel === 'on-demand' || ctLabel === 'reserved'
      ? ctLabel
      : spot
        ? 'spot'
        : 'on-demand';
  const labels = deploymentLabels(inp, annLabels, instanceTypeName, capacity);
  const { priceUSDPerHour, priceSource } = resolvePrice(inp, awsType, spot, notices);

  const minSize = nonNegativeInt(ann[AnnotationMinSize], `annotation ${AnnotationMinSize}`) ?? 0;
  const maxSize = nonNegativeInt(ann[AnnotationMaxSize], `annotation ${AnnotationMaxSize}`);
  if (maxSize !== undefined && maxSize < minSize)
    throw new Error(
      `annotation ${AnnotationMaxSize} (${maxSize}) is below ${AnnotationMinSize} (${minSize})`,
    );

  return {
    namespace,
    name,
    instanceTypeName,
    capacity,
    allocatable,
    overhead,
    labels,
    taints: deploymentTaints(md),
    zone,
    capacityType,
    priceUSDPerHour,
    priceSource,
    minSize,
    maxSize,
    capacitySource,
    templateHash: templateHash(md.spec.template.spec),
    notices,
  };
}

/**
 * True when every taint of the deployment is among the NodePool's `taints` and `startupTaints` (same key, value
 * and effect): only then do the NodeClaims of that NodePool describe the deployment's Nodes, so pods the scheduler
 * places tolerate them and the NodeClaim never disagrees with its Node. Pure.
 */
export function taintsCovered(deploymentTaints: readonly Taint[], nodePoolTaints: readonly Taint[]): boolean {
  return deploymentTaints.every((t) =>
    nodePoolTaints.some(
      (n) => n.key === t.key && n.effect === t.effect && (n.value ?? '') === (t.value ?? ''),
    ),
  );
}

/** An offering and the deployments behind it (cheapest first). */
export interface DeploymentOffering {
  instanceType: string;
  zone: string;
  capacityType: CapacityType;
  deployments: ResolvedDeployment[];
}

/**
 * Groups deployments into instance types: deployments launching the same instance type with the same capacity,
 * allocatable and labels are one instance type whose offerings are zone × capacity type (a deployment each; when
 * several deployments share an offering, the cheapest one that can take a Machine is used and priced). A
 * deployment whose shape differs from the first one (by name) of its instance-type name becomes its own instance
 * type named after the deployment. `available(d)` says whether a deployment can take one more Machine now. Pure.
 */
export function instanceTypesOf(
  deployments: readonly ResolvedDeployment[],
  available: (d: ResolvedDeployment) => boolean,
  /** Which deployments to offer (names are still computed over all of them, so they stay stable). */
  include: (d: ResolvedDeployment) => boolean = () => true,
): { instanceTypes: InstanceType[]; offerings: DeploymentOffering[] } {
  const sorted = [...deployments].sort(
    (a, b) => a.priceUSDPerHour - b.priceUSDPerHour || a.name.localeCompare(b.name),
  );
  const shape = (d: ResolvedDeployment): string =>
    JSON.stringify([sortObj(d.capacity), sortObj(d.allocatable), sortObj(d.labels)]);
  const firstShape = new Map<string, string>();
  for (const d of [...sorted].sort((a, b) => a.name.localeCompare(b.name)))
    if (!firstShape.has(d.instanceTypeName)) firstShape.set(d.instanceTypeName, shape(d));
  const groups = new Map<string, ResolvedDeployment[]>();
  for (const d of sorted) {
    const typeName = firstShape.get(d.instanceTypeName) === shape(d) ? d.instanceTypeName : d.name;
    groups.set(typeName, [...(groups.get(typeName) ?? []), d]);
  }
  const instanceTypes: InstanceType[] = [];
  const offerings: DeploymentOffering[] = [];
  for (const [typeName, all] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    const ds = all.filter(include);
    if (ds.length === 0) continue;
    const first = ds[0]!;
    const offs: Offering[] = [];
    const byOffering = new Map<string, ResolvedDeployment[]>();
    for (const d of ds) {
      const key = `${d.zone}/${d.capacityType}`;
      byOffering.set(key, [...(byOffering.get(key) ?? []), d]);
    }
    for (const group of byOffering.values()) {
      const usable = group.filter(available);
      const priced = usable[0] ?? group[0]!;
      offs.push({
        zone: priced.zone,
        capacityType: priced.capacityType,
        priceUSDPerHour: priced.priceUSDPerHour,
        available: usable.length > 0,
        priceSource: 'provider',
      });
      offerings.push({
        instanceType: typeName,
        zone: priced.zone,
        capacityType: priced.capacityType,
        deployments: group,
      });
    }
    instanceTypes.push({
      name: typeName,
      labels: { ...first.labels, [LabelInstanceType]: typeName },
      capacity: { ...first.capacity },
      overhead: { kubeReserved: { ...first.overhead }, systemReserved: {}, evictionThreshold: {} },
      allocatable: { ...first.allocatable },
      offerings: offs,
    });
  }
  return { instanceTypes, offerings };
}

/** The instance-type name each deployment is offered under (see {@link instanceTypesOf}), by `namespace/name`. Pure. */
export function instanceTypeNames(deployments: readonly ResolvedDeployment[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of instanceTypesOf(deployments, () => true).offerings)
    for (const d of o.deployments) out.set(`${d.namespace}/${d.name}`, o.instanceType);
  return out;
}

function sortObj(o: Record<string, unknown>): Array<[string, unknown]> {
  return Object.entries(o).sort(([a], [b]) => a.localeCompare(b));
}
