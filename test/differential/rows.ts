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
  /** `metadata.managedFields` as `{manager, operation, fieldsV1}` (times and apiVersion left out) */
  managed?: { manager: string; operation: string; fieldsV1: unknown }[];
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

const CM = '/api/v1/namespaces/{ns}/configmaps';
const PODS = '/api/v1/namespaces/{ns}/pods';

function pod(name: string, spec: O = {}): O {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }], ...spec },
  };
}

const node = (name: string, spec: O = {}): O => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name },
  spec,
});

/** Core (built-in) validation. */
const coreRows: Row[] = [
  {
    name: 'ConfigMap key with a slash',
    req: post(CM, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'badkey' },
      data: { 'bad/key': 'x' },
    }),
    expect: invalid([
      `data[bad/key]: Invalid value: "bad/key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
    ]),
  },
  {
    name: 'Node taint effect Sometimes',
    req: post(
      '/api/v1/nodes',
      node('taint-{id}', { taints: [{ key: 'a', value: 'b', effect: 'Sometimes' }] }),
    ),
    expect: invalid([
      // sic: the real server names the field metadata.taints
      'metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    ]),
  },
  {
    name: 'Pod requests above limits',
    req: post(
      PODS,
      pod('reqlim', {
        containers: [
          {
            name: 'c',
            image: 'registry.k8s.io/pause:3.10',
            resources: { requests: { cpu: '2' }, limits: { cpu: '1' } },
          },
        ],
      }),
    ),
    expect: invalid([
      'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
    ]),
  },
  {
    name: 'events.k8s.io/v1 Event without reportingController, reportingInstance, action',
    req: post('/apis/events.k8s.io/v1/namespaces/{ns}/events', {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'ev' },
      eventTime: '2026-01-01T00:00:00.000000Z',
      type: 'Normal',
      reason: 'Test',
      regarding: { kind: 'Pod', name: 'p', namespace: '{ns}' },
    }),
    expect: invalid([
      'reportingController: Required value',
      'reportingController: Invalid value: "": name part must be non-empty',
      `reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
      'reportingInstance: Required value',
      'action: Required value',
    ]),
  },
  {
    name: 'Lease with leaseDurationSeconds 0',
    req: post('/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l0' },
      spec: { holderIdentity: 'a', leaseDurationSeconds: 0 },
    }),
    expect: invalid(['spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0']),
  },
  {
    name: 'list with an unknown field selector',
    req: { method: 'GET', path: `${PODS}?fieldSelector=spec.bogus%3Dx` },
    expect: { code: 400, reason: 'BadRequest', message: 'field label not supported: spec.bogus' },
  },
  {
    name: 'unknown field with fieldValidation=Warn',
    req: post(
      CM,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'warn' }, data: { a: 'b' }, bogus: 1 },
      '?fieldValidation=Warn',
    ),
    expect: { code: 201, warning: /^299 - "unknown field \\"bogus\\""$/ },
  },
  {
    name: 'unknown field with fieldValidation=Strict',
    req: post(
      CM,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'strict' }, data: { a: 'b' }, bogus: 1 },
      '?fieldValidation=Strict',
    ),
    expect: {
      code: 400,
      reason: 'BadRequest',
      message:
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"',
    },
  },
];

/** Differences kept on purpose (docs/apiserver.md, "Known differences"). */
const knownRows: Row[] = [
  {
    name: 'unknown field nested inside a built-in kind with fieldValidation=Strict',
    req: post(
      PODS,
      pod('nested', {
        containers: [
          {
            name: 'c',
            image: 'registry.k8s.io/pause:3.10',
            securityContext: { allowPrivilegedEscalation: false },
          },
        ],
      }),
      '?fieldValidation=Strict',
    ),
    expect: {
      code: 400,
      reason: 'BadRequest',
      message:
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].securityContext.allowPrivilegedEscalation"',
    },
    known: {
      why: 'built-in kinds have no schemas in the embedded server: only unknown top-level fields are found',
      embedded: { code: 201 },
    },
  },
  {
    name: 'deprecated node selector label on a pod',
    req: post(PODS, pod('deprecated', { nodeSelector: { 'beta.kubernetes.io/os': 'linux' } })),
    expect: { code: 201, warning: /spec.nodeSelector\[beta.kubernetes.io\/os\]: deprecated since v1.14/ },
    known: { why: 'deprecation warnings of built-in fields are not sent', embedded: { code: 201 } },
  },
];

/** Graceful deletion of bound pods, namespaces that terminate. */
const deletionRows: Row[] = [
  {
    name: 'DELETE of a bound pod sets deletionTimestamp and the grace period',
    setup: [post('/api/v1/nodes', node('gd-{id}')), post(PODS, pod('bound', { nodeName: 'gd-{id}' }))],
    req: { method: 'DELETE', path: `${PODS}/bound` },
    expect: {
      code: 200,
      fields: { 'metadata.deletionTimestamp': PRESENT, 'metadata.deletionGracePeriodSeconds': 30 },
    },
  },
  {
    name: 'eviction of a bound pod leaves it terminating',
    setup: [
      post('/api/v1/nodes', node('ev-{id}')),
      post(PODS, pod('evicted', { nodeName: 'ev-{id}' })),
      post(`${PODS}/evicted/eviction`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'evicted', namespace: '{ns}' },
      }),
    ],
    req: { method: 'GET', path: `${PODS}/evicted` },
    expect: {
      code: 200,
      fields: { 'metadata.deletionTimestamp': PRESENT, 'metadata.deletionGracePeriodSeconds': 30 },
    },
  },
  {
    name: 'DELETE of an unbound pod removes it at once',
    setup: [post(PODS, pod('unbound'))],
    req: { method: 'DELETE', path: `${PODS}/unbound` },
    expect: { code: 200, fields: { 'metadata.deletionTimestamp': PRESENT } },
  },
  {
    name: 'DELETE of a namespace: Terminating with finalizer kubernetes',
    setup: [
      post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: '{ns}-t' } }),
      post('/api/v1/namespaces/{ns}-t/configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'held', finalizers: ['example.com/hold'] },
      }),
    ],
    req: { method: 'DELETE', path: '/api/v1/namespaces/{ns}-t' },
    expect: {
      code: 200,
      fields: {
        'status.phase': 'Terminating',
        'spec.finalizers': ['kubernetes'],
        'metadata.deletionTimestamp': PRESENT,
      },
    },
  },
  {
    name: 'create inside a terminating namespace',
    req: post('/api/v1/namespaces/{ns}-t/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'late' },
    }),
    expect: {
      code: 403,
      reason: 'Forbidden',
      message:
        'configmaps "late" is forbidden: unable to create new content in namespace {ns}-t because it is being terminated',
    },
  },
];

/** Discovery and OpenAPI. */
const discoveryRows: Row[] = [
  {
    name: 'OpenAPI v3 document of a group/version the server does not serve',
    req: { method: 'GET', path: '/openapi/v3/apis/nosuch.example.com/v1' },
    expect: { code: 404, text: /^$/ },
  },
  {
    name: 'discovery of a group the server does not serve',
    req: { method: 'GET', path: '/apis/nosuch.example.com/v1' },
    expect: { code: 404, text: /^404 page not found\n$/ },
  },
  {
    name: 'a resource the served core group does not have',
    req: { method: 'GET', path: '/api/v1/nosuchthings' },
    expect: { code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' },
  },
];

/** Authentication. */
const authRows: Row[] = [
  {
    name: 'a wrong bearer token',
    req: { method: 'GET', path: '/api/v1/namespaces', auth: 'bad-token' },
    expect: { code: 401, reason: 'Unauthorized', message: 'Unauthorized' },
  },
  {
    name: 'no credentials',
    req: { method: 'GET', path: '/api/v1/namespaces', auth: 'none' },
    expect: {
      code: 403,
      reason: 'Forbidden',
      message:
        'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope',
    },
  },
  {
    name: 'no credentials on /version',
    req: { method: 'GET', path: '/version', auth: 'none' },
    expect: { code: 200, fields: { major: '1' } },
  },
];

const applyCm = (name: string, manager: string, data: O, labels?: O, force = false): Req => ({
  method: 'PATCH',
  path: `${CM}/${name}?fieldManager=${manager}${force ? '&force=true' : ''}`,
  contentType: 'application/apply-patch+yaml',
  body: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(labels ? { labels } : {}) },
    data,
  },
});

/** Server-side apply: field managers, conflicts, force, fields dropped from an apply. */
const applyRows: Row[] = [
  {
    name: 'create records an Update entry for the writer',
    req: post(CM, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'mf', labels: { a: 'b' } },
      data: { k: 'v' },
    }),
    expect: {
      code: 201,
      managed: [
        {
          manager: 'unknown',
          operation: 'Update',
          fieldsV1: {
            'f:data': { '.': {}, 'f:k': {} },
            'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } },
          },
        },
      ],
    },
    known: {
      why: 'writes naming no fieldManager are recorded only on objects already under field management',
      embedded: { code: 201, managed: [] },
    },
  },
  {
    name: 'an update without fieldManager on an applied object is recorded under the User-Agent',
    setup: [applyCm('ua', 'a', { x: '1' })],
    req: {
      method: 'PATCH',
      path: `${CM}/ua`,
      contentType: 'application/merge-patch+json',
      body: { data: { z: '1' } },
    },
    expect: {
      code: 200,
      managed: [
        { manager: 'a', operation: 'Apply', fieldsV1: { 'f:data': { 'f:x': {} } } },
        { manager: 'unknown', operation: 'Update', fieldsV1: { 'f:data': { 'f:z': {} } } },
      ],
    },
  },
  {
    name: 'apply creates with an Apply entry',
    req: applyCm('ssa', 'a', { x: '1', y: '2' }, { l: 'a' }),
    expect: {
      code: 201,
      managed: [
        {
          manager: 'a',
          operation: 'Apply',
          fieldsV1: { 'f:data': { 'f:x': {}, 'f:y': {} }, 'f:metadata': { 'f:labels': { 'f:l': {} } } },
        },
      ],
    },
  },
  {
    name: 'a second manager applying owned fields conflicts',
    req: applyCm('ssa', 'b', { x: '9' }, { l: 'b' }),
    expect: {
      code: 409,
      reason: 'Conflict',
      message: 'Apply failed with 2 conflicts: conflicts with "a":\n- .data.x\n- .metadata.labels.l',
      causes: ['.data.x: conflict with "a"', '.metadata.labels.l: conflict with "a"'],
    },
  },
  {
    name: 'force takes the fields over',
    req: applyCm('ssa', 'b', { x: '9' }, { l: 'b' }, true),
    expect: {
      code: 200,
      fields: { 'data.x': '9', 'data.y': '2', 'metadata.labels.l': 'b' },
      managed: [
        { manager: 'a', operation: 'Apply', fieldsV1: { 'f:data': { 'f:y': {} } } },
        {
          manager: 'b',
          operation: 'Apply',
          fieldsV1: { 'f:data': { 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:l': {} } } },
        },
      ],
    },
  },
  {
    name: 'applying the same value another manager owns shares it',
    req: applyCm('ssa', 'c', { x: '9' }),
    expect: {
      code: 200,
      // nothing changed, so c's new entry has no time and sorts first
      fields: { 'metadata.managedFields': PRESENT },
      managed: [
        { manager: 'c', operation: 'Apply', fieldsV1: { 'f:data': { 'f:x': {} } } },
        { manager: 'a', operation: 'Apply', fieldsV1: { 'f:data': { 'f:y': {} } } },
        {
          manager: 'b',
          operation: 'Apply',
          fieldsV1: { 'f:data': { 'f:x': {} }, 'f:metadata': { 'f:labels': { 'f:l': {} } } },
        },
      ],
    },
  },
  {
    name: 'a field dropped from the next apply is removed',
    setup: [applyCm('drop', 'a', { x: '1', y: '2' })],
    req: applyCm('drop', 'a', { y: '2' }),
    expect: {
      code: 200,
      fields: { data: { y: '2' } },
      managed: [{ manager: 'a', operation: 'Apply', fieldsV1: { 'f:data': { 'f:y': {} } } }],
    },
  },
  {
    name: 'an update takes a field from its applier',
    setup: [applyCm('upd', 'a', { x: '1', y: '2' })],
    req: {
      method: 'PATCH',
      path: `${CM}/upd?fieldManager=editor`,
      contentType: 'application/merge-patch+json',
      body: { data: { y: '3' } },
    },
    expect: {
      code: 200,
      managed: [
        { manager: 'a', operation: 'Apply', fieldsV1: { 'f:data': { 'f:x': {} } } },
        { manager: 'editor', operation: 'Update', fieldsV1: { 'f:data': { 'f:y': {} } } },
      ],
    },
  },
];

export const ROWS: Row[] = [
  ...celRows,
  ...coreRows,
  ...deletionRows,
  ...discoveryRows,
  ...authRows,
  ...applyRows,
  ...knownRows,
];
