/**
 * `capenter plan`'s AMI, subnet, security-group and capacity-reservation drift (upstream
 * `pkg/cloudprovider/drift.go`'s dynamic part). The selector terms of two kinds of EC2NodeClass are resolved with
 * the EC2NodeClass controller's own resolvers, as the controller would resolve them now, and each of their
 * NodeClaims' instances is judged by the provider's rule (`cloudprovider/aws/drift.ts` `selectorDrift`, the one
 * `AwsCloudProvider.isDrifted` runs):
 * - those whose proposal changes `amiSelectorTerms`, `subnetSelectorTerms`, `securityGroupSelectorTerms` or
 *   `capacityReservationSelectorTerms` (their proposed terms);
 * - every other EC2NodeClass of the planned cluster whose NodeClaims run on EC2 instances (their terms unchanged):
 *   what they select can change without any manifest change, e.g. an alias (`al2023@latest`) whose SSM parameter
 *   now names a newer AMI, a tag term matching other subnets, a reservation no longer active.
 * Read-only AWS calls: DescribeImages, DescribeSubnets, DescribeSecurityGroups, DescribeCapacityReservations,
 * DescribeInstances, ssm:GetParameter.
 *
 * Without AWS access (`--offline`, no credentials, an unreachable endpoint, nodes of a changed class that are not
 * EC2 instances) the evaluation is skipped and {@link SelectorDriftEvaluation} says why; it is never skipped
 * silently. An unchanged class whose NodeClaims are not EC2 instances (a kwok cluster) is not resolved: nothing of
 * it runs in AWS.
 */
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { SSMClient } from '@aws-sdk/client-ssm';
import type { KubeObject } from '../apis/core.ts';
import type { EC2NodeClass, NodeClaim } from '../apis/karpenter.ts';
import {
  describeInstanceFacts,
  resolveEC2NodeClassSelectors,
  selectorDrift,
} from '../cloudprovider/aws/drift.ts';
import { parseAwsProviderID } from '../cloudprovider/aws/provider.ts';
import type { NodeSelectorDrift, PlanObjects } from './drift.ts';

/** How plan reaches AWS: read-only EC2 and SSM clients, or why it cannot (printed). */
export type PlanAwsAccess = { clients: { ec2: EC2Client; ssm: SSMClient } } | { unavailable: string };

/** The selector fields whose change makes plan resolve a class's proposed terms. */
export const SELECTOR_FIELDS = [
  'amiSelectorTerms',
  'subnetSelectorTerms',
  'securityGroupSelectorTerms',
  'capacityReservationSelectorTerms',
  'placementGroupSelector',
] as const;

/** Whether plan evaluated AMI/subnet/security-group/capacity-reservation drift (the `-o json` `selectorDrift`). */
export interface SelectorDriftEvaluation {
  /** True when every class of `nodeClasses` was resolved and its NodeClaims' instances were read. */
  evaluated: boolean;
  /**
   * EC2NodeClasses whose selectors plan resolves, sorted: those of `changed`, and every other one whose NodeClaims
   * run on EC2 instances.
   */
  nodeClasses: string[];
  /** Of `nodeClasses`, those whose proposal changes selector terms, sorted. */
  changed: string[];
  /** Why it was not (fully) evaluated; absent when it was, or when there is nothing to evaluate. */
  reason?: string;
}

/** Names of the EC2NodeClasses (live and proposed) whose selector terms differ, sorted. */
export function changedSelectorClasses(objs: PlanObjects): string[] {
  const out: string[] = [];
  for (const [key, proposed] of objs.proposedClasses) {
    if (proposed.kind !== 'EC2NodeClass') continue;
    const live = objs.liveClasses.get(key) as EC2NodeClass | undefined;
    if (!live) continue; // a new class has no nodes yet
    const spec = (proposed as EC2NodeClass).spec;
    if (SELECTOR_FIELDS.some((f) => JSON.stringify(live.spec[f] ?? null) !== JSON.stringify(spec[f] ?? null)))
      out.push(proposed.metadata?.name ?? '');
  }
  return out.sort();
}

/**
 * Names of the EC2NodeClasses of the planned cluster (live, not deleted) whose selector terms do NOT change and
 * that have a NodeClaim running on an EC2 instance (`aws:///<zone>/<instance-id>`), sorted.
 */
export function liveSelectorClasses(live: readonly KubeObject[], objs: PlanObjects): string[] {
  const changed = new Set(changedSelectorClasses(objs));
  const out: string[] = [];
  for (const [key, proposed] of objs.proposedClasses) {
    const name = proposed.metadata?.name ?? '';
    if (proposed.kind !== 'EC2NodeClass' || !objs.liveClasses.has(key) || changed.has(name)) continue;
    if (claimsOf(live, name).some((c) => parseAwsProviderID(c.status?.providerID ?? '') !== undefined))
      out.push(name);
  }
  return out.sort();
}

/** `major.minor` of the lowest kubelet version among the Nodes (`v1.32.3` → `1.32`), or undefined. */
export function clusterKubernetesVersion(live: readonly KubeObject[]): string | undefined {
  const versions = live
    .filter((o) => o.kind === 'Node')
    .map(
      (o) => (o as { status?: { nodeInfo?: { kubeletVersion?: string } } }).status?.nodeInfo?.kubeletVersion,
    )
    .map((v) => /^v?(\d+)\.(\d+)/.exec(v ?? ''))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [Number(m[1]), Number(m[2])] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const v = versions[0];
  return v ? `${v[0]}.${v[1]}` : undefined;
}

/** The live NodeClaims of EC2NodeClass `name` that have a Node. */
function claimsOf(live: readonly KubeObject[], name: string): NodeClaim[] {
  return live.filter(
    (o): o is NodeClaim =>
      o.kind === 'NodeClaim' &&
      (o as NodeClaim).spec?.nodeClassRef?.kind === 'EC2NodeClass' &&
      (o as NodeClaim).spec.nodeClassRef.name === name &&
      !!(o as NodeClaim).status?.nodeName,
  );
}

/** What one class's evaluation shares: the AWS clients, the cluster version, the Nodes, the outputs. */
interface EvalContext {
  live: readonly KubeObject[];
  clients: { ec2: EC2Client; ssm: SSMClient };
  version: string | undefined;
  nodes: ReadonlyMap<string, KubeObject>;
  now: () => number;
  drifts: Map<string, NodeSelectorDrift>;
  notices: string[];
}

/**
 * Resolves EC2NodeClass `cls` (its planned spec) and judges its NodeClaims' instances into `ctx.drifts`. `strict`
 * (its terms change): a NodeClaim that is not an EC2 instance stops the evaluation; else such NodeClaims are
 * skipped. Returns why the evaluation must stop, or undefined.
 * @throws Error when DescribeInstances fails.
 */
async function evaluateClass(
  ctx: EvalContext,
  cls: EC2NodeClass,
  strict: boolean,
): Promise<string | undefined> {
  const name = cls.metadata.name ?? '';
  const ids = new Map<string, NodeClaim>();
  for (const c of claimsOf(ctx.live, name)) {
    const parsed = parseAwsProviderID(c.status?.providerID ?? '');
    if (parsed) ids.set(parsed.instanceId, c);
    else if (strict)
      return `NodeClaim ${c.metadata.name} has provider ID "${c.status?.providerID ?? ''}", not an EC2 instance (aws:///<zone>/<instance-id>): the cluster's nodes are not in AWS (kwok?)`;
  }
  if (ids.size === 0) return undefined;
  const res = await resolveEC2NodeClassSelectors(ctx.clients, cls, ctx.version, ctx.now);
  if (res.errors.length > 0) return `the AWS API failed: ${res.errors.join('; ')}`;
  ctx.notices.push(
    ...res.problems.map(
      (p) => `${p} (that part is not compared; the class would not be Ready: nothing launches)`,
    ),
  );
  const facts = await describeInstanceFacts(ctx.clients.ec2, [...ids.keys()]);
  for (const [id, claim] of ids) {
    const f = facts.get(id);
    const nodeName = claim.status?.nodeName ?? '';
    if (!f) {
      ctx.notices.push(
        `NodeClaim ${claim.metadata.name}: instance ${id} does not exist in AWS; its drift is not evaluated`,
      );
      continue;
    }
    const labels = { ...(claim.metadata.labels ?? {}), ...(ctx.nodes.get(nodeName)?.metadata?.labels ?? {}) };
    const d = selectorDrift(f, res.resolved, labels);
    if (d) ctx.drifts.set(nodeName, { ...d, nodeClass: name });
  }
  return undefined;
}

/**
 * Evaluates AMI, subnet, security-group and capacity-reservation drift of the NodeClaims of every EC2NodeClass
 * plan resolves (see the module doc). Returns the drifts by node name, problems as notices (a part that matches
 * nothing, an instance that does not exist), and the evaluation summary. Never throws: an AWS failure makes the
 * evaluation `evaluated: false` with the error as its reason.
 */
export async function evaluateSelectorDrift(
  live: readonly KubeObject[],
  objs: PlanObjects,
  aws: PlanAwsAccess,
  now: () => number,
): Promise<{
  drifts: Map<string, NodeSelectorDrift>;
  notices: string[];
  evaluation: SelectorDriftEvaluation;
}> {
  const drifts = new Map<string, NodeSelectorDrift>();
  const notices: string[] = [];
  const changed = changedSelectorClasses(objs);
  const nodeClasses = [...changed, ...liveSelectorClasses(live, objs)].sort();
  const skipped = (reason: string) => {
    notices.push(
      `AMI, subnet, security-group and capacity-reservation drift was NOT evaluated for EC2NodeClass ${nodeClasses.map((n) => `"${n}"`).join(', ')}: ${reason}. Nodes listed above drift for the other reasons only; AMIDrift, SubnetDrift, SecurityGroupDrift and CapacityReservationDrift may add more (an alias can name a newer AMI without any change to the manifests).`,
    );
    return { drifts, notices, evaluation: { evaluated: false, nodeClasses, changed, reason } };
  };
  if (nodeClasses.length === 0)
    return { drifts, notices, evaluation: { evaluated: false, nodeClasses, changed } };
  if ('unavailable' in aws) return skipped(aws.unavailable);
  const ctx: EvalContext = {
    live,
    clients: aws.clients,
    version: clusterKubernetesVersion(live),
    nodes: new Map(live.filter((o) => o.kind === 'Node').map((o) => [o.metadata?.name ?? '', o])),
    now,
    drifts,
    notices,
  };
  try {
    for (const name of nodeClasses) {
      const cls = objs.proposedClasses.get(`EC2NodeClass/${name}`) as EC2NodeClass;
      const stop = await evaluateClass(ctx, cls, changed.includes(name));
      if (stop !== undefined) return skipped(stop);
    }
  } catch (err) {
    return skipped(`the AWS API failed: ${(err as Error).message}`);
  }
  return { drifts, notices, evaluation: { evaluated: true, nodeClasses, changed } };
}
