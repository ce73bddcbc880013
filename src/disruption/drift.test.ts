import { describe, expect, it } from 'vitest';
import { AnnotationNodePoolHash } from '../apis/labels.ts';
import { driftReason } from './drift-reason.ts';
import { computeDisruption } from './index.ts';
import { CATALOG, input, node, pod, pool } from './testing.ts';

describe('driftReason', () => {
  const np = pool();
  it('is undefined for a node that matches its NodePool', () => {
    const dn = node('n1', [], { type: 'm5.large' });
    expect(
      driftReason(
        dn,
        np,
        CATALOG,
        CATALOG.find((t) => t.name === 'm5.large'),
      ),
    ).toBeUndefined();
  });
  it('NodePoolDrifted when the NodeClaim hash differs (same hash version)', () => {
    const dn = node('n1', [], { type: 'm5.large' });
    dn.nodeClaim!.metadata.annotations![AnnotationNodePoolHash] = '12345';
    expect(
      driftReason(
        dn,
        np,
        CATALOG,
        CATALOG.find((t) => t.name === 'm5.large'),
      ),
    ).toBe('NodePoolDrifted');
  });
  it('RequirementsDrifted when the labels no longer satisfy the requirements', () => {
    const dn = node('n1', [], { type: 'c5.large' });
    expect(
      driftReason(
        dn,
        np,
        CATALOG,
        CATALOG.find((t) => t.name === 'c5.large'),
      ),
    ).toBe('RequirementsDrifted');
  });
  it('InstanceTypeNotFound when the type left the NodePool catalog; provider reason last', () => {
    const dn = node('n1', [], { type: 'm5.large' });
    expect(
      driftReason(
        dn,
        np,
        CATALOG.filter((t) => t.name !== 'm5.large'),
        undefined,
      ),
    ).toBe('InstanceTypeNotFound');
    const p = { ...node('n2', [], { type: 'm5.large' }), providerDrifted: 'AMIDrift' };
    expect(
      driftReason(
        p,
        np,
        CATALOG,
        CATALOG.find((t) => t.name === 'm5.large'),
      ),
    ).toBe('AMIDrift');
  });
});

describe('drift method', () => {
  it('replaces a drifted node with the cheapest allowed type', () => {
    const r = computeDisruption(input([node('old', [pod('a', { cpu: '500m' })], { type: 'c5.xlarge' })]));
    expect(r.commands).toHaveLength(1);
    const c = r.commands[0]!;
    expect([c.decision, c.reason, c.method]).toEqual(['replace', 'Drifted', 'Drift']);
    expect(c.replacements[0]!.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large']);
  });
  it('deletes a drifted node whose pods fit elsewhere', () => {
    const r = computeDisruption(
      input([
        node('old', [pod('a', { cpu: '500m' })], { type: 'c5.xlarge' }),
        node('keep', [pod('b', { cpu: '3' })], { type: 'm5.2xlarge' }),
      ]),
    );
    expect(r.commands[0]!.decision).toBe('delete');
    expect(r.commands[0]!.candidates.map((x) => x.name)).toEqual(['old']);
  });
  it('a Drifted budget of 0 blocks drift', () => {
    const np = pool('default', { budgets: [{ nodes: '0', reasons: ['Drifted'] }, { nodes: '100%' }] });
    const r = computeDisruption(
      input([node('old', [pod('a', { cpu: '1500m' })], { type: 'c5.large', pool: np })], { nodePools: [np] }),
    );
    expect(r.commands.filter((c) => c.reason === 'Drifted')).toEqual([]);
    expect(r.blocked[0]!.reason).toContain(
      'Drift: drifted (RequirementsDrifted), but the budget of NodePool "default" allows no more Drifted disruptions now',
    );
  });
  it('a do-not-disrupt pod blocks drift unless the NodeClaim has a terminationGracePeriod', () => {
    const dnd = { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } };
    const blocked = computeDisruption(input([node('old', [pod('a', dnd)], { type: 'c5.xlarge' })]));
    expect(blocked.commands).toEqual([]);
    const eventual = computeDisruption(
      input([node('old', [pod('a', dnd)], { type: 'c5.xlarge', terminationGracePeriod: '1h' })]),
    );
    expect(eventual.commands[0]!.reason).toBe('Drifted');
  });
});
