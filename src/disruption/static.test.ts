import { describe, expect, it } from 'vitest';
import type { NodeClaim } from '../apis/karpenter.ts';
import { buildClusterView } from './candidates.ts';
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
