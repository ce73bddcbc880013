/** `aws.ts` without an emulator: which classes are resolved, and every way the evaluation is skipped says why. */
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../apis/core.ts';
import type { EC2NodeClass } from '../apis/karpenter.ts';
import {
  changedSelectorClasses,
  clusterKubernetesVersion,
  evaluateSelectorDrift,
  liveSelectorClasses,
} from './aws.ts';
import type { PlanObjects } from './drift.ts';

const cls = (name: string, spec: Record<string, unknown>): EC2NodeClass =>
  ({
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name },
    spec: { role: 'R', amiSelectorTerms: [{ alias: 'al2023@latest' }], ...spec },
  }) as unknown as EC2NodeClass;

function objs(live: EC2NodeClass[], proposed: EC2NodeClass[]): PlanObjects {
  const m = (l: EC2NodeClass[]) =>
    new Map<string, KubeObject>(l.map((c) => [`EC2NodeClass/${c.metadata.name}`, c]));
  return {
    livePools: new Map(),
    proposedPools: new Map(),
    liveClasses: m(live),
    proposedClasses: m(proposed),
  };
}

const claim = (providerID: string): KubeObject =>
  ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'general-x1' },
    spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'a' }, requirements: [] },
    status: { nodeName: 'n1', providerID },
  }) as unknown as KubeObject;

/** Clients whose every call fails as the SDK does without credentials. */
const noCredentials = {
  send: () => Promise.reject(new Error('Could not load credentials from any providers')),
};
const failing = {
  clients: { ec2: noCredentials as unknown as EC2Client, ssm: noCredentials as unknown as SSMClient },
};

describe('plan AMI/subnet/security-group/capacity-reservation drift evaluation (aws.ts)', () => {
  it('the EC2NodeClasses whose selector terms change, capacity reservation terms too (not tags, not a new class)', () => {
    const a = cls('a', { subnetSelectorTerms: [{ id: 'subnet-1' }] });
    const b = cls('b', { tags: { team: 'x' } });
    const d = cls('d', { capacityReservationSelectorTerms: [{ tags: { team: 'ml' } }] });
    expect(
      changedSelectorClasses(
        objs(
          [a, b, d],
          [
            cls('a', { subnetSelectorTerms: [{ id: 'subnet-2' }] }),
            cls('b', { tags: { team: 'y' } }),
            cls('c', {}),
            cls('d', { capacityReservationSelectorTerms: [{ id: 'cr-0123456789abcdef0' }] }),
          ],
        ),
      ),
    ).toEqual(['a', 'd']);
  });

  it('no selector change on a kwok cluster: nothing to evaluate, no notice, no AWS call', async () => {
    const a = cls('a', {});
    let calls = 0;
    const counting = { send: () => Promise.reject(new Error(`call ${++calls}`)) };
    const r = await evaluateSelectorDrift(
      [claim('kwok://n1')],
      objs([a], [a]),
      { clients: { ec2: counting as unknown as EC2Client, ssm: counting as unknown as SSMClient } },
      () => 0,
    );
    expect(r.evaluation).toEqual({ evaluated: false, nodeClasses: [], changed: [] });
    expect(r.notices).toEqual([]);
    expect(calls).toBe(0);
  });

  it('an unchanged class whose NodeClaims run on EC2 is resolved now (an alias may name a newer AMI); offline says it was not', async () => {
    const a = cls('a', {});
    const o = objs([a], [a]);
    expect(liveSelectorClasses([claim('aws:///us-east-1a/i-0abc')], o)).toEqual(['a']);
    expect(liveSelectorClasses([claim('kwok://n1')], o)).toEqual([]);
    const r = await evaluateSelectorDrift(
      [claim('aws:///us-east-1a/i-0abc')],
      o,
      { unavailable: '--offline was given' },
      () => 0,
    );
    expect(r.evaluation).toEqual({
      evaluated: false,
      nodeClasses: ['a'],
      changed: [],
      reason: '--offline was given',
    });
    expect(r.notices).toEqual([
      'AMI, subnet, security-group and capacity-reservation drift was NOT evaluated for EC2NodeClass "a": --offline was given. Nodes listed above drift for the other reasons only; AMIDrift, SubnetDrift, SecurityGroupDrift and CapacityReservationDrift may add more (an alias can name a newer AMI without any change to the manifests).',
    ]);
  });

  it('nodes that are not EC2 instances (kwok), or an AWS API that fails, are reported as not evaluated, with why', async () => {
    const o = objs([cls('a', {})], [cls('a', { amiSelectorTerms: [{ id: 'ami-0bbbbbbbbbbbbbbbb' }] })]);
    const kwok = await evaluateSelectorDrift([claim('kwok://n1')], o, failing, () => 0);
    expect(kwok.evaluation).toEqual({
      evaluated: false,
      nodeClasses: ['a'],
      changed: ['a'],
      reason:
        'NodeClaim general-x1 has provider ID "kwok://n1", not an EC2 instance (aws:///<zone>/<instance-id>): the cluster\'s nodes are not in AWS (kwok?)',
    });
    expect(kwok.notices[0]).toMatch(
      /^AMI, subnet, security-group and capacity-reservation drift was NOT evaluated for EC2NodeClass "a"/,
    );
    const down = await evaluateSelectorDrift([claim('aws:///us-east-1a/i-0abc')], o, failing, () => 0);
    expect(down.evaluation.evaluated).toBe(false);
    expect(down.evaluation.reason).toBe(
      'the AWS API failed: EC2NodeClass "a": amiSelectorTerms: Could not load credentials from any providers',
    );
    // the failure only, not "the class would not be Ready"
    expect(down.notices).toHaveLength(1);
    expect(down.drifts.size).toBe(0);
  });

  it('an alias without any Node kubelet version: a notice, and no SSM parameter is read', async () => {
    const a = cls('a', {});
    let ssmCalls = 0;
    const ssm = { send: () => Promise.reject(new Error(`ssm call ${++ssmCalls}`)) };
    const ec2 = { send: () => Promise.resolve({}) };
    const r = await evaluateSelectorDrift(
      [claim('aws:///us-east-1a/i-0abc')],
      objs([a], [a]),
      { clients: { ec2: ec2 as unknown as EC2Client, ssm: ssm as unknown as SSMClient } },
      () => 0,
    );
    expect(ssmCalls).toBe(0);
    expect(r.evaluation).toEqual({ evaluated: true, nodeClasses: ['a'], changed: [] });
    expect(r.notices).toContain(
      'EC2NodeClass "a": amiSelectorTerms: AMINotFound: its alias needs the cluster\'s Kubernetes version, and no Node reports status.nodeInfo.kubeletVersion (that part is not compared; the class would not be Ready: nothing launches)',
    );
    expect(r.notices).toContain(
      'NodeClaim general-x1: instance i-0abc does not exist in AWS; its drift is not evaluated',
    );
  });

  it('the cluster Kubernetes version is the lowest kubelet minor among the Nodes', () => {
    const node = (v: string) => ({
      kind: 'Node',
      metadata: { name: v },
      status: { nodeInfo: { kubeletVersion: v } },
    });
    expect(
      clusterKubernetesVersion([node('v1.33.1'), node('v1.32.9-eks-1'), { kind: 'Pod' }] as KubeObject[]),
    ).toBe('1.32');
    expect(clusterKubernetesVersion([])).toBeUndefined();
  });
});
