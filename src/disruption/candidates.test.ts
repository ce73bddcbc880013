import { describe, expect, it } from 'vitest';
import type { Pod } from '../apis/core.ts';
import { buildClusterView, consolidatableState, doNotDisruptReadings } from './candidates.ts';
import { input, node, pod, pool } from './testing.ts';

const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('buildClusterView', () => {
  it('prices a candidate from its zone and capacity type offering', () => {
    const v = buildClusterView(input([node('n1', [pod('a')], { type: 'm5.2xlarge' })]));
    const c = v.candidates.get('n1')!;
    expect(c.priceUSDPerHour).toBe(0.384);
    expect(c.reschedulablePods).toHaveLength(1);
    expect(c.disruptionCost).toBe(1);
    expect(c.ineligible).toBeUndefined();
  });
  it('spot nodes take the spot price', () => {
    const v = buildClusterView(input([node('n1', [], { type: 'm5.large', capacityType: 'spot' })]));
    expect(v.candidates.get('n1')!.priceUSDPerHour).toBeCloseTo(0.0384, 10);
  });
  it('a do-not-disrupt pod blocks; DaemonSet pods are not reschedulable', () => {
    const v = buildClusterView(
      input([
        node('n1', [
          pod('a', { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } }),
          pod('ds', { ownerKind: 'DaemonSet' }),
        ]),
      ]),
    );
    const c = v.candidates.get('n1')!;
    expect(c.podsBlock).toBe('pod default/a is annotated karpenter.sh/do-not-disrupt');
    expect(c.reschedulablePods.map((p) => p.metadata.name)).toEqual(['a']);
  });
  it('do-not-disrupt durations: blocks while running since startTime, not once elapsed, not when invalid', () => {
    // input().now is 2026-01-01T00:00:00Z
    const dnd = (name: string, value: string, startTime: string): Pod => {
      const p = pod(name, { annotations: { 'karpenter.sh/do-not-disrupt': value } });
      return { ...p, status: { ...p.status, startTime } };
    };
    const v = buildClusterView(
      input([
        node('running', [dnd('a', '1h', '2025-12-31T23:30:00Z'), dnd('a2', 'abc', '2025-12-31T23:00:00Z')]),
        node('elapsed', [dnd('b', '30m', '2025-12-31T23:29:00Z'), dnd('c', 'abc', '2025-12-31T23:00:00Z')]),
        node('ten-years', [dnd('d', '87600h', '2025-11-01T00:00:00Z')]),
        node('pinned', [dnd('e', 'abc', '2025-12-31T23:00:00Z')], {
          nodeAnnotations: { 'karpenter.sh/do-not-disrupt': '1h' },
        }),
      ]),
    );
    expect(v.candidates.get('running')!.podsBlock).toBe(
      'pod default/a is annotated karpenter.sh/do-not-disrupt: "1h" until 2026-01-01T00:30:00Z',
    );
    expect(v.candidates.get('ten-years')!.podsBlock).toBe(
      'pod default/d is annotated karpenter.sh/do-not-disrupt: "87600h" until 2035-10-30T00:00:00Z',
    );
    expect(v.candidates.get('elapsed')!.podsBlock).toBeUndefined();
    // Node/NodeClaim annotations take only "true" (upstream statenode.go): "1h" on a node does not pin it
    expect(v.candidates.get('pinned')!.ineligible).toBeUndefined();
    expect(v.candidates.get('pinned')!.podsBlock).toBeUndefined();
    // the readings upstream's ValidatePodsDisruptable makes: stop at the first protected pod of a candidate
    const readings = doNotDisruptReadings(v.candidates.values(), Date.parse('2026-01-01T00:00:00Z'));
    expect(readings.map((r) => [r.pod.metadata.name, r.state.state])).toEqual([
      ['a', 'active'],
      ['b', 'elapsed'],
      ['c', 'invalid'],
      ['d', 'active'],
      ['e', 'invalid'],
    ]);
  });
  it('do-not-disrupt readings skip candidates that failed the node checks', () => {
    const p = pod('x', { annotations: { 'karpenter.sh/do-not-disrupt': 'abc' } });
    const v = buildClusterView(
      input([node('n1', [p], { nodeAnnotations: { 'karpenter.sh/do-not-disrupt': 'true' } })]),
    );
    expect(v.candidates.get('n1')!.ineligible).toBe('node is annotated karpenter.sh/do-not-disrupt');
    expect(doNotDisruptReadings(v.candidates.values(), Date.parse('2026-01-01T00:00:00Z'))).toEqual([]);
  });
  it('node-level do-not-disrupt, deletion and unmanaged nodes', () => {
    const unmanaged = node('u1');
    delete unmanaged.node.metadata.labels!['karpenter.sh/nodepool'];
    const v = buildClusterView(
      input([
        node('n1', [], { nodeAnnotations: { 'karpenter.sh/do-not-disrupt': 'true' } }),
        { ...node('n2'), markedForDeletion: true },
        unmanaged,
      ]),
    );
    expect(v.candidates.get('n1')!.ineligible).toBe('node is annotated karpenter.sh/do-not-disrupt');
    expect(v.candidates.get('n2')!.ineligible).toBe('node is being disrupted or deleted');
    expect(v.notManaged.get('u1')).toBe('not managed by Karpenter (no karpenter.sh/nodepool label)');
    expect(v.poolCounts.get('default')).toEqual({ nodes: 2, disrupting: 1 });
  });
});

describe('consolidatableState', () => {
  it('waits consolidateAfter from the last pod event', () => {
    const np = pool('default', { after: '30s' });
    const dn = node('n1', [], {
      pool: np,
      created: '2025-12-31T00:00:00Z',
      lastPodEventTime: '2025-12-31T23:59:40Z',
    });
    const s = consolidatableState(dn.nodeClaim!, dn.node, np, NOW);
    expect(s).toEqual({
      consolidatable: false,
      reason: 'consolidateAfter 30s has not elapsed since the last pod event (20s ago)',
    });
    expect(consolidatableState(dn.nodeClaim!, dn.node, np, NOW + 10_000).consolidatable).toBe(true);
  });
  it('falls back to creation time; Never is never consolidatable', () => {
    const np = pool('default', { after: '1h' });
    const dn = node('n1', [], { pool: np, created: '2025-12-31T23:30:00Z' });
    expect(consolidatableState(dn.nodeClaim!, dn.node, np, NOW).consolidatable).toBe(false);
    expect(consolidatableState(dn.nodeClaim!, dn.node, np, NOW + 1_800_000).consolidatable).toBe(true);
    const never = pool('default', { after: 'Never' });
    expect(consolidatableState(dn.nodeClaim!, dn.node, never, NOW + 1e12)).toEqual({
      consolidatable: false,
      reason: 'consolidateAfter is Never',
    });
  });
});
