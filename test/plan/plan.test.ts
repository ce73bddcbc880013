/**
 * `capenter plan` against the embedded API server: objects created through the real client (no stand-ins, so they
 * stay as created), read back by `readCluster` (LIST only, recorded), planned with proposed files written to a
 * temporary folder. Prices are the embedded us-east-1 catalog's (m5.large $0.096/h, c5.large $0.085/h,
 * c5.xlarge $0.17/h on-demand).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/apis/core.ts';
import { formatResources } from '../../src/apis/quantity.ts';
import { runPlan } from '../../src/cli/plan.ts';
import { getInstanceTypes } from '../../src/cloudprovider/aws/catalog/index.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type SimulatedCluster, startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import type { ResourceType } from '../../src/kube/resources.ts';
import { type ClusterReader, PLAN_KINDS, readCluster } from '../../src/plan/read.ts';
import { RecordingClient, requestKeys } from '../cli/api-requests.ts';

const NOW = '2026-12-03T10:00:00Z';
const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;

let sim: SimulatedCluster | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

function nodePool(name: string, families: string[], extra: Record<string, unknown> = {}): KubeObject {
  const { labels, budgets } = extra as { labels?: Record<string, string>; budgets?: unknown[] };
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      disruption: { consolidateAfter: '0s', budgets: budgets ?? [{ nodes: '1' }] },
      template: {
        ...(labels ? { metadata: { labels } } : {}),
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [
            { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: families },
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          ],
        },
      },
    },
  };
}

function node(name: string, type: string, pool = 'general'): KubeObject {
  const it = catalog.find((t) => t.name === type);
  if (!it) throw new Error(type);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        ...it.labels,
        'topology.kubernetes.io/region': 'us-east-1',
        'topology.kubernetes.io/zone': 'us-east-1a',
        'karpenter.sh/capacity-type': 'on-demand',
        'karpenter.sh/nodepool': pool,
        'karpenter.sh/initialized': 'true',
        'karpenter.sh/registered': 'true',
        'kubernetes.io/hostname': name,
      },
    },
    spec: { providerID: `kwok://${name}` },
  };
}

function pod(name: string, nodeName?: string, nodeSelector?: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'u1', controller: true },
      ],
    },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      ...(nodeSelector ? { nodeSelector } : {}),
      containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '500m', memory: '1Gi' } } }],
    },
  };
}

/** general: 3 × m5.large and 1 × c5.large, two 500m/1Gi pods on each. */
async function seed(pools: KubeObject[] = [nodePool('general', ['m5', 'c5'])], pending: KubeObject[] = []) {
  sim = await startSimulatedCluster({
    components: { scheduler: false, kubelet: false, podGC: false, workloads: false },
  });
  const c = sim;
  const nodes = [
    node('gen-m-1', 'm5.large'),
    node('gen-m-2', 'm5.large'),
    node('gen-m-3', 'm5.large'),
    node('gen-c-1', 'c5.large'),
  ];
  const pods = nodes.flatMap((n) => [
    pod(`${n.metadata?.name}-a`, n.metadata?.name),
    pod(`${n.metadata?.name}-b`, n.metadata?.name),
  ]);
  const kwok = {
    apiVersion: 'karpenter.kwok.sh/v1alpha1',
    kind: 'KWOKNodeClass',
    metadata: { name: 'default' },
  };
  const res = await applyObjects(c.client, [kwok, ...pools, ...nodes, ...pods, ...pending]);
  expect(res.filter((r) => r.result === 'failed').map((r) => r.error)).toEqual([]);
  for (const n of nodes) {
    const it = catalog.find((t) => t.name === n.metadata?.labels?.['node.kubernetes.io/instance-type']);
    const alloc = formatResources(it?.allocatable ?? {});
    await c.client.patchStatus(
      'Node',
      n.metadata?.name ?? '',
      undefined,
      {
        status: { capacity: alloc, allocatable: alloc, conditions: [{ type: 'Ready', status: 'True' }] },
      },
      { type: 'merge' },
    );
  }
  return c;
}

function files(objs: Record<string, KubeObject | string>): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-plan-'));
  return Object.entries(objs).map(([f, o]) => {
    const p = join(dir, f);
    writeFileSync(p, typeof o === 'string' ? o : stringify(o));
    return p;
  });
}

/** Runs the CLI with a recording client; returns exit code, output and the API requests made. */
async function plan(
  c: SimulatedCluster,
  args: { f?: string[]; del?: string[]; json?: boolean; extra?: object },
) {
  const client = RecordingClient.fromKubeconfigText(c.kubeconfig, 'capenter-plan');
  let stdout = '';
  let stderr = '';
  const code = await runPlan(
    {
      ...(args.f ? { filename: args.f } : {}),
      ...(args.del ? { delete: args.del } : {}),
      output: args.json === false ? 'table' : 'json',
      now: NOW,
      ...args.extra,
    },
    {
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      env: {},
      client,
    },
  );
  client.close();
  return {
    code,
    stdout,
    stderr,
    json: args.json === false || code !== 0 ? undefined : JSON.parse(stdout),
    requests: client.requests,
  };
}

describe('capenter plan (embedded cluster)', () => {
  it('a requirements change drifts the m5 nodes, one per wave under a 1-node budget, replaced by c5; only LIST requests', async () => {
    const c = await seed();
    const r = await plan(c, { f: files({ 'general.yaml': nodePool('general', ['c5']) }) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const j = r.json;
    expect(j.apiVersion).toBe('capenter.io/plan/v1');
    expect(j.changes).toEqual([
      {
        action: 'apply',
        kind: 'NodePool',
        name: 'general',
        file: expect.stringContaining('general.yaml'),
        result: 'configured',
      },
    ]);
    expect(
      j.nodes.map(
        (n: { node: string; reason: string; wave: number; priceUSDPerHour: number; pods: number }) => [
          n.node,
          n.reason,
          n.wave,
          n.priceUSDPerHour,
          n.pods,
        ],
      ),
    ).toEqual([
      ['gen-m-1', 'RequirementsDrifted', 1, 0.096, 2],
      ['gen-m-2', 'RequirementsDrifted', 2, 0.096, 2],
      ['gen-m-3', 'RequirementsDrifted', 3, 0.096, 2],
    ]);
    expect(j.nodes[0].detail).toContain('karpenter.k8s.aws/instance-family');
    expect(
      j.waves.map((w: { wave: number; start: string; offsetSeconds: number; nodes: string[] }) => [
        w.wave,
        w.start,
        w.offsetSeconds,
        w.nodes,
      ]),
    ).toEqual([
      [1, '2026-12-03T10:00:00.000Z', 0, ['gen-m-1']],
      [2, '2026-12-03T10:03:00.000Z', 180, ['gen-m-2']],
      [3, '2026-12-03T10:06:00.000Z', 360, ['gen-m-3']],
    ]);
    expect(
      j.replacements.map(
        (x: {
          nodePool: string;
          instanceType: string;
          priceUSDPerHour: number;
          replaces: string[];
          wave: number;
          pods: string[];
        }) => [x.nodePool, x.instanceType, x.priceUSDPerHour, x.replaces, x.wave, x.pods.length],
      ),
    ).toEqual([
      // wave 1: one of gen-m-1's pods fits on gen-c-1, the other gets a c5.large; wave 2: gen-m-2's two pods fit
      // on that c5.large (launched in wave 1); wave 3: gen-m-3's two pods need a second c5.large
      ['general', 'c5.large', 0.085, ['gen-m-1'], 1, 1],
      ['general', 'c5.large', 0.085, ['gen-m-3'], 3, 2],
    ]);
    expect(j.launches).toEqual([]);
    expect(j.unschedulable).toEqual([]);
    // before: 3 × 0.096 + 0.085; after: 0.085 + 2 × 0.085
    expect(j.cost).toEqual({ beforeUSDPerHour: 0.373, afterUSDPerHour: 0.255, deltaUSDPerHour: -0.118 });
    expect(new Set(r.requests.map((q) => q.verb))).toEqual(new Set(['list']));
    expect(requestKeys(r.requests)).toContain('list karpenter.sh nodepools');
  });

  it('a template label drifts every node (NodePoolDrifted), two per wave under a 50% budget', async () => {
    const c = await seed([nodePool('general', ['m5', 'c5'], { budgets: [{ nodes: '50%' }] })]);
    const proposed = nodePool('general', ['m5', 'c5'], {
      budgets: [{ nodes: '50%' }],
      labels: { team: 'web' },
    });
    const r = await plan(c, { f: files({ 'np.yaml': proposed }) });
    expect(r.code).toBe(0);
    expect(r.json.nodes.map((n: { reason: string }) => n.reason)).toEqual(Array(4).fill('NodePoolDrifted'));
    expect(r.json.nodes[0].detail).toBe('NodePool "general" changed spec.template.metadata.labels');
    expect(
      r.json.waves.map((w: { offsetSeconds: number; nodes: string[] }) => [w.offsetSeconds, w.nodes]),
    ).toEqual([
      [0, ['gen-c-1', 'gen-m-1']],
      [180, ['gen-m-2', 'gen-m-3']],
    ]);
  });

  it('a do-not-disrupt pod blocks its drifted node (no terminationGracePeriod): no wave, not replaced, not in the cost', async () => {
    const guarded = pod('guarded', 'gen-m-1');
    guarded.metadata = { ...guarded.metadata, annotations: { 'karpenter.sh/do-not-disrupt': 'true' } };
    const c = await seed(undefined, [guarded]);
    const r = await plan(c, { f: files({ 'general.yaml': nodePool('general', ['c5']) }) });
    expect(r.code).toBe(0);
    expect(
      r.json.nodes.map((n: { node: string; wave?: number; blocked?: string }) => [n.node, n.wave, n.blocked]),
    ).toEqual([
      [
        'gen-m-1',
        undefined,
        'drifted, but pod default/guarded is annotated karpenter.sh/do-not-disrupt (and the NodeClaim has no terminationGracePeriod)',
      ],
      ['gen-m-2', 1, undefined],
      ['gen-m-3', 2, undefined],
    ]);
    expect(
      r.json.replacements.map((x: { instanceType: string; replaces: string[] }) => [
        x.instanceType,
        x.replaces,
      ]),
    ).toEqual([['c5.large', ['gen-m-2']]]); // gen-m-3's pods join it in wave 2
    // 0.373 − 2 × 0.096 + 0.085 (gen-m-1 stays)
    expect(r.json.cost).toEqual({ beforeUSDPerHour: 0.373, afterUSDPerHour: 0.266, deltaUSDPerHour: -0.107 });
  });

  it('a KWOKNodeClass change drifts every node of its NodePools (NodeClassDrift)', async () => {
    const c = await seed();
    const kwok = {
      apiVersion: 'karpenter.kwok.sh/v1alpha1',
      kind: 'KWOKNodeClass',
      metadata: { name: 'default' },
      spec: { nodeRegistrationDelay: '30s' },
    };
    const r = await plan(c, { f: files({ 'class.yaml': kwok }) });
    expect(r.code).toBe(0);
    expect(r.json.changes[0]).toMatchObject({ kind: 'KWOKNodeClass', name: 'default', result: 'configured' });
    expect(
      r.json.nodes.map((n: { node: string; reason: string; wave: number }) => [n.node, n.reason, n.wave]),
    ).toEqual([
      ['gen-c-1', 'NodeClassDrift', 1],
      ['gen-m-1', 'NodeClassDrift', 2],
      ['gen-m-2', 'NodeClassDrift', 3],
      ['gen-m-3', 'NodeClassDrift', 4],
    ]);
    expect(r.json.nodes[0].detail).toBe(
      'KWOKNodeClass "default" changed: spec.nodeRegistrationDelay (its hash differs from the one stamped at launch)',
    );
  });

  it('a budget window delays the waves until it opens; --wave-seconds sets the pace', async () => {
    const budgets = [{ nodes: '0', schedule: '0 9 * * *', duration: '2h' }, { nodes: '2' }];
    const c = await seed([nodePool('general', ['m5', 'c5'], { budgets })]);
    const r = await plan(c, {
      f: files({ 'np.yaml': nodePool('general', ['c5'], { budgets }) }),
      extra: { waveSeconds: '600' },
    });
    expect(r.code).toBe(0);
    // 10:00 is inside the 09:00–11:00 freeze: the first wave starts at 11:00, two nodes a wave, 10 minutes each
    expect(r.json.waves.map((w: { start: string; nodes: string[] }) => [w.start, w.nodes])).toEqual([
      ['2026-12-03T11:00:00.000Z', ['gen-m-1', 'gen-m-2']],
      ['2026-12-03T11:10:00.000Z', ['gen-m-3']],
    ]);
  });

  it('a new NodePool launches for the pods pending today', async () => {
    const c = await seed(undefined, [pod('ml-0', undefined, { team: 'ml' })]);
    const before = await plan(c, { f: files({ 'general.yaml': nodePool('general', ['m5', 'c5']) }) });
    expect(before.json.changes[0].result).toBe('unchanged');
    expect(before.json.unschedulable.map((u: { pod: string; from?: string }) => [u.pod, u.from])).toEqual([
      ['default/ml-0', undefined],
    ]);
    const r = await plan(c, { f: files({ 'ml.yaml': nodePool('ml', ['c5'], { labels: { team: 'ml' } }) }) });
    expect(r.code).toBe(0);
    expect(r.json.changes).toEqual([
      {
        action: 'apply',
        kind: 'NodePool',
        name: 'ml',
        file: expect.stringContaining('ml.yaml'),
        result: 'created',
      },
    ]);
    expect(r.json.nodes).toEqual([]);
    expect(
      r.json.launches.map(
        (x: { nodePool: string; instanceType: string; priceUSDPerHour: number; pods: string[] }) => [
          x.nodePool,
          x.instanceType,
          x.priceUSDPerHour,
          x.pods,
        ],
      ),
    ).toEqual([['ml', 'c5.large', 0.085, ['default/ml-0']]]);
    expect(r.json.unschedulable).toEqual([]);
    expect(r.json.cost).toEqual({ beforeUSDPerHour: 0.373, afterUSDPerHour: 0.458, deltaUSDPerHour: 0.085 });
  });

  it('deleting the only NodePool removes its nodes at once and leaves their pods unschedulable', async () => {
    const c = await seed();
    const r = await plan(c, { del: ['nodepool/general'] });
    expect(r.code).toBe(0);
    expect(r.json.changes).toEqual([
      { action: 'delete', kind: 'NodePool', name: 'general', result: 'deleted' },
    ]);
    expect(
      r.json.nodes.map((n: { node: string; reason: string; wave: number }) => [n.node, n.reason, n.wave]),
    ).toEqual([
      ['gen-c-1', 'NodePoolDeleted', 1],
      ['gen-m-1', 'NodePoolDeleted', 1],
      ['gen-m-2', 'NodePoolDeleted', 1],
      ['gen-m-3', 'NodePoolDeleted', 1],
    ]);
    expect(r.json.unschedulable).toHaveLength(8);
    expect(r.json.unschedulable[0]).toEqual({
      pod: 'default/gen-c-1-a',
      code: expect.any(String),
      reason: expect.any(String),
      from: 'gen-c-1',
    });
    expect(r.json.cost).toEqual({ beforeUSDPerHour: 0.373, afterUSDPerHour: 0, deltaUSDPerHour: -0.373 });
    const table = await plan(c, { del: ['nodepool/general'], json: false });
    expect(table.stdout).toContain('Cost: $0.3730/h before, $0.0000/h after (-$0.3730/h)');
  });

  it('deleting the NodeClass leaves the nodes running (its finalizer waits for them) and its NodePool can launch nothing', async () => {
    const big = pod('big-0');
    (big.spec as { containers: Array<{ resources: unknown }> }).containers[0]!.resources = {
      requests: { cpu: '3', memory: '1Gi' },
    };
    const c = await seed(undefined, [big]);
    const before = await plan(c, { f: files({ 'general.yaml': nodePool('general', ['m5', 'c5']) }) });
    expect(
      before.json.launches.map((l: { instanceType: string; pods: string[] }) => [l.instanceType, l.pods]),
    ).toEqual([['c5.xlarge', ['default/big-0']]]);
    const r = await plan(c, { del: ['kwoknodeclass/default'] });
    expect(r.code).toBe(0);
    expect(r.json.changes).toEqual([
      { action: 'delete', kind: 'KWOKNodeClass', name: 'default', result: 'deleted' },
    ]);
    expect(r.json.nodes).toEqual([]);
    expect(r.json.unschedulable.map((u: { pod: string }) => u.pod)).toEqual(['default/big-0']);
    expect(r.json.notices.join('\n')).toContain(
      'KWOKNodeClass "default" does not exist in the planned cluster (none given). Add that KWOKNodeClass or fix nodeClassRef.name; this NodePool can launch nothing.',
    );
    expect(r.json.cost).toEqual({ beforeUSDPerHour: 0.373, afterUSDPerHour: 0.373, deltaUSDPerHour: 0 });
  });

  it('deleting what does not exist is an error (exit 1), as kubectl says it', async () => {
    const c = await seed();
    const r = await plan(c, { del: ['nodepool/nope'] });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: Error from server (NotFound): nodepools.karpenter.sh "nope" not found\n');
  });

  it('an invalid proposed object gets the API server error with the file and field (exit 2), before any request', async () => {
    const c = await seed();
    const bad = nodePool('general', ['c5'], { budgets: [{ nodes: 'abc' }] });
    const [f] = files({ 'bad.yaml': bad });
    const r = await plan(c, { f: [f as string] });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `error: ${f}:9: NodePool.karpenter.sh "general" is invalid: spec.disruption.budgets[0].nodes: Invalid value: "abc": must be a node count like "5" or a percentage from "0%" to "100%"\n`,
    );
    expect(r.requests).toEqual([]);
  });

  it('an unreachable cluster is a clear error naming the server (exit 1)', async () => {
    const [kc] = files({
      kubeconfig: stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    });
    let stderr = '';
    const code = await runPlan(
      { kubeconfig: kc as string, delete: ['nodepool/general'] },
      {
        stdout: () => {},
        stderr: (t) => {
          stderr += t;
        },
        env: {},
      },
    );
    expect(code).toBe(1);
    expect(stderr).toMatch(/^error: cannot read the cluster at https:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
  });

  it('readCluster tries a LIST answered 429 again after Retry-After (a CRD just installed), and gives up after 5 tries', async () => {
    const calls: string[] = [];
    const waits: number[] = [];
    let busy = 1;
    const reader = {
      server: 'https://fake',
      list: async (rt: ResourceType) => {
        calls.push(rt.plural);
        if (rt.plural === 'ec2nodeclasses' && busy-- > 0)
          throw new KubeApiError(429, 'TooManyRequests', 'storage is (re)initializing', {
            kind: 'Status',
            code: 429,
            details: { retryAfterSeconds: 2 },
          } as never);
        return { items: rt.plural === 'nodes' ? [{ kind: 'Node', metadata: { name: 'n' } }] : [] };
      },
    } as unknown as ClusterReader;
    const objs = await readCluster(reader, { sleep: async (ms) => void waits.push(ms) });
    expect(objs.map((o) => o.metadata?.name)).toEqual(['n']);
    expect(waits).toEqual([2000]);
    expect(calls.filter((c) => c === 'ec2nodeclasses')).toHaveLength(2);
    expect(calls).toHaveLength(PLAN_KINDS.length + 1);
    busy = 99;
    await expect(readCluster(reader, { sleep: async () => {} })).rejects.toThrow(
      'storage is (re)initializing',
    );
  });
});
