/**
 * Example manifests: the smallest valid objects, as upstream's getting-started guide writes them
 * (karpenter.sh/docs/getting-started). One definition for the simulator's default EC2NodeClass and for the tests
 * that need "a valid object" to start from. Every call returns a fresh copy, safe to mutate.
 */
import type { KubeObject } from './core.ts';
import type { EC2NodeClass, NodeClassReference } from './karpenter.ts';

/**
 * A valid EC2NodeClass `name` (default `default`): AL2023 (`al2023@latest`), role
 * `KarpenterNodeRole-cluster-1`, subnets and security groups discovered by the tag
 * `karpenter.sh/discovery: cluster-1`; `spec` entries replace those fields.
 */
export function exampleEC2NodeClass(
  spec: Partial<EC2NodeClass['spec']> = {},
  name = 'default',
): EC2NodeClass {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name },
    spec: {
      role: 'KarpenterNodeRole-cluster-1',
      amiSelectorTerms: [{ alias: 'al2023@latest' }],
      subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'cluster-1' } }],
      securityGroupSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'cluster-1' } }],
      ...structuredClone(spec),
    },
  };
}

/**
 * A NodePool manifest `name` (default `default`) as a user writes it, before defaulting (no `disruption`, no
 * `expireAfter`): one requirement `kubernetes.io/arch In [amd64]` and `nodeClassRef` (default: EC2NodeClass
 * `default`). Typed `KubeObject` because the defaulted fields are still missing.
 */
export function exampleNodePool(
  name = 'default',
  nodeClassRef: NodeClassReference = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
): KubeObject {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { ...nodeClassRef },
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
        },
      },
    },
  };
}
