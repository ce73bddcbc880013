/**
 * Fault-injection soak (issue 16), kwok provider:
 *
 *   npm run soak -- --runs N --seed S [--steps K] [--faults step:kind:n,...] [--min-each M] [--no-shrink]
 *
 * Run `i` uses seed `S + i`. Each run builds a seeded scenario and fault schedule (test/soak/) and checks the
 * invariants after every step. A failing run prints its seed, a replay command, and its fault schedule shrunk
 * to the smallest one found that still fails. At the end the faults injected per kind are printed; with
 * `--min-each M` the exit code is 1 when any kind was injected fewer than M times. Exit 1 on any violation.
 */
import { Command } from 'commander';
import {
  FAULT_KINDS,
  type FaultEvent,
  type FaultKind,
  formatSchedule,
  parseSchedule,
} from '../test/soak/faults.ts';
import { type RunResult, runSoak } from '../test/soak/run.ts';

function int(v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`expected a non-negative integer, got "${v}"`);
  return Number(v);
}

/** Removes chunks of the schedule while the run still fails with the same invariant (at most `budget` runs). */
async function shrink(seed: number, steps: number, faults: FaultEvent[], invariant: string, budget: number) {
  let cur = faults;
  let runs = 0;
  for (let size = Math.ceil(cur.length / 2); size >= 1 && runs < budget; size = Math.floor(size / 2)) {
    for (let i = 0; i < cur.length && runs < budget; ) {
      const candidate = [...cur.slice(0, i), ...cur.slice(i + size)];
      runs++;
      const r = await runSoak({ seed, steps, faults: candidate });
      if (r.violations.some((v) => v.invariant === invariant)) cur = candidate;
      else i += size;
    }
    if (size === 1) break;
  }
  return cur;
}

const program = new Command('soak')
  .option('--runs <n>', 'number of runs', int, 10)
  .option('--seed <s>', 'seed of the first run', int, 1)
  .option('--steps <k>', 'steps per run (10 fake seconds each)', int, 200)
  .option('--faults <schedule>', 'explicit fault schedule step:kind:n,... (replay)')
  .option('--min-each <m>', 'fail unless every fault kind was injected at least m times', int, 0)
  .option('--log-file <path>', "append the operator's logs to this file")
  .option(
    '--known <invariants>',
    'comma-separated invariants whose violations are reported as KNOWN (open bugs) without failing the soak',
    '',
  )
  .option('--no-shrink', 'do not shrink the fault schedule of a failing run')
  .option('--shrink-runs <n>', 'most runs spent shrinking one failure', int, 12);
program.parse();
const o = program.opts<{
  runs: number;
  seed: number;
  steps: number;
  faults?: string;
  minEach: number;
  shrink: boolean;
  shrinkRuns: number;
  logFile?: string;
  known: string;
}>();
const known = new Set(o.known.split(',').filter(Boolean));
let knownCount = 0;

const totals = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
const failures: RunResult[] = [];
const started = Date.now();
let totalSteps = 0;
for (let i = 0; i < o.runs; i++) {
  const seed = o.seed + i;
  const t0 = Date.now();
  const r = await runSoak({
    seed,
    steps: o.steps,
    ...(o.faults !== undefined ? { faults: parseSchedule(o.faults) } : {}),
    ...(o.logFile ? { logFile: o.logFile } : {}),
  });
  totalSteps += o.steps;
  for (const k of FAULT_KINDS) totals[k] += r.injected[k];
  const unknown = r.violations.filter((v) => !known.has(v.invariant)).length;
  const status = unknown === 0 ? 'ok' : `FAIL (${unknown} violations)`;
  console.log(
    `run ${i + 1}/${o.runs} seed ${seed}: ${status}; ${r.faults.length} faults scheduled, ${Object.values(r.injected).reduce((a, b) => a + b, 0)} injected; max ${r.maxNodeClaims} NodeClaims; ${r.evictions} evictions/pod deletions; settled in ${r.settleSeconds ?? 'never'} s; ${((Date.now() - t0) / 1000).toFixed(1)} s real`,
  );
  const knownHere = r.violations.filter((v) => known.has(v.invariant));
  if (knownHere.length > 0) {
    knownCount += knownHere.length;
    const v = knownHere[0];
    console.log(
      `  KNOWN: ${knownHere.length} violations of ${[...new Set(knownHere.map((x) => x.invariant))].join(', ')}; first: step ${v?.step} ${v?.detail}`,
    );
  }
  r.violations = r.violations.filter((v) => !known.has(v.invariant));
  if (r.violations.length > 0) {
    failures.push(r);
    for (const v of r.violations.slice(0, 10)) console.log(`  step ${v.step} [${v.invariant}] ${v.detail}`);
    const first = r.violations[0]?.invariant ?? '';
    let sched = r.faults;
    if (o.shrink && first !== 'crash') {
      sched = await shrink(seed, o.steps, r.faults, first, o.shrinkRuns);
      console.log(`  shrunk fault schedule: ${r.faults.length} → ${sched.length} faults`);
    }
    console.log(
      `  replay: npm run soak -- --runs 1 --seed ${seed} --steps ${o.steps} --faults '${formatSchedule(sched)}'`,
    );
  }
}
console.log(
  `\nsoak: ${o.runs} runs × ${o.steps} steps (${totalSteps} steps) in ${((Date.now() - started) / 1000).toFixed(0)} s; ${failures.length} failing runs; ${knownCount} known violations (${[...known].join(', ') || 'none listed'})`,
);
console.log('faults injected by kind:');
for (const k of FAULT_KINDS) console.log(`  ${k.padEnd(12)} ${totals[k]}`);
const short = FAULT_KINDS.filter((k) => totals[k] < o.minEach);
if (short.length > 0) console.log(`fewer than ${o.minEach} injections: ${short.join(', ')}`);
process.exit(failures.length > 0 || short.length > 0 ? 1 : 0);
