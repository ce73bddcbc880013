/**
 * NodeOverlay (alpha, `NodeOverlay` feature gate) end to end through `capenter simulate` (in-process
 * `runSimulate`): the overlaid price and capacity reach the plan with the gate on; with the gate off (the
 * upstream default) the overlays are ignored and a notice says so; a same-weight conflict is reported.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type InstanceTypeJSON, runInstanceTypes } from '../src/cli/instance-types.ts';
import { runSimulate, type SimulateCommandOptions } from '../src/cli/simulate.ts';
import type { SimulationJSON } from '../src/simulate/output.ts';

const NODECLASS = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`;
const POOL = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large, t3.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
`;
const pod = (name: string, extra = '') => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  containers:
    - name: c
      image: nginx
      resources:
        requests: {cpu: "1", memory: 1Gi${extra}}
`;
const overlay = (name: string, spec: string) => `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: ${name}}
spec:
${spec}`;

function write(...docs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-overlay-'));
  const file = join(dir, 'input.yaml');
  writeFileSync(file, docs.join('---\n'));
  return file;
}

async function run(file: string, extra: Partial<SimulateCommandOptions> = {}) {
  let out = '';
  let err = '';
  const code = await runSimulate(
    { filenames: [file], output: 'json', ...extra },
    { stdout: (t) => (out += t), stderr: (t) => (err += t) },
  );
  return { code, err, json: JSON.parse(out) as SimulationJSON };
}

const CHEAP_M5 = overlay(
  'cheaper-m5',
  `  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  priceAdjustment: "-30%"
`,
);

describe('capenter simulate with NodeOverlays', () => {
  it('gate on: m5.large on-demand $0.096 with "-30%" costs $0.0672 and becomes the cheapest choice', async () => {
    const base = await run(write(NODECLASS, POOL, pod('a')));
    // without overlays the cheapest type for 1 CPU / 1Gi here is t3.large ($0.0832)
    expect(base.json.nodeClaims.map((n) => [n.instanceType, n.priceUSDPerHour])).toEqual([
      ['t3.large', 0.0832],
    ]);
    const r = await run(write(NODECLASS, POOL, CHEAP_M5, pod('a')), { featureGates: 'NodeOverlay=true' });
    expect(r.code).toBe(0);
    expect(r.json.nodeClaims.map((n) => [n.instanceType, n.priceUSDPerHour])).toEqual([['m5.large', 0.0672]]);
  });

  it('gate off (default): the overlays are ignored, visibly', async () => {
    const r = await run(write(NODECLASS, POOL, CHEAP_M5, pod('a')));
    expect(r.code).toBe(0);
    expect(r.json.nodeClaims.map((n) => [n.instanceType, n.priceUSDPerHour])).toEqual([['t3.large', 0.0832]]);
    expect(r.json.notices.join('\n')).toContain(
      '1 NodeOverlay(s) ignored (cheaper-m5): the NodeOverlay feature gate is off',
    );
  });

  it('capacity smarter-devices/fuse: 1 makes a pod requesting it schedulable on matching types only', async () => {
    const fuse = overlay(
      'fuse',
      `  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
  capacity: {smarter-devices/fuse: "1"}
`,
    );
    const file = write(NODECLASS, POOL, fuse, pod('f', ', smarter-devices/fuse: "1"'));
    const off = await run(file);
    expect(off.json.nodeClaims).toEqual([]);
    expect(off.json.unschedulable.map((u) => u.pod)).toEqual(['default/f']);
    const on = await run(file, { featureGates: 'NodeOverlay=true' });
    expect(on.json.nodeClaims.map((n) => [n.instanceType, n.priceUSDPerHour])).toEqual([['m5.large', 0.096]]);
  });

  it('same-weight conflict: the later-evaluated overlay is not applied and a notice names it', async () => {
    const a = overlay(
      'alpha',
      `  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  price: "0.01"
  weight: 5
`,
    );
    const b = overlay(
      'beta',
      `  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  price: "0.05"
  weight: 5
`,
    );
    const r = await run(write(NODECLASS, POOL, a, b, pod('a')), { featureGates: 'NodeOverlay=true' });
    // beta (later name) is evaluated first and applied; alpha conflicts
    expect(r.json.nodeClaims.map((n) => [n.instanceType, n.priceUSDPerHour])).toEqual([['m5.large', 0.05]]);
    expect(r.json.notices.join('\n')).toContain(
      'NodeOverlay "alpha" is not applied: ValidationSucceeded=False, reason Conflict (conflict with another overlay)',
    );
  });

  it('invalid overlays and gates are refused with the field and the fix', async () => {
    const bad = overlay(
      'both',
      `  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  price: "0.01"
  priceAdjustment: "-10%"
`,
    );
    const r = await run(write(NODECLASS, POOL, bad, pod('a')), { featureGates: 'NodeOverlay=true' });
    expect(r.code).toBe(2);
    expect(r.err).toContain("cannot set both 'price' and 'priceAdjustment'");
    let err = '';
    const code = await runSimulate(
      { filenames: [write(NODECLASS, POOL, pod('a'))], featureGates: 'NodeOverlays=true' },
      { stdout: () => {}, stderr: (t) => (err += t) },
    );
    expect(code).toBe(2);
    expect(err).toContain('error: --feature-gates: unknown feature gate "NodeOverlays"');
  });
});

describe('capenter instance-types with NodeOverlays', () => {
  const price = overlay(
    'cheaper-m5',
    `  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  priceAdjustment: "-10%"
`,
  );
  const fuse = overlay(
    'fuse',
    `  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
  capacity: {smarter-devices/fuse: "1"}
`,
  );
  async function list(featureGates?: string) {
    let out = '';
    let err = '';
    const code = await runInstanceTypes(
      {
        filenames: [write(NODECLASS, POOL, price, fuse)],
        output: 'json',
        ...(featureGates ? { featureGates } : {}),
      },
      { stdout: (t) => (out += t), stderr: (t) => (err += t) },
    );
    return { code, err, rows: JSON.parse(out) as InstanceTypeJSON[] };
  }
  it('gate on: m5.large on-demand shows $0.0864 (was $0.096) and smarter-devices/fuse 1 on m5 types only', async () => {
    const { code, rows } = await list('NodeOverlay=true');
    expect(code).toBe(0);
    const m5 = rows.find((r) => r.name === 'm5.large')!;
    expect(m5.offerings.map((o) => [o.zone, o.capacityType, o.priceUSDPerHour, o.priceSource])).toEqual([
      ['us-east-1a', 'on-demand', 0.0864, 'node-overlay'],
    ]);
    expect(m5.capacity['smarter-devices/fuse']).toBe('1');
    expect(m5.allocatable['smarter-devices/fuse']).toBe('1');
    expect(rows.find((r) => r.name === 'c5.large')!.capacity['smarter-devices/fuse']).toBeUndefined();
  });
  it('gate off: catalog values and a note that the overlays are ignored', async () => {
    const { code, err, rows } = await list();
    expect(code).toBe(0);
    expect(rows.find((r) => r.name === 'm5.large')!.offerings[0]!.priceUSDPerHour).toBe(0.096);
    expect(err).toContain('2 NodeOverlay(s) ignored (cheaper-m5, fuse): the NodeOverlay feature gate is off');
  });
});
