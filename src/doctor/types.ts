/**
 * `capenter doctor`: the shapes of its input (a read-only snapshot of a cluster) and output (findings).
 * The checks are pure functions of a {@link DoctorSnapshot}; only `read.ts` talks to the API server.
 */
import type {
  DaemonSet,
  Deployment,
  KubeObject,
  Node,
  Pod,
  PodDisruptionBudget,
  ReplicaSet,
  StatefulSet,
} from '../apis/core.ts';
import type { EC2NodeClass, NodeClaim, NodePool } from '../apis/karpenter.ts';

/** Everything the checks read, listed once from the cluster. Kinds whose CRD is not installed are `[]`. */
export interface DoctorSnapshot {
  /** When the snapshot was taken (ages are measured from here). */
  now: Date;
  nodes: Node[];
  pods: Pod[];
  pdbs: PodDisruptionBudget[];
  deployments: Deployment[];
  statefulSets: StatefulSet[];
  replicaSets: ReplicaSet[];
  daemonSets: DaemonSet[];
  nodePools: NodePool[];
  nodeClaims: NodeClaim[];
  ec2NodeClasses: EC2NodeClass[];
  /** Cluster API `MachinePool`s (management cluster objects; empty on a workload cluster). */
  machinePools: KubeObject[];
  /** CABPK `KubeadmConfig`s and `KubeadmConfigTemplate`s (bootstrap configs of MachinePools/Deployments). */
  kubeadmConfigs: KubeObject[];
  kubeadmConfigTemplates: KubeObject[];
}

/** How bad a finding is: `error` makes `capenter doctor` exit 1. */
export type Severity = 'error' | 'warning';

/** The kinds of finding, one per check (stable identifiers, used in `-o json` and tests). */
export type FindingCheck =
  | 'PDBBlocksEviction'
  | 'ClusterAutoscalerConflict'
  | 'MissingRegistrationTaint'
  | 'UndeclaredStartupTaint'
  | 'NodePoolWithoutLimits'
  | 'NodePoolUnusable'
  | 'NodeClassNotReady'
  | 'DoNotDisruptOutlivesExpiry'
  | 'UninitializedTaintStuck';

/** One finding: what was found (with the numbers), the objects involved, why it matters and the fix. */
export interface Finding {
  check: FindingCheck;
  severity: Severity;
  /** The objects involved, as `Kind namespace/name` (or `Kind name` for cluster-scoped kinds). */
  objects: string[];
  /** What was found, with the values that triggered it. */
  message: string;
  /** Why it matters (what goes wrong, in Karpenter's terms). */
  why: string;
  /** The fix, concrete enough to act on. */
  fix: string;
}

/** A check: a pure function of the snapshot. Never throws on malformed objects (they are skipped or reported). */
export type Check = (s: DoctorSnapshot) => Finding[];

/** `Kind namespace/name` (namespaced) or `Kind name` (cluster-scoped) of an object. */
export function ref(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? 'Object'} ${ns ? `${ns}/` : ''}${obj.metadata?.name ?? '?'}`;
}

/** Age of an object in seconds at `now` (0 when it has no `creationTimestamp`). */
export function ageSeconds(obj: KubeObject, now: Date): number {
  const ts = obj.metadata?.creationTimestamp;
  if (!ts) return 0;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? 0 : Math.max(0, (now.getTime() - t) / 1000);
}
