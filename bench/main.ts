/**
 * `npm run bench` (`tsx bench/main.ts [--json] [--sizes 100,1000] [--cpu-prof] [--workload upstream-diverse]`):
 * the benchmarks. `--workload upstream-diverse` runs only the scheduling benchmark on upstream Karpenter's own
 * workload (`bench/upstream-diverse.ts`: pods/s, NodeClaims and $/h at 1k/2k/5k/10k pods, or `--sizes`), side by
 * side with upstream's own benchmark as recorded on this machine (`bench/upstream/upstream-measured.json`) and the
 * ratio against the ≥ 20× target; `--json` adds `upstream: {upstreamPodsPerSecond, ratio, pass, firstSolveRatio}`.
 *
 * Scheduling: each size runs in a fresh child process (`bench/scheduling.ts`) so the peak RSS is that
 * size's own. Targets (reported, never asserted in tests): ≥ 5,000 pods/s at 5,000 pods; 10,000 pods in
 * < 3 s and < 500 MB RSS; plan cost ≤ 1.10 × lower bound (issue 24; was 1.25).
 * Then the API-server, provisioning, idle, start, aws, disruption and CAPI sections (`bench/apiserver.ts`,
 * `bench/provisioning.ts` (provisioning and the controller idle), `bench/start.ts`, `bench/aws.ts`,
 * `bench/disruption.ts`, `bench/dashboard.ts`, `bench/capi.ts`, `bench/clusterapi.ts`);
 * `--only apiServer,provisioning,idle,start,plan,aws,disruption,dashboard,capi,clusterapi` picks sections (scheduling always runs
 * unless `--sizes` is empty, e.g. `--sizes 0`); `--only realk8s` (`bench/realk8s.ts`, the "basic" case on a real
 * control plane from `scripts/realk8s/`) runs only when named.
 *
 * `--json` prints a JSON array with one object per scheduling size:
 * `{pods, podsPerSecond, nodeClaims, priceUSDPerHour, cpuUtilization, memoryUtilization, costToLowerBound,
 * peakRssMB, unschedulable, solveSeconds}`; each further section follows as one more element
 * (`{apiServer: …}`, `{provisioning: …}`, `{disruption: …}`).
 * `--cpu-prof` writes a V8 CPU profile per size into `$TMPDIR/capenter-bench-profiles/` (open in Chrome DevTools).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SchedulingBenchRow } from './scheduling.ts';
import type { UpstreamDiverseRow } from './upstream-diverse.ts';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const json = argv.includes('--json');
const cpuProf = argv.includes('--cpu-prof');
const profileDir = join(tmpdir(), 'capenter-bench-profiles');
const sizesArg = argv.indexOf('--sizes');
const workloadArg = argv.indexOf('--workload');
const workload = workloadArg >= 0 ? (argv[workloadArg + 1] ?? '') : 'default';
if (workload !== 'default' && workload !== 'upstream-diverse') {
  process.stderr.write(`error: --workload must be "default" or "upstream-diverse", got "${workload}"\n`);
  process.exit(2);
}
const sizes =
  sizesArg >= 0
    ? (argv[sizesArg + 1] ?? '')
        .split(',')
        .map(Number)
        .filter((n) => n > 0)
    : workload === 'upstream-diverse'
      ? [1000, 2000, 5000, 10000]
      : [100, 1000, 5000, 10000];

/** Runs `script --pods N --json` in a fresh node process (tsx loader) and parses its last output line. */
function runJsonChild<T>(script: string, pods: number, profileName: string): Promise<T> {
  const nodeArgs = ['--import', 'tsx'];
  if (cpuProf)
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${profileName}.cpuprofile`);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...nodeArgs, join(here, script), '--pods', String(pods), '--json'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        cwd: join(here, '..'),
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${script} for ${pods} pods exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
      } catch {
        reject(new Error(`${script} for ${pods} pods printed no JSON: ${out.slice(0, 500)}`));
      }
    });
  });
}

if (workload === 'upstream-diverse') {
  const { compareWithUpstream, formatUpstreamComparison, formatUpstreamDiverseRow, loadUpstreamMeasured } =
    await import('./upstream-diverse.ts');
  const log = (s: string) => {
    if (!json) process.stdout.write(`${s}\n`);
  };
  log(
    'Scheduling, workload upstream-diverse: upstream makeDiversePods (Go math/rand seed 42), 400 fake-it types, ' +
      'NodePool without requirements (each size in a fresh process)',
  );
  const rows: UpstreamDiverseRow[] = [];
  for (const n of sizes) {
    const row = await runJsonChild<UpstreamDiverseRow>('upstream-diverse.ts', n, `upstream-diverse-${n}`);
    rows.push(row);
    log(formatUpstreamDiverseRow(row));
  }
  const measured = loadUpstreamMeasured();
  log('');
  log(formatUpstreamComparison(rows, measured));
  if (json) {
    const withUpstream = rows.map((r) => ({ ...r, upstream: compareWithUpstream(r, measured) }));
    process.stdout.write(`${JSON.stringify(withUpstream, null, 2)}\n`);
  }
  process.exit(0);
}

function runChild(pods: number): Promise<SchedulingBenchRow> {
  return runJsonChild<SchedulingBenchRow>('scheduling.ts', pods, `scheduling-${pods}`);
}

const log = (s: string) => {
  if (!json) process.stdout.write(`${s}\n`);
};

log(
  'Scheduling: upstream "diverse" pod mix, full us-east-1 catalog, default NodePool (each size in a fresh process)',
);
const rows: SchedulingBenchRow[] = [];
for (const n of sizes) {
  const row = await runChild(n);
  rows.push(row);
  log(
    `  ${String(n).padStart(6)} pods: ${String(row.podsPerSecond).padStart(7)} pods/s (${row.solveSeconds.toFixed(3)} s), ` +
      `${row.nodeClaims} NodeClaims, $${row.priceUSDPerHour.toFixed(4)}/h, cpu ${(row.cpuUtilization * 100).toFixed(1)}%, ` +
      `memory ${(row.memoryUtilization * 100).toFixed(1)}%, cost/lower bound ${row.costToLowerBound.toFixed(3)}, ` +
      `peak RSS ${row.peakRssMB} MB${row.unschedulable ? `, ${row.unschedulable} unschedulable` : ''}`,
  );
}

if (cpuProf) log(`CPU profiles: ${profileDir}`);
const at = (n: number) => rows.find((r) => r.pods === n);
const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'MISSED');
const r5k = at(5000);
const r10k = at(10000);
log('Targets:');
log(
  `  >= 5,000 pods/s at 5,000 pods: ${verdict(r5k && r5k.podsPerSecond >= 5000)}${r5k ? ` (${r5k.podsPerSecond})` : ''}`,
);
log(
  `  10,000 pods in < 3 s: ${verdict(r10k && r10k.solveSeconds < 3)}${r10k ? ` (${r10k.solveSeconds} s)` : ''}`,
);
log(
  `  10,000 pods in < 500 MB RSS: ${verdict(r10k && r10k.peakRssMB < 500)}${r10k ? ` (${r10k.peakRssMB} MB)` : ''}`,
);
const worst = rows.length ? Math.max(...rows.map((r) => r.costToLowerBound)) : undefined;
log(
  `  cost <= 1.10 x lower bound: ${verdict(worst === undefined ? undefined : worst <= 1.1)}${worst !== undefined ? ` (worst ${worst})` : ''}`,
);

const out: unknown[] = [...rows];

/** A further benchmark section: a module in bench/ exporting a run function and (optionally) a formatter. */
interface Section {
  key: string;
  title: string;
  file: string;
  run: string;
  format: string;
  /** Runs only when named in `--only` (it needs more than this repository, e.g. the real control plane). */
  optIn?: boolean;
}
const sections: Section[] = [
  {
    key: 'apiServer',
    title: 'API server',
    file: 'apiserver.ts',
    run: 'runApiServerBench',
    format: 'formatApiServerBench',
  },
  {
    key: 'provisioning',
    title: 'Provisioning (embedded cluster, upstream "basic" case)',
    file: 'provisioning.ts',
    run: 'runProvisioningBench',
    format: 'formatProvisioningBench',
  },
  {
    key: 'idle',
    title: 'Controller idle (its own process, empty embedded cluster)',
    file: 'provisioning.ts',
    run: 'runIdleBench',
    format: 'formatIdleBench',
  },
  {
    key: 'aws',
    title: 'aws provider (100 NodeClaims against moto + the emulator proxy)',
    file: 'aws.ts',
    run: 'runAwsBench',
    format: 'formatAwsBench',
  },
  {
    key: 'start',
    title: '`capenter start` (whole embedded cluster, 10,000 pending pods)',
    file: 'start.ts',
    run: 'runStartBench',
    format: 'formatStartBench',
  },
  {
    key: 'plan',
    title: '`capenter plan` (a NodePool change on the 10,000-pod cluster of `start`)',
    file: 'plan.ts',
    run: 'runPlanBench',
    format: 'formatPlanBench',
  },
  {
    key: 'disruption',
    title: 'Disruption (1,000 nodes, 10,000 pods)',
    file: 'disruption.ts',
    run: 'runDisruptionBench',
    format: 'formatDisruptionBench',
  },
  {
    key: 'dashboard',
    title: 'Dashboard (1,000 nodes, 10,000 pods, headless Chromium)',
    file: 'dashboard.ts',
    run: 'runDashboardBench',
    format: 'formatDashboardBench',
  },
  {
    key: 'capi',
    title: 'CAPI (two embedded clusters, kwok)',
    file: 'capi.ts',
    run: 'runCAPIBench',
    format: 'formatCAPIBench',
  },
  {
    key: 'realk8s',
    title: 'Provisioning on a real control plane (kube-scheduler, kwok; upstream "basic" case)',
    file: 'realk8s.ts',
    run: 'runRealK8sBench',
    format: 'formatRealK8sBench',
    optIn: true,
  },
  {
    key: 'clusterapi',
    title: 'clusterapi provider (two embedded clusters, MachineDeployment stand-in, 100 pods)',
    file: 'clusterapi.ts',
    run: 'runClusterAPIBench',
    format: 'formatClusterAPIBench',
  },
];
const onlyArg = argv.indexOf('--only');
const only = onlyArg >= 0 ? new Set((argv[onlyArg + 1] ?? '').split(',')) : undefined;
const unknownSections = [...(only ?? [])].filter((k) => !sections.some((s) => s.key === k));
if (unknownSections.length > 0) {
  process.stderr.write(
    `error: --only: unknown section(s) ${unknownSections.join(', ')}; expected a comma-separated list of ${sections.map((s) => s.key).join(', ')}\n`,
  );
  process.exit(2);
}
for (const sec of sections) {
  if (only ? !only.has(sec.key) : sec.optIn) continue;
  const file = join(here, sec.file);
  if (!existsSync(file)) continue;
  log('');
  log(`${sec.title}:`);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const run = mod[sec.run];
  if (typeof run !== 'function') {
    log(`  bench/${sec.file} exports no ${sec.run}(); skipped`);
    continue;
  }
  const res = await (run as () => unknown)();
  out.push({ [sec.key]: res });
  const format = mod[sec.format];
  log(typeof format === 'function' ? (format as (r: unknown) => string)(res) : JSON.stringify(res, null, 2));
}
if (json) process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
