/**
 * Volume topology (upstream kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/volumetopology.go`
 * and kube-scheduler's VolumeBinding/VolumeZone filters): where a pod's volumes can attach narrows where the pod
 * can run. The requirements are injected into the pod's required node affinity, so every place that checks node
 * affinity — new NodeClaims, existing nodes, in-flight NodeClaims, consolidation's simulation, the kube-scheduler
 * stand-in — agrees.
 *
 * Per volume of the pod:
 * - `persistentVolumeClaim` (and `ephemeral`, whose claim is `<pod>-<volume>`, from its template when not created
 *   yet): a claim bound to a PersistentVolume (`spec.volumeName`) takes the PV's `spec.nodeAffinity.required`
 *   terms, any key (hostname terms of `local`/`hostPath` volumes are dropped, as upstream: a new node cannot
 *   have the old hostname); an unbound claim takes its StorageClass's `allowedTopologies` (both
 *   `WaitForFirstConsumer` and `Immediate` classes, as upstream; a claim without `storageClassName` uses the
 *   default class, as the DefaultStorageClass admission plugin sets it). No `allowedTopologies`: no constraint.
 * - A claim, PersistentVolume or StorageClass that cannot be found is a per-pod problem (the pod is not
 *   scheduled), never a crash.
 * Terms are ORed: the pod's required terms × each volume's terms (cross product, as kube-scheduler evaluates
 * all of them; capped at {@link MAX_TERMS}, beyond which only each volume's first term is kept, as upstream).
 *
 * Pure and synchronous. Objects come from the caller ({@link VolumeObjects}).
 */
import type {
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimSpec,
  Pod,
  StorageClass,
  Volume,
} from '../apis/core.ts';
import type { InstanceType } from '../apis/instancetype.ts';
import { LabelHostname } from '../apis/labels.ts';
import type { SchedulingInput, SchedulingResult, Unschedulable, VolumeObjects } from './types.ts';

export type { CSINode, PersistentVolume, StorageClass } from '../apis/core.ts';
export type { VolumeObjects } from './types.ts';

/** Resource name under which a run counts a CSI driver's volumes against attach limits (as kubelet once did). */
export function attachResource(driver: string): string {
  return `attachable-volumes-csi-${driver}`;
}

/** Attachments a node without a limit for the driver (or a new NodeClaim) is assumed to take. */
export const UNLIMITED_ATTACHMENTS = 1_000_000;

/** At most this many ORed terms after the cross product; beyond, each volume contributes its first term only. */
export const MAX_TERMS = 64;

/** Annotation marking the default StorageClass (Kubernetes `storageclass.kubernetes.io/is-default-class`). */
export const AnnotationDefaultStorageClass = 'storageclass.kubernetes.io/is-default-class';

/** Indexed {@link VolumeObjects}. */
export class VolumeIndex {
  private readonly claims = new Map<string, PersistentVolumeClaim>();
  private readonly volumes = new Map<string, PersistentVolume>();
  private readonly classes = new Map<string, StorageClass>();
  private readonly defaultClass: string | undefined;

  constructor(objs: VolumeObjects) {
    for (const c of objs.persistentVolumeClaims ?? [])
      this.claims.set(`${c.metadata?.namespace ?? 'default'}/${c.metadata?.name ?? ''}`, c);
    for (const v of objs.persistentVolumes ?? []) this.volumes.set(v.metadata?.name ?? '', v);
    let def: string | undefined;
    for (const s of objs.storageClasses ?? []) {
      const name = s.metadata?.name ?? '';
      this.classes.set(name, s);
      if (
        s.metadata?.annotations?.[AnnotationDefaultStorageClass] === 'true' &&
        (def === undefined || name < def)
      )
        def = name;
    }
    this.defaultClass = def;
  }

  /** True when there is nothing to look up (no pod volume can then be resolved, nor needs to be unless it is a claim). */
  get empty(): boolean {
    return this.claims.size === 0 && this.volumes.size === 0 && this.classes.size === 0;
  }

  claim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.claims.get(`${namespace}/${name}`);
  }
  volume(name: string): PersistentVolume | undefined {
    return this.volumes.get(name);
  }
  storageClass(name: string): StorageClass | undefined {
    return this.classes.get(name);
  }
  /** The default StorageClass name (alphabetically first when several are marked), if any. */
  get defaultStorageClass(): string | undefined {
    return this.defaultClass;
  }
}

/** The pod with its volume topology, or why its volumes cannot be resolved. */
export type VolumeTopologyResult = { pod: Pod } | { problem: string };

/** True when the pod has a volume backed by a claim (the only volumes with topology). */
export function hasClaimVolumes(pod: Pod): boolean {
  return (pod.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim || v.ephemeral);
}

/**
 * The ORed node selector terms one volume restricts the pod to (`[]`: no restriction), or a problem message.
 * `index` holds the cluster's claims, volumes and classes.
 */
export function volumeTerms(pod: Pod, volume: Volume, index: VolumeIndex): NodeSelectorTerm[] | string {
  const ns = pod.metadata.namespace ?? 'default';
  let claimName: string;
  let spec: PersistentVolumeClaimSpec | undefined;
  if (volume.persistentVolumeClaim) {
    claimName = volume.persistentVolumeClaim.claimName;
    const claim = index.claim(ns, claimName);
    if (!claim) return `persistentvolumeclaim "${ns}/${claimName}" (volume "${volume.name}") not found`;
    spec = claim.spec;
  } else if (volume.ephemeral) {
    // the ephemeral volume controller creates `<pod>-<volume>` from the template
    claimName = `${pod.metadata.name ?? ''}-${volume.name}`;
    spec = index.claim(ns, claimName)?.spec ?? volume.ephemeral.volumeClaimTemplate?.spec;
    if (!spec) return `ephemeral volume "${volume.name}" has no volumeClaimTemplate.spec`;
  } else return [];
  if (spec?.volumeName) {
    const pv = index.volume(spec.volumeName);
    if (!pv)
      return `persistentvolume "${spec.volumeName}" bound to claim "${ns}/${claimName}" (volume "${volume.name}") not found`;
    const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
    if (pv.spec?.local === undefined && pv.spec?.hostPath === undefined) return terms;
    // a local/hostPath volume pins the old node's hostname: a new node cannot match it (upstream drops it)
    return terms.map((t) => ({
      ...t,
      matchExpressions: (t.matchExpressions ?? []).filter((r) => r.key !== LabelHostname),
    }));
  }
  const className = spec?.storageClassName ?? index.defaultStorageClass;
  if (className === undefined || className === '') return [];
  const sc = index.storageClass(className);
  if (!sc)
    return `storageclass "${className}" of claim "${ns}/${claimName}" (volume "${volume.name}") not found`;
  return (sc.allowedTopologies ?? []).map((t) => ({
    matchExpressions: (t.matchLabelExpressions ?? []).map(
      (e): NodeSelectorRequirement => ({ key: e.key, operator: 'In', values: [...e.values] }),
    ),
  }));
}

/**
 * Claims of the pod per CSI driver (`namespace/claim` sets): the bound PersistentVolume's `csi.driver`, else the
 * StorageClass provisioner of an unbound claim. Volumes that cannot be resolved are left out.
 */
export function volumeDrivers(pod: Pod, index: VolumeIndex): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const ns = pod.metadata.namespace ?? 'default';
  for (const v of pod.spec?.volumes ?? []) {
    let claimName: string | undefined;
    let spec: PersistentVolumeClaimSpec | undefined;
    if (v.persistentVolumeClaim) {
      claimName = v.persistentVolumeClaim.claimName;
      spec = index.claim(ns, claimName)?.spec;
    } else if (v.ephemeral) {
      claimName = `${pod.metadata.name ?? ''}-${v.name}`;
      spec = index.claim(ns, claimName)?.spec ?? v.ephemeral.volumeClaimTemplate?.spec;
    }
    if (!claimName || !spec) continue;
    const className = spec.storageClassName ?? index.defaultStorageClass;
    const driver = spec.volumeName
      ? index.volume(spec.volumeName)?.spec?.csi?.driver
      : className
        ? index.storageClass(className)?.provisioner
        : undefined;
    if (!driver) continue;
    let set = out.get(driver);
    if (!set) {
      set = new Set();
      out.set(driver, set);
    }
    set.add(`${ns}/${claimName}`);
  }
  return out;
}

function andTerms(a: NodeSelectorTerm, b: NodeSelectorTerm): NodeSelectorTerm {
  const out: NodeSelectorTerm = {};
  const me = [...(a.matchExpressions ?? []), ...(b.matchExpressions ?? [])];
  const mf = [...(a.matchFields ?? []), ...(b.matchFields ?? [])];
  if (me.length) out.matchExpressions = me;
  if (mf.length) out.matchFields = mf;
  return out;
}

/**
 * The pod with the topology of its volumes ANDed into its required node affinity (the same object when its
 * volumes add nothing), or the first problem found (see the module doc).
 */
export function podVolumeTopology(pod: Pod, index: VolumeIndex): VolumeTopologyResult {
  if (!hasClaimVolumes(pod)) return { pod };
  const perVolume: NodeSelectorTerm[][] = [];
  for (const v of pod.spec.volumes ?? []) {
    const t = volumeTerms(pod, v, index);
    if (typeof t === 'string') return { problem: t };
    if (t.length > 0) perVolume.push(t);
  }
  if (perVolume.length === 0) return { pod };
  const na = pod.spec.affinity?.nodeAffinity;
  const own = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  let terms: NodeSelectorTerm[] = own && own.length > 0 ? own : [{}];
  const size = perVolume.reduce((n, t) => n * t.length, terms.length);
  for (const vt of perVolume) {
    const use = size > MAX_TERMS ? vt.slice(0, 1) : vt;
    terms = terms.flatMap((a) => use.map((b) => andTerms(a, b)));
  }
  return {
    pod: {
      ...pod,
      spec: {
        ...pod.spec,
        affinity: {
          ...(pod.spec.affinity ?? {}),
          nodeAffinity: {
            ...(na ?? {}),
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms },
          },
        },
      },
    },
  };
}

/** A run's input with volume topology applied, and how to map the result back to the caller's pods. */
export interface VolumeTopologyRun {
  input: SchedulingInput;
  /** Maps placements, unschedulable entries and planned pods back to the input's own Pod objects. */
  restore(result: SchedulingResult): SchedulingResult;
}

/**
 * Applies {@link podVolumeTopology} to every pending pod of `input` (`input.volumes`). Returns `undefined` when
 * no pod has a claim volume (nothing to do: the caller runs on `input` as is). Pods whose volumes cannot be
 * resolved leave the run and come back as `VolumeUnresolved` entries of `unschedulable`.
 */
export function withVolumeTopology(input: SchedulingInput): VolumeTopologyRun | undefined {
  if (!input.pods.some(hasClaimVolumes)) return undefined;
  const index = new VolumeIndex(input.volumes ?? {});
  const original = new Map<Pod, Pod>();
  const problems: Unschedulable[] = [];
  const pods: Pod[] = [];
  for (const pod of input.pods) {
    const r = podVolumeTopology(pod, index);
    if ('problem' in r) {
      problems.push({ pod, code: 'VolumeUnresolved', message: r.problem });
      continue;
    }
    if (r.pod !== pod) original.set(r.pod, pod);
    pods.push(r.pod);
  }
  const back = (p: Pod) => original.get(p) ?? p;
  const limited = withAttachLimits({ ...input, pods }, index, original);
  return {
    input: limited,
    restore: (result) => ({
      ...result,
      newNodeClaims: result.newNodeClaims.map((n) => ({ ...n, pods: n.pods.map(back) })),
      placements: result.placements.map((p) => ({ ...p, pod: back(p.pod) })),
      unschedulable: [...result.unschedulable.map((u) => ({ ...u, pod: back(u.pod) })), ...problems],
    }),
  };
}

/**
 * Per-node volume attach limits (kube-scheduler NodeVolumeLimits; upstream Karpenter's volume usage on existing
 * nodes): when `input.volumes.csiNodes` gives a node a limit for a CSI driver the pending pods use, each pod
 * requests one `attachable-volumes-csi-<driver>` per claim of that driver, and each existing node offers its
 * CSINode `allocatable.count` minus the claims its bound pods already attach. Nodes without a limit for the
 * driver, in-flight NodeClaims and new NodeClaims offer {@link UNLIMITED_ATTACHMENTS} (a new node's own limit is
 * not known before it registers). Returns `input` itself when no limit applies. `original` maps the rewritten
 * pods back to the caller's (extended with the pods rewritten here).
 */
function withAttachLimits(
  input: SchedulingInput,
  index: VolumeIndex,
  original: Map<Pod, Pod>,
): SchedulingInput {
  const csiNodes = input.volumes?.csiNodes ?? [];
  if (csiNodes.length === 0) return input;
  const limitOf = new Map<string, Map<string, number>>();
  for (const c of csiNodes) {
    const m = new Map<string, number>();
    for (const d of c.spec?.drivers ?? [])
      if (d.allocatable?.count !== undefined) m.set(d.name, d.allocatable.count);
    limitOf.set(c.metadata?.name ?? '', m);
  }
  const perPod = new Map<Pod, Map<string, Set<string>>>();
  const drivers = new Set<string>();
  for (const p of input.pods) {
    const d = volumeDrivers(p, index);
    if (d.size === 0) continue;
    perPod.set(p, d);
    for (const k of d.keys()) drivers.add(k);
  }
  const limitedDrivers = [...drivers].filter((d) => [...limitOf.values()].some((m) => m.has(d)));
  if (limitedDrivers.length === 0) return input;
  const pods = input.pods.map((p) => {
    const d = perPod.get(p);
    if (!d) return p;
    const extra: Record<string, string> = {};
    for (const drv of limitedDrivers) if (d.has(drv)) extra[attachResource(drv)] = String(d.get(drv)!.size);
    if (Object.keys(extra).length === 0) return p;
    const [first, ...rest] = p.spec.containers;
    if (!first) return p;
    const q: Pod = {
      ...p,
      spec: {
        ...p.spec,
        containers: [
          {
            ...first,
            resources: {
              ...(first.resources ?? {}),
              requests: { ...(first.resources?.requests ?? {}), ...extra },
            },
          },
          ...rest,
        ],
      },
    };
    original.set(q, original.get(p) ?? p);
    return q;
  });
  const existingNodes = input.existingNodes.map((en) => {
    const limits = limitOf.get(en.node.metadata.name ?? '');
    const alloc: Record<string, string | number> = { ...(en.node.status?.allocatable ?? {}) };
    for (const drv of limitedDrivers) {
      const limit = limits?.get(drv);
      if (limit === undefined) {
        alloc[attachResource(drv)] = UNLIMITED_ATTACHMENTS;
        continue;
      }
      const used = new Set<string>();
      for (const bp of en.pods) for (const c of volumeDrivers(bp, index).get(drv) ?? []) used.add(c);
      alloc[attachResource(drv)] = Math.max(0, limit - used.size);
    }
    return { ...en, node: { ...en.node, status: { ...(en.node.status ?? {}), allocatable: alloc } } };
  });
  const unlimited = (it: InstanceType): InstanceType => {
    const add: Record<string, number> = {};
    for (const drv of limitedDrivers) add[attachResource(drv)] = UNLIMITED_ATTACHMENTS;
    return { ...it, capacity: { ...it.capacity, ...add }, allocatable: { ...it.allocatable, ...add } };
  };
  const instanceTypes: Record<string, InstanceType[]> = {};
  for (const [k, v] of Object.entries(input.instanceTypes)) instanceTypes[k] = v.map(unlimited);
  const inFlight = input.inFlight?.map((f) => ({
    ...f,
    instanceTypeOptions: f.instanceTypeOptions.map(unlimited),
  }));
  return { ...input, pods, existingNodes, instanceTypes, ...(inFlight ? { inFlight } : {}) };
}
