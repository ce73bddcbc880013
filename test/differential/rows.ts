/**
 * The differential table: each row is one request (after optional setup requests), the answer a real
 * kube-apiserver v1.34 gives (status code, reason, causes, the fields that matter), and — for a
 * difference the embedded server keeps on purpose — `known`: why, and the embedded server's own answer.
 * `{ns}` in paths and bodies is the run's namespace, `{id}` a per-run suffix for cluster-scoped names.
 */
import type { Req } from './targets.ts';

/** What a response must show. */
export interface Expect {
  code: number;
  reason?: string;
  /** `field: message` of every cause, in order (422) */
  causes?: string[];
  /** a substring of the Status message */
  message?: string;
  /** dotted paths in the response body → the value there (`PRESENT` / `ABSENT` for presence only) */
  fields?: Record<string, unknown>;
  /** the Warning header matches */
  warning?: RegExp;
  /** the body text matches (non-JSON answers) */
  text?: RegExp;
}

/** One row of the table. */
export interface Row {
  name: string;
  /** setup requests, each must succeed (2xx, or 409 AlreadyExists) */
  setup?: Req[];
  req: Req;
  expect: Expect;
  /** a known difference: why it is kept, and what the embedded server answers instead */
  known?: { why: string; embedded: Expect };
}

export const PRESENT = Symbol('present');
export const ABSENT = Symbol('absent');

type O = Record<string, unknown>;

function merge(a: unknown, b: unknown): unknown {
  if (b === undefined) return a;
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const out: O = { ...(a as O) };
    for (const [k, v] of Object.entries(b as O)) out[k] = merge(out[k], v);
    return out;
  }
  return b;
}

/** A valid NodePool `np-<suffix>-{id}` with `spec` merged in. */
function nodePool(suffix: string, spec: O = {}): O {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: `np-${suffix}-{id}` },
    spec: merge(
      {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
            requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          },
        },
        disruption: { consolidateAfter: '30s' },
      },
      spec,
    ),
  };
}

/** A valid EC2NodeClass `nc-<suffix>-{id}` with `spec` merged in (arrays replace). */
function nodeClass(suffix: string, spec: O = {}): O {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: `nc-${suffix}-{id}` },
    spec: merge(
      {
        role: 'KarpenterNodeRole',
        amiSelectorTerms: [{ alias: 'al2023@latest' }],
        subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c' } }],
        securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'c' } }],
      },
      spec,
    ),
  };
}

function withoutConsolidateAfter(np: O): O {
  return { ...np, spec: { ...(np.spec as O), disruption: { budgets: [{ nodes: '10%' }] } } };
}

const NP = '/apis/karpenter.sh/v1/nodepools';
const NC = '/apis/karpenter.k8s.aws/v1/ec2nodeclasses';
const post = (path: string, body: unknown, query = ''): Req => ({
  method: 'POST',
  path: `${path}${query}`,
  body,
});
const invalid = (causes: string[]): Expect => ({ code: 422, reason: 'Invalid', causes });

/** CRD validation rules (CEL). */
const celRows: Row[] = [
  {
    name: 'NodePool with an empty nodeClassRef.group',
    req: post(NP, nodePool('g', { template: { spec: { nodeClassRef: { group: '' } } } })),
    expect: invalid([
      'spec.template.spec.nodeClassRef.group: Invalid value: "string": group may not be empty',
    ]),
  },
  {
    name: 'NodePool requirement In with no values',
    req: post(
      NP,
      nodePool('in', { template: { spec: { requirements: [{ key: 'a', operator: 'In', values: [] }] } } }),
    ),
    expect: invalid([
      `spec.template.spec.requirements: Invalid value: "array": requirements with operator 'In' must have a value defined`,
    ]),
  },
  {
    name: 'NodePool template label in the karpenter.sh domain',
    req: post(NP, nodePool('lbl', { template: { metadata: { labels: { 'karpenter.sh/foo': 'x' } } } })),
    expect: invalid([
      'spec.template.metadata.labels: Invalid value: "object": label domain "karpenter.sh" is restricted',
    ]),
  },
  {
    name: 'NodePool budget schedule without duration',
    req: post(NP, nodePool('bud', { disruption: { budgets: [{ nodes: '1', schedule: '@daily' }] } })),
    expect: invalid([
      `spec.disruption.budgets: Invalid value: "array": 'schedule' must be set with 'duration'`,
    ]),
  },
  {
    name: 'NodePool with replicas and weight',
    req: post(NP, nodePool('rw', { replicas: 1, weight: 5 })),
    expect: invalid([`spec: Invalid value: "object": 'weight' is not supported on static NodePools`]),
  },
  {
    name: 'NodePool requirement Gt "-1" (schema pattern and rule both reported)',
    req: post(
      NP,
      nodePool('gt', {
        template: { spec: { requirements: [{ key: 'a', operator: 'Gt', values: ['-1'] }] } },
      }),
    ),
    expect: invalid([
      `spec.template.spec.requirements[0].values[0]: Invalid value: "-1": spec.template.spec.requirements[0].values[0] in body should match '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'`,
      `spec.template.spec.requirements: Invalid value: "array": requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value`,
    ]),
  },
  {
    name: 'NodePool without consolidateAfter (a required field missing: rules not checked)',
    req: post(NP, withoutConsolidateAfter(nodePool('req', { replicas: 1, weight: 5 }))),
    expect: invalid([
      'spec.disruption.consolidateAfter: Required value',
      '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    ]),
  },
  {
    name: 'NodePool rules through dryRun=All',
    req: post(NP, nodePool('dry', { replicas: 1, weight: 5 }), '?dryRun=All'),
    expect: invalid([`spec: Invalid value: "object": 'weight' is not supported on static NodePools`]),
  },
  {
    name: 'NodePool nodeClassRef.group is immutable (transition rule)',
    setup: [post(NP, nodePool('imm'))],
    req: {
      method: 'PATCH',
      path: `${NP}/np-imm-{id}`,
      contentType: 'application/merge-patch+json',
      body: { spec: { template: { spec: { nodeClassRef: { group: 'other.example.com', kind: 'Other' } } } } },
    },
    expect: invalid([
      'spec.template.spec.nodeClassRef: Invalid value: "object": nodeClassRef.group is immutable',
      'spec.template.spec.nodeClassRef: Invalid value: "object": nodeClassRef.kind is immutable',
    ]),
  },
  {
    name: 'valid NodePool is created',
    req: post(NP, nodePool('ok')),
    expect: {
      code: 201,
      fields: { 'metadata.name': 'np-ok-{id}', 'spec.template.spec.nodeClassRef.group': 'karpenter.kwok.sh' },
    },
  },
  {
    name: 'EC2NodeClass alias ubuntu@latest',
    req: post(NC, nodeClass('ubu', { amiSelectorTerms: [{ alias: 'ubuntu@latest' }] })),
    expect: invalid([
      `spec.amiSelectorTerms[0].alias: Invalid value: "string": family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'`,
    ]),
  },
  {
    name: 'EC2NodeClass empty subnet selector term',
    req: post(NC, nodeClass('sub', { subnetSelectorTerms: [{}] })),
    expect: invalid([
      `spec.subnetSelectorTerms: Invalid value: "array": expected at least one, got none, ['tags', 'id']`,
    ]),
  },
  {
    name: 'EC2NodeClass subnet term with id and tags',
    req: post(NC, nodeClass('idt', { subnetSelectorTerms: [{ id: 'subnet-1', tags: { a: 'b' } }] })),
    expect: invalid([
      `spec.subnetSelectorTerms: Invalid value: "array": 'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term`,
    ]),
  },
  {
    name: 'EC2NodeClass subnet selector term with an empty tag value',
    req: post(NC, nodeClass('tag', { subnetSelectorTerms: [{ tags: { team: '' } }] })),
    expect: invalid([
      `spec.subnetSelectorTerms[0].tags: Invalid value: "object": empty tag keys or values aren't supported`,
    ]),
  },
  {
    name: 'EC2NodeClass kubelet imageGC high below low',
    req: post(
      NC,
      nodeClass('gc', { kubelet: { imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60 } }),
    ),
    expect: invalid([
      'spec.kubelet: Invalid value: "object": imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent',
    ]),
  },
  {
    name: 'EC2NodeClass gpu in kubeReserved',
    req: post(NC, nodeClass('gpu', { kubelet: { kubeReserved: { gpu: '1' } } })),
    expect: invalid([
      `spec.kubelet.kubeReserved: Invalid value: "object": valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']`,
    ]),
  },
];

export const ROWS: Row[] = [...celRows];
