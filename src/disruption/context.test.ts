import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import { solve } from '../scheduling/scheduler.ts';
import { buildClusterView } from './candidates.ts';
import { PassContext } from './context.ts';
import { input, node, pod } from './testing.ts';

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

  it('counts every simulation', () => {
    const inp = input(nodes());
    const view = buildClusterView(inp);
    const ctx = new PassContext(inp, view, new Set());
    ctx.simulator().simulate([view.candidates.get('a1')!]);
    ctx.simulator().simulate([view.candidates.get('c1')!]);
    expect(ctx.simulations).toBe(2);
  });
});
