import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  al2UserData,
  al2023UserData,
  type BootstrapOptions,
  bottlerocketUserData,
  kubeletLabels,
  parseMime,
  renderUserData,
} from './userdata.ts';

/** Upstream's golden files keep `%s` placeholders for fmt.Sprintf: class name, nodepool key, nodepool name. */
function golden(name: string, ...args: string[]): string {
  let text = readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');
  for (const a of args) text = text.replace('%s', a);
  return text.replaceAll('%%', '%');
}

const labels = {
  'karpenter.k8s.aws/ec2nodeclass': 'default',
  'karpenter.sh/capacity-type': 'on-demand',
  'karpenter.sh/nodepool': 'pool-a',
  'testing/cluster': 'unspecified',
};
const base: BootstrapOptions = {
  clusterName: 'test-cluster',
  clusterEndpoint: 'https://test-cluster',
  caBundle: 'Y2EtYnVuZGxlCg==',
  clusterCIDR: '10.100.0.0/16',
  kubelet: { clusterDNS: ['10.0.100.10'] },
  maxPods: 110,
  labels,
  taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }],
};

describe('user data (golden files from upstream)', () => {
  it('AL2023: nodeadm NodeConfig in MIME multipart, byte for byte', () => {
    expect(al2023UserData(base)).toBe(
      golden('al2023_userdata_unmerged.golden', 'default', 'karpenter.sh/nodepool', 'pool-a'),
    );
  });

  it("AL2023: the user's MIME parts follow Karpenter's NodeConfig", () => {
    const input = golden('al2023_mime_userdata_input.golden');
    const out = al2023UserData({ ...base, customUserData: input });
    const parts = parseMime(out)!;
    expect(parts.map((p) => p.contentType)).toEqual([
      'application/node.eks.aws',
      'application/node.eks.aws',
      'text/x-shellscript; charset="us-ascii"',
    ]);
    expect(parts[0]!.body).toContain('# Karpenter Generated NodeConfig');
    expect(parts[1]!.body).toContain('maxPods: 42');
    expect(parts[2]!.body).toBe('#!/bin/bash\necho "Hello, AL2023!"');
  });

  it('AL2023: soft-eviction grace periods, image GC thresholds and cpuCFSQuota reach the NodeConfig kubelet config', () => {
    const kubelet = {
      clusterDNS: ['10.0.100.10'],
      evictionSoft: { 'memory.available': '5%' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 60,
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      cpuCFSQuota: false,
    };
    const part = parseMime(al2023UserData({ ...base, kubelet }))![0]!;
    const config = (parseYaml(part.body) as { spec: { kubelet: { config: Record<string, unknown> } } }).spec
      .kubelet.config;
    expect(config).toMatchObject({
      evictionSoft: { 'memory.available': '5%' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
      evictionMaxPodGracePeriod: 60,
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      cpuCFSQuota: false,
    });
  });

  it('AL2023: a bare NodeConfig becomes a nodeadm part, a shell script a shell part', () => {
    const yaml =
      'apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 7\n';
    expect(parseMime(al2023UserData({ ...base, customUserData: yaml }))![1]!.contentType).toBe(
      'application/node.eks.aws',
    );
    expect(parseMime(al2023UserData({ ...base, customUserData: '#!/bin/bash\necho hi' }))![1]).toEqual({
      contentType: 'text/x-shellscript; charset="us-ascii"',
      body: '#!/bin/bash\necho hi',
    });
  });

  it('AL2: bootstrap.sh in MIME multipart, byte for byte; user parts come first', () => {
    expect(al2UserData({ ...base, caBundle: 'ca-bundle' })).toBe(
      golden('al2_userdata_unmerged.golden', 'default', 'karpenter.sh/nodepool', 'pool-a'),
    );
    const merged = parseMime(
      al2UserData({ ...base, customUserData: '#!/bin/bash\necho "Running custom user data script"\n' }),
    )!;
    expect(merged[0]!.body).toBe('#!/bin/bash\necho "Running custom user data script"');
    expect(merged[1]!.body).toContain("/etc/eks/bootstrap.sh 'test-cluster'");
  });

  it('Bottlerocket: same TOML settings as upstream (compared parsed)', () => {
    const taints = [
      { key: 'baz', value: 'bin', effect: 'NoExecute' as const },
      { key: 'foo', value: 'bar', effect: 'NoExecute' as const },
      { key: 'karpenter.sh/unregistered', effect: 'NoExecute' as const },
    ];
    const { maxPods: _unused, ...noMaxPods } = base;
    const ours = parseToml(bottlerocketUserData({ ...noMaxPods, taints }));
    const theirs = parseToml(
      golden('br_userdata_unmerged.golden', 'default', 'karpenter.sh/nodepool', 'pool-a'),
    );
    expect(ours).toEqual(theirs);
  });

  it("Bottlerocket: the user's TOML is the base; cluster settings, labels and taints are Karpenter's", () => {
    const taints = [
      { key: 'baz', value: 'bin', effect: 'NoExecute' as const },
      { key: 'foo', value: 'bar', effect: 'NoExecute' as const },
      { key: 'karpenter.sh/unregistered', effect: 'NoExecute' as const },
    ];
    const input = golden('br_userdata_input.golden', 'karpenter.sh/nodepool');
    const ours = parseToml(
      bottlerocketUserData({ ...base, caBundle: 'ca-bundle', taints, customUserData: input }),
    ) as { settings: { kubernetes: Record<string, unknown> } };
    const theirs = parseToml(
      golden('br_userdata_merged.golden', 'default', 'karpenter.sh/nodepool', 'pool-a'),
    );
    // Differences from the upstream file: capenter keeps settings it does not know (upstream's struct drops
    // "unknown-setting"), and marks Bottlerocket nodes karpenter.sh/do-not-sync-taints as upstream does since v1.1.
    expect(ours.settings.kubernetes['unknown-setting']).toBe('unknown');
    delete ours.settings.kubernetes['unknown-setting'];
    delete (ours.settings.kubernetes['node-labels'] as Record<string, string>)[
      'karpenter.sh/do-not-sync-taints'
    ];
    expect(ours).toEqual(theirs);
  });

  it('Bottlerocket: invalid TOML is an error naming spec.userData', () => {
    expect(() => bottlerocketUserData({ ...base, customUserData: '[settings\nx=' })).toThrow(
      /spec\.userData/,
    );
  });

  it('Custom: the user data passes through unchanged', () => {
    expect(renderUserData('Custom', { ...base, customUserData: 'anything\n' })).toBe('anything\n');
    expect(renderUserData('Custom', base)).toBe('');
  });

  it('kubeletLabels drops labels a kubelet may not set on itself', () => {
    expect(
      kubeletLabels({
        'kubernetes.io/arch': 'amd64',
        'node-role.kubernetes.io/worker': '',
        'node.kubernetes.io/instance-type': 'm5.large',
        'foo.kubelet.kubernetes.io/x': 'y',
        'example.com/team': 'a',
        'karpenter.sh/nodepool': 'p',
      }),
    ).toEqual({
      'kubernetes.io/arch': 'amd64',
      'node.kubernetes.io/instance-type': 'm5.large',
      'foo.kubelet.kubernetes.io/x': 'y',
      'example.com/team': 'a',
      'karpenter.sh/nodepool': 'p',
    });
  });
});
