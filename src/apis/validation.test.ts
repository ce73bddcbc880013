import { describe, expect, it } from 'vitest';
import type { KubeObject } from './core.ts';
import { exampleEC2NodeClass, exampleNodePool } from './examples.ts';
import { validateObject } from './validation.ts';

// biome-ignore lint/suspicious/noExplicitAny: test fixtures are mutated freely
type AnyObj = Record<string, any>;

function nodePool(): AnyObj {
  return exampleNodePool('general');
}

function ec2(spec: AnyObj = {}): AnyObj {
  return exampleEC2NodeClass(spec);
}

function messages(o: AnyObj): string[] {
  const r = validateObject(o as KubeObject);
  return r.ok ? [] : r.issues.map((i) => i.message);
}

/**
 * Upstream v1.14.1 `IsRestrictedLabel`'s message, with capenter's well-known labels (the core's, the aws provider's
 * incl. placement groups, the clusterapi provider's) and restricted domains (core `karpenter.sh`, aws
 * `karpenter.k8s.aws`), both sorted and printed as Go's `%v` of a slice.
 */
function upstreamRestricted(key: string): string {
  const wellKnown = [
    ...['instance-cpu', 'instance-gpu-count', 'instance-gpu-type', 'instance-memory'].map(
      (k) => `karpenter.cluster.x-k8s.io/${k}`,
    ),
    ...[
      'capacity-reservation-id',
      'capacity-reservation-interruptible',
      'capacity-reservation-type',
      'instance-accelerator-count',
      'instance-accelerator-manufacturer',
      'instance-accelerator-name',
      'instance-capability-flex',
      'instance-category',
      'instance-cpu',
      'instance-cpu-manufacturer',
      'instance-cpu-sustained-clock-speed-mhz',
      'instance-ebs-bandwidth',
      'instance-encryption-in-transit-supported',
      'instance-family',
      'instance-generation',
      'instance-gpu-count',
      'instance-gpu-manufacturer',
      'instance-gpu-memory',
      'instance-gpu-name',
      'instance-hypervisor',
      'instance-local-nvme',
      'instance-memory',
      'instance-network-bandwidth',
      'instance-size',
      'instance-tenancy',
      'placement-group-id',
      'placement-group-partition',
    ].map((k) => `karpenter.k8s.aws/${k}`),
    'karpenter.sh/capacity-type',
    'karpenter.sh/nodepool',
    'kubernetes.io/arch',
    'kubernetes.io/os',
    'node.kubernetes.io/instance-type',
    'node.kubernetes.io/windows-build',
    'topology.k8s.aws/zone-id',
    'topology.kubernetes.io/region',
    'topology.kubernetes.io/zone',
  ];
  return (
    `using label ${key} is not allowed as it might interfere with the internal provisioning logic; specify a well ` +
    `known label: [${wellKnown.join(' ')}], or a custom label that does not use a restricted domain: ` +
    '[karpenter.k8s.aws karpenter.sh]'
  );
}

function withNodePool(edit: (o: AnyObj) => void): AnyObj {
  const o = nodePool();
  edit(o);
  return o;
}

describe('NodePool validation', () => {
  it('accepts a minimal NodePool and returns it defaulted', () => {
    const r = validateObject(nodePool() as KubeObject);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect((r.object as AnyObj).spec.disruption).toEqual({
        budgets: [{ nodes: '10%' }],
        consolidateAfter: '0s',
        consolidationPolicy: 'WhenEmptyOrUnderutilized',
      });
    }
  });

  it('rejects an unsupported operator', () => {
    const r = validateObject(
      withNodePool((o) => {
        o.spec.template.spec.requirements[0].operator = 'Foo';
      }) as KubeObject,
    );
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.issues).toEqual([
        {
          code: 'FieldValueNotSupported',
          kind: 'NodePool',
          name: 'general',
          fieldPath: 'spec.template.spec.requirements[0].operator',
          path: ['spec', 'template', 'spec', 'requirements', 0, 'operator'],
          rule: 'enum',
          message:
            'NodePool "general": spec.template.spec.requirements[0].operator: Unsupported value "Foo": must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte',
        },
      ]);
    }
  });

  it('rejects kubernetes.io/hostname as a requirement key with the CEL rule', () => {
    const r = validateObject(
      withNodePool((o) => {
        o.spec.template.spec.requirements[0].key = 'kubernetes.io/hostname';
      }) as KubeObject,
    );
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.issues.map((i) => [i.message, i.rule])).toEqual([
        [
          'NodePool "general": spec.template.spec.requirements[0].key: Invalid value "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted',
          'self != "kubernetes.io/hostname"',
        ],
      ]);
    }
  });

  it('restricts label domains but allows well-known labels, exceptions and normalized aliases', () => {
    const keyMsgs = (key: string) =>
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0].key = key;
        }),
      ).filter((m) => !m.includes('.values: ')); // the key's values (amd64) are checked by their own test
    expect(keyMsgs('karpenter.sh/foo')).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].key: Invalid value "karpenter.sh/foo": label domain "karpenter.sh" is restricted',
    ]);
    expect(keyMsgs('karpenter.sh/nodepool')).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].key: Invalid value "karpenter.sh/nodepool": label "karpenter.sh/nodepool" is restricted',
    ]);
    const awsFix =
      'use a label the aws provider sets (karpenter.k8s.aws/{capacity-reservation-id,capacity-reservation-interruptible,' +
      'capacity-reservation-type,instance-accelerator-count,instance-accelerator-manufacturer,' +
      'instance-accelerator-name,instance-capability-flex,instance-category,instance-cpu,instance-cpu-manufacturer,' +
      'instance-cpu-sustained-clock-speed-mhz,instance-ebs-bandwidth,instance-encryption-in-transit-supported,' +
      'instance-family,instance-generation,instance-gpu-count,instance-gpu-manufacturer,instance-gpu-memory,' +
      'instance-gpu-name,instance-hypervisor,instance-local-nvme,instance-memory,instance-network-bandwidth,' +
      'instance-size,instance-tenancy,placement-group-id,placement-group-partition}, topology.k8s.aws/zone-id) or a custom label outside karpenter.k8s.aws';
    expect(keyMsgs('karpenter.k8s.aws/instance-familly')).toEqual([
      `NodePool "general": spec.template.spec.requirements[0].key: Invalid value "karpenter.k8s.aws/instance-familly": label domain "karpenter.k8s.aws" is restricted: "karpenter.k8s.aws/instance-familly" is not a label the aws provider sets; ${awsFix}`,
    ]);
    expect(keyMsgs('karpenter.k8s.aws/instance-foo')).toEqual([
      `NodePool "general": spec.template.spec.requirements[0].key: Invalid value "karpenter.k8s.aws/instance-foo": label domain "karpenter.k8s.aws" is restricted: "karpenter.k8s.aws/instance-foo" is not a label the aws provider sets; ${awsFix}`,
    ]);
    // well-known upstream (v1.14.1 placement groups) and set by capenter's aws provider (issue 28 item 2)
    expect(keyMsgs('karpenter.k8s.aws/placement-group-id')).toEqual([]);
    expect(keyMsgs('karpenter.k8s.aws/placement-group-partition')).toEqual([]);
    // upstream v1.14.1 IsRestrictedLabel (runtime, after the CEL rules): `karpenter.k8s.aws/ec2nodeclass` passes the
    // CRD's allow-list but is not a well-known label in a restricted domain
    expect(keyMsgs('karpenter.k8s.aws/ec2nodeclass')).toEqual([
      `NodePool "general": spec.template.spec.requirements[0].key: Invalid value "karpenter.k8s.aws/ec2nodeclass": ${upstreamRestricted('karpenter.k8s.aws/ec2nodeclass')}`,
    ]);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.metadata = { labels: { 'karpenter.k8s.aws/ec2nodeclass': 'default' } };
        }),
      ),
    ).toEqual([
      `NodePool "general": spec.template.metadata.labels[karpenter.k8s.aws/ec2nodeclass]: Invalid value "karpenter.k8s.aws/ec2nodeclass": ${upstreamRestricted('karpenter.k8s.aws/ec2nodeclass')}`,
    ]);
    // a subdomain of a restricted domain: the CEL rule (endsWith) refuses it first
    expect(keyMsgs('sub.karpenter.sh/x')).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].key: Invalid value "sub.karpenter.sh/x": label domain "karpenter.sh" is restricted',
    ]);
    // upstream v1.14 (kubernetes-sigs/karpenter#2586) restricts neither kubernetes.io nor k8s.io
    for (const ok of [
      'karpenter.sh/capacity-type',
      'topology.kubernetes.io/zone',
      'node.kubernetes.io/instance-type',
      'node.kubernetes.io/anything',
      'node-restriction.kubernetes.io/foo',
      'kubernetes.io/foo',
      'subdomain.kubernetes.io/test',
      'k8s.io/test',
      'example.k8s.io/x',
      'kops.k8s.io/instancegroup',
      'beta.kubernetes.io/arch',
      'karpenter.k8s.aws/instance-family',
      'topology.k8s.aws/zone-id',
      'karpenter.cluster.x-k8s.io/instance-cpu',
      'karpenter.cluster.x-k8s.io/anything',
      'example.com/team',
      'team',
    ]) {
      expect(keyMsgs(ok), ok).toEqual([]);
    }
  });

  it('accepts kubernetes.io and k8s.io template labels, as upstream v1.14.1', () => {
    const labels = {
      'kubernetes.io/foo': 'a',
      'k8s.io/test': 'b',
      'example.k8s.io/x': 'c',
      'node-restriction.kubernetes.io/foo': 'd',
      'subdomain.kubernetes.io/key': 'e',
      'node.kubernetes.io/role': 'f',
    };
    expect(messages(withNodePool((o) => (o.spec.template.metadata = { labels })))).toEqual([]);
  });

  it('NodeClaim requirements get the CEL rules only (upstream runs no RuntimeValidate for NodeClaims)', () => {
    const claim = (key: string) =>
      messages({
        apiVersion: 'karpenter.sh/v1',
        kind: 'NodeClaim',
        metadata: { name: 'c' },
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          requirements: [{ key, operator: 'In', values: ['x'] }],
        },
      });
    expect(claim('karpenter.k8s.aws/ec2nodeclass')).toEqual([]);
    expect(claim('kubernetes.io/foo')).toEqual([]);
    expect(claim('karpenter.sh/foo')).toEqual([
      'NodeClaim "c": spec.requirements[0].key: Invalid value "karpenter.sh/foo": label domain "karpenter.sh" is restricted',
    ]);
  });

  it('karpenter.k8s.aws/instance-tenancy In needs dedicated or default (upstream WellKnownValuesForRequirements)', () => {
    const tenancy = (values: string[], operator = 'In') =>
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0] = {
            key: 'karpenter.k8s.aws/instance-tenancy',
            operator,
            values,
          };
        }),
      );
    expect(tenancy(['host'])).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].values: Invalid value ["host"]: no valid values found in [host] for karpenter.k8s.aws/instance-tenancy, expected one of: [dedicated default]; use dedicated or default',
    ]);
    expect(tenancy(['dedicated'])).toEqual([]);
    expect(tenancy(['default', 'dedicated'])).toEqual([]);
    // upstream logs and drops the unknown value when a known one is there
    expect(tenancy(['host', 'dedicated'])).toEqual([]);
    expect(tenancy(['host'], 'NotIn')).toEqual([]);
  });

  it('karpenter.sh/capacity-type In needs on-demand, spot or reserved (upstream v1.14.1 validateWellKnownValues)', () => {
    const capacityType = (values: string[], operator = 'In', minValues?: number) =>
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[1] = {
            key: 'karpenter.sh/capacity-type',
            operator,
            values,
            ...(minValues !== undefined ? { minValues } : {}),
          };
        }),
      );
    expect(capacityType(['spott'])).toEqual([
      'NodePool "general": spec.template.spec.requirements[1].values: Invalid value ["spott"]: no valid values found in [spott] for karpenter.sh/capacity-type, expected one of: [on-demand reserved spot]; use on-demand or reserved or spot',
    ]);
    expect(capacityType(['spot'])).toEqual([]);
    expect(capacityType(['on-demand', 'reserved', 'spot'])).toEqual([]);
    // upstream logs and drops the unknown value when a known one is there…
    expect(capacityType(['spott', 'spot'])).toEqual([]);
    // …unless fewer known values than minValues remain
    expect(capacityType(['spott', 'spot'], 'In', 2)).toEqual([
      'NodePool "general": spec.template.spec.requirements[1].values: Invalid value ["spott","spot"]: not enough valid values found in [spott spot] for karpenter.sh/capacity-type, expected at least 2 valid values from: [on-demand reserved spot], got: 1; list at least 2 of them or lower minValues',
    ]);
    expect(capacityType(['spott'], 'NotIn')).toEqual([]);
  });

  it('rejects minValues 0 and 51', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0].minValues = 0;
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].minValues: Invalid value 0: must be greater than or equal to 1',
    ]);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0].minValues = 51;
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].minValues: Invalid value 51: must be less than or equal to 50',
    ]);
  });

  it('requires at least minValues values for In', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0].minValues = 2;
        }),
      ),
    ).toEqual([
      "NodePool \"general\": spec.template.spec.requirements[0].minValues: Invalid value 2: requirements with 'minValues' must have at least that many values specified in the 'values' field",
    ]);
  });

  it('rejects a budget schedule without duration', () => {
    const r = validateObject(
      withNodePool((o) => {
        o.spec.disruption = {
          consolidateAfter: '0s',
          budgets: [{ nodes: '0', schedule: '0 9 * * mon-fri' }],
        };
      }) as KubeObject,
    );
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.issues.map((i) => [i.message, i.rule, i.code])).toEqual([
        [
          "NodePool \"general\": spec.disruption.budgets[0].duration: Required value: 'schedule' must be set with 'duration'",
          'self.all(x, has(x.schedule) == has(x.duration))',
          'FieldValueRequired',
        ],
      ]);
    }
  });

  it('checks budget nodes, duration and cron syntax', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.disruption = {
            consolidateAfter: '0s',
            budgets: [{ nodes: '110%' }, { nodes: '1', schedule: '61 * * * *', duration: '10s' }],
          };
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.disruption.budgets[0].nodes: Invalid value "110%": must be a node count like "5" or a percentage from "0%" to "100%"',
      'NodePool "general": spec.disruption.budgets[1].duration: Invalid value "10s": must be a duration in hours and minutes like "8h", "30m" or "1h30m"',
      'NodePool "general": spec.disruption.budgets[1].schedule: Invalid value "61 * * * *": invalid cron schedule: Constraint error, got value 61 expected range 0-59',
    ]);
  });

  it('rejects a bad taint effect and duplicate taints', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoScheduled' }];
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.taints[0].effect: Unsupported value "NoScheduled": must be one of NoSchedule, PreferNoSchedule, NoExecute',
    ]);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.taints = [{ key: 'a', effect: 'NoSchedule' }];
          o.spec.template.spec.startupTaints = [{ key: 'a', effect: 'NoSchedule' }];
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.startupTaints[0]: Duplicate value: duplicate taint Key/Effect pair a=NoSchedule',
    ]);
  });

  it('rejects weight 0 and 101', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.weight = 0;
        }),
      ),
    ).toEqual(['NodePool "general": spec.weight: Invalid value 0: must be greater than or equal to 1']);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.weight = 101;
        }),
      ),
    ).toEqual(['NodePool "general": spec.weight: Invalid value 101: must be less than or equal to 100']);
  });

  it('rejects In with no values and checks the other operators value counts', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements[0].values = [];
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].values: Required value: requirements with operator \'In\' must have a value defined',
    ]);
    expect(
      messages(
        withNodePool((o) => {
          delete o.spec.template.spec.requirements[0].values;
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.requirements[0].values: Required value: requirements with operator \'In\' must have a value defined',
    ]);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.requirements = [
            { key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['4', '8'] },
            { key: 'karpenter.k8s.aws/instance-memory', operator: 'Lte', values: ['-1'] },
            { key: 'karpenter.k8s.aws/instance-generation', operator: 'Gte', values: ['5'] },
            { key: 'example.com/gpu', operator: 'Exists', values: ['x'] },
            { key: 'example.com/spot-ok', operator: 'DoesNotExist' },
            { key: 'karpenter.k8s.aws/instance-family', operator: 'NotIn', values: [] },
          ];
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.spec.requirements[1].values[0]: Invalid value "-1": must be empty or consist of alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character',
      "NodePool \"general\": spec.template.spec.requirements[0].values: Invalid value [\"4\",\"8\"]: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
      "NodePool \"general\": spec.template.spec.requirements[1].values: Invalid value [\"-1\"]: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",
      "NodePool \"general\": spec.template.spec.requirements[3].values: Forbidden: requirements with operator 'Exists' or 'DoesNotExist' may not have values",
    ]);
  });

  it('checks durations, nodeClassRef, limits, unknown fields and static NodePools', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.spec.expireAfter = '30d';
          o.spec.template.spec.nodeClassRef.group = '';
          o.spec.template.spec.requirement = [];
          o.spec.limits = { cpu: true, memory: '1000Gi' };
          o.spec.disruption = { consolidationPolicy: 'WhenEmpty' };
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.disruption.consolidateAfter: Required value',
      'NodePool "general": spec.limits.cpu: Invalid value true: must be an integer or a quantity string like "500m", "2" or "16Gi"',
      'NodePool "general": spec.template.spec.expireAfter: Invalid value "30d": must be a duration in hours, minutes and seconds like "720h", "1h30m" or "30s", or "Never"',
      'NodePool "general": spec.template.spec.nodeClassRef.group: Required value: group may not be empty',
      'NodePool "general": spec.template.spec.requirement: Forbidden: unknown field "requirement"',
    ]);
    expect(
      messages(
        withNodePool((o) => {
          o.spec.replicas = 3;
          o.spec.weight = 10;
          o.spec.limits = { cpu: '100' };
        }),
      ),
    ).toEqual([
      'NodePool "general": spec: Invalid value: only \'limits.nodes\' is supported on static NodePools',
      'NodePool "general": spec: Forbidden: \'weight\' is not supported on static NodePools',
    ]);
  });

  it('validates template labels like upstream', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.spec.template.metadata = {
            labels: { 'kubernetes.io/hostname': 'x', team: 'a b', 'karpenter.sh/capacity-type': 'spot' },
          };
        }),
      ),
    ).toEqual([
      'NodePool "general": spec.template.metadata.labels.team: Invalid value "a b": must be empty or consist of alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character',
      'NodePool "general": spec.template.metadata.labels[kubernetes.io/hostname]: Invalid value "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted',
    ]);
  });

  it('points old API versions and unknown Karpenter kinds at the fix', () => {
    expect(
      messages(
        withNodePool((o) => {
          o.apiVersion = 'karpenter.sh/v1beta1';
        }),
      ),
    ).toEqual([
      'NodePool "general": apiVersion: Unsupported value "karpenter.sh/v1beta1": NodePool is served as karpenter.sh/v1; convert the manifest to karpenter.sh/v1 (see the Karpenter v1 migration guide)',
    ]);
    expect(messages({ apiVersion: 'karpenter.sh/v1', kind: 'Provisioner', metadata: { name: 'p' } })).toEqual(
      [
        'Provisioner "p": kind: Unsupported value "Provisioner": must be one of NodePool, NodeClaim, NodeOverlay in API group karpenter.sh',
      ],
    );
    expect(messages({ kind: 'Pod', metadata: { name: 'p' } })).toEqual([
      'Pod "p": apiVersion: Required value: every object needs apiVersion',
    ]);
  });

  it('passes other kinds through unchanged', () => {
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { anything: 1 } };
    const r = validateObject(svc);
    expect(r).toEqual({ ok: true, object: svc });
    if (r.ok) expect(r.object).toBe(svc);
  });
});

describe('NodeClaim validation', () => {
  const nodeClaim = (): AnyObj => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { generateName: 'default-' },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [{ key: 'karpenter.sh/nodepool', operator: 'In', values: ['default'] }],
      resources: { requests: { cpu: '1500m', memory: 1073741824 } },
    },
    status: {
      conditions: [{ type: 'Launched', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z' }],
    },
  });

  it('allows the karpenter.sh/nodepool requirement and conditions without reason', () => {
    const r = validateObject(nodeClaim() as KubeObject);
    expect(r.ok).toBe(true);
    if (r.ok) expect((r.object as AnyObj).spec.expireAfter).toBe('720h');
  });

  it('rejects a bad quantity, a bad timestamp and duplicate condition types', () => {
    const nc = nodeClaim();
    nc.spec.resources.requests.cpu = '1.5 cores';
    nc.status.conditions.push({ type: 'Launched', status: 'False', lastTransitionTime: 'yesterday' });
    expect(messages(nc)).toEqual([
      'NodeClaim "default-*": spec.resources.requests.cpu: Invalid value "1.5 cores": must be an integer or a quantity string like "500m", "2" or "16Gi"',
      'NodeClaim "default-*": status.conditions[1].lastTransitionTime: Invalid value "yesterday": must be an RFC 3339 date-time like "2024-01-01T00:00:00Z"',
      'NodeClaim "default-*": status.conditions[1].type: Duplicate value "Launched": duplicate condition type "Launched"',
    ]);
  });

  it('requires a name or generateName', () => {
    const nc = nodeClaim();
    nc.metadata = {};
    expect(messages(nc)).toEqual([
      'NodeClaim "<unnamed>": metadata.name: Required value: name or generateName is required',
    ]);
  });
});

describe('EC2NodeClass validation', () => {
  it('accepts an alias-based EC2NodeClass and defaults metadataOptions', () => {
    const r = validateObject(ec2() as KubeObject);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect((r.object as AnyObj).spec.metadataOptions).toEqual({
        httpEndpoint: 'enabled',
        httpProtocolIPv6: 'disabled',
        httpPutResponseHopLimit: 1,
        httpTokens: 'required',
      });
    }
  });

  it.each([
    [
      { instanceProfile: 'x' },
      "EC2NodeClass \"default\": spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']",
    ],
    [
      { amiSelectorTerms: [{ alias: 'ubuntu@latest' }] },
      "EC2NodeClass \"default\": spec.amiSelectorTerms[0].alias: Unsupported value \"ubuntu@latest\": family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
    ],
    [
      { amiSelectorTerms: [{ alias: 'windows2022@v1' }] },
      'EC2NodeClass "default": spec.amiSelectorTerms[0].alias: Invalid value "windows2022@v1": windows families may only specify version \'latest\'',
    ],
    [
      { amiSelectorTerms: [{ alias: 'al2023@latest' }, { id: 'ami-123' }] },
      'EC2NodeClass "default": spec.amiSelectorTerms: Forbidden: \'alias\' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms',
    ],
    [
      { amiSelectorTerms: [{ id: 'ami-123' }] },
      'EC2NodeClass "default": spec: Required value: must specify amiFamily if amiSelectorTerms does not contain an alias',
    ],
    [
      { amiFamily: 'AL2', amiSelectorTerms: [{ alias: 'al2023@latest' }] },
      "EC2NodeClass \"default\": spec: Invalid value: if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias",
    ],
    [
      { subnetSelectorTerms: [] },
      'EC2NodeClass "default": spec.subnetSelectorTerms: Required value: subnetSelectorTerms cannot be empty',
    ],
    [
      { tags: { 'kubernetes.io/cluster/cluster-1': 'owned' } },
      'EC2NodeClass "default": spec.tags[kubernetes.io/cluster/cluster-1]: Forbidden: tag contains a restricted tag matching kubernetes.io/cluster/',
    ],
    [
      { kubelet: { kubeReserved: { gpu: '1' } } },
      "EC2NodeClass \"default\": spec.kubelet.kubeReserved.gpu: Unsupported value \"gpu\": valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']",
    ],
    [
      { kubelet: { evictionSoft: { 'memory.available': '5%' } } },
      'EC2NodeClass "default": spec.kubelet: Invalid value: evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod',
    ],
    [
      { blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '20GiB' } }] },
      'EC2NodeClass "default": spec.blockDeviceMappings[0].ebs.volumeSize: Invalid value "20GiB": must be a size from "1Gi" to "59000Gi" (or G/Ti/T), like "20Gi"',
    ],
    [
      { kubelet: { maxPods: -1 } },
      'EC2NodeClass "default": spec.kubelet.maxPods: Invalid value -1: must be greater than or equal to 0',
    ],
  ])('rejects %j', (spec, message) => {
    expect(messages(ec2(spec))).toEqual([message]);
  });

  it('refuses the EC2NodeClass fields capenter does not implement yet, naming the class and the field', () => {
    expect(messages(ec2({ cpuOptions: { nestedVirtualization: 'enabled' } }))).toEqual([
      'EC2NodeClass "default": spec.cpuOptions.nestedVirtualization: Forbidden: capenter does not support cpuOptions.nestedVirtualization "enabled" yet: it cannot tell which instance types support nested virtualization; remove it or set "disabled"',
    ]);
  });

  it('accepts placementGroupSelector by name or id (issue 28 item 2); upstream CRD rules still refuse both or neither', () => {
    expect(messages(ec2({ placementGroupSelector: { name: 'pg' } }))).toEqual([]);
    expect(messages(ec2({ placementGroupSelector: { id: 'pg-0123456789abcdef0' } }))).toEqual([]);
    expect(messages(ec2({ placementGroupSelector: { name: 'pg', id: 'pg-0123456789abcdef0' } }))).toEqual([
      `EC2NodeClass "default": spec.placementGroupSelector: Forbidden: 'name' and 'id' are mutually exclusive`,
    ]);
  });

  it('accepts the launch fields capenter implements (metadataOptions, detailedMonitoring, associatePublicIPAddress, context, cpuOptions, connectionTracking, ipPrefixCount, volumeInitializationRate, instanceStorePolicy)', () => {
    expect(
      messages(
        ec2({
          metadataOptions: { httpTokens: 'optional', httpPutResponseHopLimit: 2 },
          detailedMonitoring: true,
          associatePublicIPAddress: false,
          context: 'ctx-1',
          cpuOptions: { nestedVirtualization: 'disabled' },
          connectionTracking: { tcpEstablishedTimeout: 3600, udpTimeout: 30 },
          ipPrefixCount: 2,
          instanceStorePolicy: 'RAID0',
          blockDeviceMappings: [
            { deviceName: '/dev/xvdb', ebs: { snapshotID: 'snap-1', volumeInitializationRate: 200 } },
          ],
        }),
      ),
    ).toEqual([]);
  });

  it('reports every mutually exclusive field of a selector term', () => {
    expect(messages(ec2({ securityGroupSelectorTerms: [{ id: 'sg-1', name: 'x' }] }))).toEqual([
      'EC2NodeClass "default": spec.securityGroupSelectorTerms[0]: Forbidden: \'id\' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term',
      'EC2NodeClass "default": spec.securityGroupSelectorTerms[0]: Forbidden: \'name\' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term',
    ]);
  });

  it('accepts a kubelet stanza with reserved resources, eviction thresholds and EBS sizes', () => {
    expect(
      messages(
        ec2({
          kubelet: {
            maxPods: 110,
            podsPerCore: 4,
            kubeReserved: { cpu: '350m', memory: '1280Mi', 'ephemeral-storage': '1Gi' },
            systemReserved: { cpu: '250m', memory: '384Mi' },
            evictionHard: { 'memory.available': '5%', 'nodefs.available': '10%' },
            evictionSoft: { 'memory.available': '500Mi' },
            evictionSoftGracePeriod: { 'memory.available': '1m' },
          },
          blockDeviceMappings: [
            { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '100Gi', volumeType: 'gp3' } },
          ],
          userData: '#!/bin/bash\necho hi',
          metadataOptions: { httpTokens: 'optional' },
        }),
      ),
    ).toEqual([]);
  });
});

describe('KWOKNodeClass validation', () => {
  it('defaults status to Ready and checks nodeRegistrationDelay', () => {
    const r = validateObject({
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'default' },
    });
    expect(r.ok && (r.object as AnyObj).status.conditions[0].type).toBe('Ready');
    expect(
      messages({
        apiVersion: 'karpenter.kwok.sh/v1alpha1',
        kind: 'KWOKNodeClass',
        metadata: { name: 'default' },
        spec: { nodeRegistrationDelay: '1.5m' },
      }),
    ).toEqual([
      'KWOKNodeClass "default": spec.nodeRegistrationDelay: Invalid value "1.5m": must be a duration in hours, minutes and seconds like "720h", "1h30m" or "30s"',
    ]);
  });
});

describe('EC2NodeClass spec.networkInterfaces (upstream v1.14.1 CEL rules of `NetworkInterfaces`)', () => {
  const ni = (networkCardIndex: number, deviceIndex: number, interfaceType: string) => ({
    networkCardIndex,
    deviceIndex,
    interfaceType,
  });

  it('accepts a primary interface with EFA-only interfaces on other network cards', () => {
    expect(
      messages(
        ec2({ networkInterfaces: [ni(0, 0, 'interface'), ni(1, 0, 'efa-only'), ni(2, 0, 'efa-only')] }),
      ),
    ).toEqual([]);
    expect(messages(ec2({ networkInterfaces: [] }))).toEqual([]);
  });

  it.each([
    [
      [ni(0, 0, 'efa-only'), ni(1, 0, 'efa-only')],
      `EC2NodeClass "default": spec.networkInterfaces: Invalid value: networkInterfaces must include a primary interface with interfaceType='interface'`,
    ],
    [
      [ni(0, 0, 'interface'), ni(1, 0, 'efa-only'), ni(1, 0, 'interface')],
      'EC2NodeClass "default": spec.networkInterfaces: Invalid value: networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card',
    ],
    [
      [ni(0, 0, 'interface'), ni(1, 0, 'efa-only'), ni(1, 1, 'efa-only')],
      'EC2NodeClass "default": spec.networkInterfaces: Invalid value: networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card',
    ],
  ])('refuses the layout %j', (networkInterfaces, message) => {
    expect(messages(ec2({ networkInterfaces }))).toEqual([message]);
  });

  it('refuses a negative index and an unknown interface type, naming the item and the allowed values', () => {
    expect(messages(ec2({ networkInterfaces: [ni(0, 0, 'interface'), ni(1, -1, 'efa')] }))).toEqual([
      'EC2NodeClass "default": spec.networkInterfaces[1].deviceIndex: Invalid value -1: must be greater than or equal to 0',
      'EC2NodeClass "default": spec.networkInterfaces[1].interfaceType: Unsupported value "efa": must be one of interface, efa-only',
    ]);
  });
});
