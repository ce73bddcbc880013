import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../apis/core.ts';
import { validateObject } from '../apis/validation.ts';
import { runConvert } from './convert.ts';

const dir = join(import.meta.dirname, '../../test/fixtures/vintage');

async function convert(file: string): Promise<{ objects: KubeObject[]; notes: string[]; code: number }> {
  let out = '';
  let err = '';
  const code = await runConvert(
    { filename: [join(dir, file)] },
    { stdout: (t) => (out += t), stderr: (t) => (err += t) },
  );
  const objects = parseAllDocuments(out)
    .map((d) => d.toJS() as KubeObject)
    .filter((o) => o);
  return { objects, notes: err.split('\n').filter((l) => l), code };
}

describe('capenter convert', () => {
  it('turns a v1alpha5 Provisioner + AWSNodeTemplate into a valid v1 NodePool + EC2NodeClass, explaining each change', async () => {
    const r = await convert('v1alpha5.yaml');
    expect(r.code).toBe(0);
    const [np, nc, legacy] = r.objects as Array<KubeObject & { spec: Record<string, never> }>;
    expect(np).toMatchObject({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      spec: {
        template: {
          metadata: { labels: { team: 'web' } },
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
            expireAfter: '2592000s',
            taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }],
          },
        },
        disruption: { consolidationPolicy: 'WhenEmpty', consolidateAfter: '30s' },
        limits: { cpu: '1000' },
        weight: 10,
      },
    });
    expect(nc).toMatchObject({
      apiVersion: 'karpenter.k8s.aws/v1',
      kind: 'EC2NodeClass',
      spec: {
        subnetSelectorTerms: [{ tags: { 'karpenter.sh/discovery': 'my-cluster' } }],
        securityGroupSelectorTerms: [{ id: 'sg-0123' }, { id: 'sg-0456' }],
        amiSelectorTerms: [{ alias: 'bottlerocket@latest' }],
        instanceProfile: 'KarpenterNodeInstanceProfile-my-cluster',
        kubelet: { maxPods: 110 },
      },
    });
    expect(validateObject(np!).ok).toBe(true);
    expect(validateObject(nc!).ok).toBe(true);
    expect(r.notes).toContain(
      'Provisioner/default: spec.ttlSecondsAfterEmpty: now spec.disruption.consolidationPolicy: WhenEmpty + consolidateAfter',
    );
    expect(r.notes).toContain(
      'Provisioner/default: spec.kubeletConfiguration: moved to the EC2NodeClass: set spec.kubelet on EC2NodeClass "default" (containerRuntime is gone: containerd only)',
    );
    expect(legacy?.metadata?.name).toBe('legacy');
    expect(r.notes.find((n) => n.startsWith('AWSNodeTemplate/legacy: spec.launchTemplate:'))).toContain(
      'launch templates were removed in v1beta1',
    );
    expect(r.notes.some((n) => n.startsWith('EC2NodeClass/legacy') && n.includes('still needed'))).toBe(true);
  });

  it('turns v1beta1 NodePool/EC2NodeClass/NodeClaim into v1, moving kubelet into the EC2NodeClass', async () => {
    const r = await convert('v1beta1.yaml');
    const [np, nc, claim] = r.objects as Array<KubeObject & { spec: Record<string, never> }>;
    expect(np).toMatchObject({
      apiVersion: 'karpenter.sh/v1',
      spec: {
        template: {
          spec: {
            expireAfter: '720h',
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'general' },
          },
        },
        disruption: { consolidationPolicy: 'WhenEmptyOrUnderutilized', consolidateAfter: '0s' },
      },
    });
    expect(
      (np!.spec as unknown as { template: { spec: Record<string, unknown> } }).template.spec.kubelet,
    ).toBeUndefined();
    expect(nc).toMatchObject({
      apiVersion: 'karpenter.k8s.aws/v1',
      spec: { kubelet: { maxPods: 58 }, amiSelectorTerms: [{ alias: 'al2023@latest' }] },
    });
    expect(claim).toMatchObject({ apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim' });
    for (const o of r.objects) {
      const v = validateObject(o);
      expect(v.ok ? [] : v.issues.map((i) => i.message)).toEqual([]);
    }
    expect(r.notes).toContain(
      'NodePool/general: spec.disruption.consolidationPolicy: WhenUnderutilized is now WhenEmptyOrUnderutilized',
    );
  });
});
