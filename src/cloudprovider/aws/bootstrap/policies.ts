/**
 * The IAM policy documents of Karpenter's AWS prerequisites, as upstream's getting-started CloudFormation
 * template (aws/karpenter-provider-aws `website/content/en/docs/getting-started/getting-started-with-karpenter/
 * cloudformation.yaml`, v1.x): the node role's trust policy and managed policies, and the controller policy
 * split in five (node lifecycle, IAM integration, EKS integration, interruption, resource discovery), each
 * scoped by the same tags and conditions. Pure: every value that differs between the API path and the
 * CloudFormation template (partition, region, account, queue and role ARNs) comes in through {@link PolicyVars},
 * so the template and the created policies are built by the same code.
 */

/** An IAM policy document (JSON). */
export interface PolicyDocument {
  Version: '2012-10-17';
  Id?: string;
  Statement: PolicyStatement[];
}
/** One statement of a {@link PolicyDocument}. */
export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Principal?: unknown;
  Action: string | string[];
  /** Absent in trust policies. */
  Resource?: string | string[];
  Condition?: Record<string, Record<string, string | string[] | boolean>>;
}

/**
 * The values substituted into the documents: concrete ones (`aws`, `us-west-2`, `123456789012`, real ARNs) on
 * the API path, CloudFormation references (`${AWS::Partition}`, `${KarpenterInterruptionQueue.Arn}`) in the template.
 */
export interface PolicyVars {
  partition: string;
  region: string;
  accountId: string;
  clusterName: string;
  /** ARN of the interruption queue. */
  queueArn: string;
  /** ARN of the node role the controller may pass to EC2. */
  nodeRoleArn: string;
}

/** AWS-managed policies attached to the node role (upstream v1.x), by name (ARN: `arn:<partition>:iam::aws:policy/<name>`). */
export const NODE_ROLE_MANAGED_POLICIES = [
  'AmazonEKS_CNI_Policy',
  'AmazonEKSWorkerNodePolicy',
  'AmazonEC2ContainerRegistryPullOnly',
  'AmazonSSMManagedInstanceCore',
] as const;

/** The node role's trust policy: EC2 may assume it (`ec2.amazonaws.com`, `ec2.amazonaws.com.cn` in China). */
export function nodeRoleTrustPolicy(partition: string): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { Service: partition === 'aws-cn' ? 'ec2.amazonaws.com.cn' : 'ec2.amazonaws.com' },
        Action: ['sts:AssumeRole'],
      },
    ],
  };
}

/** The five controller policies, by upstream's logical name, with upstream's policy names. */
export type ControllerPolicyKey =
  | 'NodeLifecyclePolicy'
  | 'IAMIntegrationPolicy'
  | 'EKSIntegrationPolicy'
  | 'InterruptionPolicy'
  | 'ResourceDiscoveryPolicy';

/** Upstream's managed-policy name of each controller policy (`KarpenterController<Part>-<cluster>`). */
export function controllerPolicyName(key: ControllerPolicyKey, clusterName: string): string {
  return `KarpenterController${key}-${clusterName}`;
}

/** `arn:<partition>:ec2:<region>:<account>:<type>/*` (any account unless given). */
function ec2Arn(v: PolicyVars, type: string, account = '*'): string {
  return `arn:${v.partition}:ec2:${v.region}:${account}:${type}/*`;
}

/** The cluster's ownership tag key, `kubernetes.io/cluster/<cluster>`. */
function clusterTagKey(v: PolicyVars): string {
  return `kubernetes.io/cluster/${v.clusterName}`;
}

/** Any instance profile of the account: `arn:<partition>:iam::<account>:instance-profile/*`. */
function instanceProfilesArn(v: PolicyVars): string {
  return `arn:${v.partition}:iam::${v.accountId}:instance-profile/*`;
}

/**
 * Upstream's `KarpenterControllerNodeLifecyclePolicy`: launch (RunInstances, CreateFleet, launch templates),
 * tag and terminate EC2 resources, scoped to the cluster's ownership tag and a `karpenter.sh/nodepool` tag.
 */
function nodeLifecyclePolicy(v: PolicyVars): PolicyDocument {
  const ec2 = (type: string) => ec2Arn(v, type);
  const clusterTag = clusterTagKey(v);
  const taggedCreate = [
    ec2('fleet'),
    ec2('instance'),
    ec2('volume'),
    ec2('network-interface'),
    ec2('launch-template'),
    ec2('spot-instances-request'),
  ];
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowScopedEC2InstanceAccessActions',
        Effect: 'Allow',
        Resource: [
          `arn:${v.partition}:ec2:${v.region}::image/*`,
          `arn:${v.partition}:ec2:${v.region}::snapshot/*`,
          ec2('security-group'),
          ec2('subnet'),
          ec2('capacity-reservation'),
        ],
        Action: ['ec2:RunInstances', 'ec2:CreateFleet'],
      },
      {
        Sid: 'AllowScopedEC2LaunchTemplateAccessActions',
        Effect: 'Allow',
        Resource: ec2('launch-template'),
        Action: ['ec2:RunInstances', 'ec2:CreateFleet'],
        Condition: {
          StringEquals: { [`aws:ResourceTag/${clusterTag}`]: 'owned' },
          StringLike: { 'aws:ResourceTag/karpenter.sh/nodepool': '*' },
        },
      },
      {
        Sid: 'AllowScopedEC2InstanceActionsWithTags',
        Effect: 'Allow',
        Resource: taggedCreate,
        Action: ['ec2:RunInstances', 'ec2:CreateFleet', 'ec2:CreateLaunchTemplate'],
        Condition: {
          StringEquals: {
            [`aws:RequestTag/${clusterTag}`]: 'owned',
            'aws:RequestTag/eks:eks-cluster-name': v.clusterName,
          },
          StringLike: { 'aws:RequestTag/karpenter.sh/nodepool': '*' },
        },
      },
      {
        Sid: 'AllowScopedResourceCreationTagging',
        Effect: 'Allow',
        Resource: taggedCreate,
        Action: 'ec2:CreateTags',
        Condition: {
          StringEquals: {
            [`aws:RequestTag/${clusterTag}`]: 'owned',
            'aws:RequestTag/eks:eks-cluster-name': v.clusterName,
            'ec2:CreateAction': ['RunInstances', 'CreateFleet', 'CreateLaunchTemplate'],
          },
          StringLike: { 'aws:RequestTag/karpenter.sh/nodepool': '*' },
        },
      },
      {
        Sid: 'AllowScopedResourceTagging',
        Effect: 'Allow',
        Resource: ec2('instance'),
        Action: 'ec2:CreateTags',
        Condition: {
          StringEquals: { [`aws:ResourceTag/${clusterTag}`]: 'owned' },
          StringLike: { 'aws:ResourceTag/karpenter.sh/nodepool': '*' },
          StringEqualsIfExists: { 'aws:RequestTag/eks:eks-cluster-name': v.clusterName },
          'ForAllValues:StringEquals': {
            'aws:TagKeys': ['eks:eks-cluster-name', 'karpenter.sh/nodeclaim', 'Name'],
          },
        },
      },
      {
        Sid: 'AllowScopedDeletion',
        Effect: 'Allow',
        Resource: [ec2('instance'), ec2('launch-template')],
        Action: ['ec2:TerminateInstances', 'ec2:DeleteLaunchTemplate'],
        Condition: {
          StringEquals: { [`aws:ResourceTag/${clusterTag}`]: 'owned' },
          StringLike: { 'aws:ResourceTag/karpenter.sh/nodepool': '*' },
        },
      },
    ],
  };
}

/**
 * Upstream's `KarpenterControllerIAMIntegrationPolicy`: pass the node role to EC2, and manage the instance
 * profiles tagged for the cluster, its region and an EC2NodeClass.
 */
function iamIntegrationPolicy(v: PolicyVars): PolicyDocument {
  const clusterTag = clusterTagKey(v);
  const instanceProfiles = instanceProfilesArn(v);
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowPassingInstanceRole',
        Effect: 'Allow',
        Resource: v.nodeRoleArn,
        Action: 'iam:PassRole',
        Condition: {
          StringEquals: { 'iam:PassedToService': ['ec2.amazonaws.com', 'ec2.amazonaws.com.cn'] },
        },
      },
      {
        Sid: 'AllowScopedInstanceProfileCreationActions',
        Effect: 'Allow',
        Resource: instanceProfiles,
        Action: ['iam:CreateInstanceProfile'],
        Condition: {
          StringEquals: {
            [`aws:RequestTag/${clusterTag}`]: 'owned',
            'aws:RequestTag/eks:eks-cluster-name': v.clusterName,
            'aws:RequestTag/topology.kubernetes.io/region': v.region,
          },
          StringLike: { 'aws:RequestTag/karpenter.k8s.aws/ec2nodeclass': '*' },
        },
      },
      {
        Sid: 'AllowScopedInstanceProfileTagActions',
        Effect: 'Allow',
        Resource: instanceProfiles,
        Action: ['iam:TagInstanceProfile'],
        Condition: {
          StringEquals: {
            [`aws:ResourceTag/${clusterTag}`]: 'owned',
            'aws:ResourceTag/topology.kubernetes.io/region': v.region,
            [`aws:RequestTag/${clusterTag}`]: 'owned',
            'aws:RequestTag/eks:eks-cluster-name': v.clusterName,
            'aws:RequestTag/topology.kubernetes.io/region': v.region,
          },
          StringLike: {
            'aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass': '*',
            'aws:RequestTag/karpenter.k8s.aws/ec2nodeclass': '*',
          },
        },
      },
      {
        Sid: 'AllowScopedInstanceProfileActions',
        Effect: 'Allow',
        Resource: instanceProfiles,
        Action: [
          'iam:AddRoleToInstanceProfile',
          'iam:RemoveRoleFromInstanceProfile',
          'iam:DeleteInstanceProfile',
        ],
        Condition: {
          StringEquals: {
            [`aws:ResourceTag/${clusterTag}`]: 'owned',
            'aws:ResourceTag/topology.kubernetes.io/region': v.region,
          },
          StringLike: { 'aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass': '*' },
        },
      },
    ],
  };
}

/** Upstream's `KarpenterControllerEKSIntegrationPolicy`: describe the cluster (API server endpoint discovery). */
function eksIntegrationPolicy(v: PolicyVars): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowAPIServerEndpointDiscovery',
        Effect: 'Allow',
        Resource: `arn:${v.partition}:eks:${v.region}:${v.accountId}:cluster/${v.clusterName}`,
        Action: 'eks:DescribeCluster',
      },
    ],
  };
}

/** Upstream's `KarpenterControllerInterruptionPolicy`: receive and delete the interruption queue's messages. */
function interruptionPolicy(v: PolicyVars): PolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowInterruptionQueueActions',
        Effect: 'Allow',
        Resource: v.queueArn,
        Action: ['sqs:DeleteMessage', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage'],
      },
    ],
  };
}

/**
 * Upstream's `KarpenterControllerResourceDiscoveryPolicy`: the read-only calls (EC2 describes in the region,
 * SSM public parameters, pricing, instance profiles).
 */
function resourceDiscoveryPolicy(v: PolicyVars): PolicyDocument {
  const instanceProfiles = instanceProfilesArn(v);
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowRegionalReadActions',
        Effect: 'Allow',
        Resource: '*',
        Action: [
          'ec2:DescribeCapacityReservations',
          'ec2:DescribeImages',
          'ec2:DescribeInstances',
          'ec2:DescribeInstanceStatus',
          'ec2:DescribeInstanceTypeOfferings',
          'ec2:DescribeInstanceTypes',
          'ec2:DescribeLaunchTemplates',
          'ec2:DescribeSecurityGroups',
          'ec2:DescribeSpotPriceHistory',
          'ec2:DescribeSubnets',
        ],
        Condition: { StringEquals: { 'aws:RequestedRegion': v.region } },
      },
      {
        Sid: 'AllowSSMReadActions',
        Effect: 'Allow',
        Resource: `arn:${v.partition}:ssm:${v.region}::parameter/aws/service/*`,
        Action: 'ssm:GetParameter',
      },
      { Sid: 'AllowPricingReadActions', Effect: 'Allow', Resource: '*', Action: 'pricing:GetProducts' },
      {
        Sid: 'AllowUnscopedInstanceProfileListAction',
        Effect: 'Allow',
        Resource: '*',
        Action: 'iam:ListInstanceProfiles',
      },
      {
        Sid: 'AllowInstanceProfileReadActions',
        Effect: 'Allow',
        Resource: instanceProfiles,
        Action: 'iam:GetInstanceProfile',
      },
    ],
  };
}

/** All controller policy documents, in upstream's order. */
export function controllerPolicies(v: PolicyVars): Record<ControllerPolicyKey, PolicyDocument> {
  return {
    NodeLifecyclePolicy: nodeLifecyclePolicy(v),
    IAMIntegrationPolicy: iamIntegrationPolicy(v),
    EKSIntegrationPolicy: eksIntegrationPolicy(v),
    InterruptionPolicy: interruptionPolicy(v),
    ResourceDiscoveryPolicy: resourceDiscoveryPolicy(v),
  };
}

/**
 * The interruption queue's policy (upstream `KarpenterInterruptionQueuePolicy`): EventBridge and SQS may send
 * to it; any request not over TLS is denied.
 */
export function queuePolicy(queueArn: string): PolicyDocument {
  return {
    Version: '2012-10-17',
    Id: 'EC2InterruptionPolicy',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { Service: ['events.amazonaws.com', 'sqs.amazonaws.com'] },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
      },
      {
        Sid: 'DenyHTTP',
        Effect: 'Deny',
        Action: 'sqs:*',
        Resource: queueArn,
        Condition: { Bool: { 'aws:SecureTransport': false } },
        Principal: '*',
      },
    ],
  };
}

/** The four EventBridge rules (upstream logical name → event pattern) that feed the interruption queue. */
export const INTERRUPTION_RULES: ReadonlyArray<{ key: string; source: string; detailType: string }> = [
  { key: 'ScheduledChangeRule', source: 'aws.health', detailType: 'AWS Health Event' },
  { key: 'SpotInterruptionRule', source: 'aws.ec2', detailType: 'EC2 Spot Instance Interruption Warning' },
  { key: 'RebalanceRule', source: 'aws.ec2', detailType: 'EC2 Instance Rebalance Recommendation' },
  { key: 'InstanceStateChangeRule', source: 'aws.ec2', detailType: 'EC2 Instance State-change Notification' },
];
