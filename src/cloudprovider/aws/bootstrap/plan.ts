/**
 * What `capenter bootstrap aws` creates, as data (pure): the node role and its instance profile, the five
 * controller policies, the interruption queue with its policy, the four EventBridge rules, and the
 * attachment of the policies to the controller role when one is named. Names follow upstream's
 * getting-started CloudFormation template; every resource carries the ownership tag {@link BOOTSTRAP_TAG}
 * (`--delete` removes only what carries it, and a same-named resource without it is a collision).
 */
import {
  type ControllerPolicyKey,
  controllerPolicies,
  controllerPolicyName,
  INTERRUPTION_RULES,
  NODE_ROLE_MANAGED_POLICIES,
  nodeRoleTrustPolicy,
  type PolicyDocument,
  type PolicyVars,
  queuePolicy,
} from './policies.ts';

/** Tag key that marks a resource as created by `capenter bootstrap aws` for the cluster named in its value. */
export const BOOTSTRAP_TAG = 'capenter.io/bootstrap-cluster';

/** Inputs of a plan. */
export interface PlanInput {
  clusterName: string;
  region: string;
  /** `aws`, `aws-cn`, `aws-us-gov`. */
  partition: string;
  /** 12-digit account ID (from STS), or a placeholder in a dry run without credentials. */
  accountId: string;
  /** Role the controller runs as (IRSA / Pod Identity role); the controller policies are attached to it. */
  controllerRole?: string;
  /** Extra tags on every resource (e.g. CAPA `AWSCluster.spec.additionalTags`). */
  tags?: Record<string, string>;
  /**
   * An existing worker instance profile to reuse (CAPA's `nodes.cluster-api-provider-aws.sigs.k8s.io`) and its
   * role: no node role or instance profile is created; the controller may pass that role.
   */
  existingInstanceProfile?: { name: string; roleName: string };
}

/** One resource of the plan. `key` is upstream's CloudFormation logical ID (stable; used in reports). */
export type PlannedResource =
  | {
      type: 'IAMRole';
      key: 'KarpenterNodeRole';
      name: string;
      trustPolicy: PolicyDocument;
      managedPolicyArns: string[];
    }
  | { type: 'IAMInstanceProfile'; key: 'KarpenterNodeInstanceProfile'; name: string; roleName: string }
  | {
      type: 'IAMManagedPolicy';
      key: ControllerPolicyKey;
      name: string;
      arn: string;
      document: PolicyDocument;
    }
  | {
      type: 'SQSQueue';
      key: 'KarpenterInterruptionQueue';
      name: string;
      arn: string;
      /** SQS attributes as the API takes them (strings). */
      attributes: { MessageRetentionPeriod: string; SqsManagedSseEnabled: string };
      policy: PolicyDocument;
    }
  | {
      type: 'EventBridgeRule';
      key: string;
      name: string;
      pattern: { source: string[]; 'detail-type': string[] };
      targetArn: string;
    }
  | { type: 'RolePolicyAttachment'; key: string; roleName: string; policyArn: string };

/** A plan: the resources in creation order and the tags each gets. */
export interface BootstrapPlan {
  input: PlanInput;
  tags: Record<string, string>;
  resources: PlannedResource[];
  /** The policy variables the documents were built with. */
  vars: PolicyVars;
}

/** Name of the node role (`KarpenterNodeRole-<cluster>`, as upstream). */
export const nodeRoleName = (cluster: string) => `KarpenterNodeRole-${cluster}`;
/** Name of the node instance profile (`KarpenterNodeInstanceProfile-<cluster>`). */
export const nodeInstanceProfileName = (cluster: string) => `KarpenterNodeInstanceProfile-${cluster}`;
/** Name of EventBridge rule `key` (`Karpenter-<cluster>-<key without "Rule">`, ≤ 64 characters). */
export const ruleName = (cluster: string, key: string) =>
  `Karpenter-${cluster}-${key.replace(/Rule$/, '')}`.slice(0, 64);

/**
 * Validates a cluster name as the resources' names need it (SQS queue names: 1–80 of `[A-Za-z0-9_-]`).
 * @returns an error message naming the flag and the rule, or undefined when valid.
 */
export function checkClusterName(name: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(name))
    return `--cluster-name "${name}": use 1–80 letters, digits, "-" or "_" (it names the SQS queue and the IAM resources)`;
  return undefined;
}

/** Builds the plan. Pure; never throws (validate the cluster name with {@link checkClusterName} first). */
export function bootstrapPlan(input: PlanInput): BootstrapPlan {
  const { clusterName: c, partition: p, region: r, accountId: a } = input;
  const roleName = input.existingInstanceProfile?.roleName ?? nodeRoleName(c);
  const queueArn = `arn:${p}:sqs:${r}:${a}:${c}`;
  const vars: PolicyVars = {
    partition: p,
    region: r,
    accountId: a,
    clusterName: c,
    queueArn,
    nodeRoleArn: `arn:${p}:iam::${a}:role/${roleName}`,
  };
  const resources: PlannedResource[] = [];
  if (!input.existingInstanceProfile) {
    resources.push({
      type: 'IAMRole',
      key: 'KarpenterNodeRole',
      name: roleName,
      trustPolicy: nodeRoleTrustPolicy(p),
      managedPolicyArns: NODE_ROLE_MANAGED_POLICIES.map((n) => `arn:${p}:iam::aws:policy/${n}`),
    });
    resources.push({
      type: 'IAMInstanceProfile',
      key: 'KarpenterNodeInstanceProfile',
      name: nodeInstanceProfileName(c),
      roleName,
    });
  }
  resources.push({
    type: 'SQSQueue',
    key: 'KarpenterInterruptionQueue',
    name: c,
    arn: queueArn,
    attributes: { MessageRetentionPeriod: '300', SqsManagedSseEnabled: 'true' },
    policy: queuePolicy(queueArn),
  });
  for (const rule of INTERRUPTION_RULES)
    resources.push({
      type: 'EventBridgeRule',
      key: rule.key,
      name: ruleName(c, rule.key),
      pattern: { source: [rule.source], 'detail-type': [rule.detailType] },
      targetArn: queueArn,
    });
  const docs = controllerPolicies(vars);
  for (const key of Object.keys(docs) as ControllerPolicyKey[]) {
    const name = controllerPolicyName(key, c);
    resources.push({
      type: 'IAMManagedPolicy',
      key,
      name,
      arn: `arn:${p}:iam::${a}:policy/${name}`,
      document: docs[key],
    });
  }
  if (input.controllerRole)
    for (const key of Object.keys(docs) as ControllerPolicyKey[])
      resources.push({
        type: 'RolePolicyAttachment',
        key: `${key}Attachment`,
        roleName: input.controllerRole,
        policyArn: `arn:${p}:iam::${a}:policy/${controllerPolicyName(key, c)}`,
      });
  return { input, tags: { ...(input.tags ?? {}), [BOOTSTRAP_TAG]: c }, resources, vars };
}

/** `Type name` of a planned resource, as reports print it. */
export function resourceLabel(r: PlannedResource): string {
  return r.type === 'RolePolicyAttachment'
    ? `${r.type} ${r.roleName} ← ${r.policyArn.replace(/^.*\//, '')}`
    : `${r.type} ${r.name}`;
}
