/** `capenter simulate --disruption` in-process: the JSON document gains `disruption`, the table a section. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runSimulate } from '../../src/cli/simulate.ts';

const here = dirname(fileURLToPath(import.meta.url));
const caseInput = (id: string) =>
  (parseYaml(readFileSync(join(here, '..', 'cases', `${id}.yaml`), 'utf8')) as { input: string }).input;

async function run(args: { output: string; disruption: boolean; now?: string }, id: string) {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-disruption-'));
  const file = join(dir, `${id}.yaml`);
  writeFileSync(file, caseInput(id));
  let out = '';
  let err = '';
  const code = await runSimulate(
    {
      filenames: [file],
      output: args.output,
      disruption: args.disruption,
      ...(args.now !== undefined ? { now: args.now } : {}),
    },
    { stdout: (t) => (out += t), stderr: (t) => (err += t) },
  );
  return { code, out, err };
}

describe('capenter simulate --disruption', () => {
  it('adds disruption.commands and disruption.blocked to the JSON document', async () => {
    const r = await run({ output: 'json', disruption: true }, 'underutilized-node-replaced-by-cheaper');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.disruption.commands).toEqual([
      {
        decision: 'replace',
        reason: 'Underutilized',
        method: 'SingleNodeConsolidation',
        candidates: ['node-big'],
        replacements: [
          {
            nodePool: 'general',
            instanceTypeOptions: ['m5.large', 'm5.xlarge'],
            instanceType: 'm5.large',
            zone: expect.stringMatching(/^us-east-1[a-f]$/),
            capacityType: 'on-demand',
            priceUSDPerHour: 0.096,
            pods: ['default/app-1-bbbbb'],
          },
        ],
        savingsUSDPerHour: 0.288,
      },
    ]);
    expect(doc.disruption.blocked).toEqual([]);
  });
  it('prints the commands and the blocked nodes in the table', async () => {
    const r = await run({ output: 'table', disruption: true }, 'do-not-disrupt-pod-blocks-consolidation');
    expect(r.code).toBe(0);
    expect(r.out).toContain('No disruption command.');
    expect(r.out).toMatch(/node-big\s+pod default\/app-1-ccccc is annotated karpenter.sh\/do-not-disrupt/);
  });
  it('leaves the output unchanged without the flag', async () => {
    const r = await run({ output: 'json', disruption: false }, 'underutilized-node-replaced-by-cheaper');
    expect(JSON.parse(r.out).disruption).toBeUndefined();
  });

  it('--now sets the pass time and rejects a value that is not RFC 3339', async () => {
    const id = 'underutilized-node-replaced-by-cheaper';
    const early = await run({ output: 'json', disruption: true, now: '2026-01-01T00:00:00Z' }, id);
    expect(JSON.parse(early.out).disruption.now).toBe('2026-01-01T00:00:00.000Z');
    expect(JSON.parse(early.out).disruption.commands[0].reason).toBe('Underutilized');
    const bad = await run({ output: 'json', disruption: true, now: 'yesterday' }, id);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--now must be an RFC 3339 time');
  });
});
