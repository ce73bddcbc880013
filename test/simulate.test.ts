/**
 * `capenter simulate` end to end: in-process through `runSimulate` (what the CLI action calls), once as a
 * child process through tsx, on the bundled example and on every real manifest set in
 * `test/fixtures/manifests` (vendored from `../shared/data/manifests`), plus invalid input (exit code 2 with the error text).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadManifestPaths } from '../src/apis/load.ts';
import { runSimulate, type SimulateCommandOptions } from '../src/cli/simulate.ts';
import type { SimulationJSON } from '../src/simulate/output.ts';
import { type SimulationResult, simulate } from '../src/simulate/run.ts';
import { daemonOverheadOracle, podRequestsOracle } from './oracles.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const example = join(root, 'examples', 'microservices-demo');
const manifests = join(root, 'test', 'fixtures', 'manifests');

async function run(opts: SimulateCommandOptions, stdin = '') {
  let out = '';
  let err = '';
  const code = await runSimulate(opts, {
    stdout: (t) => {
      out += t;
    },
    stderr: (t) => {
      err += t;
    },
    stdin: async () => stdin,
  });
  return { code, out, err };
}

async function runJSON(filenames: string[], extra: Partial<SimulateCommandOptions> = {}, stdin = '') {
  const r = await run({ filenames, output: 'json', ...extra }, stdin);
  return { ...r, json: JSON.parse(r.out) as SimulationJSON };
}

/** Invariants every plan must satisfy, whatever the input. */
function checkInvariants(result: SimulationResult) {
  for (const plan of result.scheduling.newNodeClaims) {
    expect(plan.instanceTypeOptions.length, `${plan.nodePool} NodeClaim has options`).toBeGreaterThan(0);
    // what the NodeClaim must hold, computed without the scheduler (test/oracles.ts)
    const nodePool = result.built.input.nodePools.find((np) => np.metadata.name === plan.nodePool)!;
    const need = daemonOverheadOracle(nodePool, result.built.input.daemonSets);
    for (const p of plan.pods)
      for (const [k, v] of Object.entries(podRequestsOracle(p))) need[k] = (need[k] ?? 0) + v;
    need.pods = (need.pods ?? 0) + plan.pods.length;
    for (const t of plan.instanceTypeOptions) {
      for (const r of ['cpu', 'memory', 'pods']) {
        expect(
          need[r] ?? 0,
          `${plan.nodePool} option ${t.name}: ${r} requested (pods + daemon overhead) within allocatable`,
        ).toBeLessThanOrEqual(t.allocatable[r] ?? 0);
      }
    }
    const cheapest = Math.min(
      ...plan.instanceTypeOptions.flatMap((t) => t.offerings.map((o) => o.priceUSDPerHour)),
    );
    expect(plan.cheapest.offering.priceUSDPerHour).toBeGreaterThanOrEqual(cheapest);
  }
  const pods = result.placements.map((p) => p.pod);
  expect(new Set(pods).size, 'each pod placed at most once').toBe(pods.length);
  expect(result.placements.length + result.unschedulable.length, 'every pending pod is accounted for').toBe(
    result.built.input.pods.length + result.built.ignored.length,
  );
}

describe('capenter simulate -f examples/microservices-demo', () => {
  it('places all 12 pods plus node-exporter on one c6a.large NodeClaim at $0.0765/h (-o json)', async () => {
    const { code, err, json } = await runJSON([example]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(json.region).toBe('us-east-1');
    expect(json.unschedulable).toEqual([]);
    expect(json.placements).toHaveLength(12);
    expect(json.placements.every((p) => p.target === 'new' && p.node === 'general-purpose-1')).toBe(true);
    expect(json.nodeClaims).toHaveLength(1);
    const nc = json.nodeClaims[0]!;
    expect(nc.nodePool).toBe('general-purpose');
    expect(nc.name).toBe('general-purpose-1');
    // 12 pods: 1570m + node-exporter 112m = 1682m; 1368Mi + 200Mi = 1568Mi; 12 + 1 pods.
    expect(nc.requests).toMatchObject({ cpu: '1682m', memory: '1568Mi', pods: '13' });
    // c6a.large: cheapest c/m/r gen>2 amd64 on-demand type holding 1682m/1568Mi ($0.0765/h, 1930m, 3114Mi, 29 pods).
    expect(nc.instanceType).toBe('c6a.large');
    expect(nc.capacityType).toBe('on-demand');
    expect(nc.priceUSDPerHour).toBe(0.0765);
    expect(nc.allocatable).toMatchObject({ cpu: '1930m', memory: '3114Mi', pods: '29' });
    expect(nc.instanceTypeOptions[0]).toBe('c6a.large');
    expect(nc.instanceTypeOptions).not.toContain('c7a.medium'); // 1 vCPU: 940m < 1682m
    expect(nc.pods).toHaveLength(12);
    expect(json.totals).toEqual({
      nodeClaims: 1,
      priceUSDPerHour: 0.0765,
      priceUSDPerMonth: 55.85,
      cpuUtilization: 0.872, // 1682 / 1930
      memoryUtilization: 0.504, // 1568 / 3114
    });
    expect(json.unknownKinds).toMatchObject({ Service: expect.any(Number) });
  });

  it('every NodeClaim option holds its pods plus the daemon overhead', async () => {
    const loaded = await loadManifestPaths([example]);
    const result = await simulate(loaded, { region: 'us-east-1' });
    checkInvariants(result);
    const plan = result.scheduling.newNodeClaims[0]!;
    expect(plan.daemonOverhead).toMatchObject({ cpu: 112, memory: 200 * 2 ** 20, pods: 1 });
  });

  it('prints the table: one row, totals with $/month, no unschedulable pods', async () => {
    const { code, out } = await run({ filenames: [example] });
    expect(code).toBe(0);
    expect(out).toMatch(/NODECLAIM\s+NODEPOOL\s+INSTANCE TYPE/);
    expect(out).toMatch(
      /general-purpose-1\s+general-purpose\s+c6a\.large\s+\d+\s+us-east-1\w\s+on-demand\s+\$0\.0765\s+12\s+1682m\/1930m\s+1568Mi\/3114Mi/,
    );
    expect(out).toContain('Total: 1 NodeClaim, $0.0765/hour ($55.85/month at 730 h)');
    expect(out).toContain('cpu 87.2%, memory 50.4%');
    expect(out).not.toContain('Unschedulable');
  });

  it('--explain answers why this NodePool and type (next cheaper rejected, with numbers), once per NodeClaim', async () => {
    const { code, out } = await run({ filenames: [example], explain: true });
    expect(code).toBe(0);
    expect(out).not.toMatch(/new nodeclaim #\d/); // the plan's names only
    expect(out).toContain('general-purpose-1: NodePool general-purpose (the only NodePool)');
    expect(out).toContain(
      'c6a.large on-demand in us-east-1a at $0.0765/h: the cheapest of 600 instance type(s) that satisfy the requirements and fit its 12 pod(s)',
    );
    expect(out).toContain(
      'rejected cheaper r7a.medium ($0.0761/h): too small: cpu: need 1682m, have 940m (short 742m); pods: need 13, have 8 (short 5)',
    );
    expect(out).toContain(
      'rejected cheaper t3a.large ($0.0752/h): key "karpenter.k8s.aws/instance-category" value t not in In [c, m, r]',
    );
    expect(out).toContain('Why not a cheaper plan:');
    expect(out).toMatch(/new NodeClaim general-purpose-1 <- 12 pod\(s\): .*default\/frontend-\w+-0/);
    expect(out.match(/general-purpose-1 <-/g)).toHaveLength(1);
  });

  it('--explain says once why a pod is pending', async () => {
    const { out } = await run({
      filenames: [join(root, 'test', 'fixtures', 'start', 'huge-pod.yaml')],
      explain: true,
    });
    expect(out).toContain('Why these pods are pending (1):');
    const reason = 'no instance type has enough resources: pod needs cpu 1000';
    expect(out.split(reason)).toHaveLength(2); // exactly once
    expect(out).not.toContain('No new NodeClaims needed');
    expect(out).toContain('rejected cheaper t2.nano ($0.0058/h): too small: memory: need 256Mi, have 74Mi');
  });

  it('runs as a child process (tsx src/cli/main.ts) with the same JSON and exit code 0', async () => {
    const inProcess = await runJSON([example]);
    const child = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', join(root, 'src', 'cli', 'main.ts'), 'simulate', '-f', example, '-o', 'json'],
        { cwd: root, maxBuffer: 20 * 2 ** 20 },
        (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
    expect(child.stderr).toBe('');
    expect(child.code).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual(inProcess.json);
  });

  it('reads stdin with -f - and combines it with -f paths', async () => {
    const nodePool = readFileSync(join(example, 'general-purpose.yaml'), 'utf8');
    const apps = readFileSync(join(example, 'microservices-demo.yaml'), 'utf8');
    const { code, json } = await runJSON(
      [join(example, 'nodeExporter-daemonset.yaml'), '-'],
      {},
      `${nodePool}\n---\n${apps}`,
    );
    expect(code).toBe(0);
    expect(json.nodeClaims.map((n) => n.instanceType)).toEqual(['c6a.large']);
    expect(json.placements).toHaveLength(12);
  });
});

/**
 * Real manifest sets: path(s), expected exit code, and facts known from the manifests (pod counts from their
 * replicas; plans priced from the us-east-1 catalog, default NodePool unless the set brings one).
 */
const sets: Array<{
  name: string;
  paths: string[];
  code: 0 | 2;
  pods?: number;
  allPlaced?: boolean;
  /** Expected [NodeClaims, cheapest type of each] when the plan is unambiguous. */
  plan?: { nodeClaims: number; types?: string[]; maxPriceUSDPerHour?: number };
  stderr?: string;
}> = [
  // 12 pods, 1570m / 1368Mi: one c6a.large ($0.0765/h, 1930m, 3114Mi) as in the microservices-demo case.
  {
    name: 'microservices-demo',
    paths: ['microservices-demo.yaml'],
    code: 0,
    pods: 12,
    allPlaced: true,
    plan: { nodeClaims: 1, types: ['c6a.large'] },
  },
  // 6 pods without requests: one node of the cheapest allowed type, c7a.medium ($0.05132/h).
  {
    name: 'istio-bookinfo',
    paths: ['istio-bookinfo.yaml'],
    code: 0,
    pods: 6,
    allPlaced: true,
    plan: { nodeClaims: 1, types: ['c7a.medium'] },
  },
  // 14 Deployments, all with nodeSelector beta.kubernetes.io/os=linux, which Karpenter normalizes to
  // kubernetes.io/os (upstream v1.NormalizedLabels), so every pod is placed.
  { name: 'sock-shop', paths: ['sock-shop-complete-demo.yaml'], code: 0, pods: 14, allPlaced: true },
  // 6 Deployments + 2 StatefulSets (redis-ha-server 3 replicas, application-controller 1), HA replicas.
  { name: 'argo-cd HA', paths: ['argo-cd-ha-namespace-install.yaml'], code: 0, allPlaced: true },
  // 25 pods whose requests default to their memory limits (6080Mi in all, 1300m): one m5a.large ($0.086/h).
  {
    name: 'opentelemetry-demo',
    paths: ['opentelemetry-demo.yaml'],
    code: 0,
    pods: 25,
    allPlaced: true,
    plan: { nodeClaims: 1, types: ['m5a.large'] },
  },
  // 9 pods, 1060m / 2176Mi in all: one c6a.large ($0.0765/h) holds them; two c7a.medium would cost $0.1026/h.
  {
    name: 'bank-of-anthos',
    paths: ['bank-of-anthos.yaml'],
    code: 0,
    pods: 9,
    allPlaced: true,
    plan: { nodeClaims: 1, maxPriceUSDPerHour: 0.0765 },
  },
  { name: 'aks-store', paths: ['aks-store-all-in-one.yaml'], code: 0, allPlaced: true },
  { name: 'kube-prometheus', paths: ['kube-prometheus'], code: 0, pods: 6, allPlaced: true },
  {
    name: 'guestbook all-in-one',
    paths: ['kubernetes-examples/web/guestbook/all-in-one'],
    code: 0,
    pods: 6,
    allPlaced: true,
  },
  // Cassandra: 3 replicas of 500m / 1Gi: one c6a.large.
  {
    name: 'cassandra',
    paths: ['kubernetes-examples/databases'],
    code: 0,
    pods: 3,
    allPlaced: true,
    plan: { nodeClaims: 1, types: ['c6a.large'] },
  },
  // vLLM asks for nvidia.com/gpu; the default NodePool (c/m/r) has no GPU type: unschedulable, no NodeClaim.
  { name: 'vllm', paths: ['kubernetes-examples/AI'], code: 0, pods: 1, plan: { nodeClaims: 0 } },
  // The whole folder has the guestbook Deployments twice (all-in-one and one file each): duplicates, exit 2.
  {
    name: 'kubernetes-examples (duplicates)',
    paths: ['kubernetes-examples'],
    code: 2,
    stderr: 'Deployment "default/frontend": metadata.name: duplicate: already defined at',
  },
  { name: 'karpenter-examples/test-env', paths: ['karpenter-examples/test-env'], code: 0, pods: 0 },
  {
    name: 'karpenter-examples/workloads on general-purpose',
    paths: ['karpenter-examples/workloads', 'karpenter-examples/v1/general-purpose.yaml'],
    code: 0,
  },
];

describe('real manifest sets (test/fixtures/manifests, vendored from ../shared/data/manifests)', () => {
  for (const s of sets) {
    it(`${s.name}: exit ${s.code}, consistent plan`, async () => {
      const paths = s.paths.map((p) => join(manifests, p));
      const { code, err, json } = await runJSON(paths);
      expect(code, err).toBe(s.code);
      if (s.code === 0) expect(err).toBe('');
      if (s.stderr) expect(err).toContain(s.stderr);
      const loaded = await loadManifestPaths(paths);
      const result = await simulate(loaded, { region: 'us-east-1' });
      checkInvariants(result);
      expect(json.totals.nodeClaims).toBe(result.nodeClaims.length);
      if (s.pods !== undefined) expect(json.placements.length + json.unschedulable.length).toBe(s.pods);
      if (s.allPlaced) {
        const first = json.unschedulable[0];
        expect(
          json.unschedulable.length,
          first ? `e.g. ${first.pod}: ${first.code}: ${first.reason}` : '',
        ).toBe(0);
      }
      if (s.plan) {
        const got = json.nodeClaims.map((n) => `${n.instanceType} $${n.priceUSDPerHour}`).join(', ');
        expect(json.nodeClaims.length, got).toBe(s.plan.nodeClaims);
        if (s.plan.types) expect(json.nodeClaims.map((n) => n.instanceType)).toEqual(s.plan.types);
        if (s.plan.maxPriceUSDPerHour !== undefined) {
          expect(json.totals.priceUSDPerHour, got).toBeLessThanOrEqual(s.plan.maxPriceUSDPerHour);
        }
      }
    });
  }

  it('every karpenter-examples/v1 file simulates alone (NodePool + EC2NodeClass, no pods)', async () => {
    const dir = join(manifests, 'karpenter-examples', 'v1');
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(20);
    for (const f of files) {
      const { code, err, json } = await runJSON([join(dir, f)]);
      expect(json.nodeClaims, f).toEqual([]);
      if (f === 'windows-custom-userdata.yaml') {
        // Upstream's example has nodeClassRef.group "karpenter.k8s.aws/v1", which the CRD pattern rejects.
        expect(code, f).toBe(2);
        expect(err).toContain(
          'NodePool "windows2022": spec.template.spec.nodeClassRef.group: Invalid value "karpenter.k8s.aws/v1"',
        );
      } else {
        expect(code, `${f}: ${err}`).toBe(0);
      }
    }
  });
});

describe('NodeClass settings reach the plan', () => {
  it('EC2NodeClass kubelet maxPods: 10 caps pods per NodeClaim (12 tiny pods → 2 NodeClaims of 10 + 2)', async () => {
    const text = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: small-pods}
spec:
  role: KarpenterNodeRole-cluster-1
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
  kubelet: {maxPods: 10}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: capped}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: small-pods}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: tiny}
spec:
  replicas: 12
  selector: {matchLabels: {app: tiny}}
  template:
    metadata: {labels: {app: tiny}}
    spec:
      containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: 10m, memory: 16Mi}}}]
`;
    const { code, err, json } = await runJSON(['-'], {}, text);
    expect(code, err).toBe(0);
    expect(json.nodeClaims.map((n) => [n.instanceType, n.pods.length, n.allocatable.pods])).toEqual([
      ['m6i.large', 10, '10'],
      ['m6i.large', 2, '10'],
    ]);
    // AL2023 keeps the ENI-limited kube-reserved memory (11 × 29 + 255 = 574Mi) whatever maxPods says
    // (upstream UsesENILimitedMemoryOverhead): 8192 − 615 − 574 − 100 = 6903Mi.
    expect(json.nodeClaims[0]!.allocatable.memory).toBe('6903Mi');
  });
});

describe('--min-values-policy (upstream MIN_VALUES_POLICY)', () => {
  // instance-family minValues 3; a 200Gi pod rules out every c5 (c5.24xlarge has 192GiB): m5 and r5 remain
  const text = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-cluster-1
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: cluster-1}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: mv}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c5, m5, r5], minValues: 3}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec:
  containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: '1', memory: 200Gi}}}]
`;

  it('Strict (default): the pod is unschedulable naming the key and the 2 families left', async () => {
    const { code, err, json } = await runJSON(['-'], {}, text);
    expect(code, err).toBe(0);
    expect(json.nodeClaims).toEqual([]);
    expect(json.unschedulable).toEqual([
      {
        pod: 'default/big',
        code: 'IncompatibleRequirements',
        reason:
          'incompatible with nodepool "mv": minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [m5, r5]',
      },
    ]);
  });

  it('BestEffort: one NodeClaim over m5/r5 marked minValuesRelaxed, and the table says so', async () => {
    const { code, err, json } = await runJSON(['-'], { minValuesPolicy: 'BestEffort' }, text);
    expect(code, err).toBe(0);
    expect(json.unschedulable).toEqual([]);
    expect(json.nodeClaims).toHaveLength(1);
    const nc = json.nodeClaims[0]!;
    expect(nc.minValuesRelaxed).toBe(true);
    expect(new Set(nc.instanceTypeOptions.map((t) => t.split('.')[0]))).toEqual(new Set(['m5', 'r5']));
    const table = await run({ filenames: ['-'], minValuesPolicy: 'BestEffort' }, text);
    expect(table.out).toContain('minValues relaxed (--min-values-policy BestEffort) on: mv-1');
  });

  it('an unknown policy: exit 2 naming the flag and the allowed values', async () => {
    const r = await run({ filenames: [example], minValuesPolicy: 'bestEffort' });
    expect(r.code).toBe(2);
    expect(r.err).toBe('error: --min-values-policy must be "Strict" or "BestEffort", got "bestEffort"\n');
  });
});

describe('invalid input', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'capenter-simulate-'));
  const deployment = (name: string, cpu: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 2
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers: [{name: app, image: registry.example/app:1, resources: {requests: {cpu: ${cpu}, memory: 1Gi}}}]
`;
  const nodePool = (name: string, nodeClass: string) => `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ${name}}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ${nodeClass}}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`;
  const nodeClass = readFileSync(join(example, 'general-purpose.yaml'), 'utf8').split('---').at(-1)!;

  it('a NodePool whose EC2NodeClass is missing: exit 2 naming it; the other NodePool is still simulated', async () => {
    const file = join(tmp, 'missing-nodeclass.yaml');
    writeFileSync(
      file,
      [
        nodePool('broken', 'does-not-exist'),
        nodePool('works', 'default'),
        nodeClass,
        deployment('app-1', '500m'),
      ].join('\n---\n'),
    );
    const { code, err, json } = await runJSON([file]);
    expect(code).toBe(2);
    expect(err).toContain(
      'missing-nodeclass.yaml:1 (document 0): NodePool "broken": spec.template.spec.nodeClassRef.name: EC2NodeClass "does-not-exist" is not in the input (found: default)',
    );
    expect(json.errors).toHaveLength(1);
    // The valid NodePool still gets the two 500m replicas: one m6i.large ($0.096/h).
    expect(json.nodeClaims.map((n) => [n.nodePool, n.instanceType, n.pods.length])).toEqual([
      ['works', 'm6i.large', 2],
    ]);
    expect(json.unschedulable).toEqual([]);
  });

  it('a schema violation: exit 2 with file, kind, name and field; the valid objects are still printed', async () => {
    const file = join(tmp, 'bad-weight.yaml');
    writeFileSync(
      file,
      [
        nodePool('np', 'default').replace('spec:\n  template', 'spec:\n  weight: 500\n  template'),
        nodeClass,
        deployment('app-1', '500m'),
      ].join('\n---\n'),
    );
    const { code, err, out } = await run({ filenames: [file] });
    expect(code).toBe(2);
    expect(err).toContain('bad-weight.yaml');
    expect(err).toContain('NodePool');
    expect(err).toContain('weight');
    expect(out).toContain('input error');
  });

  it('a static NodePool: a notice with its replicas (capped by limits.nodes) and launch type; pods use the dynamic pool', async () => {
    const file = join(tmp, 'static-nodepool.yaml');
    writeFileSync(
      file,
      [
        nodePool('static', 'default').replace(
          'spec:\n  template',
          'spec:\n  replicas: 3\n  limits: {nodes: "2"}\n  template',
        ),
        nodePool('dynamic', 'default'),
        nodeClass,
        deployment('app-1', '500m'),
      ].join('\n---\n'),
    );
    const { code, json } = await runJSON([file]);
    expect(code).toBe(0);
    expect(json.nodeClaims.map((n) => n.nodePool)).toEqual(['dynamic']);
    const notice = json.notices.find((n) => n.startsWith('NodePool "static" is static'));
    expect(notice).toMatch(
      /^NodePool "static" is static \(spec\.replicas: 3\): with the StaticCapacity feature gate on, capenter keeps 2 NodeClaims of it \(limits\.nodes 2 caps replicas 3\), each a m6i\.large \(on-demand, us-east-1[a-f], \$0\.096\/h\); with the gate off it gets none\. It is not used for the pending pods below/,
    );
  });

  it('every NodePool invalid: the default NodePool is not used, the pods stay unschedulable', async () => {
    const file = join(tmp, 'only-invalid-nodepool.yaml');
    writeFileSync(
      file,
      [
        nodePool('np', 'default').replace('spec:\n  template', 'spec:\n  weight: 500\n  template'),
        nodeClass,
        deployment('app-1', '500m'),
      ].join('\n---\n'),
    );
    const { code, json } = await runJSON([file]);
    expect(code).toBe(2);
    expect(json.nodeClaims).toEqual([]);
    expect(json.unschedulable.map((u) => u.reason)).toEqual([
      'no NodePool can provision new capacity',
      'no NodePool can provision new capacity',
    ]);
    expect(json.notices.join('\n')).toContain('Every NodePool in the input is invalid (1, see the errors)');
  });

  it('an invalid quantity (cpu: lots): exit 2 naming file, document, kind, name and field; the valid Deployment is planned', async () => {
    const file = join(tmp, 'bad-quantity.yaml');
    writeFileSync(
      file,
      [nodePool('np', 'default'), nodeClass, deployment('bad', 'lots'), deployment('good', '500m')].join(
        '\n---\n',
      ),
    );
    const { code, err, json } = await runJSON([file]);
    expect(code).toBe(2);
    expect(err).toContain(
      '(document 2): Deployment "bad": spec.template.spec.containers[0].resources.requests.cpu: Invalid value: "lots"',
    );
    expect(json.errors).toHaveLength(1);
    // the two 500m replicas of "good" still get their m6i.large; "bad" is not planned at all
    expect(json.nodeClaims.map((n) => [n.instanceType, n.pods.length])).toEqual([['m6i.large', 2]]);
    expect(json.unschedulable).toEqual([]);
  });

  it('an empty file or a stream with no objects: a notice on stderr, exit 0', async () => {
    const file = join(tmp, 'empty.yaml');
    writeFileSync(file, '');
    const fromFile = await run({ filenames: [file] });
    expect(fromFile.code).toBe(0);
    expect(fromFile.err).toContain(`notice: ${file}: no Kubernetes objects`);
    const fromStdin = await run({ filenames: ['-'] }, '---\n---\n');
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.err).toContain('notice: <stdin>: no Kubernetes objects');
  });

  it('a NodePool of a KWOKNodeClass is simulated with the catalog types (as start); a missing one is exit 2', async () => {
    const kwok =
      'apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: kw}\nspec: {}\n';
    const pool = nodePool('kw-pool', 'kw').replace(
      '{group: karpenter.k8s.aws, kind: EC2NodeClass, name: kw}',
      '{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: kw}',
    );
    const file = join(tmp, 'kwok.yaml');
    writeFileSync(file, [kwok, pool, deployment('app-1', '500m')].join('\n---\n'));
    const { code, json } = await runJSON([file]);
    expect(code).toBe(0);
    expect(json.nodeClaims.map((n) => [n.nodePool, n.instanceType, n.pods.length])).toEqual([
      ['kw-pool', 'm6i.large', 2],
    ]);
    const missing = join(tmp, 'kwok-missing.yaml');
    writeFileSync(missing, [pool, deployment('app-1', '500m')].join('\n---\n'));
    const r = await runJSON([missing]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      'NodePool "kw-pool": spec.template.spec.nodeClassRef.name: KWOKNodeClass "kw" is not in the input',
    );
  });

  it('admission as the API server: RuntimeClass overhead sizes the NodeClaim; a missing PriorityClass is exit 2', async () => {
    const rc =
      'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\noverhead: {podFixed: {cpu: 250m, memory: 160Mi}}\n';
    const withRc = deployment('app-1', '800m').replace(
      '    spec:\n      containers',
      '    spec:\n      runtimeClassName: kata\n      containers',
    );
    const file = join(tmp, 'runtimeclass.yaml');
    writeFileSync(file, [nodePool('np', 'default'), nodeClass, rc, withRc].join('\n---\n'));
    const { code, json } = await runJSON([file]);
    expect(code).toBe(0);
    // 2 × (800m + 250m overhead) = 2100m > m6i.large's 1930m: one m6i.xlarge; without the overhead an m6i.large
    expect(json.nodeClaims.map((n) => [n.instanceType, n.pods.length])).toEqual([['m6i.xlarge', 2]]);
    const plain = join(tmp, 'no-runtimeclass.yaml');
    writeFileSync(plain, [nodePool('np', 'default'), nodeClass, deployment('app-1', '800m')].join('\n---\n'));
    expect((await runJSON([plain])).json.nodeClaims.map((n) => n.instanceType)).toEqual(['m6i.large']);
    const badPc = join(tmp, 'priorityclass.yaml');
    const withPc = deployment('app-2', '500m').replace(
      '    spec:\n      containers',
      '    spec:\n      priorityClassName: urgent\n      containers',
    );
    writeFileSync(
      badPc,
      [nodePool('np', 'default'), nodeClass, withPc, deployment('app-1', '500m')].join('\n---\n'),
    );
    const r = await runJSON([badPc]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      'Deployment "default/app-2": spec: pods are forbidden: no PriorityClass with name urgent was found',
    );
    expect(r.json.nodeClaims.map((n) => n.pods.length)).toEqual([2]);
  });

  it('broken YAML: exit 2 naming the file', async () => {
    const file = join(tmp, 'broken.yaml');
    writeFileSync(file, 'kind: Deployment\nmetadata: {name: x\n  spec: [');
    const { code, err } = await run({ filenames: [file] });
    expect(code).toBe(2);
    expect(err).toContain('broken.yaml');
  });

  it('a missing path, an unknown region or output format: exit 2 with the fix', async () => {
    const missing = await run({ filenames: [join(tmp, 'nope.yaml')] });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('nope.yaml');
    const region = await run({ filenames: [example], region: 'mars-1' });
    expect(region.code).toBe(2);
    expect(region.err).toContain('us-east-1, us-west-2, eu-west-1, eu-central-1');
    const output = await run({ filenames: [example], output: 'yaml' });
    expect(output.code).toBe(2);
    expect(output.err).toContain('"table" or "json"');
  });

  it('pending pods owned by a DaemonSet are reported, not provisioned for', async () => {
    const file = join(tmp, 'ds-pod.yaml');
    writeFileSync(
      file,
      `apiVersion: v1
kind: Pod
metadata:
  name: agent-abcde
  namespace: kube-system
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}]
spec:
  containers: [{name: a, image: registry.example/agent:1, resources: {requests: {cpu: 100m}}}]
`,
    );
    const { code, json } = await runJSON([file]);
    expect(code).toBe(0);
    expect(json.nodeClaims).toEqual([]);
    expect(json.unschedulable).toEqual([
      {
        pod: 'kube-system/agent-abcde',
        code: 'OwnedByDaemonSet',
        reason: expect.stringContaining('DaemonSet kube-system/agent'),
      },
    ]);
    expect(json.notices.some((n) => n.includes('No NodePool in the input'))).toBe(true);
  });
});
