import { describe, expect, it } from 'vitest';
import type { NodeClaim } from '../apis/karpenter.ts';
import { buildClusterView } from './candidates.ts';
import { computeDisruption } from './index.ts';
import {
  nodeLimitOf,
  type StaticMember,
  staticScaleDownCandidates,
  staticScaleDownCount,
  staticScaleUp,
} from './static.ts';
import { input, node, pod, pool } from './testing.ts';

const NOW = Date.parse('2026-01-01T00:00:00Z');

function claim(name: string, providerID?: string): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, creationTimestamp: '2025-12-31T00:00:00Z' },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [],
    },
    ...(providerID ? { status: { providerID } } : {}),
  };
}

function member(
  name: string,
  o: { providerID?: string; pods?: StaticMember['pods']; deleting?: boolean } = {},
) {
  return { nodeClaim: claim(name, o.providerID), pods: o.pods ?? [], deleting: o.deleting ?? false };
}

describe('staticScaleUp (upstream static provisioning)', () => {
  it('creates replicas − active with no limit', () => {
    expect(staticScaleUp(3, { active: 0, deleting: 0, pendingDisruption: 0 }, Infinity)).toEqual({
      create: 3,
      limited: false,
      short: 0,
    });
    expect(staticScaleUp(3, { active: 1, deleting: 2, pendingDisruption: 0 }, Infinity).create).toBe(2);
  });
  it('does nothing when active + pending disruption reach replicas', () => {
    expect(staticScaleUp(3, { active: 2, deleting: 0, pendingDisruption: 1 }, Infinity).create).toBe(0);
    expect(staticScaleUp(1, { active: 3, deleting: 0, pendingDisruption: 0 }, Infinity).create).toBe(0);
  });
  it('caps at limits.nodes − (active + deleting + pending) − reserved', () => {
    expect(staticScaleUp(3, { active: 0, deleting: 0, pendingDisruption: 0 }, 2)).toEqual({
      create: 2,
      limited: true,
      short: 1,
    });
    expect(staticScaleUp(3, { active: 1, deleting: 1, pendingDisruption: 0 }, 2)).toEqual({
      create: 0,
      limited: true,
      short: 2,
    });
    expect(staticScaleUp(5, { active: 1, deleting: 0, pendingDisruption: 0, reserved: 2 }, 4).create).toBe(1);
  });
});

describe('staticScaleDownCount and nodeLimitOf', () => {
  it('removes active − replicas, never negative', () => {
    expect(staticScaleDownCount(1, { active: 3, deleting: 1, pendingDisruption: 0 })).toBe(2);
    expect(staticScaleDownCount(4, { active: 3, deleting: 0, pendingDisruption: 0 })).toBe(0);
  });
  it('reads limits.nodes, Infinity when unset, and names the field when malformed', () => {
    const np = pool('static');
    expect(nodeLimitOf(np)).toBe(Infinity);
    np.spec.limits = { nodes: '2' };
    expect(nodeLimitOf(np)).toBe(2);
    np.spec.limits = { nodes: 'two' };
    expect(() => nodeLimitOf(np)).toThrow(/NodePool "static" spec.limits.nodes "two"/);
  });
});

describe('staticScaleDownCandidates (upstream getDeprovisioningCandidates order)', () => {
  const np = pool('static');
  const ds = pod('ds', { ownerKind: 'DaemonSet' });
  const dnd = pod('dnd', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
  const members = [
    member('a-busy', { providerID: 'kwok://a', pods: [pod('p1'), pod('p2')] }),
    member('b-light', { providerID: 'kwok://b', pods: [pod('p3')] }),
    member('c-dnd', { providerID: 'kwok://c', pods: [dnd] }),
    member('d-daemons', { providerID: 'kwok://d', pods: [ds] }),
    member('e-unlaunched'),
    member('f-gone', { deleting: true }),
  ];
  const names = (n: number) =>
    staticScaleDownCandidates(np, members, n, NOW).map((p) => `${p.nodeClaim.metadata.name}:${p.why}`);
  it('unresolved first, then empty, then by cost with do-not-disrupt last', () => {
    expect(names(6)).toEqual([
      'e-unlaunched:unresolved',
      'd-daemons:empty',
      'b-light:cost',
      'a-busy:cost',
      'c-dnd:cost',
    ]);
  });
  it('takes only count', () => {
    expect(names(2)).toEqual(['e-unlaunched:unresolved', 'd-daemons:empty']);
    expect(names(0)).toEqual([]);
  });
});

describe('static NodePools are never consolidated', () => {
  it('marks their candidates not consolidatable, naming the NodePool', () => {
    const np = pool('static');
    np.spec.replicas = 2;
    const view = buildClusterView(input([node('n1', [], { pool: np })], { nodePools: [np] }));
    const c = view.candidates.get('n1');
    expect(c?.consolidatable).toBe(false);
    expect(c?.notConsolidatableReason).toBe(
      'NodePool "static" is static (spec.replicas): its nodes are never consolidated',
    );
  });
});

describe('StaticDrift (upstream staticdrift.go) in a disruption pass', () => {
  function staticPool(replicas: number, limits?: Record<string, string>) {
    const np = pool('static');
    np.spec.replicas = replicas;
    if (limits) np.spec.limits = limits;
    return np;
  }
  it('replaces a drifted static node one for one with a template NodeClaim, not a simulation', () => {
    const np = staticPool(2);
    const nodes = [node('n1', [pod('a')], { pool: np }), node('n2', [], { pool: np })];
    nodes[0]!.providerDrifted = 'AMIDrift';
    const res = computeDisruption(input(nodes, { nodePools: [np] }));
    expect(res.commands).toHaveLength(1);
    const cmd = res.commands[0]!;
    expect([cmd.method, cmd.decision, cmd.reason]).toEqual(['StaticDrift', 'replace', 'Drifted']);
    expect(cmd.candidates.map((c) => c.name)).toEqual(['n1']);
    expect(cmd.replacements).toHaveLength(1);
    const r = cmd.replacements[0]!;
    expect(r.nodePool).toBe('static');
    expect(r.instanceTypeOptions).toEqual([]);
    expect(r.requirements).toEqual(np.spec.template.spec.requirements);
    expect(r.cheapest.instanceType.name).toBe('m5.large');
    // the empty n2 is not consolidated: static
    expect(res.blocked.find((b) => b.node === 'n2')?.reason).toBe(
      'NodePool "static" is static (spec.replicas): its nodes are never consolidated',
    );
  });
  it('waits while the NodePool is above replicas, and when limits.nodes leaves no room', () => {
    const above = staticPool(1);
    const nodes = [node('n1', [], { pool: above }), node('n2', [], { pool: above })];
    nodes[0]!.providerDrifted = 'AMIDrift';
    const r1 = computeDisruption(input(nodes, { nodePools: [above] }));
    expect(r1.commands).toEqual([]);
    expect(r1.blocked.find((b) => b.node === 'n1')?.reason).toContain(
      'static NodePool "static" is above its replicas; it scales down first',
    );
    const full = staticPool(2, { nodes: '2' });
    const nodes2 = [node('n1', [], { pool: full }), node('n2', [], { pool: full })];
    nodes2[0]!.providerDrifted = 'AMIDrift';
    const r2 = computeDisruption(input(nodes2, { nodePools: [full] }));
    expect(r2.commands).toEqual([]);
    expect(r2.blocked.find((b) => b.node === 'n1')?.reason).toContain(
      'limits.nodes of static NodePool "static" leaves no room for a replacement',
    );
  });
});
