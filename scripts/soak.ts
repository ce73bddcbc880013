/**
 * Fault-injection soak (issue 16), kwok or aws provider:
 *
 *   npm run soak -- --runs N --seed S [--provider kwok|aws] [--steps K] [--parallel P] [--faults step:kind:n,...]
 *                   [--minutes M] [--run-timeout T] [--min-each M] [--known invariant,...] [--bad-inputs N]
 *                   [--no-shrink] [--log-file path]
 *
 * `--provider aws` starts one AWS emulator (moto behind the capenter proxy, `scripts/install-moto.sh` installs moto
 * once) per process that runs runs; its runs use it one after the other, each with its own cluster name.
 *
 * Run `i` uses seed `S + i`; with `--parallel P` the runs go to P worker processes, one seed at a time each (the
 * runs mostly wait on loopback HTTP and the fake clock's pacing, so P > cores still pays). `--minutes M` starts no
 * run after M minutes (runs in flight finish; without `--runs` the number of runs is then unbounded). A run that
 * takes longer than `--run-timeout` real seconds (default 1200; counted from when its worker process has loaded, which
 * may take up to 120 s more) is a failure (`timeout`, a hang): the worker is asked
 * (SIGUSR2) where its run is, and the failure names the step, what the run awaited, the emulator requests still open
 * and the run's last 40 log lines; then its process group (with its emulator) is killed and a new worker takes the
 * next seed; in-process (`--parallel 1`) the soak reports the same and stops there. Each run builds a seeded
 * scenario and fault schedule (test/soak/) and checks the invariants after every step. A failing run prints its
 * seed, a replay command, and its fault schedule shrunk to the smallest one found that still fails. At the end the
 * faults injected per kind are printed; with `--min-each M` the exit code is 1 when any kind was injected fewer
 * than M times. Exit 1 on any violation.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import type { AwsEmulator } from '../test/aws/moto.ts';
import { badCases, runBadInputs } from '../test/soak/badinput.ts';
import {
  FAULT_KINDS,
  type FaultEvent,
  type FaultKind,
  formatSchedule,
  parseSchedule,
} from '../test/soak/faults.ts';
import { firstOfEach } from '../test/soak/invariants.ts';
import { type RunResult, type RunStatus, runSoak } from '../test/soak/run.ts';

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
      const r = await runSoak({ seed, steps, faults: candidate, ...(await awsOption()) });
      if (r.violations.some((v) => v.invariant === invariant)) cur = candidate;
      else i += size;
    }
    if (size === 1) break;
  }
  return cur;
}

const program = new Command('soak')
  .option('--runs <n>', 'number of runs (default 10; unbounded with --minutes)', int, 10)
  .option('--minutes <m>', 'start no run after this many minutes (real time)', Number)
  .option(
    '--run-timeout <seconds>',
    'a run taking longer than this (real seconds, from when its worker has loaded) fails as a hang and its worker is killed',
    int,
    1200,
  )
  .option('--seed <s>', 'seed of the first run', int, 1)
  .option('--provider <name>', 'cloud provider: kwok (in-process Nodes) or aws (moto emulator)', 'kwok')
  .option('--steps <k>', 'steps per run (10 fake seconds each)', int, 200)
  .option('--faults <schedule>', 'explicit fault schedule step:kind:n,... (replay)')
  .option('--min-each <m>', 'fail unless every fault kind was injected at least m times', int, 0)
  .option(
    '--log-file <path>',
    "append the operator's logs to this file ({seed} in the path: one file per run)",
  )
  .option(
    '--known <invariants>',
    'comma-separated invariants whose violations are reported as KNOWN (open bugs) without failing the soak',
    '',
  )
  .option(
    '--parallel <p>',
    'runs in parallel, each in its own worker process (default 1: in this process)',
    int,
    1,
  )
  .option(
    '--worker',
    'internal: run the seeds read from stdin (one per line), one SOAK-RESULT JSON line each',
  )
  .option(
    '--bad-inputs <n>',
    'then apply n generated malformed objects (test/soak/badinput.ts) to a cluster with the operator running and to simulate; fail on a wrong answer',
    int,
    0,
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
  parallel: number;
  worker?: boolean;
  badInputs: number;
  minutes?: number;
  runTimeout: number;
  provider: string;
}>();
if (o.minutes !== undefined && !(o.minutes > 0)) {
  console.error(`--minutes: expected a positive number, got "${o.minutes}"`);
  process.exit(2);
}
/** Runs to start at most: `--runs`, or unbounded when only `--minutes` bounds the soak. */
const maxRuns =
  o.minutes !== undefined && program.getOptionValueSource('runs') === 'default'
    ? Number.POSITIVE_INFINITY
    : o.runs;
/** Real-time instant (ms) after which no run starts. */
const deadline = o.minutes !== undefined ? Date.now() + o.minutes * 60_000 : Number.POSITIVE_INFINITY;
if (o.provider !== 'kwok' && o.provider !== 'aws') {
  console.error(`--provider: expected kwok or aws, got "${o.provider}"`);
  process.exit(2);
}

/** This process's AWS emulator (started on first use with `--provider aws`, stopped by {@link stopEmulator}). */
let emulator: Promise<AwsEmulator> | undefined;
async function awsOption(): Promise<{ aws?: AwsEmulator }> {
  if (o.provider !== 'aws') return {};
  emulator ??= import('../test/aws/moto.ts').then((m) => m.startAwsEmulator());
  return { aws: await emulator };
}
async function stopEmulator(): Promise<void> {
  if (emulator) await (await emulator).stop();
}
const known = new Set(o.known.split(',').filter(Boolean));
let knownCount = 0;

const RESULT = 'SOAK-RESULT ';
const HANG = 'SOAK-HANG ';
/** A worker's first line: it has loaded and answers SIGUSR2 (before that, the signal's default action kills it). */
const READY = 'SOAK-READY';
/** The run in progress in this process (its live status), for a hang report. */
const runStatus: { current?: RunStatus } = {};
const runOne = async (seed: number): Promise<RunResult> =>
  runSoak({
    ...(await awsOption()),
    seed,
    steps: o.steps,
    status: runStatus,
    ...(o.faults !== undefined ? { faults: parseSchedule(o.faults) } : {}),
    ...(o.logFile ? { logFile: o.logFile.replaceAll('{seed}', String(seed)) } : {}),
  });

/** What a hung run was doing: its step and phase, the emulator requests still open, its last log lines. */
interface HangReport {
  detail: string;
  log: string[];
}
/** Lines of the hung run's log printed in its report. */
const HANG_LOG_LINES = 40;
function hangReport(): HangReport {
  const st = runStatus.current;
  if (!st) return { detail: 'the run had not started', log: [] };
  const open = st.inFlight();
  return {
    detail: `at step ${st.step} (fake t=${st.fakeSeconds} s), awaiting: ${st.phase}; emulator requests open: ${open.length > 0 ? open.join(', ') : 'none'}`,
    log: st.tail(HANG_LOG_LINES),
  };
}

type Result = RunResult & { realSeconds: number };

if (o.worker) {
  // worker mode: seeds from stdin, one JSON line per run on stdout, nothing else; a SIGTERM stops the emulator too
  process.on('SIGTERM', () => {
    void stopEmulator().finally(() => process.exit(143));
  });
  // the parent asks where a run past --run-timeout is before it kills this worker
  process.on('SIGUSR2', () => {
    process.stdout.write(`${HANG}${JSON.stringify(hangReport())}\n`);
  });
  process.stdout.write(`${READY}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const seed = int(line.trim());
    const t0 = Date.now();
    const r = await runOne(seed);
    process.stdout.write(`${RESULT}${JSON.stringify({ ...r, realSeconds: (Date.now() - t0) / 1000 })}\n`);
  }
  await stopEmulator();
  process.exit(0);
}

/**
 * The failing result of a run that did not finish: `timeout` (past `--run-timeout`) or `crash` (its worker process
 * died). Its fault schedule is unknown here (the seed draws it again on replay).
 */
function unfinished(
  seed: number,
  seconds: number,
  invariant: 'timeout' | 'crash',
  detail: string,
  log?: string[],
): Result {
  return {
    seed,
    steps: o.steps,
    faults: [],
    injected: Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>,
    violations: [{ step: -1, invariant, detail, ...(log?.length ? { log } : {}) }],
    settleSeconds: undefined,
    maxNodeClaims: 0,
    evictions: 0,
    budgetNodeGoneSteps: 0,
    realSeconds: seconds,
  };
}
const TIMEOUT_DETAIL = `the run did not finish within ${o.runTimeout} s (real time): a hang`;
/** How long a worker past `--run-timeout` has to answer where it is (real ms) before it is killed. */
const HANG_ANSWER_MS = 10_000;
/** Real seconds a worker process may take to load (import the operator) before its first run's --run-timeout starts. */
const WORKER_LOAD_SECONDS = 120;

/** The next seed to run, or undefined once `maxRuns` were started or the `--minutes` deadline passed. */
let started = 0;
function nextSeed(): number | undefined {
  if (started >= maxRuns || Date.now() >= deadline) return undefined;
  return o.seed + started++;
}

/**
 * Runs seeds in `parallel` worker processes, each handed one seed at a time on its stdin; yields results as they
 * come. A worker whose run passes `--run-timeout` is killed with its process group (its AWS emulator included), the
 * run is yielded as a `timeout` failure, and a new worker takes over.
 */
async function* inWorkers(parallel: number): AsyncGenerator<Result> {
  const queue: Result[] = [];
  let wake: (() => void) | undefined;
  let running = 0;
  const workers = new Set<ChildProcess>();
  const passthrough = process.argv.slice(2).filter((a, i, all) => {
    const flag = a.split('=')[0];
    const dropped = ['--parallel', '--runs', '--seed', '--minutes'];
    if (dropped.includes(flag ?? '')) return false;
    return !dropped.includes(all[i - 1] ?? '');
  });
  const startWorker = (): void => {
    const seed = nextSeed();
    if (seed === undefined) return;
    running++;
    const child: ChildProcess = spawn(
      process.execPath,
      [...process.execArgv, process.argv[1] ?? '', ...passthrough, '--worker'],
      { stdio: ['pipe', 'pipe', 'inherit'], detached: true },
    );
    let current: { seed: number; t0: number; timer: NodeJS.Timeout } | undefined;
    let killed = false;
    /** The worker said {@link READY}: it can be asked where it is. */
    let ready = false;
    /** Set while a worker past --run-timeout is asked where it is (SIGUSR2): takes its answer. */
    let onHangReport: ((r: HangReport | undefined) => void) | undefined;
    /** Arms the run's timer: --run-timeout from now once the worker has loaded, else with its load allowance. */
    const arm = (s: number, t0: number): NodeJS.Timeout => {
      const ms = (ready ? o.runTimeout : o.runTimeout + WORKER_LOAD_SECONDS) * 1000;
      return setTimeout(() => {
        killed = true;
        current = undefined;
        const seconds = (Date.now() - t0) / 1000;
        const noAnswer = setTimeout(() => onHangReport?.(undefined), HANG_ANSWER_MS);
        onHangReport = (r) => {
          onHangReport = undefined;
          clearTimeout(noAnswer);
          const where = r
            ? `${TIMEOUT_DETAIL} ${r.detail}`
            : `${TIMEOUT_DETAIL}; the worker did not say where within ${HANG_ANSWER_MS / 1000} s (it died, or its event loop is blocked: a busy loop)`;
          queue.push(unfinished(s, seconds, 'timeout', where, r?.log));
          try {
            process.kill(-(child.pid ?? 0), 'SIGKILL');
          } catch {
            child.kill('SIGKILL');
          }
        };
        if (ready) child.kill('SIGUSR2');
        else onHangReport({ detail: 'before the worker process had loaded', log: [] });
      }, ms);
    };
    const give = (s: number) => {
      const t0 = Date.now();
      current = { seed: s, t0, timer: arm(s, t0) };
      child.stdin?.write(`${s}\n`);
    };
    give(seed);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === READY) {
        ready = true;
        // the run's --run-timeout starts now: loading the worker (seconds on a busy machine) is not the run's time
        if (current) {
          clearTimeout(current.timer);
          current = { seed: current.seed, t0: Date.now(), timer: arm(current.seed, Date.now()) };
        }
        return;
      }
      if (line.startsWith(HANG)) {
        onHangReport?.(JSON.parse(line.slice(HANG.length)) as HangReport);
        return;
      }
      if (!line.startsWith(RESULT) || killed) return;
      if (current) clearTimeout(current.timer);
      current = undefined;
      queue.push(JSON.parse(line.slice(RESULT.length)));
      const s = nextSeed();
      if (s === undefined) child.stdin?.end();
      else give(s);
      wake?.();
    });
    workers.add(child);
    child.on('exit', (code, signal) => {
      onHangReport?.(undefined); // asked where it hung, it died first
      running--;
      workers.delete(child);
      const diedMidRun = current !== undefined;
      if (current) {
        // died mid-run (not by our timeout): a crash of the whole process
        clearTimeout(current.timer);
        const seconds = (Date.now() - current.t0) / 1000;
        const r = unfinished(
          current.seed,
          seconds,
          'crash',
          `worker process exited (${signal ?? code}) during the run`,
        );
        queue.push(r);
        current = undefined;
      } else if (code !== 0 && !killed) console.log(`a worker exited with ${signal ?? code}`);
      if (killed || diedMidRun) startWorker(); // the lost worker's successor takes the next seed
      wake?.();
    });
  };
  // workers lead their own process groups (so a timeout kills a worker's emulator too): pass Ctrl-C on to them
  const killAll = () => {
    for (const w of workers)
      try {
        process.kill(-(w.pid ?? 0), 'SIGKILL');
      } catch {
        // already gone
      }
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  for (let w = 0; w < parallel; w++) startWorker();
  while (running > 0 || queue.length > 0) {
    const next = queue.shift();
    if (next) {
      yield next;
      continue;
    }
    await new Promise<void>((r) => {
      wake = r;
    });
    wake = undefined;
  }
}

/** Runs seeds one after the other in this process; a run past `--run-timeout` is yielded as a failure and ends the soak. */
async function* sequential(): AsyncGenerator<Result> {
  for (let seed = nextSeed(); seed !== undefined; seed = nextSeed()) {
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), o.runTimeout * 1000);
    });
    const r = await Promise.race([runOne(seed), timeout]);
    clearTimeout(timer);
    if (r === 'timeout') {
      const where = hangReport();
      yield unfinished(
        seed,
        (Date.now() - t0) / 1000,
        'timeout',
        `${TIMEOUT_DETAIL} ${where.detail}`,
        where.log,
      );
      return; // the hung run still holds this process: stop here
    }
    yield { ...r, realSeconds: (Date.now() - t0) / 1000 };
  }
}

const totals = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
const failures: RunResult[] = [];
const soakStart = Date.now();
/** Prints a violation's operator log lines (see `Violation.log`), indented. */
function printLog(lines: string[] | undefined): void {
  if (!lines?.length) return;
  console.log(
    `    operator log (the last lines, or those naming its objects; t = fake seconds since the run began):`,
  );
  for (const l of lines) console.log(`      ${l.slice(0, 400)}`);
}

let totalSteps = 0;
let nodeGoneSteps = 0;
let done = 0;
for await (const r of o.parallel > 1 ? inWorkers(o.parallel) : sequential()) {
  done++;
  const seed = r.seed;
  totalSteps += o.steps;
  for (const k of FAULT_KINDS) totals[k] += r.injected[k];
  nodeGoneSteps += r.budgetNodeGoneSteps ?? 0;
  const unknown = r.violations.filter((v) => !known.has(v.invariant)).length;
  const status = unknown === 0 ? 'ok' : `FAIL (${unknown} violations)`;
  console.log(
    `run ${done}/${Number.isFinite(maxRuns) ? maxRuns : '-'} seed ${seed}: ${status}; ${r.faults.length} faults scheduled, ${Object.values(r.injected).reduce((a, b) => a + b, 0)} injected; max ${r.maxNodeClaims} NodeClaims; ${r.evictions} evictions/pod deletions; settled in ${r.settleSeconds ?? 'never'} s; ${r.realSeconds.toFixed(1)} s real`,
  );
  const knownHere = r.violations.filter((v) => known.has(v.invariant));
  if (knownHere.length > 0) {
    knownCount += knownHere.length;
    const v = knownHere[0];
    console.log(
      `  KNOWN: ${knownHere.length} violations of ${[...new Set(knownHere.map((x) => x.invariant))].join(', ')}; first: step ${v?.step} ${v?.detail}`,
    );
    printLog(v?.log);
  }
  r.violations = r.violations.filter((v) => !known.has(v.invariant));
  if (r.violations.length > 0) {
    failures.push(r);
    // first violation of each invariant (the same one usually repeats every step until it clears)
    const firsts = firstOfEach(r.violations);
    for (const v of firsts) {
      console.log(`  step ${v.step} [${v.invariant}] ${v.detail.slice(0, 2000)}`);
      printLog(v.log);
    }
  }
}
// failing runs: print, shrink (sequentially, in this process) and give the replay command
for (const r of failures) {
  const kinds = [...new Set(r.violations.map((v) => v.invariant))];
  console.log(`\nseed ${r.seed}: ${r.violations.length} violations (${kinds.join(', ')})`);
  const first = r.violations[0]?.invariant ?? '';
  let sched = r.faults;
  if (r.violations[0]?.step === -1) {
    // unfinished (hang or dead worker): the seed alone replays it
    console.log(
      `  replay: npm run soak -- --runs 1 --seed ${r.seed} --steps ${o.steps}${o.provider === 'aws' ? ' --provider aws' : ''} --log-file /tmp/soak-${r.seed}.log`,
    );
    continue;
  }
  if (o.shrink && first !== 'crash') {
    sched = await shrink(r.seed, o.steps, r.faults, first, o.shrinkRuns);
    console.log(`  shrunk fault schedule: ${r.faults.length} → ${sched.length} faults`);
  }
  console.log(
    `  replay: npm run soak -- --runs 1 --seed ${r.seed} --steps ${o.steps}${o.provider === 'aws' ? ' --provider aws' : ''} --faults '${formatSchedule(sched)}'`,
  );
}
await stopEmulator();
console.log(
  `\nsoak (${o.provider}): ${done} runs × ${o.steps} steps (${totalSteps} steps) in ${((Date.now() - soakStart) / 1000).toFixed(0)} s; ${failures.length} failing runs; ${knownCount} known violations (${[...known].join(', ') || 'none listed'})`,
);
console.log(
  `budget checks passed only because a deleting NodeClaim's Node was already gone (not counted, as upstream): ${nodeGoneSteps}`,
);
console.log('faults injected by kind:');
for (const k of FAULT_KINDS) console.log(`  ${k.padEnd(12)} ${totals[k]}`);
const short = FAULT_KINDS.filter((k) => totals[k] < o.minEach);
if (short.length > 0) console.log(`fewer than ${o.minEach} injections: ${short.join(', ')}`);

let badFailed = false;
if (o.badInputs > 0) {
  const t0 = Date.now();
  const bad = await runBadInputs(badCases(o.seed, o.badInputs));
  const wrong = bad.answers.filter((a) => a.mismatches.length > 0);
  console.log(
    `\nbad inputs: ${bad.answers.length} objects in ${((Date.now() - t0) / 1000).toFixed(0)} s; ${wrong.length} answered wrongly; controller crashes ${bad.crashes.length}; good pod ran afterwards: ${bad.goodPodRan}`,
  );
  console.log('  family                               tried  API 4xx  simulate exit 2');
  for (const [family, c] of Object.entries(bad.byFamily))
    console.log(
      `  ${family.padEnd(36)} ${String(c.tried).padStart(5)}  ${String(c.rejected).padStart(7)}  ${String(c.simulateExit2).padStart(15)}`,
    );
  for (const a of wrong.slice(0, 10))
    console.log(`  WRONG ${a.family} ${a.name}: ${a.mismatches.join('; ')}`);
  for (const c of bad.crashes.slice(0, 3)) console.log(`  CRASH ${c.split('\n')[0]}`);
  badFailed = wrong.length > 0 || bad.crashes.length > 0 || !bad.goodPodRan;
}
process.exit(failures.length > 0 || short.length > 0 || badFailed ? 1 : 0);
