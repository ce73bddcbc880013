import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import { solve } from '../scheduling/scheduler.ts';
import { buildClusterView } from './candidates.ts';
import { PassContext } from './context.ts';
import { input, node, pod, pool } from './testing.ts';

const spread = (name: string, cpu = '500m'): Pod => {
  const p = pod(name, { cpu, labels: { app: 'web' } });
  p.spec.topologySpreadConstraints = [
    {
      maxSkew: 1,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { app: 'web' } },
    },
  ];
  return p;
};

describe('Simulator', () => {
  // Zone a holds 2 web pods, zone b 1 (on the candidate), zone c 0; plain filler pods everywhere.
  const nodes = () => [
    node('a1', [spread('w1'), spread('w2'), pod('f1', { cpu: '1' })], { zone: 'test-zone-a' }),
    node('b1', [spread('w3'), pod('f2', { cpu: '1' })], { zone: 'test-zone-b' }),
    node('b2', [pod('f3', { cpu: '1' })], { zone: 'test-zone-b' }),
    node('c1', [pod('f4', { cpu: '1' })], { zone: 'test-zone-c' }),
  ];

  it('places moving pods exactly as a plain solve() over the full nodes does (topology spread honoured)', () => {
    const inp = input(nodes());
    const view = buildClusterView(inp);
    const ctx = new PassContext(inp, view, new Set());
    const cand = view.candidates.get('b1')!;
    const out = ctx.simulator().simulate([cand]);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.newNodeClaims).toEqual([]);

    // Reference: the same question asked directly with every pod and label.
    const sim = ctx.simulator();
    const moving = cand.reschedulablePods.map((p) => sim.unbound(p));
    const ref = solve({
      pods: moving,
      existingNodes: inp.nodes
        .filter((d) => d.node.metadata.name !== 'b1')
        .map((d) => ({ node: d.node, pods: d.pods, nodeClaim: d.nodeClaim! })),
      nodePools: inp.nodePools,
      instanceTypes: inp.instanceTypes,
      daemonSets: [],
    });
    const where = (placements: ReturnType<typeof solve>['placements']) =>
      Object.fromEntries(
        placements.map((p) => [
          p.pod.metadata.name,
          p.target.kind === 'existing' ? p.target.node : p.target.kind,
        ]),
      );
    const refWhere = where(ref.placements);
    expect(where(out.placements)).toEqual(refWhere);
    // the web pod must not join zone a (skew): b2 or c1
    expect(['b2', 'c1']).toContain(refWhere.w3);
    expect(refWhere.f2).toBeDefined();
    expect(ref.unschedulable).toEqual([]);
  });

  it('fails when a moving pod fits nowhere, naming the pod', () => {
    const inp = input([node('x', [pod('big', { cpu: '3500m' })]), node('y', [pod('y1', { cpu: '3' })])]);
    const view = buildClusterView(inp);
    const ctx = new PassContext(inp, view, new Set());
    const out = ctx.simulator().simulate([view.candidates.get('x')!]);
    // a new NodeClaim is possible (m5.xlarge), so the simulation succeeds with one
    expect(out.ok).toBe(true);
    if (out.ok) expect(out.newNodeClaims.map((n) => n.cheapest.instanceType.name)).toEqual(['m5.xlarge']);
  });

  it('MIN_VALUES_POLICY reaches the simulation (upstream SimulateScheduling): Strict fails, BestEffort relaxes the replacement', () => {
    // family minValues 3; the 30Gi pod fits no c5 type (c5.4xlarge: 28.8Gi allocatable), so only m5 and r5 remain
    const np = pool('default', { families: ['c5', 'm5', 'r5'] });
    np.spec.template.spec.requirements[1]!.minValues = 3;
    const nodes = [node('x', [pod('big', { cpu: '1', memory: '30Gi' })], { type: 'r5.4xlarge', pool: np })];
    const run = (extra: Parameters<typeof input>[1]) => {
      const inp = input(nodes, { nodePools: [np], ...extra });
      const view = buildClusterView(inp);
      return new PassContext(inp, view, new Set()).simulator().simulate([view.candidates.get('x')!]);
    };
    const strict = run({});
    expect(strict.ok).toBe(false);
    if (!strict.ok)
      expect(strict.reason).toBe(
        'pod default/big would not schedule: incompatible with nodepool "default": minValues requirement not met: key "karpenter.k8s.aws/instance-family" needs at least 3 distinct values, the remaining instance types offer 2 [m5, r5]',
      );
    const best = run({ options: { minValuesPolicy: 'BestEffort' } });
    expect(best.ok).toBe(true);
    if (best.ok)
      expect(best.newNodeClaims.map((n) => [n.cheapest.instanceType.name, n.minValuesRelaxed])).toEqual([
        ['r5.2xlarge', true],
      ]);
  });

  it('counts every simulation', () => {
    const inp = input(nodes());
    const view = buildClusterView(inp);
    const ctx = new PassContext(inp, view, new Set());
    ctx.simulator().simulate([view.candidates.get('a1')!]);
    ctx.simulator().simulate([view.candidates.get('c1')!]);
    expect(ctx.simulations).toBe(2);
  });
});
