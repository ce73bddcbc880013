/**
 * The bootstrap plan as a CloudFormation template, shaped like upstream's getting-started template (same
 * logical IDs, policy documents as `Fn::Sub` JSON strings, `ClusterName` parameter). It is built from the same
 * plan as the API path with CloudFormation references in place of the concrete values, so substituting the
 * references back gives exactly the documents the API path creates (the golden test checks that).
 */
import { stringify } from 'yaml';
import { type BootstrapPlan, bootstrapPlan, type PlanInput } from './plan.ts';

/** The CloudFormation references that stand for the concrete values in the template. */
export const CFN_VARS = {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub reference
  partition: '${AWS::Partition}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub reference
  region: '${AWS::Region}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub reference
  accountId: '${AWS::AccountId}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a CloudFormation Fn::Sub reference
  clusterName: '${ClusterName}',
} as const;

type Json = unknown;

const sub = (s: string): Json => (s.includes('${') ? { 'Fn::Sub': s } : s);
const subDoc = (doc: unknown): Json => ({ 'Fn::Sub': JSON.stringify(doc, null, 2) });
const cfnTags = (tags: Record<string, string>) =>
  Object.entries(tags).map(([Key, Value]) => ({ Key: sub(Key), Value: sub(Value) }));

/** The template as a JS object (`AWSTemplateFormatVersion`, `Parameters`, `Resources`). Pure. */
export function cloudFormationTemplate(input: PlanInput): Record<string, Json> {
  const plan: BootstrapPlan = bootstrapPlan({ ...input, ...CFN_VARS });
  const tags = cfnTags(plan.tags);
  const resources: Record<string, Json> = {};
  const attachments = plan.resources.filter((r) => r.type === 'RolePolicyAttachment');
  for (const r of plan.resources) {
    switch (r.type) {
      case 'IAMRole':
        resources[r.key] = {
          Type: 'AWS::IAM::Role',
          Properties: {
            RoleName: sub(r.name),
            Path: '/',
            AssumeRolePolicyDocument: r.trustPolicy,
            ManagedPolicyArns: r.managedPolicyArns.map(sub),
            Tags: tags,
          },
        };
        break;
      case 'IAMInstanceProfile':
        // AWS::IAM::InstanceProfile takes no Tags: the API path tags it, CloudFormation owns it through the stack.
        resources[r.key] = {
          Type: 'AWS::IAM::InstanceProfile',
          Properties: { InstanceProfileName: sub(r.name), Path: '/', Roles: [{ Ref: 'KarpenterNodeRole' }] },
        };
        break;
      case 'IAMManagedPolicy': {
        const roles = attachments.filter((a) => a.key === `${r.key}Attachment`).map((a) => a.roleName);
        resources[r.key] = {
          Type: 'AWS::IAM::ManagedPolicy',
          Properties: {
            ManagedPolicyName: sub(r.name),
            Path: '/',
            PolicyDocument: subDoc(r.document),
            ...(roles.length ? { Roles: roles } : {}),
          },
        };
        break;
      }
      case 'SQSQueue':
        resources[r.key] = {
          Type: 'AWS::SQS::Queue',
          Properties: {
            QueueName: sub(r.name),
            MessageRetentionPeriod: Number(r.attributes.MessageRetentionPeriod),
            SqsManagedSseEnabled: r.attributes.SqsManagedSseEnabled === 'true',
            Tags: tags,
          },
        };
        resources.KarpenterInterruptionQueuePolicy = {
          Type: 'AWS::SQS::QueuePolicy',
          Properties: { Queues: [{ Ref: 'KarpenterInterruptionQueue' }], PolicyDocument: subDoc(r.policy) },
        };
        break;
      case 'EventBridgeRule':
        resources[r.key] = {
          Type: 'AWS::Events::Rule',
          Properties: {
            Name: sub(r.name),
            EventPattern: r.pattern,
            Targets: [
              {
                Id: 'KarpenterInterruptionQueueTarget',
                Arn: { 'Fn::GetAtt': ['KarpenterInterruptionQueue', 'Arn'] },
              },
            ],
            Tags: tags,
          },
        };
        break;
      case 'RolePolicyAttachment':
        break; // folded into the policies' Roles
    }
  }
  return {
    AWSTemplateFormatVersion: '2010-09-09',
    Description: `Karpenter prerequisites created by capenter bootstrap aws (upstream getting-started resources) for cluster ${input.clusterName}`,
    Parameters: { ClusterName: { Type: 'String', Default: input.clusterName, Description: 'Cluster name' } },
    Resources: resources,
  };
}

/**
 * The template as YAML text, every value written out in full: no anchors or aliases (`&a1` / `*a1`, which the
 * `yaml` package emits for an object used twice, such as the shared tag list), because CloudFormation refuses
 * them (cfn-lint W1101).
 */
export function cloudFormationYaml(input: PlanInput): string {
  return stringify(cloudFormationTemplate(input), { lineWidth: 0, aliasDuplicateObjects: false });
}

/**
 * Resolves a template value's `Fn::Sub` references with concrete values (what CloudFormation does), for
 * comparing the template with the API path. `${KarpenterInterruptionQueue.Arn}`-style attributes are not used.
 */
export function resolveSub(value: unknown, vars: Record<string, string>): unknown {
  if (value && typeof value === 'object' && 'Fn::Sub' in (value as Record<string, unknown>)) {
    const s = (value as { 'Fn::Sub': string })['Fn::Sub'];
    return s.replace(/\$\{([^}]+)\}/g, (m, k: string) => vars[k] ?? m);
  }
  return value;
}
