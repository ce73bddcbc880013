import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KMPEC2NodeClassSchema } from './capi.ts';
import { crdObjects } from './crds.ts';

const community = parse(
  readFileSync(
    join(
      import.meta.dirname,
      '../../test/fixtures/crds/aws-resolver-rules-operator/infrastructure.cluster.x-k8s.io_karpentermachinepools.yaml',
    ),
    'utf8',
  ),
) as { spec: { versions: Array<{ schema: { openAPIV3Schema: object } }> } };

const ours = crdObjects()['infrastructure.cluster.x-k8s.io_karpentermachinepools.yaml']!;

/** A manifest in the community operator's shape (selector terms required there). */
const communityKMP = {
  apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
  kind: 'KarpenterMachinePool',
  metadata: { name: 'np', namespace: 'org-x' },
  spec: {
    ec2NodeClass: {
      amiSelectorTerms: [{ name: 'flatcar-stable-*', owner: '1234567890' }],
      subnetSelectorTerms: [{ tags: { 'giantswarm.io/cluster': 'c1' } }],
      securityGroupSelectorTerms: [{ tags: { 'sigs.k8s.io/cluster-api-provider-aws/role': 'node' } }],
      instanceProfile: 'nodes-np',
      metadataOptions: {
        httpTokens: 'required',
        httpPutResponseHopLimit: 1,
        httpEndpoint: 'enabled',
        httpProtocolIPv6: 'disabled',
      },
      tags: { team: 'x' },
    },
    nodePool: {
      disruption: { consolidateAfter: '30s', consolidationPolicy: 'WhenEmptyOrUnderutilized' },
      template: {
        spec: { requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot'] }] },
      },
      limits: { cpu: '1000' },
      weight: 10,
    },
    providerIDList: ['aws:///eu-west-1a/i-0123'],
  },
  status: { ready: true, replicas: 1 },
};

describe('KarpenterMachinePool CRD', () => {
  it('is a superset of the community CRD: its manifests validate against both schemas', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    const theirs = ajv.compile(community.spec.versions[0]!.schema.openAPIV3Schema);
    const mine = ajv.compile(ours.spec.versions[0]!.schema.openAPIV3Schema);
    expect(theirs(communityKMP), JSON.stringify(theirs.errors)).toBe(true);
    expect(mine(communityKMP), JSON.stringify(mine.errors)).toBe(true);
    // Ours also takes a KMP that overrides only the kubelet and the role (selector terms derived from CAPA).
    const partial = {
      ...communityKMP,
      spec: { ec2NodeClass: { role: 'custom-role', kubelet: { maxPods: 50 } } },
    };
    expect(mine(partial), JSON.stringify(mine.errors)).toBe(true);
    expect(theirs(partial)).toBe(false);
  });

  it('is namespaced, labelled with the CAPI contract versions, with a status subresource', () => {
    expect(ours.spec.scope).toBe('Namespaced');
    expect(ours.metadata.labels).toEqual({
      'cluster.x-k8s.io/v1beta1': 'v1alpha1',
      'cluster.x-k8s.io/v1beta2': 'v1alpha1',
    });
    expect(ours.spec.versions[0]!.subresources).toEqual({ status: {} });
    expect(ours.spec.names.categories).toEqual(['cluster-api']);
  });
});

describe('KarpenterMachinePool spec.ec2NodeClass', () => {
  it('refuses the EC2NodeClass fields capenter does not implement yet, as an EC2NodeClass does (networkInterfaces and placementGroupSelector are implemented)', () => {
    const r = KMPEC2NodeClassSchema.safeParse({
      placementGroupSelector: { name: 'pg' },
      networkInterfaces: [{ deviceIndex: 0, networkCardIndex: 0, interfaceType: 'interface' }],
      cpuOptions: { nestedVirtualization: 'enabled' },
    });
    expect(r.success ? [] : r.error.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      [
        'cpuOptions.nestedVirtualization',
        'capenter does not support cpuOptions.nestedVirtualization "enabled" yet: it cannot tell which instance types support nested virtualization; remove it or set "disabled"',
      ],
    ]);
    expect(
      KMPEC2NodeClassSchema.safeParse({ cpuOptions: { nestedVirtualization: 'disabled' } }).success,
    ).toBe(true);
  });
});
