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
  KubeObject,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PersistentVolumeClaim,
  PersistentVolumeClaimSpec,
  Pod,
  Volume,
} from '../apis/core.ts';
import { LabelHostname } from '../apis/labels.ts';
import type { SchedulingInput, SchedulingResult, Unschedulable } from './types.ts';

/** A PersistentVolume (the fields volume topology reads). */
export interface PersistentVolume extends KubeObject {
  spec?: {
    storageClassName?: string;
    claimRef?: { namespace?: string; name?: string };
    nodeAffinity?: { required?: { nodeSelectorTerms?: NodeSelectorTerm[] } };
    csi?: { driver?: string; volumeHandle?: string };
    local?: unknown;
    hostPath?: unknown;
    [key: string]: unknown;
  };
}

/** A StorageClass (`storage.k8s.io/v1`), the fields volume topology reads. */
export interface StorageClass extends KubeObject {
  provisioner?: string;
  volumeBindingMode?: 'Immediate' | 'WaitForFirstConsumer';
  allowedTopologies?: Array<{ matchLabelExpressions?: Array<{ key: string; values: string[] }> }>;
}

/** The storage objects of a cluster (or a `simulate` input) volume topology needs. */
export interface VolumeObjects {
  persistentVolumeClaims?: readonly PersistentVolumeClaim[];
  persistentVolumes?: readonly PersistentVolume[];
  storageClasses?: readonly StorageClass[];
}

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
  return {
    input: { ...input, pods },
    restore: (result) => ({
      ...result,
      newNodeClaims: result.newNodeClaims.map((n) => ({ ...n, pods: n.pods.map(back) })),
      placements: result.placements.map((p) => ({ ...p, pod: back(p.pod) })),
      unschedulable: [...result.unschedulable.map((u) => ({ ...u, pod: back(u.pod) })), ...problems],
    }),
  };
}
