import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import {
  al2023UserData,
  type BootstrapOptions,
  bottlerocketSupportsDefaultBind,
  goDuration,
  kubeletExtraArgs,
  kubeletLabels,
  parseMime,
  renderUserData,
} from './userdata.ts';

/**
 * Upstream's golden files (aws/karpenter-provider-aws v1.14.1, commit 1d927085d,
 * `pkg/providers/launchtemplate/testdata/<name>`, copied unchanged to `./testdata/<name>`) keep `%s` placeholders for
 * fmt.Sprintf: class name, nodepool key, nodepool name.
 */
function golden(name: string, ...args: string[]): string {
  let text = readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');
  for (const a of args) text = text.replace('%s', a);
  return text.replaceAll('%%', '%');
}
const expected = (name: string): string => golden(name, 'default', 'karpenter.sh/nodepool', 'pool-a');
/** Upstream's `ExpectLaunchTemplatesCreatedWithUserData` compares with every newline removed. */
const noNewlines = (s: string): string => s.replaceAll('\n', '');

const unregistered = { key: 'karpenter.sh/unregistered', effect: 'NoExecute' as const };
const labels = {
  'karpenter.k8s.aws/ec2nodeclass': 'default',
  'karpenter.sh/capacity-type': 'on-demand',
  'karpenter.sh/nodepool': 'pool-a',
  'testing/cluster': 'unspecified',
};
/** Upstream's launch template suite: cluster, CA `Y2EtYnVuZGxlCg==`, kube-dns 10.0.100.10, maxPods 110. */
const base: BootstrapOptions = {
  clusterName: 'test-cluster',
  clusterEndpoint: 'https://test-cluster',
  caBundle: 'Y2EtYnVuZGxlCg==',
  clusterCIDR: '10.100.0.0/16',
  kubeDNSIP: '10.0.100.10',
  kubelet: { maxPods: 110 },
  maxPods: 110,
  labels,
  taints: [unregistered],
};

describe('AL2023 user data (upstream golden files)', () => {
  it('no user data: nodeadm NodeConfig in MIME multipart, byte for byte (al2023_userdata_unmerged.golden)', () => {
    expect(renderUserData('AL2023', base)).toBe(expected('al2023_userdata_unmerged.golden'));
  });

  for (const kind of ['mime', 'yaml', 'shell']) {
    it(`${kind} user data: the user's parts, then Karpenter's NodeConfig (al2023_${kind}_userdata_merged.golden)`, () => {
      const out = renderUserData('AL2023', {
        ...base,
        customUserData: golden(`al2023_${kind}_userdata_input.golden`),
      });
      expect(noNewlines(out)).toBe(noNewlines(expected(`al2023_${kind}_userdata_merged.golden`)));
    });
  }

  it('the MIME input keeps its parts in order, Karpenter last', () => {
    const out = renderUserData('AL2023', {
      ...base,
      customUserData: golden('al2023_mime_userdata_input.golden'),
    });
    const parts = parseMime(out)!;
    expect(parts.map((p) => p.contentType)).toEqual([
      'application/node.eks.aws',
      'text/x-shellscript; charset="us-ascii"',
      'application/node.eks.aws',
    ]);
    expect(parts[0]!.body).toContain('maxPods: 42');
    expect(parts[1]!.body).toBe('#!/bin/bash\necho "Hello, AL2023!"');
    expect(parts[2]!.body).toContain('# Karpenter Generated NodeConfig');
  });

  it('every spec.kubelet field reaches spec.kubelet.config as upstream marshals v1.KubeletConfiguration (sorted as sigs.k8s.io/yaml writes them)', () => {
    const out = al2023UserData({
      ...base,
      instanceStorePolicy: 'RAID0',
      kubelet: {
        clusterDNS: ['10.0.0.10'],
        maxPods: 58,
        podsPerCore: 4,
        kubeReserved: { cpu: '100m', memory: '512Mi' },
        systemReserved: { memory: '256Mi' },
        evictionHard: { 'memory.available': '5%' },
        evictionSoft: { 'nodefs.available': '10%' },
        evictionSoftGracePeriod: { 'nodefs.available': '90s' },
        evictionMaxPodGracePeriod: 60,
        imageGCHighThresholdPercent: 85,
        imageGCLowThresholdPercent: 80,
        cpuCFSQuota: false,
        containerLogMaxSize: '50Mi',
        topologyManagerPolicy: 'single-numa-node',
      },
      taints: [{ key: 'team', value: 'a', effect: 'NoSchedule' }, unregistered],
    });
    const nodeConfig = parseMime(out)![0]!.body;
    expect(nodeConfig).toContain(
      [
        '  instance:',
        '    localStorage:',
        '      strategy: RAID0',
        '  kubelet:',
        '    config:',
        '      clusterDNS:',
        '      - 10.0.0.10',
        '      cpuCFSQuota: false',
        '      evictionHard:',
        '        memory.available: 5%',
        '      evictionMaxPodGracePeriod: 60',
        '      evictionSoft:',
        '        nodefs.available: 10%',
        '      evictionSoftGracePeriod:',
        '        nodefs.available: 1m30s',
        '      imageGCHighThresholdPercent: 85',
        '      imageGCLowThresholdPercent: 80',
        '      kubeReserved:',
        '        cpu: 100m',
        '        memory: 512Mi',
        '      maxPods: 58',
        '      podsPerCore: 4',
        '      registerWithTaints:',
        '      - effect: NoSchedule',
        '        key: team',
        '        value: a',
        '      - effect: NoExecute',
        '        key: karpenter.sh/unregistered',
        '      systemReserved:',
        '        memory: 256Mi',
        '    flags:',
      ].join('\n'),
    );
    // fields outside upstream's v1.KubeletConfiguration are not marshalled (the CRD schema refuses them anyway)
    expect(nodeConfig).not.toContain('containerLogMaxSize');
    expect(nodeConfig).not.toContain('topologyManagerPolicy');
  });

  it('an eviction grace period that is not a duration is refused naming the field; empty fields are left out', () => {
    expect(() =>
      renderUserData('AL2023', {
        ...base,
        kubelet: {
          evictionSoft: { 'memory.available': '1Gi' },
          evictionSoftGracePeriod: { 'memory.available': 'soon' },
        },
      }),
    ).toThrow(
      'EC2NodeClass spec.kubelet.evictionSoftGracePeriod: "soon" is not a duration; use a value such as "1m30s" or "90s"',
    );
    const nodeConfig = parseMime(
      al2023UserData({ ...base, kubelet: { clusterDNS: [], kubeReserved: {}, maxPods: 0 } }),
    )![0]!.body;
    expect(nodeConfig).not.toContain('clusterDNS');
    expect(nodeConfig).not.toContain('kubeReserved');
    expect(nodeConfig).toContain('      maxPods: 0\n');
  });

  it("a class's clusterDNS wins over the kube-dns IP", () => {
    const out = renderUserData('AL2023', { ...base, kubelet: { clusterDNS: ['169.254.20.10'] } });
    expect(out).toContain('      clusterDNS:\n      - 169.254.20.10\n');
    expect(out).not.toContain('10.0.100.10');
  });
});

describe('AL2 user data (upstream golden files)', () => {
  it('no user data: bootstrap.sh in MIME multipart, byte for byte (al2_userdata_unmerged.golden)', () => {
    expect(renderUserData('AL2', base)).toBe(expected('al2_userdata_unmerged.golden'));
  });

  for (const input of [
    'al2_userdata_input.golden',
    'al2_userdata_content_type_first_input.golden',
    'al2_no_mime_userdata_input.golden',
  ]) {
    it(`${input}: user parts first, then bootstrap.sh (al2_userdata_merged.golden)`, () => {
      const out = renderUserData('AL2', { ...base, customUserData: golden(input) });
      expect(noNewlines(out)).toBe(noNewlines(expected('al2_userdata_merged.golden')));
    });
  }
});

describe('Windows user data (upstream golden files)', () => {
  const windows: BootstrapOptions = {
    ...base,
    labels: { ...labels, 'karpenter.sh/capacity-type': 'spot' },
  };

  for (const family of ['Windows2019', 'Windows2022', 'Windows2025'] as const) {
    it(`${family}, no user data: the EKS bootstrap PowerShell, byte for byte (windows_userdata_unmerged.golden)`, () => {
      // Upstream's script ends at `</powershell>`; the golden file adds the file's final newline.
      expect(renderUserData(family, windows)).toBe(
        expected('windows_userdata_unmerged.golden').replace(/\n$/, ''),
      );
    });
  }

  it("the user's script runs first, inside the same <powershell> block (windows_userdata_merged.golden)", () => {
    const out = renderUserData('Windows2022', {
      ...windows,
      customUserData: golden('windows_userdata_input.golden'),
    });
    expect(noNewlines(out)).toBe(noNewlines(expected('windows_userdata_merged.golden')));
    expect(out.startsWith('<powershell>\nWrite-Host "Running custom user data script"\n')).toBe(true);
  });

  it("a Windows NodeClaim's labels, taints and kubelet settings reach -KubeletExtraArgs", () => {
    const out = renderUserData('Windows2022', {
      ...windows,
      labels: { 'team.example.com/owner': 'payments', 'karpenter.sh/nodepool': 'win' },
      taints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }, unregistered],
      maxPods: 29,
      kubelet: { kubeReserved: { cpu: '80m' }, evictionHard: { 'memory.available': '500Mi' } },
    });
    expect(out).toContain(
      ' -KubeletExtraArgs \'--node-labels="karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=win,' +
        'team.example.com/owner=payments" --register-with-taints="os=windows:NoSchedule,karpenter.sh/unregistered:NoExecute"' +
        ' --max-pods=29 --kube-reserved="cpu=80m" --eviction-hard="memory.available<500Mi"\'' +
        " -DNSClusterIP '10.0.100.10'\n</powershell>",
    );
  });
});

describe('Bottlerocket user data (upstream golden files)', () => {
  const taints = [
    { key: 'baz', value: 'bin', effect: 'NoExecute' as const },
    { key: 'foo', value: 'bar', effect: 'NoExecute' as const },
    unregistered,
  ];

  it('no user data: byte for byte as br_userdata_unmerged.golden', () => {
    expect(renderUserData('Bottlerocket', { ...base, taints })).toBe(expected('br_userdata_unmerged.golden'));
  });

  it("the user's settings are the base; cluster settings, labels and taints are Karpenter's (br_userdata_merged.golden)", () => {
    const input = golden('br_userdata_input.golden', 'karpenter.sh/nodepool');
    // capenter keeps settings.kubernetes keys it does not model, after the modelled ones (upstream's strict decoder
    // drops "unknown-setting" and "labels" and logs an error); without them the output is upstream's, byte for byte.
    const withUnknown = renderUserData('Bottlerocket', { ...base, taints, customUserData: input });
    expect(withUnknown).toContain("max-pods = 110\nunknown-setting = 'unknown'\n");
    expect(withUnknown).toContain("\n\n[settings.kubernetes.labels]\nreplace = 'me'\n");
    const known = input
      .replace('"unknown-setting" = "unknown"\n', '')
      .replace('[settings.kubernetes.labels]\n"replace" = "me"\n\n', '');
    expect(renderUserData('Bottlerocket', { ...base, taints, customUserData: known })).toBe(
      expected('br_userdata_merged.golden'),
    );
  });

  it('instanceStorePolicy RAID0: a bootstrap command mounts the instance stores as ephemeral storage', () => {
    const render = (amiVersion?: string) =>
      (
        parseToml(
          renderUserData('Bottlerocket', {
            ...base,
            instanceStorePolicy: 'RAID0',
            ...(amiVersion ? { amiVersion } : {}),
          }),
        ) as { settings: Record<string, unknown> }
      ).settings['bootstrap-commands'];
    expect(render('v1.45.0')).toEqual({
      '000-mount-instance-storage': {
        commands: [
          ['apiclient', 'ephemeral-storage', 'init'],
          [
            'apiclient',
            'ephemeral-storage',
            'bind',
            '--dirs',
            '/var/lib/containerd',
            '/var/lib/kubelet',
            '/var/log/pods',
          ],
        ],
        mode: 'always',
        essential: true,
      },
    });
    expect(render('latest')).toEqual({
      '000-mount-instance-storage': {
        commands: [
          ['apiclient', 'ephemeral-storage', 'init'],
          ['apiclient', 'ephemeral-storage', 'bind'],
        ],
        mode: 'always',
        essential: true,
      },
    });
    expect(renderUserData('Bottlerocket', base)).not.toContain('bootstrap-commands');
    // go-toml's layout: the map key bootstrap-commands sorts before kubernetes; struct fields in declaration order.
    expect(
      renderUserData('Bottlerocket', { ...base, instanceStorePolicy: 'RAID0', amiVersion: 'latest' }),
    ).toMatch(
      /^\[settings\]\n\[settings\.bootstrap-commands\]\n\[settings\.bootstrap-commands\.000-mount-instance-storage\]\n/,
    );
    expect(
      renderUserData('Bottlerocket', { ...base, instanceStorePolicy: 'RAID0', amiVersion: 'latest' }),
    ).toContain(
      "commands = [['apiclient', 'ephemeral-storage', 'init'], ['apiclient', 'ephemeral-storage', 'bind']]\n" +
        "mode = 'always'\nessential = true\n\n[settings.kubernetes]\napi-server = 'https://test-cluster'\n",
    );
  });

  it('kubelet fields as upstream names them (strings for image GC thresholds)', () => {
    const kube = (
      parseToml(
        renderUserData('Bottlerocket', {
          ...base,
          kubelet: {
            evictionSoft: { 'memory.available': '1Gi' },
            evictionSoftGracePeriod: { 'memory.available': '90s' },
            evictionMaxPodGracePeriod: 30,
            imageGCHighThresholdPercent: 85,
            imageGCLowThresholdPercent: 60,
            cpuCFSQuota: true,
            systemReserved: { cpu: '100m' },
          },
        }),
      ) as { settings: { kubernetes: Record<string, unknown> } }
    ).settings.kubernetes;
    expect(kube['eviction-soft']).toEqual({ 'memory.available': '1Gi' });
    expect(kube['eviction-soft-grace-period']).toEqual({ 'memory.available': '1m30s' });
    expect(kube['eviction-max-pod-grace-period']).toBe(30);
    expect(kube['image-gc-high-threshold-percent']).toBe('85');
    expect(kube['image-gc-low-threshold-percent']).toBe('60');
    expect(kube['cpu-cfs-quota-enforced']).toBe(true);
    expect(kube['system-reserved']).toEqual({ cpu: '100m' });
    expect(kube['cluster-dns-ip']).toBe('10.0.100.10');
    expect(kube['node-labels']).toMatchObject({ 'karpenter.sh/do-not-sync-taints': 'true' });
  });

  it("strings with a quote are basic strings, keys with dots literal keys (go-toml's rules)", () => {
    const out = renderUserData('Bottlerocket', { ...base, labels: { 'example.com/team': "o'brien" } });
    expect(out).toContain(`'example.com/team' = "o'brien"\n`);
  });

  it('invalid TOML is an error naming spec.userData', () => {
    expect(() => renderUserData('Bottlerocket', { ...base, customUserData: '[settings\nx=' })).toThrow(
      /spec\.userData/,
    );
  });

  it('default bind from Bottlerocket v1.46.0 on', () => {
    expect(bottlerocketSupportsDefaultBind('v1.46.0')).toBe(true);
    expect(bottlerocketSupportsDefaultBind('1.45.2')).toBe(false);
    expect(bottlerocketSupportsDefaultBind('v2.0.0')).toBe(true);
    expect(bottlerocketSupportsDefaultBind(undefined)).toBe(false);
  });
});

describe('shared pieces', () => {
  it('Custom: the user data passes through unchanged, without the do-not-sync-taints label', () => {
    expect(renderUserData('Custom', { ...base, customUserData: 'anything\n' })).toBe('anything\n');
    expect(renderUserData('Custom', base)).toBe('');
  });

  it('kubeletExtraArgs: every flag in upstream order', () => {
    expect(
      kubeletExtraArgs({
        ...base,
        labels: { a: '1' },
        taints: [],
        maxPods: 17,
        kubelet: {
          podsPerCore: 2,
          systemReserved: { memory: '1Gi', cpu: '1' },
          kubeReserved: { cpu: '2' },
          evictionHard: { 'memory.available': '5%' },
          evictionSoft: { 'memory.available': '10%' },
          evictionSoftGracePeriod: { 'memory.available': '2m' },
          evictionMaxPodGracePeriod: 45,
          imageGCHighThresholdPercent: 90,
          imageGCLowThresholdPercent: 70,
          cpuCFSQuota: true,
        },
      }),
    ).toEqual([
      '--node-labels="a=1"',
      '--register-with-taints=""',
      '--max-pods=17',
      '--pods-per-core=2',
      '--system-reserved="cpu=1,memory=1Gi"',
      '--kube-reserved="cpu=2"',
      '--eviction-hard="memory.available<5%"',
      '--eviction-soft="memory.available<10%"',
      '--eviction-soft-grace-period="memory.available=2m0s"',
      '--eviction-max-pod-grace-period=45',
      '--image-gc-high-threshold=90',
      '--image-gc-low-threshold=70',
      '--cpu-cfs-quota=true',
    ]);
  });

  it("goDuration prints as Go's time.Duration.String()", () => {
    expect(goDuration('90s', 'f')).toBe('1m30s');
    expect(goDuration('2h', 'f')).toBe('2h0m0s');
    expect(goDuration('1.5s', 'f')).toBe('1.5s');
    expect(goDuration('500ms', 'f')).toBe('500ms');
    expect(goDuration('0s', 'f')).toBe('0s');
    expect(() => goDuration('soon', 'spec.kubelet.evictionSoftGracePeriod')).toThrow(
      /spec\.kubelet\.evictionSoftGracePeriod: "soon" is not a duration/,
    );
  });

  it('kubeletLabels drops every kubernetes.io / k8s.io label, as upstream RejectForbiddenLabels', () => {
    expect(
      kubeletLabels({
        'kubernetes.io/os': 'windows',
        'node.kubernetes.io/windows-build': '10.0.20348',
        'node-restriction.kubernetes.io/x': 'y',
        'example.k8s.io/z': 'w',
        'example.com/team': 'a',
        'karpenter.sh/nodepool': 'p',
      }),
    ).toEqual({ 'example.com/team': 'a', 'karpenter.sh/nodepool': 'p' });
  });
});
