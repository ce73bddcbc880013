import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type InstanceTypeJSON, runInstanceTypes } from './instance-types.ts';

const NODECLASS = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-cluster-1
  amiSelectorTerms:
  - alias: al2023@latest
  subnetSelectorTerms:
  - tags:
      karpenter.sh/discovery: cluster-1
  securityGroupSelectorTerms:
  - tags:
      karpenter.sh/discovery: cluster-1
  kubelet:
    maxPods: 20
`;
const NODEPOOL = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
      - key: karpenter.k8s.aws/instance-family
        operator: In
        values: [m5]
      - key: karpenter.k8s.aws/instance-cpu
        operator: Lt
        values: ["9"]
      - key: karpenter.sh/capacity-type
        operator: In
        values: [on-demand]
      - key: topology.kubernetes.io/zone
        operator: In
        values: [us-east-1a, us-east-1b]
`;

async function run(args: Parameters<typeof runInstanceTypes>[0]) {
  let out = '';
  let err = '';
  const code = await runInstanceTypes(args, { stdout: (t) => (out += t), stderr: (t) => (err += t) });
  return { code, out, err };
}

function manifests(...docs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-it-'));
  const file = join(dir, 'pool.yaml');
  writeFileSync(file, docs.join('---\n'));
  return file;
}

describe('capenter instance-types', () => {
  it('filters by the NodePool requirements and applies the EC2NodeClass kubelet (JSON)', async () => {
    const { code, out, err } = await run({ filenames: [manifests(NODECLASS, NODEPOOL)], output: 'json' });
    expect(err).toContain('Spot prices are estimates');
    expect(code).toBe(0);
    const list = JSON.parse(out) as InstanceTypeJSON[];
    expect(list.map((t) => t.name)).toEqual(['m5.2xlarge', 'm5.large', 'm5.xlarge']);
    const m5 = list.find((t) => t.name === 'm5.large')!;
    expect(m5.nodePool).toBe('general');
    expect(m5.allocatable).toEqual({
      cpu: '1930m',
      'ephemeral-storage': '17Gi',
      memory: '6903Mi',
      pods: '20',
      'vpc.amazonaws.com/pod-eni': '9',
    });
    expect(m5.capacity.memory).toBe('7577Mi');
    expect(m5.labels['karpenter.k8s.aws/instance-family']).toBe('m5');
    expect(m5.offerings).toEqual([
      {
        zone: 'us-east-1a',
        capacityType: 'on-demand',
        priceUSDPerHour: 0.096,
        available: true,
        priceSource: 'on-demand',
      },
      {
        zone: 'us-east-1b',
        capacityType: 'on-demand',
        priceUSDPerHour: 0.096,
        available: true,
        priceSource: 'on-demand',
      },
    ]);
  });

  it('lists every type of the region without -f, with spot estimates', async () => {
    const { code, out } = await run({ region: 'eu-central-1', output: 'json' });
    expect(code).toBe(0);
    const list = JSON.parse(out) as InstanceTypeJSON[];
    expect(list).toHaveLength(1139);
    const c6g = list.find((t) => t.name === 'c6g.large')!;
    expect(c6g.allocatable.memory).toBe('3055Mi');
    expect(c6g.offerings.some((o) => o.capacityType === 'spot' && o.priceSource === 'spot-estimate')).toBe(
      true,
    );
    expect(c6g.offerings.find((o) => o.capacityType === 'on-demand')!.priceSource).toBe('on-demand-fallback');
  });

  it('prints a table', async () => {
    const { code, out } = await run({ filenames: [manifests(NODECLASS, NODEPOOL)] });
    expect(code).toBe(0);
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(
      /^NODEPOOL\s+NAME\s+VCPU\s+MEMORY\s+PODS\s+ALLOC CPU\s+ALLOC MEMORY\s+ON-DEMAND \$\/H/,
    );
    expect(lines.find((l) => l.includes('m5.large'))).toMatch(
      /general\s+m5\.large\s+2\s+8\.0Gi\s+20\s+1930m\s+6903Mi\s+0\.0960\s+-\s+ab$/,
    );
    expect(lines.at(-1)).toBe('3 instance types');
  });

  it('orders the table by family, then by size (c3.large before c3.2xlarge)', async () => {
    const { code, out } = await run({});
    expect(code).toBe(0);
    const c3 = out
      .split('\n')
      .map((l) => l.split(/\s+/)[0] ?? '')
      .filter((n) => n.startsWith('c3.'));
    expect(c3).toEqual(['c3.large', 'c3.xlarge', 'c3.2xlarge', 'c3.4xlarge', 'c3.8xlarge']);
  });

  it('rejects a NodePool whose EC2NodeClass is missing, naming the field', async () => {
    const { code, err } = await run({ filenames: [manifests(NODEPOOL)] });
    expect(code).toBe(2);
    expect(err).toContain(
      'NodePool "general": spec.template.spec.nodeClassRef.name "default" names no EC2NodeClass',
    );
  });

  it('accepts a NodePool of a KWOKNodeClass (the kwok provider: catalog types, default allocatable)', async () => {
    const kwok =
      'apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: default}\nspec: {}\n';
    const pool = NODEPOOL.replace('group: karpenter.k8s.aws', 'group: karpenter.kwok.sh').replace(
      'kind: EC2NodeClass',
      'kind: KWOKNodeClass',
    );
    const { code, out } = await run({ filenames: [manifests(kwok, pool)], output: 'json' });
    expect(code).toBe(0);
    const rows = JSON.parse(out) as InstanceTypeJSON[];
    // m5 with < 9 vCPUs: large, xlarge, 2xlarge; default AL2023 allocatable (29 pods on m5.large, no maxPods 20)
    expect(rows.map((r) => r.name).sort()).toEqual(['m5.2xlarge', 'm5.large', 'm5.xlarge']);
    expect(rows.find((r) => r.name === 'm5.large')!.allocatable).toMatchObject({ cpu: '1930m', pods: '29' });
    const missing = await run({ filenames: [manifests(pool)] });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('names no KWOKNodeClass in the manifests');
  });

  it('reports invalid manifests with the loader message and exit code 2', async () => {
    const bad = NODECLASS.replace(
      / {2}subnetSelectorTerms:\n {2}- tags:\n {6}karpenter.sh\/discovery: cluster-1\n/,
      '',
    );
    const { code, err } = await run({ filenames: [manifests(bad, NODEPOOL)] });
    expect(code).toBe(2);
    expect(err).toContain('EC2NodeClass "default": spec.subnetSelectorTerms: Required value');
  });

  it('rejects an unsupported region and a bad output format', async () => {
    const r = await run({ region: 'ap-south-1' });
    expect(r.code).toBe(2);
    expect(r.err).toContain('use one of: us-east-1, us-west-2, eu-west-1, eu-central-1');
    expect((await run({ output: 'yaml' })).code).toBe(2);
  });
});
