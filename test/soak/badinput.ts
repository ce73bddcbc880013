/**
 * Bad input at scale (issue 16 §2): a seeded generator of malformed and hostile objects (wrong types, huge
 * strings, deep nesting, invalid quantities, unknown operators, selector syntax errors, 10 MB annotations, unicode
 * names, conflicting requirements), applied to the embedded cluster while the operator runs, and fed to
 * `capenter simulate`. Each case says what a real API server answers (the rule it breaks: the Karpenter CRD
 * schema, Kubernetes object-meta / pod / label-selector / apps validation) and whether `simulate` must refuse it
 * (exit 2, naming the object). The run checks the answers, that the operator neither crashes nor stops
 * reconciling (a good pod applied after the bad ones still gets a node), and counts everything.
 */
import type { KubeObject, Pod } from '../../src/apis/core.ts';
import { runSimulate } from '../../src/cli/simulate.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';
import { FakeClock } from '../../src/kube/clock.ts';
import { silentLogger } from '../../src/kube/logger.ts';
import { createOperator } from '../../src/operator/operator.ts';
import { embeddedOptions } from '../../src/operator/options.ts';
import { int, pick, prng } from './faults.ts';

/** One generated bad object and the answers expected for it. */
export interface BadCase {
  /** Case family, e.g. `nodepool-unknown-operator`. */
  family: string;
  object: KubeObject;
  /** What a real API server does with a create: `reject` (4xx) or `accept`. */
  apiServer: 'reject' | 'accept';
  /** Whether `capenter simulate` must refuse the object (exit 2, naming it). */
  simulateRejects: boolean;
  /** The rule broken (for the report). */
  rule: string;
}

const NODECLASS: KubeObject = {
  apiVersion: 'karpenter.kwok.sh/v1alpha1',
  kind: 'KWOKNodeClass',
  metadata: { name: 'default' },
  spec: {},
};

function goodPool(name: string): KubeObject & { spec: Record<string, unknown> } {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
          ],
        },
      },
    },
  };
}

function goodPod(name: string, cpu = '500m'): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/pause:3.10',
          resources: { requests: { cpu, memory: '128Mi' } },
        },
      ],
    },
  } as Pod;
}

function tmplSpec(np: KubeObject & { spec: Record<string, unknown> }): Record<string, unknown> {
  return (np.spec.template as { spec: Record<string, unknown> }).spec;
}

function nested(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** The case families, each a function of a seeded random source and an index (for unique names). */
const FAMILIES: Array<(r: () => number, i: number) => BadCase> = [
  (r, i) => {
    const np = goodPool(`bad-weight-type-${i}`);
    np.spec.weight = pick(r, ['heavy', '10', true, { n: 1 }]);
    return {
      family: 'nodepool-weight-wrong-type',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: spec.weight is an integer',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-weight-range-${i}`);
    np.spec.weight = pick(r, [0, 101, -5, 1000]);
    return {
      family: 'nodepool-weight-out-of-range',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: 1 <= spec.weight <= 100',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-operator-${i}`);
    tmplSpec(np).requirements = [
      { key: 'kubernetes.io/arch', operator: pick(r, ['Maybe', 'in', 'Equals', '']), values: ['amd64'] },
    ];
    return {
      family: 'nodepool-unknown-operator',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: requirement operator enum',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-limit-${i}`);
    np.spec.limits = { cpu: pick(r, ['12 cores', 'lots', '1.2.3', '10Q']) };
    return {
      family: 'nodepool-invalid-quantity',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: spec.limits quantities',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-requirements-type-${i}`);
    tmplSpec(np).requirements = pick(r, ['all', 42, { key: 'x' }]);
    return {
      family: 'nodepool-requirements-wrong-type',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: requirements is an array',
    };
  },
  (_r, i) => {
    const np = goodPool(`bad-no-nodeclassref-${i}`);
    delete tmplSpec(np).nodeClassRef;
    return {
      family: 'nodepool-missing-nodeclassref',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: nodeClassRef is required',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-deep-${i}`);
    (np.spec.template as { metadata?: unknown }).metadata = { labels: { deep: nested(int(r, 20, 60)) } };
    return {
      family: 'nodepool-deep-nesting',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'CRD schema: labels are map[string]string',
    };
  },
  (r, i) => {
    const np = goodPool(`x${'n'.repeat(int(r, 253, 400))}${i}`);
    return {
      family: 'nodepool-huge-name',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'object meta: name is a DNS subdomain (<= 253 chars)',
    };
  },
  (r, i) => {
    const np = goodPool(`${pick(r, ['nödé-pööl', 'пул', 'pool☃', 'Pool_Upper'])}-${i}`);
    return {
      family: 'nodepool-unicode-name',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'object meta: name is a lowercase RFC 1123 subdomain',
    };
  },
  (r, i) => {
    const np = goodPool(`bad-huge-annotation-${i}`);
    np.metadata = { ...np.metadata, annotations: { big: 'x'.repeat(int(r, 10, 11) * 1024 * 1024) } };
    return {
      family: 'nodepool-10mb-annotation',
      object: np,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'object meta: annotations total <= 256 KiB',
    };
  },
  (r, i) => {
    const pod = goodPod(`bad-quantity-${i}`, pick(r, ['one', '1.5 cores', '--1', '2x']));
    return {
      family: 'pod-invalid-quantity',
      object: pod,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'pod validation: resource quantities',
    };
  },
  (r, i) => {
    const pod = goodPod(`bad-selector-${i}`);
    (pod.spec as Record<string, unknown>).affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          {
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: {
              matchExpressions: [{ key: 'app', operator: pick(r, ['Like', 'Equals', '~=']), values: ['x'] }],
            },
          },
        ],
      },
    };
    return {
      family: 'pod-selector-syntax',
      object: pod,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'label selector: operator In|NotIn|Exists|DoesNotExist',
    };
  },
  (r, i) => {
    const pod = goodPod(`${pick(r, ['pöd', 'POD', 'pod name'])}-${i}`);
    return {
      family: 'pod-unicode-name',
      object: pod,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'object meta: name is a lowercase RFC 1123 subdomain',
    };
  },
  (_r, i) => {
    const pod = goodPod(`bad-containers-${i}`);
    (pod.spec as Record<string, unknown>).containers = 'app';
    return {
      family: 'pod-containers-wrong-type',
      object: pod,
      apiServer: 'reject',
      simulateRejects: true,
      rule: 'pod validation: containers is a list',
    };
  },
  (_r, i) => {
    // valid to the API server (upstream has no rule against it): the NodePool simply can launch nothing
    const np = goodPool(`conflicting-${i}`);
    tmplSpec(np).requirements = [
      { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
      { key: 'kubernetes.io/arch', operator: 'NotIn', values: ['amd64'] },
    ];
    return {
      family: 'nodepool-conflicting-requirements',
      object: np,
      apiServer: 'accept',
      simulateRejects: false,
      rule: 'valid: requirements intersect to nothing',
    };
  },
];

/** Family names, in order. */
export const BAD_FAMILIES: readonly string[] = FAMILIES.map((f) => f(prng(0), 0).family);

/** `count` bad cases from `seed`: families in turn (so any count >= families covers each), variants drawn. */
export function badCases(seed: number, count: number): BadCase[] {
  const r = prng(seed ^ 0xbad1);
  return Array.from({ length: count }, (_, i) =>
    (FAMILIES[i % FAMILIES.length] as (typeof FAMILIES)[number])(r, i),
  );
}

/** How one case was answered. */
export interface BadAnswer {
  family: string;
  name: string;
  /** HTTP status of the create (201 accepted). */
  status: number;
  /** First 400 characters of the API server's message. */
  message: string;
  simulateExit: number;
  /** `simulate`'s stderr names the object. */
  simulateNamed: boolean;
  /** Disagreements with the case's expectations (empty: as expected). */
  mismatches: string[];
}

/** Result of {@link runBadInputs}. */
export interface BadInputResult {
  answers: BadAnswer[];
  /** Per family: tried, rejected by the API server, refused by simulate. */
  byFamily: Record<string, { tried: number; rejected: number; simulateExit2: number }>;
  /** The good pod applied after every bad object ran (the controller kept reconciling). */
  goodPodRan: boolean;
  /** Unhandled errors seen while the operator ran (a crash). */
  crashes: string[];
}

function describeObject(o: KubeObject): string {
  return `${o.kind} ${o.metadata?.name ?? '?'}`;
}

async function simulateOne(bad: KubeObject): Promise<{ code: number; stderr: string }> {
  const docs = [NODECLASS, goodPool('sim-good'), goodPod('sim-good-pod'), bad];
  let stderr = '';
  const code = await runSimulate(
    { filenames: ['-'], output: 'json' },
    {
      stdout: () => {},
      stderr: (t) => {
        stderr += t;
      },
      stdin: async () => docs.map((d) => JSON.stringify(d)).join('\n---\n'),
    },
  );
  return { code, stderr };
}

/**
 * Applies `cases` to an embedded cluster with the operator running (FakeClock), runs `simulate` on each, then
 * checks a good pod still gets a node. Never throws for a wrong answer (they are in `mismatches`).
 */
export async function runBadInputs(cases: readonly BadCase[]): Promise<BadInputResult> {
  const crashes: string[] = [];
  const onCrash = (err: unknown) =>
    crashes.push(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
  const clock = new FakeClock(Date.now());
  const sim = await startSimulatedCluster({
    clock,
    tls: false,
    podStartDelaySeconds: 1,
    schedulerRetrySeconds: 2,
  });
  Object.defineProperty(sim.apiServer.store, 'now', { value: () => clock.now() });
  const op = createOperator({
    client: sim.client,
    clock,
    logger: silentLogger(),
    options: { ...embeddedOptions(), leaderElect: false, batchIdleSeconds: 1, batchMaxSeconds: 10 },
    defaultMetrics: false,
  });
  const answers: BadAnswer[] = [];
  const byFamily: BadInputResult['byFamily'] = {};
  let goodPodRan = false;
  try {
    await op.start();
    await sim.client.create(NODECLASS);
    await sim.client.create(goodPool('good'));
    for (const c of cases) {
      let status = 201;
      let message = '';
      try {
        await sim.client.create(structuredClone(c.object));
      } catch (err) {
        const e = err as { statusCode?: number; code?: number; message?: string };
        status = e.statusCode ?? e.code ?? 0;
        message = (e.message ?? String(err)).slice(0, 400);
      }
      const sim2 = await simulateOne(c.object);
      const name = c.object.metadata?.name ?? '';
      const named = sim2.stderr.includes(name.slice(0, 60)) || sim2.stderr.includes(describeObject(c.object));
      const mismatches: string[] = [];
      const rejected = status >= 400 && status < 500;
      if (c.apiServer === 'reject' && !rejected)
        mismatches.push(`API server answered ${status}, expected a 4xx (${c.rule})`);
      if (c.apiServer === 'accept' && status !== 201)
        mismatches.push(`API server answered ${status}: ${message}`);
      if (c.simulateRejects && (sim2.code !== 2 || !named))
        mismatches.push(
          `simulate exited ${sim2.code}${named ? '' : ' without naming the object'}: ${sim2.stderr.slice(0, 200)}`,
        );
      if (!c.simulateRejects && sim2.code === 2)
        mismatches.push(`simulate refused a valid object: ${sim2.stderr.slice(0, 200)}`);
      answers.push({
        family: c.family,
        name: name.length > 60 ? `${name.slice(0, 40)}…(${name.length} chars)` : name,
        status,
        message,
        simulateExit: sim2.code,
        simulateNamed: named,
        mismatches,
      });
      const f = byFamily[c.family] ?? { tried: 0, rejected: 0, simulateExit2: 0 };
      byFamily[c.family] = f;
      f.tried++;
      if (rejected) f.rejected++;
      if (sim2.code === 2) f.simulateExit2++;
    }
    // the controller keeps reconciling: a good pod applied after all that gets a node and runs
    await sim.client.create(goodPod('after-bad-inputs'));
    for (let s = 0; s < 120 && !goodPodRan; s++) {
      await clock.tick(1000);
      await new Promise((r) => setTimeout(r, 5));
      const pod = (await sim.client.tryGet('Pod', 'after-bad-inputs', 'default')) as Pod | undefined;
      goodPodRan = pod?.status?.phase === 'Running';
    }
  } finally {
    await op.stop().catch(() => {});
    await sim.stop().catch(() => {});
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
  }
  return { answers, byFamily, goodPodRan, crashes };
}
