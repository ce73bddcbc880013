/**
 * capenter's KarpenterMachinePool (`infrastructure.cluster.x-k8s.io/v1alpha1`, namespaced): a Cluster API
 * MachinePool infrastructure provider backed by a Karpenter NodePool + EC2NodeClass pair in the workload cluster.
 *
 * A compatible superset of the community CRD (giantswarm/aws-resolver-rules-operator v0.27.1,
 * shared/data/crds/aws-resolver-rules-operator): every community manifest is accepted unchanged, and
 * - `spec.ec2NodeClass` is the full EC2NodeClass spec with the subnet, security-group and AMI selector terms
 *   optional (derived from CAPA when absent), and `role`/`instanceProfile` both optional (the worker instance
 *   profile is derived); every field is carried into the EC2NodeClass;
 * - `spec.nodePool` is the full NodePool spec; `template.spec.nodeClassRef` is optional and always replaced by the
 *   generated EC2NodeClass;
 * - status adds `initialization.provisioned` (CAPI v1beta2 contract) next to `ready` (v1beta1 contract) and keeps
 *   CAPI v1beta1-style conditions (`severity`) as the community CRD does.
 * The CRD carries the CAPI contract labels `cluster.x-k8s.io/v1beta1: v1alpha1` and `cluster.x-k8s.io/v1beta2:
 * v1alpha1` (CAPI maps a contract version to the served API versions through them).
 *
 * Sources: Cluster API book "MachinePool infrastructure provider contract" (v1.14), the community CRD above,
 * CAPI/CAPA CRDs v1.14.0 / v2.11.1 for the objects this kind reads.
 */
import { z } from 'zod';
import type { KubeObject, ObjectMeta, Taint } from './core.ts';
import type { EC2NodeClass, NodePool } from './karpenter.ts';
import {
  type CelRule,
  duplicateTaintCheck,
  EC2NodeClassSpecFields,
  type KarpenterKindInfo,
  NodeClaimTemplateSpecFields,
  NodeClassReferenceSchema,
  NodePoolSpecFields,
  ObjectMetaSchema,
  refuseUnsupportedEC2NodeClassFields,
  templateLabelsSchema,
  withRules,
} from './schemas.ts';

/** API group of Cluster API infrastructure providers. */
export const InfrastructureGroup = 'infrastructure.cluster.x-k8s.io';
/** apiVersion of the KarpenterMachinePool. */
export const KMPApiVersion = `${InfrastructureGroup}/v1alpha1`;
/** Kind of the KarpenterMachinePool. */
export const KMPKind = 'KarpenterMachinePool';

/** Finalizer held while the pool's NodePool, nodes and instances are being removed. */
export const KMPFinalizer = 'capenter.sh/karpentermachinepool';
/** Label on the generated NodePool and EC2NodeClass: the KarpenterMachinePool's `namespace.name`... its name. */
export const LabelKMPName = 'capenter.sh/karpentermachinepool';
/** Label on the generated objects: the KarpenterMachinePool's namespace in the management cluster. */
export const LabelKMPNamespace = 'capenter.sh/karpentermachinepool-namespace';
/** `app.kubernetes.io/managed-by` value on the generated objects. */
export const ManagedBy = 'capenter';
/** CAPI's cluster-name label (on KMP, MachinePool, generated objects and instance tags). */
export const LabelClusterName = 'cluster.x-k8s.io/cluster-name';
/** Label of the Machines that make up a Machine-based control plane (cluster-api `MachineControlPlaneLabel`). */
export const LabelControlPlane = 'cluster.x-k8s.io/control-plane';
/** MachinePool annotation telling CAPI that an external autoscaler owns `spec.replicas` (CAPI `ReplicasManagedByAnnotation`). */
export const AnnotationReplicasManagedBy = 'cluster.x-k8s.io/replicas-managed-by';
/** Value of {@link AnnotationReplicasManagedBy}. */
export const ReplicasManagedByExternalAutoscaler = 'external-autoscaler';
/** KMP annotation: SHA-256 (hex) of the bootstrap data last uploaded (never the data itself). */
export const AnnotationUserDataHash = 'capenter.sh/userdata-hash';
/** NodePool template annotation carrying the pool's Kubernetes version: a change drifts (rolls) every node. */
export const AnnotationKubernetesVersion = 'capenter.sh/kubernetes-version';
/** The CAPI taint every node carries until the MachinePool controller has matched it (cluster-api `NodeUninitializedTaint`). */
export const TaintUninitializedKey = 'node.cluster.x-k8s.io/uninitialized';
/** Node annotations CAPI's MachinePool controller sets on its nodes (cluster-api `internal/.../machinepool_controller_noderef.go`). */
export const NodeAnnotations = {
  clusterName: 'cluster.x-k8s.io/cluster-name',
  clusterNamespace: 'cluster.x-k8s.io/cluster-namespace',
  ownerKind: 'cluster.x-k8s.io/owner-kind',
  ownerName: 'cluster.x-k8s.io/owner-name',
} as const;

/** Condition types of a KarpenterMachinePool (the community operator's, plus `RegistrationTaintConfigured`). */
export const KMPConditions = {
  Ready: 'Ready',
  NodePoolCreated: 'NodePoolCreated',
  EC2NodeClassCreated: 'EC2NodeClassCreated',
  BootstrapDataReady: 'BootstrapDataReady',
  VersionSkewPolicySatisfied: 'VersionSkewPolicySatisfied',
  RegistrationTaintConfigured: 'RegistrationTaintConfigured',
} as const;

/** CAPI v1beta1-style condition (`sigs.k8s.io/cluster-api/api/v1beta1.Condition`): severity only when False. */
export interface CAPICondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  severity?: 'Error' | 'Warning' | 'Info' | '';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

/** `spec.ec2NodeClass`: an EC2NodeClass spec whose selector terms, role and instance profile may be derived. */
export interface KMPEC2NodeClassSpec extends Partial<EC2NodeClass['spec']> {}

/** `spec.nodePool`: a NodePool spec whose `template.spec.nodeClassRef` is generated. */
export interface KMPNodePoolSpec extends Omit<Partial<NodePool['spec']>, 'template'> {
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: Partial<NodePool['spec']['template']['spec']>;
  };
}

/** A KarpenterMachinePool. */
export interface KarpenterMachinePool extends KubeObject {
  apiVersion: typeof KMPApiVersion;
  kind: typeof KMPKind;
  metadata: ObjectMeta;
  spec?: {
    nodePool?: KMPNodePoolSpec;
    ec2NodeClass?: KMPEC2NodeClassSpec;
    /** Provider IDs of the pool's nodes (`aws:///<zone>/<instance-id>`), copied by CAPI into the MachinePool. */
    providerIDList?: string[];
  };
  status?: {
    ready?: boolean;
    initialization?: { provisioned?: boolean };
    replicas?: number;
    conditions?: CAPICondition[];
    /** Kubernetes version the pool's NodePool currently rolls out (after the skew gate). */
    version?: string;
    observedGeneration?: number;
  };
}

// ---------------------------------------------------------------------------------------------------
// Schemas (CRD source of truth)
// ---------------------------------------------------------------------------------------------------

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const kmpEC2Rules: CelRule[] = [
  {
    rule: '!(has(self.role) && has(self.instanceProfile))',
    message: "specify at most one of ['role', 'instanceProfile'] (neither: the CAPA worker instance profile)",
  },
];

/** `spec.ec2NodeClass` (selector terms, role and instanceProfile optional; everything else as EC2NodeClass). */
export const KMPEC2NodeClassSchema = withRules(
  EC2NodeClassSpecFields.extend({
    amiSelectorTerms: EC2NodeClassSpecFields.shape.amiSelectorTerms
      .optional()
      .describe('How to find the AMIs; default: CAPA image lookup for the MachinePool version.'),
    securityGroupSelectorTerms: EC2NodeClassSpecFields.shape.securityGroupSelectorTerms
      .optional()
      .describe("How to find the security groups; default: the AWSCluster's node security group."),
    subnetSelectorTerms: EC2NodeClassSpecFields.shape.subnetSelectorTerms
      .optional()
      .describe("How to find the subnets; default: the AWSCluster's private subnets."),
  }),
  kmpEC2Rules,
  (v, ctx) => {
    if (isObj(v) && v.role !== undefined && v.instanceProfile !== undefined)
      ctx.fail(kmpEC2Rules[0]!.rule, kmpEC2Rules[0]!.message, { code: 'FieldValueForbidden' });
    refuseUnsupportedEC2NodeClassFields(v, ctx);
  },
);

/** `spec.nodePool.template.spec` (nodeClassRef optional: always the generated EC2NodeClass). */
export const KMPNodeClaimTemplateSpecSchema = withRules(
  NodeClaimTemplateSpecFields.extend({
    nodeClassRef: NodeClassReferenceSchema.optional().describe(
      'Ignored: the NodePool always points to the EC2NodeClass generated for this KarpenterMachinePool.',
    ),
  }),
  [],
  duplicateTaintCheck,
);

/** `spec.nodePool`. */
export const KMPNodePoolSchema = NodePoolSpecFields.extend({
  template: z
    .strictObject({
      metadata: z
        .strictObject({
          annotations: z.record(z.string(), z.string()).optional(),
          labels: templateLabelsSchema.optional(),
        })
        .optional(),
      spec: KMPNodeClaimTemplateSpecSchema,
    })
    .describe('Template of the NodeClaims; nodeClassRef is generated.'),
});

/** KarpenterMachinePool `spec`. */
export const KMPSpecSchema = z.strictObject({
  ec2NodeClass: KMPEC2NodeClassSchema.optional().describe(
    'EC2NodeClass settings; every field is honoured, missing selector terms and role come from CAPA.',
  ),
  nodePool: KMPNodePoolSchema.optional().describe('The NodePool spec (nodeClassRef is generated).'),
  providerIDList: z
    .array(z.string())
    .optional()
    .describe(
      'Provider IDs of the pool instances (CAPI copies them into MachinePool.spec.providerIDList); written by capenter.',
    ),
});

/** CAPI v1beta1-style condition schema (as the community CRD). */
const CAPIConditionSchema = z.strictObject({
  lastTransitionTime: z.string(),
  message: z.string().max(10240).optional(),
  reason: z.string().max(256).optional(),
  severity: z.string().max(32).optional(),
  status: z.string(),
  type: z.string().min(1).max(256),
});

/** KarpenterMachinePool `status`. */
export const KMPStatusSchema = z.strictObject({
  conditions: z.array(CAPIConditionSchema).optional().describe('CAPI v1beta1-style conditions.'),
  initialization: z
    .strictObject({
      provisioned: z
        .boolean()
        .optional()
        .describe('CAPI v1beta2 contract: the infrastructure is provisioned (same as ready).'),
    })
    .optional(),
  observedGeneration: z.int().optional(),
  ready: z
    .boolean()
    .optional()
    .describe('NodePool and EC2NodeClass exist and the bootstrap data is uploaded (CAPI v1beta1 contract).'),
  replicas: z.int().min(0).optional().describe('Number of NodeClaims of the pool that have a provider ID.'),
  version: z.string().optional().describe('Kubernetes version the NodePool rolls out (after the skew gate).'),
});

/** A whole KarpenterMachinePool (validation). */
export const KarpenterMachinePoolSchema = z.looseObject({
  apiVersion: z.literal(KMPApiVersion),
  kind: z.literal(KMPKind),
  metadata: ObjectMetaSchema,
  spec: KMPSpecSchema.optional(),
  status: KMPStatusSchema.optional(),
});

/** Kind info for CRD generation (crds.ts). */
export const KarpenterMachinePoolKind: KarpenterKindInfo = {
  group: InfrastructureGroup,
  version: 'v1alpha1',
  kind: KMPKind,
  plural: 'karpentermachinepools',
  singular: 'karpentermachinepool',
  shortNames: ['kmp'],
  schema: KarpenterMachinePoolSchema,
  spec: KMPSpecSchema,
  status: KMPStatusSchema,
  specRequired: false,
  description:
    'KarpenterMachinePool is a Cluster API MachinePool infrastructure provider backed by a Karpenter NodePool and EC2NodeClass in the workload cluster.',
  scope: 'Namespaced',
  categories: ['cluster-api'],
  labels: { 'cluster.x-k8s.io/v1beta1': 'v1alpha1', 'cluster.x-k8s.io/v1beta2': 'v1alpha1' },
  printerColumns: [
    { jsonPath: '.metadata.labels.cluster\\.x-k8s\\.io/cluster-name', name: 'Cluster', type: 'string' },
    { jsonPath: '.status.replicas', name: 'Replicas', type: 'integer' },
    { jsonPath: '.status.ready', name: 'Ready', type: 'boolean' },
    { jsonPath: '.status.version', name: 'Version', type: 'string' },
    { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
  ],
};

/** Parses a KarpenterMachinePool; returns the issues as `path: message` lines when invalid. */
export function validateKMP(obj: unknown): { ok: true } | { ok: false; issues: string[] } {
  const r = KarpenterMachinePoolSchema.safeParse(obj);
  if (r.success) return { ok: true };
  return {
    ok: false,
    issues: r.error.issues.map((i) => `${i.path.map(String).join('.') || '<root>'}: ${i.message}`),
  };
}

// ---------------------------------------------------------------------------------------------------
// Cluster API / CAPA objects (the fields capenter reads; v1beta2 with v1beta1 accepted)
// ---------------------------------------------------------------------------------------------------

/** A Cluster API object reference in either shape: v1beta2 `{apiGroup, kind, name}`, v1beta1 `{apiVersion, kind, name, namespace}`. */
export interface CAPIRef {
  apiGroup?: string;
  apiVersion?: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** `cluster.x-k8s.io` Cluster (v1beta2 or v1beta1). */
export interface CAPICluster extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    infrastructureRef?: CAPIRef;
    controlPlaneRef?: CAPIRef;
    topology?: { version?: string; classRef?: { name: string } };
    paused?: boolean;
  };
  status?: Record<string, unknown>;
}

/** `infrastructure.cluster.x-k8s.io/v1beta2` AWSCluster (fields capenter reads). */
export interface AWSCluster extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    region?: string;
    additionalTags?: Record<string, string>;
    s3Bucket?: {
      name?: string;
      nodesIAMInstanceProfiles?: string[];
      controlPlaneIAMInstanceProfile?: string;
    };
    network?: {
      vpc?: { id?: string };
      subnets?: Array<{
        id?: string;
        resourceID?: string;
        availabilityZone?: string;
        isPublic?: boolean;
        tags?: Record<string, string>;
      }>;
      securityGroupOverrides?: Record<string, string>;
    };
    imageLookupOrg?: string;
    imageLookupFormat?: string;
    imageLookupBaseOS?: string;
    /** The CAPA identity whose credentials act for this cluster; absent = the controller's own credentials. */
    identityRef?: AWSIdentityReference;
  };
  status?: {
    ready?: boolean;
    networkStatus?: { securityGroups?: Record<string, { id?: string; name?: string }> };
  };
}

/** `cluster.x-k8s.io` MachinePool (v1beta2 or v1beta1). */
export interface MachinePool extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    clusterName?: string;
    replicas?: number;
    providerIDList?: string[];
    template?: {
      metadata?: { labels?: Record<string, string> };
      spec?: {
        clusterName?: string;
        version?: string;
        bootstrap?: { dataSecretName?: string; configRef?: CAPIRef };
        infrastructureRef?: CAPIRef;
        taints?: Taint[];
      };
    };
  };
  status?: Record<string, unknown>;
}

/** Group of a CAPI reference in either shape. */
export function refGroup(ref: CAPIRef | undefined): string | undefined {
  if (!ref) return undefined;
  if (ref.apiGroup) return ref.apiGroup;
  if (ref.apiVersion) return ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0] : '';
  return undefined;
}

/** True when `ref` points to the KarpenterMachinePool `name`. */
export function refersToKMP(ref: CAPIRef | undefined, name: string): boolean {
  return ref?.kind === KMPKind && ref.name === name && refGroup(ref) === InfrastructureGroup;
}

// ---------------------------------------------------------------------------------------------------
// MachineDeployment / MachineSet / Machine (v1beta2) and CAPA AWSMachineTemplate: the fields the `clusterapi`
// cloud provider and its stand-ins read. Source: cluster-api v1.14 `api/core/v1beta2`, CAPA v2.11 `api/v1beta2`.
// ---------------------------------------------------------------------------------------------------

/** Machine label naming its MachineDeployment (set by the MachineSet controller). */
export const LabelDeploymentName = 'cluster.x-k8s.io/deployment-name';
/** Machine label naming its MachineSet. */
export const LabelSetName = 'cluster.x-k8s.io/set-name';
/** Annotation marking a Machine to be deleted first when its MachineSet scales down. */
export const AnnotationDeleteMachine = 'cluster.x-k8s.io/delete-machine';
/** Annotation pausing reconciliation of a CAPI object. */
export const AnnotationPaused = 'cluster.x-k8s.io/paused';
/** Label the Cluster topology controller puts on the MachineDeployments it owns. */
export const LabelTopologyOwned = 'topology.cluster.x-k8s.io/owned';
/** Label naming the MachineDeployment topology (`spec.topology.workers.machineDeployments[].name`). */
export const LabelTopologyDeploymentName = 'topology.cluster.x-k8s.io/deployment-name';
/** Label on a MachineDeployment that makes it a candidate for any ClusterAPINodeClass (upstream's). */
export const LabelKarpenterMember = 'node.cluster.x-k8s.io/karpenter-member';
/** MachineDeployment annotation: minimum replicas (cluster-autoscaler's). */
export const AnnotationMinSize = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size';
/** MachineDeployment annotation: maximum replicas (cluster-autoscaler's). */
export const AnnotationMaxSize = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size';
/** MachineDeployment annotation: price of one Machine in USD/hour (capenter's). */
export const AnnotationPricePerHour = 'capenter.io/price-per-hour';
/** CAPA's default base OS for image lookup (v2.11). */
export const CAPADefaultBaseOS = 'ubuntu-24.04';

/** A v1beta2 Machine taint (CAPI ≥ 1.12): `propagation` `Always` or `OnInitialization`. */
export interface CAPITaint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  propagation?: 'Always' | 'OnInitialization';
}

/** The Machine template of a MachineDeployment / MachineSet (`spec.template`). */
export interface MachineTemplateSpec {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    clusterName: string;
    version?: string;
    failureDomain?: string;
    bootstrap: { configRef?: CAPIRef; dataSecretName?: string };
    infrastructureRef: CAPIRef;
    taints?: CAPITaint[];
  };
}

/** `cluster.x-k8s.io/v1beta2` MachineDeployment. */
export interface MachineDeployment extends KubeObject {
  metadata: ObjectMeta;
  spec: {
    clusterName: string;
    replicas?: number;
    paused?: boolean;
    selector: { matchLabels?: Record<string, string> };
    template: MachineTemplateSpec;
    rollout?: { strategy?: { type?: string } };
  };
  status?: { replicas?: number; readyReplicas?: number; conditions?: CAPICondition[] };
}

/** `cluster.x-k8s.io/v1beta2` MachineSet. */
export interface MachineSet extends KubeObject {
  metadata: ObjectMeta;
  spec: {
    clusterName: string;
    replicas?: number;
    selector: { matchLabels?: Record<string, string> };
    template: MachineTemplateSpec;
  };
  status?: {
    replicas?: number;
    conditions?: CAPICondition[];
    deprecated?: { v1beta1?: { conditions?: CAPICondition[] } };
  };
}

/** `cluster.x-k8s.io/v1beta2` Machine. */
export interface Machine extends KubeObject {
  metadata: ObjectMeta;
  spec: MachineTemplateSpec['spec'] & { providerID?: string };
  status?: {
    nodeRef?: { name: string };
    /** `Pending`, `Provisioning`, `Provisioned`, `Running`, `Deleting`, `Failed`, ... */
    phase?: string;
    failureDomain?: string;
    /** v1beta1 terminal failure, kept under `deprecated` by v1beta2 (e.g. the infrastructure could not launch). */
    deprecated?: { v1beta1?: { failureReason?: string; failureMessage?: string } };
  };
}

/** `infrastructure.cluster.x-k8s.io/v1beta2` AWSMachineTemplate (the fields the clusterapi provider reads). */
export interface AWSMachineTemplate extends KubeObject {
  metadata: ObjectMeta;
  spec: {
    template: { spec: { instanceType?: string; spotMarketOptions?: Record<string, unknown> } };
  };
  /** CAPA publishes the instance type's capacity for scale-from-zero (`cpu`, `memory`, ...). */
  status?: { capacity?: Record<string, string> };
}

/** `AWSCluster.spec.identityRef` / `AWSClusterRoleIdentity.spec.sourceIdentityRef` (CAPA `AWSIdentityReference`). */
export interface AWSIdentityReference {
  /** `AWSClusterControllerIdentity`, `AWSClusterRoleIdentity` or `AWSClusterStaticIdentity`. */
  kind: string;
  name: string;
}

/**
 * `spec.allowedNamespaces` of a CAPA identity (CAPA `AllowedNamespaces`): absent = no namespace may use it; `{}` =
 * every namespace; else the namespaces of `list` plus those `selector` matches (an empty selector matches none).
 */
export interface AWSIdentityAllowedNamespaces {
  list?: string[] | null;
  selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
}

/** `infrastructure.cluster.x-k8s.io/v1beta2` AWSClusterControllerIdentity / Static / Role identity (cluster-scoped). */
export interface AWSClusterIdentity extends KubeObject {
  metadata: ObjectMeta;
  spec?: {
    allowedNamespaces?: AWSIdentityAllowedNamespaces;
    /** AWSClusterStaticIdentity: Secret (in the controller's namespace) with AccessKeyID, SecretAccessKey, SessionToken. */
    secretRef?: string;
    /** AWSClusterRoleIdentity: the role to assume. */
    roleARN?: string;
    sessionName?: string;
    /** Seconds (900–43200; default 900 with CAPA). */
    durationSeconds?: number;
    externalID?: string;
    inlinePolicy?: string;
    policyARNs?: string[];
    sourceIdentityRef?: AWSIdentityReference;
  };
}
