import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../apis/core.ts';
import { validateObject } from '../apis/validation.ts';
import { convertObjects, runConvert } from './convert.ts';

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

  it('splits an EC2NodeClass shared by v1beta1 NodePools with different kubelet settings, one class per kubelet', async () => {
    const r = await convert('v1beta1-shared-class.yaml');
    expect(r.code).toBe(0);
    type Spec = { spec: { template: { spec: { nodeClassRef: { name: string } } } } };
    const pools = r.objects.filter((o) => o.kind === 'NodePool') as Array<KubeObject & Spec>;
    const classes = r.objects.filter((o) => o.kind === 'EC2NodeClass') as Array<
      KubeObject & { spec: { kubelet?: unknown } }
    >;
    expect(classes.map((c) => [c.metadata?.name, c.spec.kubelet])).toEqual([
      ['general', { maxPods: 110, systemReserved: { cpu: '100m' } }],
      ['general-batch', { maxPods: 50 }],
    ]);
    expect(pools.map((p) => [p.metadata?.name, p.spec.template.spec.nodeClassRef.name])).toEqual([
      ['web', 'general'],
      ['batch', 'general-batch'],
      ['api', 'general'],
    ]);
    // upstream's conversion webhook keeps the v1beta1 kubelet as JSON in this annotation
    expect(pools[1]?.metadata?.annotations).toEqual({
      'compatibility.karpenter.sh/v1beta1-kubelet-conversion': '{"maxPods":50}',
    });
    const claim = r.objects.find((o) => o.kind === 'NodeClaim') as KubeObject & {
      spec: { nodeClassRef: { name: string } };
    };
    expect(claim.spec.nodeClassRef.name).toBe('general-batch');
    expect(r.notes).toContain(
      'EC2NodeClass/general: spec.kubelet: split into 2 EC2NodeClasses ("general" for NodePool/web, NodePool/api; "general-batch" for NodePool/batch): these pools set different kubelet settings and v1 keeps kubelet on the EC2NodeClass; the re-pointed pools\' nodes will drift and be replaced once',
    );
    expect(r.notes).toContain(
      'NodePool/batch: nodeClassRef.name: now "general-batch" (was "general"): pools sharing "general" set different kubelet settings, so each kubelet got its own EC2NodeClass',
    );
    for (const o of r.objects) {
      const v = validateObject(o);
      expect(v.ok ? [] : v.issues.map((i) => i.message)).toEqual([]);
    }
  });

  it('keeps one EC2NodeClass when the pools sharing it set the same kubelet', async () => {
    const r = await convert('v1beta1.yaml');
    expect(r.objects.filter((o) => o.kind === 'EC2NodeClass').map((o) => o.metadata?.name)).toEqual([
      'general',
    ]);
    expect(r.notes.some((n) => n.includes('split into'))).toBe(false);
  });

  it('splits a v1alpha5 AWSNodeTemplate the same way, avoiding names already taken', () => {
    const provisioner = (name: string, maxPods: number) =>
      ({
        apiVersion: 'karpenter.sh/v1alpha5',
        kind: 'Provisioner',
        metadata: { name },
        spec: {
          providerRef: { name: 'tpl' },
          kubeletConfiguration: { maxPods, containerRuntime: 'containerd' },
        },
      }) as unknown as KubeObject;
    const r = convertObjects(
      [
        provisioner('a', 110),
        provisioner('b', 30),
        {
          apiVersion: 'karpenter.k8s.aws/v1alpha1',
          kind: 'AWSNodeTemplate',
          metadata: { name: 'tpl' },
          spec: {
            subnetSelector: { 'karpenter.sh/discovery': 'c' },
            securityGroupSelector: { 'karpenter.sh/discovery': 'c' },
          },
        } as unknown as KubeObject,
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tpl-b' } } as KubeObject,
      ],
      validateObject,
    );
    const classes = r.objects.filter((o) => o.kind === 'EC2NodeClass') as Array<
      KubeObject & { spec: { kubelet?: unknown } }
    >;
    expect(classes.map((c) => [c.metadata?.name, c.spec.kubelet])).toEqual([
      ['tpl', { maxPods: 110 }],
      ['tpl-b-2', { maxPods: 30 }],
    ]);
    const pools = r.objects.filter((o) => o.kind === 'NodePool') as Array<
      KubeObject & { spec: { template: { spec: { nodeClassRef: { name: string } } } } }
    >;
    expect(pools.map((p) => p.spec.template.spec.nodeClassRef.name)).toEqual(['tpl', 'tpl-b-2']);
    expect(r.notes.map((n) => `${n.object}: ${n.field}: ${n.message}`)).toContain(
      'Provisioner/b: spec.kubeletConfiguration: moved to the EC2NodeClass: set spec.kubelet on EC2NodeClass "tpl-b-2" (containerRuntime is gone: containerd only)',
    );
  });
});
