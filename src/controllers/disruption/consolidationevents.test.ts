import { describe, expect, it } from 'vitest';
import type { Candidate, Command } from '../../disruption/index.ts';
import { input, node, pod, pool } from '../../disruption/testing.ts';
import {
  commandStringForNode,
  consolidationCandidateMessage,
  consolidationRejectedMessage,
  publishesCandidateEvents,
  validationFailureKind,
} from './consolidationevents.ts';

const np = pool();
const cmd = (
  names: string[],
  decision: 'delete' | 'replace',
  replacements: number,
  method: string,
): Command => ({
  decision,
  reason: 'Underutilized',
  method,
  candidates: names.map((name) => ({ name, nodePool: np }) as Candidate),
  replacements: Array.from({ length: replacements }, () => ({}) as Command['replacements'][number]),
  savingsUSDPerHour: 0.1234,
});

describe('consolidation pipeline event messages (upstream events.go / types.go StringForNode)', () => {
  it('single-node, multi-node and delete commands read as upstream prints them', () => {
    expect(commandStringForNode(cmd(['a'], 'replace', 1, 'SingleNodeConsolidation'), 'a')).toBe(
      'replace: [a] -> [1 replacement]',
    );
    expect(commandStringForNode(cmd(['a'], 'delete', 0, 'SingleNodeConsolidation'), 'a')).toBe('delete: [a]');
    const multi = cmd(['a', 'b', 'c'], 'replace', 1, 'MultiNodeConsolidation');
    expect(consolidationCandidateMessage(multi, 'b')).toBe(
      'Consolidation candidate: replace: [b] (part of 3-node consolidation) (savings: $0.12)',
    );
    expect(
      consolidationRejectedMessage(cmd(['a'], 'delete', 0, 'SingleNodeConsolidation'), 'a', 'budget'),
    ).toBe('Consolidation rejected: delete: [a], reason: budget (savings: $0.12)');
    expect(publishesCandidateEvents(multi)).toBe(true);
    expect(publishesCandidateEvents(cmd(['a'], 'delete', 0, 'SingleNodeConsolidation'))).toBe(false);
    expect(publishesCandidateEvents(cmd(['a'], 'replace', 1, 'Drift'))).toBe(false);
  });

  it('classifies a failed validation as upstream: churn, budget or scheduling', () => {
    const c = cmd(['n1'], 'replace', 1, 'SingleNodeConsolidation');
    const one = (o: Parameters<typeof node>[2] = {}) => input([node('n1', [pod('p1')], { pool: np, ...o })]);
    expect(validationFailureKind(c, one())).toBe('scheduling');
    expect(validationFailureKind(c, input([]))).toBe('churn');
    expect(
      validationFailureKind(c, one({ nodeAnnotations: { 'karpenter.sh/do-not-disrupt': 'true' } })),
    ).toBe('churn');
    const closed = pool('default', { budgets: [{ nodes: '0' }] });
    const blocked = cmd(['n1'], 'replace', 1, 'SingleNodeConsolidation');
    blocked.candidates[0]!.nodePool = closed;
    expect(
      validationFailureKind(
        blocked,
        input([node('n1', [pod('p1')], { pool: closed })], { nodePools: [closed] }),
      ),
    ).toBe('budget');
  });
});
