import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { aliasOf, aliasParameters } from './amis.ts';
import { imageQueries, securityGroupFilterSets, subnetFilterSets } from './filters.ts';
import { ec2NodeClassNotReadyReason } from './types.ts';

const cls = (alias: string): EC2NodeClass => ({
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name: 'c' },
  spec: { amiSelectorTerms: [{ alias }] },
});

describe('selector filter sets (upstream getFilterSets)', () => {
  it('ids share one set; each tag term is its own set; "*" means tag-key', () => {
    expect(subnetFilterSets([{ id: 'subnet-1' }, { tags: { a: '1', b: '*' } }, { id: 'subnet-2' }])).toEqual([
      [
        { Name: 'tag:a', Values: ['1'] },
        { Name: 'tag-key', Values: ['b'] },
      ],
      [{ Name: 'subnet-id', Values: ['subnet-1', 'subnet-2'] }],
    ]);
    expect(securityGroupFilterSets([{ name: 'n' }, { id: 'sg-1' }])).toEqual([
      [{ Name: 'group-id', Values: ['sg-1'] }],
      [{ Name: 'group-name', Values: ['n'] }],
    ]);
    expect(subnetFilterSets(undefined)).toEqual([]);
  });

  it('AMI name terms default to owners self and amazon; ids and SSM-resolved ids share one query', () => {
    expect(
      imageQueries([{ name: 'my-ami-*' }, { id: 'ami-1' }, { tags: { t: 'v' }, owner: '123' }], ['ami-2']),
    ).toEqual([
      { filters: [{ Name: 'name', Values: ['my-ami-*'] }], owners: ['self', 'amazon'] },
      { filters: [{ Name: 'tag:t', Values: ['v'] }], owners: ['123'] },
      { filters: [{ Name: 'image-id', Values: ['ami-1', 'ami-2'] }], owners: [] },
    ]);
  });
});

describe('AMI aliases (upstream SSM parameter paths)', () => {
  it('al2023@latest reads the recommended parameter of each architecture × variant', () => {
    const ps = aliasParameters(aliasOf(cls('al2023@latest'))!, '1.32');
    expect(ps.map((p) => p.path)).toEqual([
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/recommended/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/standard/recommended/image_id',
      '/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/nvidia/recommended/image_id',
    ]);
    expect(ps[1]?.requirements).toEqual([
      [{ key: 'karpenter.k8s.aws/instance-gpu-count', operator: 'Exists' }],
    ]);
  });

  it('pinned versions: al2023, al2, bottlerocket (v prefix dropped), windows', () => {
    expect(aliasParameters(aliasOf(cls('al2023@v20240807'))!, '1.30')[0]?.path).toBe(
      '/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id',
    );
    expect(aliasParameters(aliasOf(cls('al2@v20240807'))!, '1.30').map((p) => p.path)).toEqual([
      '/aws/service/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240807/image_id',
      '/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240807/image_id',
      '/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240807/image_id',
    ]);
    expect(aliasParameters(aliasOf(cls('bottlerocket@v1.20.0'))!, '1.31')[2]?.path).toBe(
      '/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/1.20.0/image_id',
    );
    const win = aliasParameters(aliasOf(cls('windows2022@latest'))!, '1.31');
    expect(win[0]?.path).toBe(
      '/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/image_id',
    );
    expect(win[0]?.requirements[0]).toContainEqual({
      key: 'node.kubernetes.io/windows-build',
      operator: 'In',
      values: ['10.0.20348'],
    });
  });

  it('a malformed alias is an error naming the class and the accepted families', () => {
    expect(() => aliasOf(cls('ubuntu@latest'))).toThrow(/EC2NodeClass c .*al2023/);
  });
});

describe('ec2NodeClassNotReadyReason', () => {
  it('names the failing condition and its message', () => {
    const c = cls('al2023@latest');
    c.status = {
      conditions: [
        { type: 'Ready', status: 'False', reason: 'SubnetsNotFound' },
        {
          type: 'SubnetsReady',
          status: 'False',
          reason: 'SubnetsNotFound',
          message: 'SubnetSelector did not match any Subnets',
        },
      ],
    };
    expect(ec2NodeClassNotReadyReason(c)).toBe(
      'SubnetsReady=False (SubnetsNotFound): SubnetSelector did not match any Subnets',
    );
    c.status = { conditions: [{ type: 'Ready', status: 'True' }] };
    expect(ec2NodeClassNotReadyReason(c)).toBeUndefined();
  });
});
