import { describe, expect, it } from 'vitest';
import type { NodeClaim, NodePool } from '../../apis/karpenter.ts';
import type { Command } from '../../disruption/index.ts';
import type { StateNode } from '../../state/cluster.ts';
import { testStateNode } from '../../state/testing.ts';
import { disruptionLogValues, replacementsToDelete } from './orchestration.ts';

/** A state node of NodePool `pool` with a NodeClaim of `cpu` cores. */
function sn(
  name: string,
  o: { cpu: string; initialized?: boolean; deleting?: boolean; pool?: string },
): StateNode {
  const nodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      labels: { 'karpenter.sh/nodepool': o.pool ?? 'p' },
      ...(o.deleting ? { deletionTimestamp: '2026-12-01T12:00:00Z' } : {}),
    },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [],
    },
    status: { capacity: { cpu: o.cpu, memory: '4Gi', pods: '110' } },
  } as NodeClaim;
  return testStateNode({ name, nodeClaim, initialized: o.initialized ?? false });
}

const pool =
  (limits?: Record<string, string>) =>
  (name: string): NodePool | undefined =>
    name === 'p'
      ? ({
          metadata: { name: 'p' },
          spec: { ...(limits ? { limits } : {}), template: { spec: {} } },
        } as NodePool)
      : undefined;

describe('replacementsToDelete (rolling back a disruption command)', () => {
  const candidate = sn('candidate', { cpu: '4', initialized: true });
  const up = sn('up', { cpu: '2', initialized: true });
  const launching = sn('launching', { cpu: '2' });

  it('deletes replacements that never initialized (or are gone); keeps an initialized one, as upstream', () => {
    expect(replacementsToDelete([candidate, up, launching], ['up', 'launching', 'gone'], pool())).toEqual([
      'launching',
      'gone',
    ]);
  });

  it('deletes an initialized replacement when keeping it beside the candidate leaves the NodePool over its limits', () => {
    const nodes = [candidate, up, launching];
    // 4 (candidate) + 2 (up) = 6 cpu once the launching one is gone: within 6, over 5
    expect(replacementsToDelete(nodes, ['up', 'launching'], pool({ cpu: '6' }))).toEqual(['launching']);
    expect(replacementsToDelete(nodes, ['up', 'launching'], pool({ cpu: '5' }))).toEqual(['launching', 'up']);
    // a deleting NodeClaim does not count
    const leaving = sn('leaving', { cpu: '8', initialized: true, deleting: true });
    expect(replacementsToDelete([candidate, up, leaving], ['up'], pool({ cpu: '6' }))).toEqual([]);
  });
});

describe('disruptionLogValues (upstream "disrupting node(s)" fields)', () => {
  it('renders the command string, counts, and KObj refs of the disrupted nodes and the replacement', () => {
    const candidate = (name: string, pods: number) => ({
      name,
      node: {
        metadata: {
          name,
          labels: {
            'node.kubernetes.io/instance-type': 'm5.xlarge',
            'karpenter.sh/capacity-type': 'on-demand',
          },
        },
      },
      nodeClaim: { metadata: { name: `nc-${name}` } },
      nodePool: { metadata: { name: 'default' } },
      reschedulablePods: Array.from({ length: pods }, () => ({})),
    });
    const command = {
      decision: 'replace',
      reason: 'Underutilized',
      method: 'MultiNodeConsolidation',
      candidates: [candidate('a', 2), candidate('b', 1)],
      replacements: [
        {
          nodePool: 'default',
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['spot', 'on-demand'] },
          ],
          instanceTypeOptions: [{ name: 'm5.large' }, { name: 'c5.large' }],
        },
      ],
      savingsUSDPerHour: 0.1234,
    } as unknown as Command;
    expect(disruptionLogValues(command, 7)).toEqual({
      command: 'Underutilized/7: replace: nodepools=[default]: [a, b] -> [1 replacement] (savings: $0.12)',
      decision: 'replace',
      'disrupted-node-count': 2,
      'replacement-node-count': 1,
      'pod-count': 3,
      'disrupted-nodes': [
        {
          Node: { name: 'a' },
          NodeClaim: { name: 'nc-a' },
          'instance-type': 'm5.xlarge',
          'capacity-type': 'on-demand',
        },
        {
          Node: { name: 'b' },
          NodeClaim: { name: 'nc-b' },
          'instance-type': 'm5.xlarge',
          'capacity-type': 'on-demand',
        },
      ],
      'replacement-nodes': [{ 'capacity-type': 'spot', 'instance-types': 'm5.large, c5.large' }],
    });
    const del = { ...command, decision: 'delete', replacements: [], savingsUSDPerHour: 0.5 } as Command;
    expect(disruptionLogValues(del, 8)).toMatchObject({
      command: 'Underutilized/8: delete: nodepools=[default]: [a, b] (savings: $0.50)',
      'replacement-node-count': 0,
      'replacement-nodes': [],
    });
  });
});
