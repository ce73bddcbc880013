import { describe, expect, it } from 'vitest';
import type { Candidate, Command, DisruptionResult } from '../../disruption/index.ts';
import { needsValidation, validateCommand } from './validation.ts';

const cand = (name: string) => ({ name }) as Candidate;
const cmd = (
  method: string,
  names: string[],
  decision: 'delete' | 'replace' = 'delete',
  replacements = 0,
): Command => ({
  decision,
  reason: method === 'Drift' ? 'Drifted' : method === 'Emptiness' ? 'Empty' : 'Underutilized',
  method,
  candidates: names.map(cand),
  replacements: Array.from({ length: replacements }, () => ({}) as Command['replacements'][number]),
  savingsUSDPerHour: 0.1,
});
const result = (...commands: Command[]): DisruptionResult => ({ commands, blocked: [] });

describe('validateCommand', () => {
  it('accepts the same method, decision and candidates; returns the fresh command', () => {
    const fresh = cmd('MultiNodeConsolidation', ['b', 'a']);
    expect(validateCommand(cmd('MultiNodeConsolidation', ['a', 'b']), result(fresh)).command).toBe(fresh);
  });
  it('rejects changed candidates, methods, decisions and extra replacements, with why', () => {
    const orig = cmd('SingleNodeConsolidation', ['a'], 'replace', 1);
    expect(validateCommand(orig, result()).reason).toBe('no command is chosen any more');
    expect(validateCommand(orig, result(cmd('SingleNodeConsolidation', ['b'], 'replace', 1))).reason).toBe(
      'candidates changed from [a] to [b]',
    );
    expect(validateCommand(orig, result(cmd('Emptiness', ['a']))).reason).toBe(
      'now Emptiness chooses to delete',
    );
    expect(validateCommand(orig, result(cmd('SingleNodeConsolidation', ['a'], 'replace', 2))).reason).toBe(
      'the command now needs more replacements',
    );
  });
  it('ignores Expired commands and skips validation for drift', () => {
    const expired = { ...cmd('Expiration', ['x']), reason: 'Expired' as const };
    const c = cmd('Emptiness', ['a']);
    expect(validateCommand(c, result(expired, c)).command).toBe(c);
    expect(needsValidation(cmd('Drift', ['a']))).toBe(false);
    expect(needsValidation(c)).toBe(true);
  });
});
