/**
 * cluster-autoscaler running beside capenter. Both react to the same unschedulable pod: cluster-autoscaler
 * scales a node group while Karpenter launches a NodeClaim, and the cluster ends up with both nodes. Platform
 * teams that run both give cluster-autoscaler `--new-pod-scale-up-delay` of about 5 minutes so the
 * just-in-time provisioner acts first, and keep the two on disjoint node groups.
 *
 * Node groups overlap when a cluster-autoscaler `--nodes=MIN:MAX:NAME` names a NodePool, or when its
 * Cluster API auto-discovery (`--node-group-auto-discovery=clusterapi:…`) can find a MachinePool whose
 * replicas capenter manages (`cluster.x-k8s.io/replicas-managed-by: external-autoscaler`, or an
 * infrastructureRef of kind KarpenterMachinePool) and that carries cluster-autoscaler's size annotations.
 */
import type { Container, Deployment } from '../../apis/core.ts';
import { tryParseDuration } from '../../apis/duration.ts';
import { type Check, type Finding, ref } from '../types.ts';

/** Recommended minimum for `--new-pod-scale-up-delay` when capenter runs beside cluster-autoscaler (seconds). */
export const RECOMMENDED_SCALE_UP_DELAY_SECONDS = 300;
/** Below this the delay does not let capenter's batch window (≤ 10 s) and launch act first (seconds). */
const MIN_SCALE_UP_DELAY_SECONDS = 60;

const SIZE_ANNOTATIONS = [
  'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size',
  'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size',
];

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function isClusterAutoscaler(c: Container): boolean {
  return (
    /cluster-autoscaler/.test(c.image ?? '') ||
    strings(c.command).some((a) => /(^|\/)cluster-autoscaler$/.test(a))
  );
}

/** `--flag=value` / `--flag value` values of a container's command and args. */
function flagValues(c: Container, flag: string): string[] {
  const argv = [...strings(c.command), ...strings(c.args)];
  const out: string[] = [];
  argv.forEach((a, i) => {
    if (a.startsWith(`${flag}=`)) out.push(a.slice(flag.length + 1));
    else if (a === flag && i + 1 < argv.length) out.push(argv[i + 1]!);
  });
  return out;
}

/** The `ClusterAutoscalerConflict` check. */
export const clusterAutoscalerCheck: Check = (s) => {
  const out: Finding[] = [];
  for (const d of s.deployments as Deployment[]) {
    if ((d.spec?.replicas ?? 1) === 0) continue;
    const c = d.spec?.template?.spec?.containers?.find(isClusterAutoscaler);
    if (!c) continue;
    const deployRef = ref({ ...d, kind: 'Deployment' });
    const delay = flagValues(c, '--new-pod-scale-up-delay')[0];
    const parsed = delay !== undefined ? tryParseDuration(delay) : undefined;
    if (delay === undefined || (parsed?.ok && parsed.seconds < MIN_SCALE_UP_DELAY_SECONDS)) {
      out.push({
        check: 'ClusterAutoscalerConflict',
        severity: 'warning',
        objects: [deployRef],
        message:
          delay === undefined
            ? 'cluster-autoscaler runs without --new-pod-scale-up-delay: it scales up for a pending pod at once'
            : `cluster-autoscaler runs with --new-pod-scale-up-delay=${delay} (< ${MIN_SCALE_UP_DELAY_SECONDS}s)`,
        why: 'cluster-autoscaler and capenter both react to the same pending pod, so both add a node and one of them is wasted until consolidation removes it.',
        fix: `Add --new-pod-scale-up-delay=5m to cluster-autoscaler's arguments (≥ ${RECOMMENDED_SCALE_UP_DELAY_SECONDS / 60} minutes) so capenter acts first, or remove cluster-autoscaler from node groups capenter serves.`,
      });
    }
    // --nodes=MIN:MAX:NAME naming a NodePool.
    const pools = new Set(s.nodePools.map((p) => p.metadata.name));
    const groups = flagValues(c, '--nodes').map((v) => v.split(':').slice(2).join(':'));
    const overlapping: string[] = groups.filter((g) => pools.has(g)).map((g) => `NodePool ${g}`);
    // Cluster API auto-discovery finding MachinePools capenter manages.
    if (
      flagValues(c, '--node-group-auto-discovery').some((v) => v.startsWith('clusterapi:')) ||
      flagValues(c, '--cloud-provider').includes('clusterapi')
    ) {
      for (const mp of s.machinePools) {
        const ann = mp.metadata?.annotations ?? {};
        const managed =
          ann['cluster.x-k8s.io/replicas-managed-by'] === 'external-autoscaler' ||
          (mp as { spec?: { template?: { spec?: { infrastructureRef?: { kind?: string } } } } }).spec
            ?.template?.spec?.infrastructureRef?.kind === 'KarpenterMachinePool';
        if (managed && SIZE_ANNOTATIONS.some((a) => a in ann))
          overlapping.push(ref({ ...mp, kind: 'MachinePool' }));
      }
    }
    if (overlapping.length > 0) {
      out.push({
        check: 'ClusterAutoscalerConflict',
        severity: 'error',
        objects: [deployRef, ...overlapping],
        message: `cluster-autoscaler's node groups overlap capenter's: ${overlapping.join(', ')}`,
        why: 'Two autoscalers setting the size of the same node group undo each other: nodes are added twice, and one removes nodes the other just launched.',
        fix: 'Remove these node groups from cluster-autoscaler (drop the --nodes entry, or the cluster-api-autoscaler-node-group-min-size/max-size annotations from the MachinePool).',
      });
    }
  }
  return out;
};
