import { describe, expect, it } from 'vitest';
import { type KarpenterMachinePool, refersToKMP, validateKMP } from '../../apis/capi.ts';
import type { Node, Taint } from '../../apis/core.ts';
import type { NodeClaim } from '../../apis/karpenter.ts';
import { validateObject } from '../../apis/validation.ts';
import { sampleCAPIObjects } from '../../sim/capi/environment.ts';
import { BootstrapSecretError, readBootstrapSecret, userDataStub } from './bootstrap.ts';
import { setCondition } from './conditions.ts';
import {
  type DesiredInputs,
  desiredObjects,
  gateVersion,
  hasRegistrationTaint,
  nextProviderIDList,
  uninitializedEffect,
} from './desired.ts';
import { taintAction } from './taints.ts';

const loc = { region: 'us-east-1', bucket: 'b', key: 'karpenter-machine-pool/default/workers' };

function inputs(kmpSpec?: Record<string, unknown>): DesiredInputs {
  const objs = sampleCAPIObjects(kmpSpec ? { ec2NodeClass: kmpSpec } : {});
  const by = (k: string) => objs.find((o) => o.kind === k) as never;
  return {
    kmp: by('KarpenterMachinePool'),
    machinePool: by('MachinePool'),
    cluster: by('Cluster'),
    awsCluster: by('AWSCluster'),
    bootstrapFormat: 'cloud-config',
    bootstrapLocation: loc,
    controlPlaneVersion: 'v1.33.1',
  };
}

describe('desiredObjects', () => {
  it('derives subnets, security groups, instance profile, tags and the CAPA AMI lookup; both objects validate', () => {
    const d = desiredObjects(inputs());
    expect(d.ec2NodeClass.spec).toMatchObject({
      amiFamily: 'Custom',
      amiSelectorTerms: [{ name: 'capa-ami-ubuntu-24.04-?1.33.1-*', owner: '258751437250' }],
      subnetSelectorTerms: [{ id: 'subnet-0a1' }, { id: 'subnet-0b1' }],
      securityGroupSelectorTerms: [{ id: 'sg-0node' }],
      instanceProfile: 'nodes-demo',
    });
    expect(d.ec2NodeClass.spec.tags).toEqual({
      team: 'platform',
      'cost-center': '1234',
      'sigs.k8s.io/cluster-api-provider-aws/cluster/demo': 'owned',
      'cluster.x-k8s.io/cluster-name': 'demo',
    });
    expect(d.nodePool.spec.template.metadata?.annotations).toEqual({
      'capenter.sh/kubernetes-version': 'v1.33.1',
    });
    expect(validateObject(d.ec2NodeClass).ok).toBe(true);
    expect(validateObject(d.nodePool).ok).toBe(true);
  });

  it('issue 29 #8: the community shape (amiSelectorTerms by name/owner, no amiFamily) gets Custom and validates', () => {
    const d = desiredObjects(
      inputs({
        amiSelectorTerms: [{ name: 'flatcar-stable-4152.2.3-kube-v1.33.1-*', owner: '075585003325' }],
      }),
    );
    expect(d.ec2NodeClass.spec.amiFamily).toBe('Custom');
    expect(d.ec2NodeClass.spec.amiSelectorTerms).toEqual([
      { name: 'flatcar-stable-4152.2.3-kube-v1.33.1-*', owner: '075585003325' },
    ]);
    expect(validateObject(d.ec2NodeClass)).toMatchObject({ ok: true });
    // an alias keeps its own family inference; an explicit amiFamily is kept
    expect(
      desiredObjects(inputs({ amiSelectorTerms: [{ alias: 'al2023@latest' }] })).ec2NodeClass.spec.amiFamily,
    ).toBeUndefined();
    expect(
      desiredObjects(inputs({ amiFamily: 'AL2023', amiSelectorTerms: [{ id: 'ami-0123456789abcdef0' }] }))
        .ec2NodeClass.spec.amiFamily,
    ).toBe('AL2023');
  });

  it('honours every KMP ec2NodeClass field over the derived ones', () => {
    const d = desiredObjects(
      inputs({
        role: 'CustomNodeRole',
        subnetSelectorTerms: [{ tags: { tier: 'private' } }],
        kubelet: { maxPods: 42, systemReserved: { cpu: '250m' } },
        blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '80Gi', volumeType: 'gp3' } }],
        detailedMonitoring: true,
        associatePublicIPAddress: false,
        tags: { team: 'apps' },
      }),
    );
    const s = d.ec2NodeClass.spec;
    expect(s.role).toBe('CustomNodeRole');
    expect(s.instanceProfile).toBeUndefined();
    expect(s.subnetSelectorTerms).toEqual([{ tags: { tier: 'private' } }]);
    expect(s.securityGroupSelectorTerms).toEqual([{ id: 'sg-0node' }]);
    expect(s.kubelet).toEqual({ maxPods: 42, systemReserved: { cpu: '250m' } });
    expect(s.blockDeviceMappings).toHaveLength(1);
    expect(s.detailedMonitoring).toBe(true);
    expect(s.associatePublicIPAddress).toBe(false);
    expect(s.tags?.team).toBe('apps');
    expect(validateObject(d.ec2NodeClass).ok).toBe(true);
  });

  it('falls back to CAPA tags without subnets or a node security group; ignition gets an S3 merge stub', () => {
    const i = inputs();
    i.awsCluster = { ...i.awsCluster, spec: { region: 'eu-west-1', s3Bucket: { name: 'b' } } };
    i.bootstrapFormat = 'ignition';
    const d = desiredObjects(i);
    expect(d.ec2NodeClass.spec.subnetSelectorTerms).toEqual([
      {
        tags: {
          'sigs.k8s.io/cluster-api-provider-aws/cluster/demo': 'owned',
          'sigs.k8s.io/cluster-api-provider-aws/role': 'private',
        },
      },
    ]);
    expect(d.ec2NodeClass.spec.securityGroupSelectorTerms?.[0]).toEqual({
      tags: {
        'sigs.k8s.io/cluster-api-provider-aws/cluster/demo': 'owned',
        'sigs.k8s.io/cluster-api-provider-aws/role': 'node',
      },
    });
    expect(d.ec2NodeClass.spec.instanceProfile).toBe('nodes.cluster-api-provider-aws.sigs.k8s.io');
    expect(JSON.parse(d.ec2NodeClass.spec.userData as string)).toEqual({
      ignition: { version: '3.4.0', config: { merge: [{ source: `s3://b/${loc.key}` }] } },
    });
  });

  it('uses the bootstrap provider effect for the uninitialized startup taint', () => {
    const i = inputs();
    i.uninitializedTaintEffect = uninitializedEffect({
      spec: {
        joinConfiguration: {
          nodeRegistration: { taints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoExecute' }] },
        },
      },
    });
    expect(desiredObjects(i).nodePool.spec.template.spec.startupTaints).toEqual([
      { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoExecute' },
    ]);
    expect(uninitializedEffect(undefined)).toBe('NoSchedule');
  });
});

describe('version gate', () => {
  it('never rolls out a version newer than the control plane', () => {
    expect(gateVersion('v1.34.0', 'v1.34.0', 'v1.33.1').version).toBe('v1.34.0');
    const g = gateVersion('v1.35.0', 'v1.34.2', 'v1.33.1');
    expect(g.version).toBe('v1.33.1');
    expect(g.skew?.message).toContain('v1.35.0 is newer than the control plane (v1.34.2)');
    expect(gateVersion('v1.35.0', 'v1.34.2', undefined).version).toBe('v1.34.2');
    expect(gateVersion('v1.35.0', undefined, 'v1.33.1').version).toBe('v1.35.0');
  });
});

describe('nextProviderIDList', () => {
  const a = 'aws:///us-east-1a/i-a';
  const b = 'aws:///us-east-1b/i-b';
  it('adds launched NodeClaims and keeps an ID until its Node is gone', () => {
    expect(nextProviderIDList([], [b, a], 2, new Set())).toEqual([a, b]);
    expect(nextProviderIDList([a, b], [b], 1, new Set([a, b]))).toEqual([a, b]);
    expect(nextProviderIDList([a, b], [b], 1, new Set([b]))).toEqual([b]);
  });
  it('is never empty while the pool has NodeClaims', () => {
    expect(nextProviderIDList([a], [''], 1, new Set())).toEqual([a]);
    expect(nextProviderIDList([a], [], 0, new Set())).toEqual([]);
  });
});

describe('bootstrap data', () => {
  it('reads value and format, hashes it, and names the Secret (not the data) in errors', () => {
    const d = readBootstrapSecret({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'ns' },
      data: { value: Buffer.from('#cloud-config\n').toString('base64') },
    });
    expect(d.format).toBe('cloud-config');
    expect(d.sha256).toBe('88c95955b024402aa9572b663f7eeb134f01343bb92af27b50e97e72b22c565f'); // sha256sum of '#cloud-config\n'
    expect(() =>
      readBootstrapSecret({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's', namespace: 'ns' },
        data: {},
      }),
    ).toThrow(BootstrapSecretError);
    expect(() =>
      readBootstrapSecret({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 's', namespace: 'ns' },
        data: { value: Buffer.from('x').toString('base64'), format: Buffer.from('yaml').toString('base64') },
      }),
    ).toThrow('Secret ns/s data.format is "yaml"; expected cloud-config or ignition');
  });
  it('the stub depends only on the location', () => {
    expect(userDataStub(loc, 'cloud-config')).toContain(`aws s3 cp --region us-east-1 s3://b/${loc.key}`);
  });
  it('detects the registration taint in v1beta2 taints and v1beta1 kubeletExtraArgs', () => {
    expect(hasRegistrationTaint(undefined)).toBeUndefined();
    expect(hasRegistrationTaint({ spec: { joinConfiguration: { nodeRegistration: { taints: [] } } } })).toBe(
      false,
    );
    expect(
      hasRegistrationTaint({
        spec: {
          joinConfiguration: {
            nodeRegistration: {
              kubeletExtraArgs: {
                'register-with-taints': 'a=b:NoSchedule,karpenter.sh/unregistered:NoExecute',
              },
            },
          },
        },
      }),
    ).toBe(true);
    expect(
      hasRegistrationTaint({
        spec: {
          joinConfiguration: {
            nodeRegistration: {
              kubeletExtraArgs: [
                { name: 'register-with-taints', value: 'karpenter.sh/unregistered:NoExecute' },
              ],
            },
          },
        },
      }),
    ).toBe(true);
  });
});

describe('KarpenterMachinePool schema', () => {
  it('accepts the community shape and a KMP with only a kubelet override; rejects role with instanceProfile', () => {
    const community: KarpenterMachinePool = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
      kind: 'KarpenterMachinePool',
      metadata: { name: 'p', namespace: 'org-x' },
      spec: {
        ec2NodeClass: {
          amiSelectorTerms: [{ id: 'ami-0123' }],
          subnetSelectorTerms: [{ tags: { a: 'b' } }],
          securityGroupSelectorTerms: [{ tags: { a: 'b' } }],
          instanceProfile: 'p',
        },
        nodePool: {
          template: {
            spec: { requirements: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] },
          },
        },
      },
    };
    expect(validateKMP(community)).toEqual({ ok: true });
    expect(validateKMP({ ...community, spec: { ec2NodeClass: { kubelet: { maxPods: 50 } } } })).toEqual({
      ok: true,
    });
    const bad = validateKMP({ ...community, spec: { ec2NodeClass: { role: 'r', instanceProfile: 'p' } } });
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad)).toContain("specify at most one of ['role', 'instanceProfile']");
  });
});

describe('taintAction', () => {
  const claim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'c' },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'x' },
      requirements: [],
      startupTaints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
    },
  } as NodeClaim;
  const node = (taints: Taint[], readyAt: string): Node => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n', labels: { 'karpenter.sh/nodepool': 'p', 'karpenter.sh/registered': 'true' } },
    spec: { providerID: 'x', taints },
    status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: readyAt }] },
  });
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  it('waits for the timeout after Ready, then removes the uninitialized taint', () => {
    const n = node(
      [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }],
      '2026-01-01T00:00:00Z',
    );
    expect(taintAction(n, claim, t0 + 30_000, 120)).toEqual({ kind: 'wait', seconds: 90 });
    expect(taintAction(n, claim, t0 + 120_000, 120)).toEqual({
      kind: 'remove',
      taints: [],
      removed: ['uninitialized'],
    });
  });
  it('leaves a node with another startup taint alone; strips a re-added unregistered taint at once', () => {
    const other = node(
      [
        { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      ],
      '2026-01-01T00:00:00Z',
    );
    expect(taintAction(other, claim, t0 + 600_000, 120)).toEqual({ kind: 'none' });
    const re = node([{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }], '2026-01-01T00:00:00Z');
    expect(taintAction(re, claim, t0, 120)).toEqual({
      kind: 'remove',
      taints: [],
      removed: ['unregistered'],
    });
  });
});

describe('setCondition', () => {
  it('keeps lastTransitionTime while the status holds; severity only when False', () => {
    const a = setCondition(undefined, 'Ready', 'False', 't1', 'X', 'm');
    expect(a).toEqual([
      {
        type: 'Ready',
        status: 'False',
        severity: 'Warning',
        reason: 'X',
        message: 'm',
        lastTransitionTime: 't1',
      },
    ]);
    const b = setCondition(a, 'Ready', 'False', 't2', 'Y');
    expect(b[0]?.lastTransitionTime).toBe('t1');
    const c = setCondition(b, 'Ready', 'True', 't3');
    expect(c[0]).toEqual({ type: 'Ready', status: 'True', lastTransitionTime: 't3' });
  });
});

describe('MachinePool v1beta1 shape', () => {
  it('reads clusterName, version and a v1beta1 infrastructureRef {apiVersion, kind, name, namespace}', () => {
    const i = inputs();
    i.machinePool = {
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'MachinePool',
      metadata: { name: 'workers', namespace: 'default' },
      spec: {
        clusterName: 'demo',
        template: {
          spec: {
            version: 'v1.32.4',
            bootstrap: { dataSecretName: 'workers-bootstrap' },
            infrastructureRef: {
              apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
              kind: 'KarpenterMachinePool',
              name: 'workers',
              namespace: 'default',
            },
          },
        },
      },
    };
    expect(refersToKMP(i.machinePool.spec?.template?.spec?.infrastructureRef, 'workers')).toBe(true);
    expect(refersToKMP(i.machinePool.spec?.template?.spec?.infrastructureRef, 'other')).toBe(false);
    const d = desiredObjects(i);
    expect(d.clusterName).toBe('demo');
    expect(d.version).toBe('v1.32.4');
    expect(d.ec2NodeClass.spec.amiSelectorTerms?.[0]?.name).toBe('capa-ami-ubuntu-24.04-?1.32.4-*');
  });
});
