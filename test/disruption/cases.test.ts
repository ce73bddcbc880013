/**
 * The consolidation and drift scenario cases (`test/cases/*.yaml`, vendored from `../shared/cases`) run through
 * `simulateDisruption`, checking `expect.disruption` as `test/cases/README.md` defines it: the first command's decision (`none` = no command), the exact candidate set, every instance type the
 * replacement allows in `replacementTypesAllIn`, and every such type's price below
 * `replacementCheaperThanUSDPerHour`. The termination case needs the controller with simulated time; here only
 * its first command (expiration) is checked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseManifests } from '../../src/apis/load.ts';
import { worstLaunchPrice } from '../../src/disruption/consolidation.ts';
import { Requirements } from '../../src/scheduling/requirements.ts';
import { simulateDisruption } from '../../src/simulate/disruption.ts';

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, '..', 'cases');

interface DisruptionExpect {
  decision: 'delete' | 'replace' | 'none';
  candidates?: string[];
  replacementTypesAllIn?: string[];
  replacementCheaperThanUSDPerHour?: number;
}
interface Case {
  id: string;
  kind: string;
  region: string;
  input: string;
  expect: { disruption?: DisruptionExpect; terminated?: { nodes: string[] } };
}

const cases: Case[] = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => parseYaml(readFileSync(join(dir, f), 'utf8')) as Case);

/** The case `id`; a missing case fails the test (it never passes by skipping its checks). */
function caseById(id: string): Case {
  const c = cases.find((x) => x.id === id);
  if (!c) throw new Error(`case "${id}" not found in ${dir}`);
  return c;
}

/** A fixed pass time: cases never depend on the wall clock. */
const NOW = Date.parse('2026-01-01T00:00:00Z');

async function run(c: Case) {
  const loaded = parseManifests(c.input, `${c.id}.yaml`);
  const report = await simulateDisruption(loaded, { region: c.region, now: NOW });
  expect(report.errors.map((e) => e.message)).toEqual([]);
  return report;
}

/**
 * Cases that fail until the named issue is done: run as expected failures (`it.fails`), so they turn red
 * the moment they start passing and the entry must be removed. Never skipped, never deleted.
 */
const EXPECTED_FAILURES: Readonly<Record<string, string>> = {};

describe('disruption scenario cases', () => {
  const disruptionCases = cases.filter(
    (c) => (c.kind === 'consolidation' || c.kind === 'drift') && c.expect.disruption,
  );
  it('finds the consolidation and drift cases', () => {
    expect(disruptionCases.length).toBeGreaterThanOrEqual(4);
  });
  for (const c of disruptionCases) {
    const xfail = EXPECTED_FAILURES[c.id];
    (xfail ? it.fails : it)(`${c.id}${xfail ? ` [expected failure until ${xfail}]` : ''}`, async () => {
      const want = c.expect.disruption!;
      const report = await run(c);
      // Expired deletes are reported first; the case's "first command" is the first method command.
      const cmd = report.result.commands.find((x) => x.reason !== 'Expired');
      if (want.decision === 'none') {
        expect(cmd, JSON.stringify(report.commands)).toBeUndefined();
        // the simulator says why each node stays
        expect(report.blocked.length).toBeGreaterThan(0);
        for (const b of report.blocked) expect(b.reason).not.toBe('');
        return;
      }
      expect(cmd, JSON.stringify(report.blocked)).toBeDefined();
      expect(cmd!.decision).toBe(want.decision);
      if (want.candidates)
        expect(cmd!.candidates.map((x) => x.name).sort()).toEqual([...want.candidates].sort());
      if (want.decision === 'replace') expect(cmd!.replacements).toHaveLength(1);
      for (const r of cmd!.replacements) {
        const names = r.instanceTypeOptions.map((t) => t.name);
        expect(names.length).toBeGreaterThan(0);
        if (want.replacementTypesAllIn)
          for (const n of names) expect(want.replacementTypesAllIn).toContain(n);
        if (want.replacementCheaperThanUSDPerHour !== undefined) {
          const reqs = Requirements.fromNodeSelector(r.requirements);
          for (const t of r.instanceTypeOptions)
            expect(worstLaunchPrice(t, reqs), t.name).toBeLessThan(want.replacementCheaperThanUSDPerHour);
        }
      }
    });
  }

  it('underutilized-node-replaced-by-cheaper: m5.large at $0.096/h saves $0.288/h, m5.xlarge kept as fallback', async () => {
    const c = caseById('underutilized-node-replaced-by-cheaper');
    const report = await run(c);
    expect(report.commands).toHaveLength(1);
    expect(report.commands[0]!.method).toBe('SingleNodeConsolidation');
    expect(report.commands[0]!.replacements[0]!.priceUSDPerHour).toBe(0.096);
    expect(report.commands[0]!.savingsUSDPerHour).toBe(0.288);
    // upstream's flexible on-demand replacement (the default): every type cheaper than the $0.384/h candidate
    const cmd = report.result.commands[0]!;
    expect(cmd.replacements[0]!.instanceTypeOptions.map((t) => t.name)).toEqual(['m5.large', 'm5.xlarge']);
  });

  it('do-not-disrupt-pod-blocks-consolidation: the blocked list names the pod', async () => {
    const c = caseById('do-not-disrupt-pod-blocks-consolidation');
    const report = await run(c);
    expect(report.blocked).toEqual([
      { node: 'node-big', reason: 'pod default/app-1-ccccc is annotated karpenter.sh/do-not-disrupt' },
    ]);
  });

  for (const c of cases.filter((x) => x.kind === 'termination' && x.expect.terminated)) {
    it(`${c.id}: the first command deletes the expired nodes`, async () => {
      const report = await run(c);
      const first = report.commands[0];
      expect(first?.reason).toBe('Expired');
      const expired = report.commands.filter((x) => x.reason === 'Expired').flatMap((x) => x.candidates);
      expect(expired.sort()).toEqual([...c.expect.terminated!.nodes].sort());
    });
  }
});
