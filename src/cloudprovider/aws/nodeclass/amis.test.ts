import { DescribeImagesCommand, type EC2Client, type Image } from '@aws-sdk/client-ec2';
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { AMIResolver } from './amis.ts';

const cls = (amiSelectorTerms: Array<Record<string, unknown>>): EC2NodeClass => ({
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name: 'c' },
  spec: { amiSelectorTerms } as EC2NodeClass['spec'],
});

/** 2026-12-01T00:00:00Z, the injected clock. */
const NOW = Date.parse('2026-12-01T00:00:00Z');

/**
 * A resolver over fake SSM (`params`: path → AMI id; anything else is `ParameterNotFound`) and EC2
 * `DescribeImages` (returns `images`, narrowed by an `image-id` filter when one is given).
 */
function resolver(params: Record<string, string>, images: Image[]) {
  const calls: string[] = [];
  const ssm = {
    send: async (cmd: unknown) => {
      if (!(cmd instanceof GetParameterCommand)) throw new Error('unexpected SSM command');
      const name = cmd.input.Name ?? '';
      calls.push(name);
      const value = params[name];
      if (!value)
        throw Object.assign(new Error(`parameter ${name} not found`), { name: 'ParameterNotFound' });
      return { Parameter: { Name: name, Value: value } };
    },
  } as unknown as SSMClient;
  const ec2 = {
    send: async (cmd: unknown) => {
      if (!(cmd instanceof DescribeImagesCommand)) throw new Error('unexpected EC2 command');
      const ids = cmd.input.Filters?.find((f) => f.Name === 'image-id')?.Values;
      return { Images: ids ? images.filter((i) => ids.includes(i.ImageId ?? '')) : images };
    },
  } as unknown as EC2Client;
  return { r: new AMIResolver({ ec2, ssm, now: () => NOW }), calls };
}

describe('AMIResolver alias version gates (upstream amifamily al2/windows)', () => {
  it('refuses AL2 aliases on EKS 1.33+ without reading SSM; al2 on 1.32 resolves', async () => {
    const { r, calls } = resolver({}, []);
    expect(await r.resolve(cls([{ alias: 'al2@latest' }]), '1.33')).toEqual({
      amis: [],
      reason: 'UnsupportedAlias',
      message: 'AL2 aliases are no longer supported on EKS 1.33+ (cluster is 1.33); use al2023@latest',
    });
    expect(calls).toEqual([]);

    const path = '/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id';
    const ok = resolver({ [path]: 'ami-0a1b2c3d4e5f60718' }, [
      {
        ImageId: 'ami-0a1b2c3d4e5f60718',
        Name: 'amazon-eks-node-1.32-v20251103',
        Architecture: 'x86_64',
        CreationDate: '2025-11-03T20:12:45.000Z',
      },
    ]);
    const res = await ok.r.resolve(cls([{ alias: 'al2@latest' }]), '1.32');
    expect(res).not.toHaveProperty('reason');
    expect(res.amis.map((a) => a.id)).toEqual(['ami-0a1b2c3d4e5f60718']);
    expect(ok.calls).toContain(path);
  });

  it('refuses windows2025 below EKS 1.35; windows2025 on 1.35 resolves', async () => {
    const { r } = resolver({}, []);
    expect(await r.resolve(cls([{ alias: 'windows2025@latest' }]), '1.34')).toEqual({
      amis: [],
      reason: 'UnsupportedAlias',
      message: 'Windows Server 2025 requires EKS version 1.35 or higher, current version: 1.34',
    });

    const path =
      '/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id';
    const ok = resolver({ [path]: 'ami-0f9e8d7c6b5a40312' }, [
      {
        ImageId: 'ami-0f9e8d7c6b5a40312',
        Name: 'Windows_Server-2025-English-Core-EKS_Optimized-1.35-2026.11.12',
        Architecture: 'x86_64',
        CreationDate: '2026-11-12T08:30:00.000Z',
      },
    ]);
    const res = await ok.r.resolve(cls([{ alias: 'windows2025@latest' }]), '1.35');
    expect(res).not.toHaveProperty('reason');
    expect(res.amis.map((a) => a.id)).toEqual(['ami-0f9e8d7c6b5a40312']);
  });
});

describe('AMIResolver deprecated AMIs (upstream compareAMI / AMI.Deprecated)', () => {
  it('prefers a non-deprecated AMI over a newer deprecated one; a lone deprecated AMI is kept, marked deprecated', async () => {
    const { r } = resolver({}, [
      {
        // newer, but deprecated 2026-11-25 (before the clock's 2026-12-01)
        ImageId: 'ami-0d4c3b2a190817263',
        Name: 'team-al2023-x86_64-2026.11.20',
        Architecture: 'x86_64',
        CreationDate: '2026-11-20T10:00:00.000Z',
        DeprecationTime: '2026-11-25T00:00:00.000Z',
      },
      {
        // older, deprecation still in the future
        ImageId: 'ami-05a6b7c8d9e0f1a2b',
        Name: 'team-al2023-x86_64-2026.10.01',
        Architecture: 'x86_64',
        CreationDate: '2026-10-01T10:00:00.000Z',
        DeprecationTime: '2028-10-01T00:00:00.000Z',
      },
      {
        // the only arm64 image, deprecated
        ImageId: 'ami-0c1d2e3f4a5b6c7d8',
        Name: 'team-al2023-arm64-2026.11.15',
        Architecture: 'arm64',
        CreationDate: '2026-11-15T10:00:00.000Z',
        DeprecationTime: '2026-11-30T23:59:59.000Z',
      },
    ]);
    expect(await r.resolve(cls([{ name: 'team-al2023-*' }]), '1.32')).toEqual({
      amis: [
        {
          id: 'ami-0c1d2e3f4a5b6c7d8',
          name: 'team-al2023-arm64-2026.11.15',
          deprecated: true,
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['arm64'] }],
        },
        {
          id: 'ami-05a6b7c8d9e0f1a2b',
          name: 'team-al2023-x86_64-2026.10.01',
          requirements: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
        },
      ],
    });
  });
});
