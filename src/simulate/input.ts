/**
 * Turns loaded manifests into a {@link SchedulingInput}: workloads expand into pending pods, Nodes become
 * existing capacity (with their bound pods and, where none is listed, one pod per matching DaemonSet),
 * NodePools get their instance types from the AWS catalog through their EC2NodeClass.
 *
 * Rules (documented for users in docs/simulate.md, and matching `shared/cases/README.md` "Input"):
 * - Deployment / ReplicaSet / ReplicationController / StatefulSet: `spec.replicas` pods (default 1);
 *   Job: `min(parallelism, completions)` pods (parallelism default 1). Names are deterministic:
 *   Deployment `<name>-<template-hash>-<i>`, ReplicaSet `<name>-<i>`, StatefulSet `<name>-<i>`, Job `<name>-<i>`.
 * - Pod without `spec.nodeName`: pending; with it: bound to that node. Terminal (Succeeded/Failed) and
 *   deleting pods are skipped. Pods owned by a DaemonSet are never provisioned for (upstream
 *   `pod.IsProvisionable`): they are reported as unschedulable.
 * - Namespace defaults to `default`.
 * - Node: existing capacity; managed (with a NodeClaim of the same name) when labelled `karpenter.sh/nodepool`.
 * - No NodePool in the input: {@link DEFAULT_NODEPOOL} (and {@link DEFAULT_EC2NODECLASS} unless the input has
 *   an EC2NodeClass named `default`) is used, with a notice.
 */
import { createHash } from 'node:crypto';
import {
  admitPod,
  applyLimitRangeDefaults,
  type PriorityClass,
  type RuntimeClass,
} from '../apis/admission.ts';
import { validateBuiltin, validateMeta } from '../apis/builtin/defaults.ts';
import type { StatusCause } from '../apis/builtin/errors.ts';
import { builtinResources } from '../apis/builtin/resources.ts';
import type { KObj, ResourceDef } from '../apis/builtin/types.ts';
import type {
  DaemonSet,
  Deployment,
  Job,
  KubeObject,
  Node,
  PersistentVolumeClaim,
  Pod,
  PodDisruptionBudget,
  PodTemplateSpec,
  StatefulSet,
} from '../apis/core.ts';
import { exampleEC2NodeClass } from '../apis/examples.ts';
import type { EC2NodeClass, NodeClaim, NodeOverlay, NodePool } from '../apis/karpenter.ts';
import { LabelNodePool } from '../apis/labels.ts';
import { isActive } from '../apis/pod.ts';
import type { Resources } from '../apis/quantity.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import { nodeLimitOf, staticPlan } from '../disruption/static.ts';
import { selectorMatches } from '../scheduling/labelselector.ts';
import { addUsage, limitCapacity, nodeLimitCapacity } from '../scheduling/limits.ts';
import { type NodeOverlayVerdict, overlayInstanceTypes } from '../scheduling/nodeoverlay.ts';
import { daemonSetNodeFit, withoutEphemeralTaints } from '../scheduling/predicates.ts';
import type { ExistingNode, SchedulingInput } from '../scheduling/types.ts';
import type { CSINode, PersistentVolume, StorageClass } from '../scheduling/volumetopology.ts';

/** An object with where it came from (as `apis/load.ts` returns them). */
export interface SourcedObject {
  file?: string;
  /** 0-based document index in the file. */
  index?: number;
  /** 1-based line where the object starts, when known. */
  line?: number;
  /** 0-based position in a List document's `items`. */
  item?: number;
  /** Read from an API server, which already validated it: the API server's checks are not repeated. */
  admitted?: boolean;
  object: KubeObject;
}

/**
 * An input problem that stops part of the input from being simulated (CLI exit code 2). `message` is complete
 * and ready to print, in the loader's format: `<file>:<line> (document <i>): <Kind> "<name>": <field>: <text>`.
 */
export interface SimulationIssue {
  file?: string;
  index?: number;
  kind?: string;
  name?: string;
  fieldPath?: string;
  /** Validation rule that failed, when known (from `apis/load.ts`). */
  rule?: string;
  message: string;
}

/** A pending pod the simulator does not hand to the scheduler, with why. */
export interface IgnoredPod {
  pod: Pod;
  code: 'OwnedByDaemonSet';
  reason: string;
}

/**
 * Resolves the instance types of one NodeClass in a region (the AWS catalog's `getInstanceTypes`).
 * May be synchronous or asynchronous.
 */
export type CatalogFunction = (args: {
  region: string;
  nodeClass?: EC2NodeClass;
}) =>
  | { instanceTypes: readonly InstanceType[]; notices: readonly string[] }
  | Promise<{ instanceTypes: readonly InstanceType[]; notices: readonly string[] }>;

/** Options of {@link buildSchedulingInput}. */
export interface BuildInputOptions {
  /** AWS region whose catalog (types, zones, prices) is used, e.g. `us-east-1`. */
  region: string;
  explain?: boolean;
  catalog: CatalogFunction;
  /**
   * NodePools the input had but that failed validation (dropped at load). When there are any, the default
   * NodePool is NOT used: the user meant their own NodePools, and upstream launches nothing for an invalid one.
   */
  invalidNodePools?: number;
  /**
   * The `NodeOverlay` feature gate (alpha, default false as upstream). Off: NodeOverlays in the input are
   * ignored, with a notice saying so. On: they are evaluated and applied to every NodePool's instance types
   * (`scheduling/nodeoverlay.ts`).
   */
  nodeOverlay?: boolean;
  /**
   * Never add {@link DEFAULT_NODEPOOL}: the input is a whole cluster (`capenter plan`), where no NodePool means
   * nothing can launch. Default false.
   */
  noDefaultNodePool?: boolean;
}

/** What {@link buildSchedulingInput} produces besides the scheduler input itself. */
export interface BuiltInput {
  input: SchedulingInput;
  /** Pending pods not given to the scheduler (reported as unschedulable). */
  ignored: IgnoredPod[];
  errors: SimulationIssue[];
  notices: string[];
  /** PVCs from the input plus those StatefulSet `volumeClaimTemplates` create (also in `input.volumes`). */
  persistentVolumeClaims: PersistentVolumeClaim[];
  podDisruptionBudgets: PodDisruptionBudget[];
  /** True when no NodePool was given and {@link DEFAULT_NODEPOOL} was used. */
  usedDefaultNodePool: boolean;
  /**
   * The NodeOverlays of the input and, when the `NodeOverlay` gate is on, each one's verdict (upstream's
   * `ValidationSucceeded` condition): applied, or `RuntimeValidation`/`Conflict` with upstream's message.
   */
  nodeOverlays: Array<{ name: string; verdict?: NodeOverlayVerdict }>;
}

/**
 * The NodePool used when the input has none: upstream's getting-started NodePool without its CPU limit
 * (on-demand, amd64, linux, instance categories c/m/r, generation > 2, EC2NodeClass `default`), with
 * upstream v1 defaults (consolidation WhenEmptyOrUnderutilized after 0s, budget 10%, expireAfter 720h).
 */
export const DEFAULT_NODEPOOL: NodePool = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'default' },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
        requirements: [
          { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
          { key: 'kubernetes.io/os', operator: 'In', values: ['linux'] },
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm', 'r'] },
          { key: 'karpenter.k8s.aws/instance-generation', operator: 'Gt', values: ['2'] },
        ],
        expireAfter: '720h',
      },
    },
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '10%' }],
    },
  },
};

/**
 * The EC2NodeClass used with {@link DEFAULT_NODEPOOL} when the input has no EC2NodeClass `default`: AL2023
 * (`al2023@latest`), no kubelet overrides. Role and discovery tags name the neutral cluster `cluster-1`
 * (`apis/examples.ts` {@link exampleEC2NodeClass}).
 */
export const DEFAULT_EC2NODECLASS: EC2NodeClass = exampleEC2NodeClass();

const PENDING_STATUS = {
  phase: 'Pending' as const,
  conditions: [{ type: 'PodScheduled', status: 'False' as const, reason: 'Unschedulable' }],
};

/** Deterministic UUID-shaped id for `key` (object uids in the simulation). */
export function deterministicUid(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** A `pod-template-hash`-like value (Kubernetes' safe alphabet, 10 characters) of a pod template. */
export function templateHash(template: unknown): string {
  const digest = createHash('sha256').update(JSON.stringify(template)).digest();
  let out = '';
  for (let i = 0; i < 10; i++) out += SAFE_ALPHABET[digest[i]! % SAFE_ALPHABET.length];
  return out;
}

function nsOf(o: KubeObject): string {
  return o.metadata?.namespace || 'default';
}
function nameOf(o: KubeObject): string {
  return o.metadata?.name ?? '';
}
/** `namespace/name` of a pod, as printed in outputs. */
export function podKey(p: Pod): string {
  return `${nsOf(p)}/${nameOf(p)}`;
}

function controllerOwner(o: KubeObject): { kind: string; name: string } | undefined {
  const refs = o.metadata?.ownerReferences ?? [];
  return refs.find((r) => r.controller) ?? refs[0];
}

/** Builds a pod from a workload's template (pending unless `nodeName` is given). */
function podFromTemplate(
  template: PodTemplateSpec,
  opts: {
    name: string;
    namespace: string;
    owner: { apiVersion: string; kind: string; name: string };
    labels?: Record<string, string>;
    nodeName?: string;
  },
): Pod {
  const spec = structuredClone(template.spec ?? { containers: [] });
  if (!Array.isArray(spec.containers)) spec.containers = [];
  if (opts.nodeName) spec.nodeName = opts.nodeName;
  const meta = template.metadata ?? {};
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: opts.name,
      namespace: opts.namespace,
      uid: deterministicUid(`Pod/${opts.namespace}/${opts.name}`),
      labels: { ...(meta.labels ?? {}), ...(opts.labels ?? {}) },
      ...(meta.annotations ? { annotations: { ...meta.annotations } } : {}),
      ownerReferences: [
        {
          apiVersion: opts.owner.apiVersion,
          kind: opts.owner.kind,
          name: opts.owner.name,
          uid: deterministicUid(`${opts.owner.kind}/${opts.namespace}/${opts.owner.name}`),
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec,
    status: opts.nodeName ? { phase: 'Running' } : structuredClone(PENDING_STATUS),
  };
  return pod;
}

function replicasOf(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 1;
}

/**
 * Expands one workload object into pods. Returns `undefined` for kinds that are not workloads.
 * `existing` is the number of listed pods already owned by this object (they count towards replicas).
 */
export function expandWorkload(obj: KubeObject, existing = 0): Pod[] | undefined {
  const ns = nsOf(obj);
  const name = nameOf(obj);
  const pods: Pod[] = [];
  switch (obj.kind) {
    case 'Deployment': {
      const d = obj as Deployment;
      if (!d.spec?.template) return [];
      const hash = templateHash(d.spec.template);
      const rs = `${name}-${hash}`;
      for (let i = existing; i < replicasOf(d.spec.replicas); i++) {
        pods.push(
          podFromTemplate(d.spec.template, {
            name: `${rs}-${i}`,
            namespace: ns,
            owner: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs },
            labels: { 'pod-template-hash': hash },
          }),
        );
      }
      return pods;
    }
    case 'ReplicaSet':
    case 'ReplicationController': {
      const d = obj as Deployment;
      if (!d.spec?.template) return [];
      for (let i = existing; i < replicasOf(d.spec.replicas); i++) {
        pods.push(
          podFromTemplate(d.spec.template, {
            name: `${name}-${i}`,
            namespace: ns,
            owner: { apiVersion: obj.apiVersion ?? 'apps/v1', kind: obj.kind, name },
          }),
        );
      }
      return pods;
    }
    case 'StatefulSet': {
      const s = obj as StatefulSet;
      if (!s.spec?.template) return [];
      for (let i = existing; i < replicasOf(s.spec.replicas); i++) {
        const podName = `${name}-${i}`;
        const pod = podFromTemplate(s.spec.template, {
          name: podName,
          namespace: ns,
          owner: { apiVersion: 'apps/v1', kind: 'StatefulSet', name },
          labels: {
            'statefulset.kubernetes.io/pod-name': podName,
            'apps.kubernetes.io/pod-index': String(i),
          },
        });
        // The StatefulSet controller mounts one PVC per volumeClaimTemplate: <template>-<set>-<ordinal>.
        for (const t of s.spec.volumeClaimTemplates ?? []) {
          const tname = t.metadata?.name ?? 'data';
          pod.spec.volumes ??= [];
          const volumes = pod.spec.volumes;
          if (!volumes.some((v) => v.name === tname)) {
            volumes.push({ name: tname, persistentVolumeClaim: { claimName: `${tname}-${podName}` } });
          }
        }
        pods.push(pod);
      }
      return pods;
    }
    case 'Job': {
      const j = obj as Job;
      if (!j.spec?.template) return [];
      let n = replicasOf(j.spec.parallelism);
      if (typeof j.spec.completions === 'number') n = Math.min(n, Math.max(0, j.spec.completions));
      for (let i = existing; i < n; i++) {
        pods.push(
          podFromTemplate(j.spec.template, {
            name: `${name}-${i}`,
            namespace: ns,
            owner: { apiVersion: 'batch/v1', kind: 'Job', name },
            labels: { 'batch.kubernetes.io/job-name': name, 'job-name': name },
          }),
        );
      }
      return pods;
    }
    default:
      return undefined;
  }
}

/** PVCs a StatefulSet's `volumeClaimTemplates` create for its replicas. */
function statefulSetClaims(s: StatefulSet): PersistentVolumeClaim[] {
  const out: PersistentVolumeClaim[] = [];
  const ns = nsOf(s);
  for (let i = 0; i < replicasOf(s.spec?.replicas); i++) {
    for (const t of s.spec?.volumeClaimTemplates ?? []) {
      const tname = t.metadata?.name ?? 'data';
      out.push({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: `${tname}-${nameOf(s)}-${i}`,
          namespace: ns,
          labels: { ...(t.metadata?.labels ?? {}) },
        },
        spec: structuredClone(t.spec ?? {}),
      });
    }
  }
  return out;
}

function withNamespace<T extends KubeObject>(o: T): T {
  if (o.metadata?.namespace) return o;
  return { ...o, metadata: { ...(o.metadata ?? {}), namespace: 'default' } };
}

/** A daemon pod for an existing node (the DaemonSet controller would have created it). */
function daemonPodFor(ds: DaemonSet, node: Node): Pod {
  const nodeName = nameOf(node);
  const name = `${nameOf(ds)}-${templateHash(nodeName).slice(0, 5)}`;
  return podFromTemplate(ds.spec.template, {
    name,
    namespace: nsOf(ds),
    owner: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: nameOf(ds) },
    nodeName,
  });
}

/** The NodeClaim behind a managed Node (registered, initialized, same name). */
function nodeClaimForNode(node: Node, pool: NodePool | undefined): NodeClaim {
  const name = nameOf(node);
  const tmpl = pool?.spec.template.spec;
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      uid: deterministicUid(`NodeClaim/${name}`),
      labels: { ...(node.metadata.labels ?? {}) },
      ...(node.metadata.creationTimestamp ? { creationTimestamp: node.metadata.creationTimestamp } : {}),
    },
    spec: {
      nodeClassRef: tmpl?.nodeClassRef ?? {
        group: 'karpenter.k8s.aws',
        kind: 'EC2NodeClass',
        name: 'default',
      },
      requirements: structuredClone(tmpl?.requirements ?? []),
      ...(tmpl?.taints ? { taints: structuredClone(tmpl.taints) } : {}),
      ...(tmpl?.startupTaints ? { startupTaints: structuredClone(tmpl.startupTaints) } : {}),
      ...(tmpl?.expireAfter ? { expireAfter: tmpl.expireAfter } : {}),
    },
    status: {
      ...(node.spec?.providerID ? { providerID: node.spec.providerID } : {}),
      nodeName: name,
      ...(node.status?.capacity ? { capacity: { ...node.status.capacity } } : {}),
      ...(node.status?.allocatable ? { allocatable: { ...node.status.allocatable } } : {}),
      conditions: ['Launched', 'Registered', 'Initialized', 'Ready'].map((type) => ({
        type,
        status: 'True' as const,
      })),
    },
  };
}

/** Where an object came from, in the loader's format (`file.yaml:12 (document 3)`), or `<input>`. */
function location(s: SourcedObject | undefined): string {
  if (!s || s.file === undefined) return '<input>';
  const loc = s.line !== undefined ? `${s.file}:${s.line}` : s.file;
  return s.index !== undefined && s.index >= 0 ? `${loc} (document ${s.index})` : loc;
}

/** An issue about object `kind`/`name` (from `src`), with a complete message. */
const BUILTIN_DEFS = new Map(builtinResources().map((d) => [`${d.group}/${d.kind}`, d]));

/**
 * Why the API server would refuse `o` (metadata for every kind; kind rules for built-ins), as status causes;
 * empty when it would store it. Karpenter kinds' schemas are checked by `validateObject` on load.
 */
function apiServerRefusal(o: KubeObject): StatusCause[] {
  const apiVersion = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const def = BUILTIN_DEFS.get(`${group}/${o.kind ?? ''}`);
  const generic = def ?? { kind: o.kind ?? '', crdName: 'external' };
  // generateName: the API server names the object before validating it (5 random characters)
  const meta = o.metadata;
  if (meta && !meta.name && typeof meta.generateName === 'string')
    o = { ...o, metadata: { ...meta, name: `${meta.generateName}xxxxx` } };
  try {
    return [
      ...validateMeta(generic as ResourceDef, o as KObj),
      ...(def ? validateBuiltin(def, o as KObj) : []),
    ];
  } catch (err) {
    return [{ reason: 'FieldValueInvalid', field: '', message: `malformed object: ${String(err)}` }];
  }
}

function issue(
  src: SourcedObject | undefined,
  kind: string,
  name: string,
  fieldPath: string | undefined,
  text: string,
): SimulationIssue {
  return {
    ...(src?.file !== undefined ? { file: src.file } : {}),
    ...(src?.index !== undefined ? { index: src.index } : {}),
    kind,
    name,
    ...(fieldPath ? { fieldPath } : {}),
    message: `${location(src)}: ${kind} "${name}": ${fieldPath ? `${fieldPath}: ` : ''}${text}`,
  };
}

/** Kinds whose objects have no namespace (their duplicate key leaves the namespace empty). */
const CLUSTER_SCOPED_KINDS = new Set([
  'NodePool',
  'EC2NodeClass',
  'KWOKNodeClass',
  'PersistentVolume',
  'StorageClass',
  'CSINode',
  'RuntimeClass',
  'PriorityClass',
  'Node',
  'Namespace',
  'NodeClaim',
  'NodeOverlay',
]);

/** The input objects sorted by kind, as {@link collectObjects} leaves them (mutated by the later passes). */
interface CollectedObjects {
  nodePools: NodePool[];
  nodeOverlays: NodeOverlay[];
  nodeClasses: Map<string, EC2NodeClass>;
  /** KWOKNodeClass names: their NodePools get the region's catalog with default allocatable, as `start` does. */
  kwokNodeClasses: Set<string>;
  nodes: Node[];
  listedPods: Pod[];
  /** Deployments, ReplicaSets, ReplicationControllers, StatefulSets and Jobs, with their namespace set. */
  workloads: KubeObject[];
  daemonSets: DaemonSet[];
  pdbs: PodDisruptionBudget[];
  pvcs: PersistentVolumeClaim[];
  pvs: PersistentVolume[];
  storageClasses: StorageClass[];
  csiNodes: CSINode[];
  /** Declared namespaces' labels, with `kubernetes.io/metadata.name`. */
  namespaces: Record<string, Record<string, string>>;
  limitRanges: KubeObject[];
  runtimeClasses: RuntimeClass[];
  priorityClasses: PriorityClass[];
  /** Each accepted object by `<kind>/<namespace>/<name>` (namespace empty when cluster-scoped). */
  seen: Map<string, SourcedObject>;
}

/**
 * Sorts the input by kind. Objects the API server would refuse (object meta: names, labels, annotation size;
 * pods: containers, quantities, selector operators) and second copies of an object are reported in `errors`
 * and dropped, so a bad object never reaches the scheduler.
 */
function collectObjects(
  objects: ReadonlyArray<SourcedObject>,
  errors: SimulationIssue[],
  notices: string[],
): CollectedObjects {
  const c: CollectedObjects = {
    nodePools: [],
    nodeOverlays: [],
    nodeClasses: new Map(),
    kwokNodeClasses: new Set(),
    nodes: [],
    listedPods: [],
    workloads: [],
    daemonSets: [],
    pdbs: [],
    pvcs: [],
    pvs: [],
    storageClasses: [],
    csiNodes: [],
    namespaces: {},
    limitRanges: [],
    runtimeClasses: [],
    priorityClasses: [],
    seen: new Map(),
  };
  for (const s of objects) {
    const o = s.object;
    if (!o || typeof o !== 'object') continue;
    const kind = o.kind ?? '';
    const refused = s.admitted ? [] : apiServerRefusal(o);
    if (refused.length > 0) {
      const name = typeof o.metadata?.name === 'string' ? o.metadata.name : '';
      const shown = name.length > 80 ? `${name.slice(0, 60)}…(${name.length} characters)` : name;
      for (const r of refused) errors.push(issue(s, kind, shown, r.field, r.message));
      continue;
    }
    const clusterScoped = CLUSTER_SCOPED_KINDS.has(kind);
    const key = `${kind}/${clusterScoped ? '' : nsOf(o)}/${nameOf(o)}`;
    const first = c.seen.get(key);
    if (first && nameOf(o)) {
      errors.push(
        issue(
          s,
          kind,
          clusterScoped ? nameOf(o) : `${nsOf(o)}/${nameOf(o)}`,
          'metadata.name',
          `duplicate: already defined at ${location(first)}; this copy is ignored. Rename one of them or pass only one of the files.`,
        ),
      );
      continue;
    }
    c.seen.set(key, s);
    collectByKind(c, s, kind, notices);
  }
  return c;
}

/**
 * Files one accepted object `s` of kind `kind` into `c` (namespaced kinds get their default namespace; a Pod
 * with only `generateName` gets a deterministic name). CronJobs are not expanded: a notice says so.
 */
function collectByKind(c: CollectedObjects, s: SourcedObject, kind: string, notices: string[]): void {
  const o = s.object;
  switch (kind) {
    case 'NodePool':
      c.nodePools.push(o as NodePool);
      break;
    case 'EC2NodeClass':
      c.nodeClasses.set(nameOf(o), o as EC2NodeClass);
      break;
    case 'NodeOverlay':
      c.nodeOverlays.push(o as NodeOverlay);
      break;
    case 'KWOKNodeClass':
      c.kwokNodeClasses.add(nameOf(o));
      break;
    case 'Node':
      c.nodes.push(o as Node);
      break;
    case 'Pod': {
      let pod = withNamespace(o as Pod);
      if (!pod.metadata.name && pod.metadata.generateName) {
        // The API server would append 5 random characters; use a deterministic suffix instead.
        const name = `${pod.metadata.generateName}${templateHash(`${s.file}#${s.index}#${s.item ?? 0}`).slice(0, 5)}`;
        pod = { ...pod, metadata: { ...pod.metadata, name } };
      }
      c.listedPods.push(pod);
      break;
    }
    case 'Deployment':
    case 'ReplicaSet':
    case 'ReplicationController':
    case 'StatefulSet':
    case 'Job':
      c.workloads.push(withNamespace(o));
      break;
    case 'DaemonSet':
      c.daemonSets.push(withNamespace(o as DaemonSet));
      break;
    case 'PodDisruptionBudget':
      c.pdbs.push(withNamespace(o as PodDisruptionBudget));
      break;
    case 'PersistentVolumeClaim':
      c.pvcs.push(withNamespace(o as PersistentVolumeClaim));
      break;
    case 'PersistentVolume':
      c.pvs.push(o as PersistentVolume);
      break;
    case 'StorageClass':
      c.storageClasses.push(o as StorageClass);
      break;
    case 'CSINode':
      c.csiNodes.push(o as CSINode);
      break;
    case 'LimitRange':
      c.limitRanges.push(withNamespace(o));
      break;
    case 'RuntimeClass':
      c.runtimeClasses.push(o as RuntimeClass);
      break;
    case 'PriorityClass':
      c.priorityClasses.push(o as PriorityClass);
      break;
    case 'Namespace':
      c.namespaces[nameOf(o)] = { ...(o.metadata?.labels ?? {}), 'kubernetes.io/metadata.name': nameOf(o) };
      break;
    case 'CronJob':
      notices.push(
        `CronJob ${nsOf(o)}/${nameOf(o)}: not expanded (its Jobs only exist at run time); list a Job to simulate one run.`,
      );
      break;
    default:
      break;
  }
}

/**
 * The listed pods followed by the pods the workloads expand into (pods listed in the input count towards
 * their controller's replicas; a ReplicaSet owned by a listed Deployment is skipped), with the workload each
 * expanded pod came from. StatefulSet `volumeClaimTemplates` claims not already in the input are added to
 * `c.pvcs`.
 */
function expandWorkloads(c: CollectedObjects): { allPods: Pod[]; origin: Map<Pod, KubeObject> } {
  const ownedCount = new Map<string, number>();
  for (const p of c.listedPods) {
    const owner = controllerOwner(p);
    if (owner) {
      const k = `${owner.kind}/${nsOf(p)}/${owner.name}`;
      ownedCount.set(k, (ownedCount.get(k) ?? 0) + 1);
    }
  }
  const allPods: Pod[] = [...c.listedPods];
  const origin = new Map<Pod, KubeObject>();
  for (const w of c.workloads) {
    // A ReplicaSet owned by a listed Deployment is the Deployment's: do not count its pods twice.
    const owner = controllerOwner(w);
    if (owner?.kind === 'Deployment' && c.seen.has(`Deployment/${nsOf(w)}/${owner.name}`)) continue;
    const expanded = expandWorkload(w, ownedCount.get(`${w.kind}/${nsOf(w)}/${nameOf(w)}`) ?? 0) ?? [];
    allPods.push(...expanded);
    for (const p of expanded) origin.set(p, w);
    if (w.kind === 'StatefulSet') {
      for (const claim of statefulSetClaims(w as StatefulSet)) {
        if (!c.pvcs.some((x) => nameOf(x) === nameOf(claim) && nsOf(x) === nsOf(claim))) c.pvcs.push(claim);
      }
    }
  }
  return { allPods, origin };
}

/**
 * What the API server's admission plugins do before anyone sees the pods (apis/admission.ts): each unbound
 * pod of `allPods` is replaced by its admitted form or removed (one error per workload, not per replica), and
 * each DaemonSet's template is admitted too (its daemon overhead includes RuntimeClass overhead and LimitRange
 * defaults). Mutates `allPods` and `c.daemonSets` in place.
 */
function admitAll(
  c: CollectedObjects,
  allPods: Pod[],
  origin: ReadonlyMap<Pod, KubeObject>,
  errors: SimulationIssue[],
): void {
  const admission = {
    limitRanges: c.limitRanges,
    runtimeClasses: c.runtimeClasses,
    priorityClasses: c.priorityClasses,
  };
  const rejected = new Set<Pod>();
  const reported = new Set<string>();
  for (let i = 0; i < allPods.length; i++) {
    const p = allPods[i]!;
    if (p.spec?.nodeName) continue; // already admitted when it was bound
    const r = admitPod(p, admission);
    if ('pod' in r) allPods[i] = r.pod;
    else {
      rejected.add(p);
      const w = origin.get(p);
      const src = w
        ? c.seen.get(`${w.kind}/${nsOf(w)}/${nameOf(w)}`)
        : c.seen.get(`Pod/${nsOf(p)}/${nameOf(p)}`);
      const what = w?.kind ?? 'Pod';
      const name = w ? `${nsOf(w)}/${nameOf(w)}` : podKey(p);
      if (!reported.has(`${what}/${name}`)) {
        reported.add(`${what}/${name}`);
        errors.push(issue(src, what, name, 'spec', `pods are forbidden: ${r.rejected}`));
      }
    }
  }
  if (rejected.size > 0)
    for (let i = allPods.length - 1; i >= 0; i--) if (rejected.has(allPods[i]!)) allPods.splice(i, 1);
  for (let i = 0; i < c.daemonSets.length; i++) {
    const ds = c.daemonSets[i]!;
    const tpl = ds.spec?.template;
    if (!tpl?.spec) continue;
    const r = admitPod(
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { ...(tpl.metadata ?? {}), namespace: nsOf(ds) },
        spec: tpl.spec,
      },
      admission,
    );
    if ('pod' in r)
      c.daemonSets[i] = { ...ds, spec: { ...ds.spec!, template: { ...tpl, spec: r.pod.spec } } };
  }
}

/**
 * Splits the active pods into pending ones (for the scheduler) and those bound to a node of the input, by
 * node name. Pods bound to a node not in the input are dropped with a notice; pending DaemonSet pods go to
 * `ignored` (upstream `pod.IsProvisionable`).
 */
function partitionPods(
  allPods: readonly Pod[],
  nodes: readonly Node[],
  notices: string[],
  ignored: IgnoredPod[],
): { pending: Pod[]; boundByNode: Map<string, Pod[]> } {
  const nodeNames = new Set(nodes.map(nameOf));
  const pending: Pod[] = [];
  const boundByNode = new Map<string, Pod[]>();
  for (const p of allPods) {
    if (!isActive(p)) continue;
    const nodeName = p.spec?.nodeName;
    if (nodeName) {
      if (!nodeNames.has(nodeName)) {
        notices.push(
          `Pod ${podKey(p)} is bound to node "${nodeName}", which is not in the input; it is ignored.`,
        );
        continue;
      }
      const list = boundByNode.get(nodeName) ?? [];
      list.push(p);
      boundByNode.set(nodeName, list);
      continue;
    }
    const owner = controllerOwner(p);
    if (owner?.kind === 'DaemonSet') {
      ignored.push({
        pod: p,
        code: 'OwnedByDaemonSet',
        reason: `owned by DaemonSet ${nsOf(p)}/${owner.name}: Karpenter does not provision nodes for DaemonSet pods (they are counted as daemon overhead of new nodes)`,
      });
      continue;
    }
    pending.push(p);
  }
  return { pending, boundByNode };
}

/**
 * The pods the DaemonSet controller would have added to `node`: one per DaemonSet that has none among `pods`
 * (by owner, or by selector in its namespace) and whose placement rule admits the node, on the taints the node
 * keeps once it is up (as the core does).
 */
function missingDaemonPods(node: Node, pods: readonly Pod[], daemonSets: readonly DaemonSet[]): Pod[] {
  const out: Pod[] = [];
  for (const ds of daemonSets) {
    const hasOne = pods.some((p) => {
      const o = controllerOwner(p);
      if (o?.kind === 'DaemonSet' && o.name === nameOf(ds) && nsOf(p) === nsOf(ds)) return true;
      return nsOf(p) === nsOf(ds) && selectorMatches(ds.spec?.selector, p.metadata.labels ?? {});
    });
    if (hasOne || !ds.spec?.template) continue;
    const view = {
      name: nameOf(node),
      labels: node.metadata.labels ?? {},
      taints: withoutEphemeralTaints(node.spec?.taints),
    };
    if (daemonSetNodeFit(ds.spec.template.spec ?? { containers: [] }, view).shouldRun) {
      out.push(daemonPodFor(ds, node));
    }
  }
  return out;
}

/**
 * Existing nodes, with their bound pods and the daemon pods the DaemonSet controller would have added; a node
 * labelled with a NodePool gets a NodeClaim and counts its capacity towards that NodePool's usage (an
 * unparsable capacity is reported and counts as zero).
 */
function existingNodesOf(
  c: CollectedObjects,
  boundByNode: ReadonlyMap<string, Pod[]>,
  errors: SimulationIssue[],
): { existingNodes: ExistingNode[]; nodePoolUsage: Record<string, Resources> } {
  const poolByName = new Map(c.nodePools.map((np) => [nameOf(np), np]));
  const existingNodes: ExistingNode[] = [];
  const nodePoolUsage: Record<string, Resources> = {};
  for (const node of c.nodes) {
    const pods = [...(boundByNode.get(nameOf(node)) ?? [])];
    pods.push(...missingDaemonPods(node, pods, c.daemonSets));
    const poolName = node.metadata.labels?.[LabelNodePool];
    const existing: ExistingNode = { node, pods };
    if (poolName) {
      existing.nodeClaim = nodeClaimForNode(node, poolByName.get(poolName));
      let capacity = limitCapacity({});
      try {
        capacity = nodeLimitCapacity(node);
      } catch (e) {
        errors.push(
          issue(
            c.seen.get(`Node//${nameOf(node)}`),
            'Node',
            nameOf(node),
            'status.capacity',
            (e as Error).message,
          ),
        );
      }
      addUsage(nodePoolUsage, poolName, capacity);
    }
    existingNodes.push(existing);
  }
  return { existingNodes, nodePoolUsage };
}

/**
 * Adds {@link DEFAULT_NODEPOOL} (and {@link DEFAULT_EC2NODECLASS} unless the input has an EC2NodeClass
 * `default`) to `c` when the input has no NodePool at all, with a notice; returns whether it did. When every
 * NodePool of the input was invalid, adds nothing and says so.
 */
function addDefaultNodePool(c: CollectedObjects, opts: BuildInputOptions, notices: string[]): boolean {
  if (c.nodePools.length === 0 && (opts.invalidNodePools ?? 0) > 0) {
    notices.push(
      `Every NodePool in the input is invalid (${opts.invalidNodePools}, see the errors): nothing can be provisioned until they are fixed; the default NodePool is only used when the input has no NodePool at all.`,
    );
    return false;
  }
  if (c.nodePools.length > 0 || opts.noDefaultNodePool) return false;
  c.nodePools.push(structuredClone(DEFAULT_NODEPOOL));
  const own = c.nodeClasses.has('default');
  if (!own) c.nodeClasses.set('default', structuredClone(DEFAULT_EC2NODECLASS));
  notices.push(
    `No NodePool in the input: using the default NodePool "default" (on-demand, amd64, linux, instance categories c/m/r, generation > 2) with ${own ? 'the EC2NodeClass "default" from the input' : 'a default EC2NodeClass (AL2023)'}.`,
  );
  return true;
}

/** Adds each of `more` not yet in `notices` to it. */
function addNotices(notices: string[], more: readonly string[]): void {
  for (const n of more) if (!notices.includes(n)) notices.push(n);
}

/**
 * The instance types of one NodePool, from `opts.catalog` through its NodeClass (cached per NodeClass in
 * `cache`), or `undefined` after reporting why the NodePool is not simulated: a KWOKNodeClass or EC2NodeClass
 * missing from the input, another NodeClass kind, or a catalog error for its EC2NodeClass. A KWOKNodeClass
 * NodePool gets the region's catalog types with the default (AL2023) allocatable, as the kwok provider does.
 */
async function nodePoolInstanceTypes(
  np: NodePool,
  c: CollectedObjects,
  opts: BuildInputOptions,
  cache: Map<string, InstanceType[]>,
  errors: SimulationIssue[],
  notices: string[],
): Promise<InstanceType[] | undefined> {
  const ref = np.spec?.template?.spec?.nodeClassRef;
  const src = c.seen.get(`NodePool//${nameOf(np)}`);
  const refuse = (field: string, text: string): undefined => {
    errors.push(issue(src, 'NodePool', nameOf(np), field, text));
    return undefined;
  };
  if (ref?.kind === 'KWOKNodeClass') {
    if (!c.kwokNodeClasses.has(ref.name))
      return refuse(
        'spec.template.spec.nodeClassRef.name',
        `KWOKNodeClass "${ref.name}" is not in the input (${c.kwokNodeClasses.size ? `found: ${[...c.kwokNodeClasses].join(', ')}` : 'none given'}). Add that KWOKNodeClass or fix nodeClassRef.name; this NodePool is not simulated.`,
      );
    let types = cache.get(`KWOKNodeClass/${ref.name}`);
    if (!types) {
      const res = await opts.catalog({ region: opts.region });
      types = [...res.instanceTypes];
      addNotices(notices, res.notices);
      cache.set(`KWOKNodeClass/${ref.name}`, types);
    }
    return types;
  }
  if (ref?.kind !== 'EC2NodeClass')
    return refuse(
      'spec.template.spec.nodeClassRef.kind',
      `references a ${ref?.kind ?? 'missing'} NodeClass; capenter simulate only resolves EC2NodeClass (group karpenter.k8s.aws) and KWOKNodeClass (group karpenter.kwok.sh). This NodePool is not simulated.`,
    );
  const nc = c.nodeClasses.get(ref.name);
  if (!nc) {
    const known = [...c.nodeClasses.keys()];
    return refuse(
      'spec.template.spec.nodeClassRef.name',
      `EC2NodeClass "${ref.name}" is not in the input (${known.length ? `found: ${known.join(', ')}` : 'none given'}). Add that EC2NodeClass or fix nodeClassRef.name; this NodePool is not simulated.`,
    );
  }
  let types = cache.get(`EC2NodeClass/${ref.name}`);
  if (!types) {
    try {
      const res = await opts.catalog({ region: opts.region, nodeClass: nc });
      types = [...res.instanceTypes];
      addNotices(notices, res.notices);
    } catch (e) {
      const field = (e as { field?: unknown }).field;
      errors.push(
        issue(
          c.seen.get(`EC2NodeClass//${ref.name}`),
          'EC2NodeClass',
          ref.name,
          typeof field === 'string' ? field : undefined,
          `cannot resolve its instance types in ${opts.region}: ${(e as Error).message}`,
        ),
      );
      return undefined;
    }
    cache.set(`EC2NodeClass/${ref.name}`, types);
  }
  return types;
}

/**
 * What `capenter simulate` says about a static NodePool (`spec.replicas`): the scheduler never plans new
 * NodeClaims from it (upstream provisioning skips static NodePools) and the plan does not include the NodeClaims
 * the `static.capacity` controller would keep — the notice gives their count (replicas capped by `limits.nodes`),
 * the type the provider would launch (cheapest offering the template allows, `disruption/static.ts`
 * `staticPlan`) and its price, and how many of the pool's nodes the input already has (those do take pods).
 */
export function staticPoolNotice(
  np: NodePool,
  types: readonly InstanceType[],
  existing: readonly ExistingNode[],
): string {
  const name = nameOf(np);
  const replicas = np.spec.replicas ?? 0;
  const have = existing.filter((e) => e.node.metadata.labels?.[LabelNodePool] === name).length;
  let limit = Number.POSITIVE_INFINITY;
  try {
    limit = nodeLimitOf(np);
  } catch {}
  const kept = Math.min(replicas, limit);
  const plan = staticPlan(np, types);
  const what =
    typeof plan === 'string'
      ? plan
      : `each a ${plan.cheapest.instanceType.name} (${plan.cheapest.offering.capacityType}, ${plan.cheapest.offering.zone}, $${plan.cheapest.offering.priceUSDPerHour}/h)`;
  const capped = kept < replicas ? ` (limits.nodes ${limit} caps replicas ${replicas})` : '';
  return `NodePool "${name}" is static (spec.replicas: ${replicas}): with the StaticCapacity feature gate on, capenter keeps ${kept} NodeClaims of it${capped}, ${what}; with the gate off it gets none. It is not used for the pending pods below (upstream provisioning skips static NodePools) and its NodeClaims are not in this plan; ${have} of its nodes are in the input and take pods as existing nodes.`;
}

/**
 * Builds the scheduler input from loaded (validated, defaulted) objects. Never throws for bad input:
 * problems come back in `errors` and the rest is still built. Reads nothing but `opts.catalog`.
 */
export async function buildSchedulingInput(
  objects: ReadonlyArray<SourcedObject>,
  opts: BuildInputOptions,
): Promise<BuiltInput> {
  const errors: SimulationIssue[] = [];
  const notices: string[] = [];
  const ignored: IgnoredPod[] = [];
  const c = collectObjects(objects, errors, notices);
  const { allPods, origin } = expandWorkloads(c);
  admitAll(c, allPods, origin, errors);
  const { pending, boundByNode } = partitionPods(allPods, c.nodes, notices, ignored);
  const { existingNodes, nodePoolUsage } = existingNodesOf(c, boundByNode, errors);
  const usedDefaultNodePool = addDefaultNodePool(c, opts, notices);

  const instanceTypes: Record<string, InstanceType[]> = {};
  const catalogCache = new Map<string, InstanceType[]>();
  const usablePools: NodePool[] = [];
  for (const np of c.nodePools) {
    const types = await nodePoolInstanceTypes(np, c, opts, catalogCache, errors, notices);
    if (!types) continue;
    instanceTypes[nameOf(np)] = types;
    usablePools.push(np);
    if (np.spec.replicas !== undefined) notices.push(staticPoolNotice(np, types, existingNodes));
  }
  const nodeOverlays = applyInputNodeOverlays(c, usablePools, instanceTypes, opts, errors, notices);

  const input: SchedulingInput = {
    pods: pending,
    existingNodes,
    nodePools: usablePools,
    instanceTypes,
    daemonSets: c.daemonSets,
    nodePoolUsage,
    volumes: {
      persistentVolumeClaims: c.pvcs,
      persistentVolumes: c.pvs,
      storageClasses: c.storageClasses,
      csiNodes: c.csiNodes,
    },
    namespaces: namespacesFor(c.namespaces, [...allPods, ...c.daemonSets]),
    explain: opts.explain ?? false,
  };
  return {
    input,
    ignored,
    errors,
    notices,
    persistentVolumeClaims: c.pvcs,
    podDisruptionBudgets: c.pdbs,
    usedDefaultNodePool,
    nodeOverlays,
  };
}

/**
 * The NodeOverlays of the input, applied in place to `instanceTypes` when the `NodeOverlay` gate is on
 * (upstream's nodeoverlay controller + CloudProvider decorator, in one pass). Gate off: a notice that they are
 * ignored, as upstream ignores them. A `RuntimeValidation` failure is an input error (the overlay is not
 * applied); a `Conflict` is a notice naming the overlay.
 */
function applyInputNodeOverlays(
  c: CollectedObjects,
  pools: readonly NodePool[],
  instanceTypes: Record<string, InstanceType[]>,
  opts: BuildInputOptions,
  errors: SimulationIssue[],
  notices: string[],
): Array<{ name: string; verdict?: NodeOverlayVerdict }> {
  if (c.nodeOverlays.length === 0) return [];
  const names = c.nodeOverlays.map(nameOf);
  if (!opts.nodeOverlay) {
    notices.push(
      `${names.length} NodeOverlay(s) ignored (${names.join(', ')}): the NodeOverlay feature gate is off (alpha; upstream default false). Pass --feature-gates NodeOverlay=true to apply them.`,
    );
    return names.map((name) => ({ name }));
  }
  const res = overlayInstanceTypes(
    c.nodeOverlays,
    pools.map((np) => ({ nodePool: np, instanceTypes: instanceTypes[nameOf(np)] ?? [] })),
  );
  Object.assign(instanceTypes, res.instanceTypes);
  for (const name of res.evaluation.order) {
    const v = res.evaluation.verdicts.get(name);
    if (!v || v.ok) continue;
    const src = c.seen.get(`NodeOverlay//${name}`);
    if (v.reason === 'RuntimeValidation')
      errors.push(
        issue(
          src,
          'NodeOverlay',
          name,
          'spec',
          `${v.message}; fix the overlay (it is not applied: ValidationSucceeded=False, reason RuntimeValidation)`,
        ),
      );
    else
      notices.push(
        `NodeOverlay "${name}" is not applied: ValidationSucceeded=False, reason Conflict (${v.message}): an overlay of the same weight already sets the same offering price or capacity resource. Give one of them a different spec.weight.`,
      );
  }
  return names.map((name) => ({ name, verdict: res.evaluation.verdicts.get(name) ?? { ok: true } }));
}

/** Namespace labels, adding every namespace an object lives in (with `kubernetes.io/metadata.name`). */
function namespacesFor(
  declared: Record<string, Record<string, string>>,
  objs: KubeObject[],
): Record<string, Record<string, string>> {
  const out = { ...declared };
  for (const o of objs) {
    const ns = nsOf(o);
    out[ns] ??= { 'kubernetes.io/metadata.name': ns };
  }
  return out;
}

/**
 * Applies the `Container` defaults of the LimitRanges in the pod's namespace, as the LimitRanger admission
 * plugin does (`apis/admission.ts` {@link applyLimitRangeDefaults}; kept for callers of this module).
 */
export function applyLimitRanges(pod: Pod, limitRanges: readonly KubeObject[]): Pod {
  return applyLimitRangeDefaults(pod, limitRanges);
}
