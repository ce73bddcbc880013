/** Drift of one node under proposed objects (`drift.ts`): NodeClass hashes and other hash versions. */
import { describe, expect, it } from 'vitest';
import type { Node } from '../apis/core.ts';
import { nodePoolHash } from '../apis/hash.ts';
import type { EC2NodeClass, NodeClaim, NodePool } from '../apis/karpenter.ts';
import {
  AnnotationEC2NodeClassHash,
  AnnotationEC2NodeClassHashVersion,
  ec2NodeClassHash,
} from '../cloudprovider/aws/provider.ts';
import type { DisruptionNode } from '../disruption/types.ts';
import { nodeDrift, type PlanObjects } from './drift.ts';

const pool = (labels?: Record<string, string>): NodePool =>
  ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'p' },
    spec: {
      template: {
        ...(labels ? { metadata: { labels } } : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'c' },
          requirements: [],
        },
      },
    },
  }) as unknown as NodePool;

const ec2 = (tags: Record<string, string>): EC2NodeClass =>
  ({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'c' },
    spec: { role: 'R', amiSelectorTerms: [{ alias: 'al2023@latest' }], tags },
  }) as unknown as EC2NodeClass;

function dn(annotations: Record<string, string>): DisruptionNode {
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n', labels: { 'karpenter.sh/nodepool': 'p' } },
  };
  const nodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'n', annotations },
    spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'c' }, requirements: [] },
  };
  return { node: node as Node, pods: [], nodeClaim: nodeClaim as unknown as NodeClaim };
}

function objs(live: [NodePool, EC2NodeClass], proposed: [NodePool, EC2NodeClass]): PlanObjects {
  return {
    livePools: new Map([['p', live[0]]]),
    proposedPools: new Map([['p', proposed[0]]]),
    liveClasses: new Map([['EC2NodeClass/c', live[1]]]),
    proposedClasses: new Map([['EC2NodeClass/c', proposed[1]]]),
  };
}

describe('plan drift', () => {
  it('NodeClassDrift when the proposed EC2NodeClass hash differs from the one stamped on the NodeClaim', () => {
    const live = ec2({ team: 'a' });
    const proposed = ec2({ team: 'b' });
    const stamped = dn({
      [AnnotationEC2NodeClassHash]: ec2NodeClassHash(live, ''),
      [AnnotationEC2NodeClassHashVersion]: 'v4',
    });
    expect(nodeDrift(stamped, pool(), [], objs([pool(), live], [pool(), proposed]))).toEqual({
      reason: 'NodeClassDrift',
      detail: 'EC2NodeClass "c" changed: spec.tags (its hash differs from the one stamped at launch)',
    });
    expect(nodeDrift(stamped, pool(), [], objs([pool(), live], [pool(), live]))).toBeUndefined();
  });

  it('a v3 NodePool hash (upstream and capenter) is compared; another version is compared as the live template', () => {
    const c = ec2({});
    const v3 = dn({
      'karpenter.sh/nodepool-hash': nodePoolHash(pool()),
      'karpenter.sh/nodepool-hash-version': 'v3',
    });
    expect(nodeDrift(v3, pool(), [], objs([pool(), c], [pool(), c]))).toBeUndefined();
    expect(nodeDrift(v3, pool({ a: 'b' }), [], objs([pool(), c], [pool({ a: 'b' }), c]))).toEqual({
      reason: 'NodePoolDrifted',
      detail: 'NodePool "p" changed spec.template.metadata.labels',
    });
    // another version (upstream v1.x before v3, old capenter builds): re-stamped by the controller, so only the
    // proposal's change counts
    const v2 = dn({ 'karpenter.sh/nodepool-hash': '123', 'karpenter.sh/nodepool-hash-version': 'v2' });
    expect(nodeDrift(v2, pool(), [], objs([pool(), c], [pool(), c]))).toBeUndefined();
    // a v3 hash that is stale already drifts, whatever the proposal
    const stale = dn({ 'karpenter.sh/nodepool-hash': '1', 'karpenter.sh/nodepool-hash-version': 'v3' });
    expect(nodeDrift(stale, pool(), [], objs([pool(), c], [pool(), c]))?.reason).toBe('NodePoolDrifted');
    expect(nodePoolHash(pool())).not.toBe('1');
  });

  it('AMIDrift from aws.ts names the NodeClaim class and the old and new AMI IDs; a static hash change wins', () => {
    const base = ec2({});
    const withAMI = (id: string) =>
      ({ ...base, spec: { ...base.spec, amiFamily: 'AL2023', amiSelectorTerms: [{ id }] } }) as EC2NodeClass;
    const live = withAMI('ami-0aaaaaaaaaaaaaaaa');
    const proposed = withAMI('ami-0bbbbbbbbbbbbbbbb');
    const selector = {
      reason: 'AMIDrift' as const,
      current: ['ami-0aaaaaaaaaaaaaaaa'],
      resolved: ['ami-0bbbbbbbbbbbbbbbb'],
      nodeClass: 'c',
    };
    const o = objs([pool(), live], [pool(), proposed]);
    // amiSelectorTerms is not in the static hash (the AMI family is, and stays AL2023): no NodeClassDrift, the
    // resolved AMIs decide
    expect(nodeDrift(dn({}), pool(), [], o)).toBeUndefined();
    expect(nodeDrift(dn({}), pool(), [], o, selector)).toEqual({
      reason: 'AMIDrift',
      detail:
        'EC2NodeClass "c"\'s amiSelectorTerms resolve to ami-0bbbbbbbbbbbbbbbb for its instance type; the instance\'s image ami-0aaaaaaaaaaaaaaaa is not among them',
      selectors: { current: ['ami-0aaaaaaaaaaaaaaaa'], resolved: ['ami-0bbbbbbbbbbbbbbbb'] },
    });
    const tagged = { ...proposed, spec: { ...proposed.spec, tags: { team: 'b' } } } as EC2NodeClass;
    expect(nodeDrift(dn({}), pool(), [], objs([pool(), live], [pool(), tagged]), selector)?.reason).toBe(
      'NodeClassDrift',
    );
  });
});
