/**
 * NodePool and NodeClass checks:
 * - `NodePoolWithoutLimits`: a NodePool without `spec.limits` can grow without bound (a runaway workload or a
 *   bad spread becomes an unbounded bill); upstream recommends limits on every NodePool.
 * - `NodePoolUnusable`: pending pods exist and none of them can use the NodePool (its taints are not
 *   tolerated or its requirements and template labels exclude every pod's node affinity), the check upstream
 *   runs per pod (`nodePoolRequirements.Compatible(podRequirements, AllowUndefinedWellKnownLabels)`).
 * - `NodeClassNotReady`: an EC2NodeClass whose `Ready` condition is not True launches nothing (an error; a
 *   warning while it has no conditions at all, i.e. no controller has reconciled it yet).
 * - `DoNotDisruptOutlivesExpiry`: a pod still protected by `karpenter.sh/do-not-disrupt` (`"true"` or a duration
 *   not yet elapsed) older than its NodePool's `expireAfter` holds an expired node until `terminationGracePeriod`
 *   (or forever without one).
 */
import type { Pod } from '../../apis/core.ts';
import { isDoNotDisruptActive } from '../../apis/donotdisrupt.ts';
import { tryParseDuration } from '../../apis/duration.ts';
import type { NodePool } from '../../apis/karpenter.ts';
import { AnnotationDoNotDisrupt, LabelNodePool, WellKnownLabels } from '../../apis/labels.ts';
import { requiredAlternatives } from '../../scheduling/nodeaffinity.ts';
import { Requirements } from '../../scheduling/requirements.ts';
import { untoleratedTaint } from '../../scheduling/taints.ts';
import { ageSeconds, type Check, type Finding, ref } from '../types.ts';

/** The `NodePoolWithoutLimits` check. */
export const nodePoolLimitsCheck: Check = (s) =>
  s.nodePools
    .filter((p) => !p.spec.limits || Object.keys(p.spec.limits).length === 0)
    .map(
      (p): Finding => ({
        check: 'NodePoolWithoutLimits',
        severity: 'warning',
        objects: [`NodePool ${p.metadata.name}`],
        message: 'spec.limits is not set: the NodePool can launch nodes without bound',
        why: 'A runaway workload, a crash-looping Job or a spread that cannot be satisfied keeps launching nodes; limits are the only cap on what a NodePool spends.',
        fix: 'Set spec.limits (for example cpu: "1000", memory: 1000Gi) above the NodePool’s expected peak.',
      }),
    );

function isPendingWorkloadPod(p: Pod): boolean {
  return (
    !p.spec.nodeName &&
    (p.status?.phase ?? 'Pending') === 'Pending' &&
    !p.metadata.deletionTimestamp &&
    !p.metadata.ownerReferences?.some((o) => o.controller && o.kind === 'DaemonSet')
  );
}

/** Why `pod` can never use `pool`, or undefined when it can (taints, then requirements). */
export function whyPoolUnusable(pool: NodePool, pod: Pod): string | undefined {
  const spec = pool.spec.template.spec;
  const taint = untoleratedTaint(pod.spec.tolerations, spec.taints);
  if (taint) return taint;
  let poolReqs: Requirements;
  let alternatives: Requirements[];
  try {
    poolReqs = Requirements.fromNodeSelector(spec.requirements).addAll(
      Requirements.fromLabels(pool.spec.template.metadata?.labels),
    );
    alternatives = requiredAlternatives(pod);
  } catch (err) {
    return (err as Error).message;
  }
  let first: string | undefined;
  for (const alt of alternatives) {
    const msg = poolReqs.compatible(alt, WellKnownLabels);
    if (!msg) return undefined;
    first ??= msg;
  }
  return first;
}

/** The `NodePoolUnusable` check. */
export const nodePoolUnusableCheck: Check = (s) => {
  const pending = s.pods.filter(isPendingWorkloadPod);
  if (pending.length === 0) return [];
  const out: Finding[] = [];
  for (const pool of s.nodePools) {
    const reasons = pending.map((p) => whyPoolUnusable(pool, p));
    if (reasons.some((r) => r === undefined)) continue;
    const sample = pending
      .slice(0, 3)
      .map((p, i) => `${p.metadata.namespace}/${p.metadata.name}: ${reasons[i]}`);
    out.push({
      check: 'NodePoolUnusable',
      severity: 'warning',
      objects: [
        `NodePool ${pool.metadata.name}`,
        ...pending.slice(0, 3).map((p) => ref({ ...p, kind: 'Pod' })),
      ],
      message: `none of the ${pending.length} pending pod${pending.length === 1 ? '' : 's'} can use this NodePool (${sample.join('; ')}${pending.length > 3 ? '; …' : ''})`,
      why: 'The pending pods wait for capacity this NodePool can never give them: its taints or requirements exclude all of them.',
      fix: 'Give the pods the tolerations / node selectors the NodePool needs, or widen the NodePool’s requirements and taints (see `capenter simulate --explain` for each pod).',
    });
  }
  return out;
};

/** The `NodeClassNotReady` check. */
export const nodeClassReadyCheck: Check = (s) => {
  const out: Finding[] = [];
  for (const nc of s.ec2NodeClasses) {
    const conds = (nc.status?.conditions ?? []) as Array<{
      type?: string;
      status?: string;
      reason?: string;
      message?: string;
    }>;
    const ready = conds.find((c) => c.type === 'Ready');
    if (ready?.status === 'True') continue;
    const pools = s.nodePools
      .filter(
        (p) =>
          p.spec.template.spec.nodeClassRef?.kind === 'EC2NodeClass' &&
          p.spec.template.spec.nodeClassRef.name === nc.metadata.name,
      )
      .map((p) => `NodePool ${p.metadata.name}`);
    const failing = conds
      .filter((c) => c.type !== 'Ready' && c.status === 'False')
      .map((c) => `${c.type}: ${c.message ?? c.reason ?? 'False'}`);
    out.push({
      check: 'NodeClassNotReady',
      // No condition at all: nothing has reconciled the class yet (a fresh class, or no aws controller running).
      severity: ready ? 'error' : 'warning',
      objects: [ref({ ...nc, kind: 'EC2NodeClass' }), ...pools],
      message: ready
        ? `Ready is ${ready.status}${ready.message ? `: ${ready.message}` : ''}${failing.length ? ` (${failing.join('; ')})` : ''}`
        : 'the EC2NodeClass has no Ready condition yet (no controller has resolved its subnets, security groups, AMIs and instance profile)',
      why: `NodeClaims of ${pools.length ? pools.join(', ') : 'NodePools using it'} are not launched while the class is not Ready, so pending pods stay pending.`,
      fix: 'Fix what the failing condition names (selector terms that match no subnet / security group / AMI, or the role); `kubectl describe ec2nodeclass NAME` shows the conditions.',
    });
  }
  return out;
};

/** The `DoNotDisruptOutlivesExpiry` check. */
export const doNotDisruptCheck: Check = (s) => {
  const out: Finding[] = [];
  const nodePool = new Map(s.nodes.map((n) => [n.metadata.name, n.metadata.labels?.[LabelNodePool]]));
  for (const p of s.pods) {
    if (!p.spec.nodeName || !isDoNotDisruptActive(p, s.now.getTime())) continue;
    const poolName = nodePool.get(p.spec.nodeName);
    const pool = s.nodePools.find((x) => x.metadata.name === poolName);
    if (!pool) continue;
    const expire = tryParseDuration(pool.spec.template.spec.expireAfter ?? '720h');
    if (!expire.ok) continue; // "Never"
    const age = ageSeconds(p, s.now);
    if (age <= expire.seconds) continue;
    const tgp = pool.spec.template.spec.terminationGracePeriod;
    out.push({
      check: 'DoNotDisruptOutlivesExpiry',
      severity: tgp ? 'warning' : 'error',
      objects: [ref({ ...p, kind: 'Pod' }), `Node ${p.spec.nodeName}`, `NodePool ${pool.metadata.name}`],
      message: `pod is ${Math.floor(age / 3600)}h old, longer than NodePool ${pool.metadata.name}'s expireAfter ${pool.spec.template.spec.expireAfter ?? '720h'}, and carries karpenter.sh/do-not-disrupt: "${p.metadata.annotations?.[AnnotationDoNotDisrupt] ?? ''}"`,
      why: tgp
        ? `Its node has expired; the drain waits for the pod until terminationGracePeriod (${tgp}) runs out and then deletes it anyway.`
        : 'Its node has expired but can never be drained: without terminationGracePeriod a do-not-disrupt pod blocks the node forever.',
      fix: 'Let the pod finish or move it, remove the annotation when it may be disrupted, or set the NodePool’s terminationGracePeriod (or expireAfter: Never if nodes must not expire).',
    });
  }
  return out;
};
