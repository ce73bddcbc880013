/**
 * `capenter plan`'s AMI, subnet and security-group drift (upstream `pkg/cloudprovider/drift.go`'s dynamic part):
 * for each EC2NodeClass whose proposal changes `amiSelectorTerms`, `subnetSelectorTerms` or
 * `securityGroupSelectorTerms`, the proposed terms are resolved with the EC2NodeClass controller's own resolvers
 * and each of its NodeClaims' instances is judged by the provider's rule (`cloudprovider/aws/drift.ts`
 * `selectorDrift`, the one `AwsCloudProvider.isDrifted` runs). Read-only AWS calls: DescribeImages,
 * DescribeSubnets, DescribeSecurityGroups, DescribeInstances, ssm:GetParameter.
 *
 * Without AWS access (`--offline`, no credentials, an unreachable endpoint, nodes that are not EC2 instances) the
 * evaluation is skipped and {@link SelectorDriftEvaluation} says why; it is never skipped silently.
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

/** The selector fields whose change makes plan resolve a class. */
export const SELECTOR_FIELDS = [
  'amiSelectorTerms',
  'subnetSelectorTerms',
  'securityGroupSelectorTerms',
  'placementGroupSelector',
] as const;

/** Whether plan evaluated AMI/subnet/security-group drift (the `-o json` `selectorDrift` field). */
export interface SelectorDriftEvaluation {
  /** True when every changed class was resolved and its NodeClaims' instances were read. */
  evaluated: boolean;
  /** EC2NodeClasses whose proposal changes selector terms, sorted. */
  nodeClasses: string[];
  /** Why it was not (fully) evaluated; absent when it was, or when no selector term changes. */
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

/**
 * Evaluates AMI, subnet and security-group drift of the NodeClaims of every EC2NodeClass whose selector terms the
 * proposal changes (see the module doc). Returns the drifts by node name, problems as notices (a part that matches
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
  const nodeClasses = changedSelectorClasses(objs);
  const skipped = (reason: string) => {
    notices.push(
      `AMI, subnet and security-group drift was NOT evaluated for EC2NodeClass ${nodeClasses.map((n) => `"${n}"`).join(', ')} (its selector terms change): ${reason}. Nodes listed above drift for the other reasons only; AMIDrift, SubnetDrift and SecurityGroupDrift may add more.`,
    );
    return { drifts, notices, evaluation: { evaluated: false, nodeClasses, reason } };
  };
  if (nodeClasses.length === 0) return { drifts, notices, evaluation: { evaluated: false, nodeClasses } };
  if ('unavailable' in aws) return skipped(aws.unavailable);
  const version = clusterKubernetesVersion(live);
  const nodes = new Map(live.filter((o) => o.kind === 'Node').map((o) => [o.metadata?.name ?? '', o]));
  try {
    for (const name of nodeClasses) {
      const proposed = objs.proposedClasses.get(`EC2NodeClass/${name}`) as EC2NodeClass;
      const claims = claimsOf(live, name);
      const ids = new Map<string, NodeClaim>();
      for (const c of claims) {
        const parsed = parseAwsProviderID(c.status?.providerID ?? '');
        if (!parsed)
          return skipped(
            `NodeClaim ${c.metadata.name} has provider ID "${c.status?.providerID ?? ''}", not an EC2 instance (aws:///<zone>/<instance-id>): the cluster's nodes are not in AWS (kwok?)`,
          );
        ids.set(parsed.instanceId, c);
      }
      if (ids.size === 0) continue;
      const res = await resolveEC2NodeClassSelectors(aws.clients, proposed, version ?? '', now);
      if (res.errors.length > 0) return skipped(`the AWS API failed: ${res.errors.join('; ')}`);
      if (version === undefined && proposed.spec.amiSelectorTerms?.some((t) => t.alias))
        res.problems.push(
          `EC2NodeClass "${name}": its alias needs the cluster's Kubernetes version, and no Node reports status.nodeInfo.kubeletVersion`,
        );
      notices.push(
        ...res.problems.map(
          (p) => `${p} (that part is not compared; the class would not be Ready: nothing launches)`,
        ),
      );
      const facts = await describeInstanceFacts(aws.clients.ec2, [...ids.keys()]);
      for (const [id, claim] of ids) {
        const f = facts.get(id);
        const nodeName = claim.status?.nodeName ?? '';
        if (!f) {
          notices.push(
            `NodeClaim ${claim.metadata.name}: instance ${id} does not exist in AWS; its drift is not evaluated`,
          );
          continue;
        }
        const labels = { ...(claim.metadata.labels ?? {}), ...(nodes.get(nodeName)?.metadata?.labels ?? {}) };
        const d = selectorDrift(f, res.resolved, labels);
        if (d) drifts.set(nodeName, { ...d, nodeClass: name });
      }
    }
  } catch (err) {
    return skipped(`the AWS API failed: ${(err as Error).message}`);
  }
  return { drifts, notices, evaluation: { evaluated: true, nodeClasses } };
}
