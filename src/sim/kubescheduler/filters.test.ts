import { describe, expect, it } from 'vitest';
import type { Node, Pod, Taint } from '../../apis/core.ts';
import { schedulingRules } from '../../embedded/rules.ts';
import {
  addPodToNodeInfo,
  buildNodeInfo,
  CountIndex,
  filterNode,
  fitErrorMessage,
  type NodeInfo,
  pickNode,
  prepare,
  Reasons,
} from './filters.ts';

const rules = schedulingRules;

function node(
  name: string,
  o: {
    cpu?: string;
    pods?: string;
    zone?: string;
    taints?: Taint[];
    ready?: boolean;
    unschedulable?: boolean;
    labels?: Record<string, string>;
  } = {},
): Node {
  return {
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'topology.kubernetes.io/zone': o.zone ?? 'a',
        ...(o.labels ?? {}),
      },
    },
    spec: { ...(o.taints ? { taints: o.taints } : {}), ...(o.unschedulable ? { unschedulable: true } : {}) },
    status: {
      allocatable: { cpu: o.cpu ?? '4', memory: '16Gi', pods: o.pods ?? '110' },
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  };
}

function pod(
  name: string,
  o: { cpu?: string; labels?: Record<string, string>; nodeName?: string; spec?: Partial<Pod['spec']> } = {},
): Pod {
  return {
    metadata: { name, namespace: 'ns', labels: o.labels ?? {} },
    spec: {
      containers: [{ name: 'c', resources: { requests: { cpu: o.cpu ?? '1', memory: '1Gi' } } }],
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      ...(o.spec ?? {}),
    },
  };
}

function infos(nodes: Node[], pods: Pod[] = []): NodeInfo[] {
  return nodes.map((n) =>
    buildNodeInfo(
      rules,
      n,
      pods.filter((p) => p.spec.nodeName === n.metadata.name),
    ),
  );
}

function reasons(p: Pod, ns: NodeInfo[]): Record<string, string[]> {
  const st = prepare(rules, p, ns);
  return Object.fromEntries(ns.map((n) => [n.name, filterNode(rules, st, n)]));
}

describe('kube-scheduler stand-in filters', () => {
  it('formats the FitError message like kube-scheduler (counts, sorted)', () => {
    const ns = infos([
      node('small', { cpu: '500m' }),
      node('new-1', { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }] }),
      node('new-2', { taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }] }),
    ]);
    const st = prepare(rules, pod('p'), ns);
    const hist = new Map<string, number>();
    for (const n of ns) for (const r of filterNode(rules, st, n)) hist.set(r, (hist.get(r) ?? 0) + 1);
    expect(fitErrorMessage(ns.length, hist)).toBe(
      '0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {karpenter.sh/unregistered: }.',
    );
    expect(fitErrorMessage(0, new Map())).toBe('no nodes available to schedule pods');
  });

  it('accounts requests of bound pods, init containers and overhead', () => {
    const ns = infos([node('n', { cpu: '2' })], [pod('a', { cpu: '1', nodeName: 'n' })]);
    expect(reasons(pod('fits', { cpu: '1' }), ns).n).toEqual([]);
    expect(reasons(pod('big', { cpu: '1100m' }), ns).n).toEqual(['Insufficient cpu']);
    const init = pod('init', {
      cpu: '100m',
      spec: { initContainers: [{ name: 'i', resources: { requests: { cpu: '1500m' } } }] },
    });
    expect(reasons(init, ns).n).toEqual(['Insufficient cpu']);
    const overhead = pod('oh', { cpu: '900m', spec: { overhead: { cpu: '200m' } } });
    expect(reasons(overhead, ns).n).toEqual(['Insufficient cpu']);
    const full = infos([node('n', { pods: '1' })], [pod('a', { cpu: '1', nodeName: 'n' })]);
    expect(reasons(pod('p', { cpu: '1' }), full).n).toEqual(['Too many pods']);
  });

  it('taints, tolerations, not-ready and cordoned nodes', () => {
    const ns = infos([
      node('tainted', { taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }] }),
      node('prefer', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] }),
      node('notready', { ready: false }),
      node('cordoned', { unschedulable: true }),
    ]);
    expect(reasons(pod('p'), ns)).toEqual({
      tainted: ['node(s) had untolerated taint {gpu: true}'],
      prefer: [],
      notready: ['node(s) had untolerated taint {node.kubernetes.io/not-ready: }'],
      cordoned: [Reasons.unschedulable],
    });
    const tolerant = pod('t', {
      spec: {
        tolerations: [
          { key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
          { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
        ],
      },
    });
    const r = reasons(tolerant, ns);
    expect(r.tainted).toEqual([]);
    expect(r.cordoned).toEqual([]);
  });

  it('node selector, required affinity (Gt) and matchFields on metadata.name', () => {
    const ns = infos([node('a', { labels: { tier: '3' } }), node('b', { labels: { tier: '1' } })]);
    const gt = pod('p', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'tier', operator: 'Gt', values: ['2'] }] }],
            },
          },
        },
      },
    });
    expect(reasons(gt, ns)).toEqual({ a: [], b: [Reasons.nodeAffinity] });
    const byName = pod('ds', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }],
            },
          },
        },
      },
    });
    expect(reasons(byName, ns)).toEqual({ a: [Reasons.nodeAffinity], b: [] });
    expect(reasons(pod('sel', { spec: { nodeSelector: { tier: '1' } } }), ns).a).toEqual([
      Reasons.nodeAffinity,
    ]);
  });

  it('host ports conflict', () => {
    const withPort = (name: string, nodeName?: string) =>
      pod(name, {
        cpu: '100m',
        ...(nodeName ? { nodeName } : {}),
        spec: { containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: 8080 }] }] },
      });
    const ns = infos([node('a'), node('b')], [withPort('x', 'a')]);
    expect(reasons(withPort('y'), ns)).toEqual({ a: [Reasons.ports], b: [] });
  });

  it('required pod anti-affinity on hostname, both directions', () => {
    const labels = { app: 'web' };
    const anti = {
      affinity: {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { labelSelector: { matchLabels: labels }, topologyKey: 'kubernetes.io/hostname' },
          ],
        },
      },
    };
    const ns = infos([node('a'), node('b')], [pod('w1', { labels, nodeName: 'a', spec: anti })]);
    expect(reasons(pod('w2', { labels, spec: anti }), ns)).toEqual({ a: [Reasons.antiAffinity], b: [] });
    // an unrelated pod without anti-affinity but matched by w1's term
    expect(reasons(pod('other', { labels }), ns)).toEqual({ a: [Reasons.existingAntiAffinity], b: [] });
    expect(reasons(pod('free', { labels: { app: 'db' } }), ns)).toEqual({ a: [], b: [] });
  });

  it('required pod affinity, including the first pod of a group', () => {
    const labels = { app: 'cache' };
    const aff = {
      affinity: {
        podAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { labelSelector: { matchLabels: labels }, topologyKey: 'topology.kubernetes.io/zone' },
          ],
        },
      },
    };
    const empty = infos([node('a', { zone: 'z1' }), node('b', { zone: 'z2' })]);
    expect(reasons(pod('first', { labels, spec: aff }), empty)).toEqual({ a: [], b: [] });
    const ns = infos(
      [node('a', { zone: 'z1' }), node('b', { zone: 'z2' })],
      [pod('c1', { labels, nodeName: 'b' })],
    );
    expect(reasons(pod('second', { labels, spec: aff }), ns)).toEqual({ a: [Reasons.affinity], b: [] });
  });

  it('topology spread DoNotSchedule on zone (maxSkew 1)', () => {
    const labels = { app: 'spread' };
    const spec = {
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'DoNotSchedule' as const,
          labelSelector: { matchLabels: labels },
        },
      ],
    };
    const ns = infos(
      [node('a', { zone: 'z1' }), node('b', { zone: 'z2' }), node('nolabel', { zone: 'z1' })],
      [pod('s1', { labels, nodeName: 'a' })],
    );
    // z1 has 1, z2 has 0: placing in z1 gives skew 2
    const r = reasons(pod('s2', { labels, spec }), ns);
    expect(r.a).toEqual([Reasons.spread]);
    expect(r.b).toEqual([]);
    expect(r.nolabel).toEqual([Reasons.spread]);
    const missing = infos([{ ...node('x'), metadata: { name: 'x', labels: {} } }]);
    expect(reasons(pod('s3', { labels, spec }), missing).x).toEqual([Reasons.spreadMissingLabel]);
  });

  it('scores MostAllocated (bin-packing) or LeastAllocated', () => {
    const ns = infos([node('empty'), node('busy')], [pod('x', { cpu: '2', nodeName: 'busy' })]);
    const st = prepare(rules, pod('p', { cpu: '1' }), ns);
    expect(pickNode(rules, st, ns, 'MostAllocated')).toBe('busy');
    expect(pickNode(rules, st, ns, 'LeastAllocated')).toBe('empty');
    const soft = infos([node('a', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] }), node('b')]);
    expect(pickNode(rules, prepare(rules, pod('q'), soft), soft, 'MostAllocated')).toBe('b');
  });

  it('indexed spread and anti-affinity counts follow pods assumed during a cycle', () => {
    const ns = infos(
      [node('a1', { zone: 'a' }), node('b1', { zone: 'b' })],
      [
        pod('w0', { labels: { app: 'w' }, nodeName: 'a1' }),
        pod('gone', { labels: { app: 'w' }, nodeName: 'b1', spec: {} }),
      ],
    );
    ns[1]!.pods[0]!.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    const spread = (name: string) =>
      pod(name, {
        labels: { app: 'w' },
        spec: {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'topology.kubernetes.io/zone',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'w' } },
            },
          ],
        },
      });
    const index = new CountIndex(rules);
    const first = prepare(rules, spread('w1'), ns, undefined, index);
    expect(first.spread[0]!.counts).toEqual(
      new Map([
        ['a', 1],
        ['b', 0],
      ]),
    );
    expect(filterNode(rules, first, ns[0]!)).toEqual([Reasons.spread]);
    addPodToNodeInfo(rules, ns[1]!, { ...spread('w1'), spec: { ...spread('w1').spec, nodeName: 'b1' } });
    addPodToNodeInfo(rules, ns[1]!, { ...spread('w2'), spec: { ...spread('w2').spec, nodeName: 'b1' } });
    const third = prepare(rules, spread('w3'), ns, undefined, index);
    expect(third.spread[0]!.counts).toEqual(
      new Map([
        ['a', 1],
        ['b', 2],
      ]),
    );
    expect(filterNode(rules, third, ns[0]!)).toEqual([]);
    expect(filterNode(rules, third, ns[1]!)).toEqual([Reasons.spread]);
    const anti = pod('x', {
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'w' } } },
            ],
          },
        },
      },
    });
    const st = prepare(rules, anti, ns, undefined, index);
    expect(filterNode(rules, st, ns[0]!)).toEqual([Reasons.antiAffinity]);
    expect(filterNode(rules, st, ns[1]!)).toEqual([Reasons.antiAffinity]);
  });
});
