/**
 * `capenter start` at 10,000 pending pods: the whole embedded cluster (API server, kube-scheduler / kubelet /
 * workload stand-ins and the operator, one process) from the first apply to every pod Running.
 *
 * Workload (issue 12 §5): 6,000 × 100m/128Mi; 3,000 × 250m/512Mi with a zonal topology spread (maxSkew 1,
 * DoNotSchedule); 1,000 × 1 CPU/2Gi; one NodePool over instance categories c/m/r, generation > 4, on-demand,
 * amd64 linux, on a KWOKNodeClass. The CLI runs bundled by esbuild under plain node (as a release would run it;
 * see `provisioning.ts` `bundleController`), in a child process whose peak RSS (Linux `VmHWM`) is the cluster's.
 * Targets (reported, never asserted): all Running in < 30 s, peak RSS < 500 MB (issue 24; were 60 s and 600 MB).
 *
 * Run directly: `npx tsx bench/start.ts [--json] [--pods N] [--timeout S] [--cpu-prof-dir=DIR]`; `npm run bench -- --only start`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  bundleController,
  cpuSecondsOf,
  deploymentYaml,
  kwokNodePoolYaml,
  peakRssMB,
} from './provisioning.ts';

/** What {@link runStartBench} measures. */
export interface StartBenchResult {
  pods: number;
  /**
   * Seconds from `capenter start`'s start (cluster start-up included) to its first progress line with every pod
   * Running (lines are printed on change, checked each second): the issue's "all Running".
   */
  allRunningSeconds: number | undefined;
  /**
   * `capenter start`'s own `elapsedSeconds` when it settled: every pod Running and no NodeClaim launching or
   * being deleted. Later than {@link allRunningSeconds} when consolidation starts before the pods are all placed
   * (the drained pods' 30-s grace period then counts).
   */
  runningSeconds: number | undefined;
  /** Wall seconds from spawning the process to its exit. */
  wallSeconds: number;
  /** CPU seconds (user + system) of the `capenter start` process: less sensitive to a loaded machine. */
  cpuSeconds: number | undefined;
  /** Peak RSS of the `capenter start` process, MB (Linux VmHWM), undefined when unavailable. */
  peakRssMB: number | undefined;
  nodeClaims: number | undefined;
  priceUSDPerHour: number | undefined;
  settled: boolean;
  targets: { runningSeconds: number; peakRssMB: number };
}

/** The manifests of the workload, scaled to `pods` (6 : 3 : 1). */
export function startManifests(pods: number): string {
  const small = Math.round(pods * 0.6);
  const spread = Math.round(pods * 0.3);
  const large = pods - small - spread;
  const zonal = `      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: zonal}}}
`;
  const generation = `        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}
`;
  return (
    kwokNodePoolYaml(generation) +
    deploymentYaml('small', small, '100m', '128Mi') +
    deploymentYaml('zonal', spread, '250m', '512Mi', zonal) +
    deploymentYaml('large', large, '1', '2Gi')
  );
}

/** Runs the benchmark (`pods` default 10,000; `timeoutSeconds` passed to `--timeout`, default 600). */
export async function runStartBench(
  opts: {
    pods?: number | undefined;
    timeoutSeconds?: number | undefined;
    cpuProfDir?: string | undefined;
  } = {},
): Promise<StartBenchResult> {
  const pods = opts.pods ?? 10000;
  const dir = mkdtempSync(join(tmpdir(), 'capenter-bench-start-'));
  const manifest = join(dir, 'workload.yaml');
  writeFileSync(manifest, startManifests(pods));
  const entry = await bundleController();
  const nodeArgs = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [];
  const args = [
    ...nodeArgs,
    entry,
    'start',
    '-f',
    manifest,
    '--exit-when-settled',
    '--timeout',
    String(opts.timeoutSeconds ?? 600),
    '-o',
    'json',
    '--kubeconfig-out',
    join(dir, 'kubeconfig'),
  ];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  let allRunning: number | undefined;
  let errBuf = '';
  child.stderr.on('data', (d: Buffer) => {
    errBuf += d.toString();
    let nl = errBuf.indexOf('\n');
    while (nl >= 0) {
      const m = /^\[([\d.]+)s\] pods (\d+)\/(\d+) running/.exec(errBuf.slice(0, nl));
      if (allRunning === undefined && m && m[2] === m[3] && Number(m[3]) >= pods) allRunning = Number(m[1]);
      errBuf = errBuf.slice(nl + 1);
      nl = errBuf.indexOf('\n');
    }
  });
  let peak: number | undefined;
  let cpu: number | undefined;
  const sample = setInterval(() => {
    const v = peakRssMB(child.pid);
    if (v !== undefined) peak = Math.max(peak ?? 0, v);
    cpu = cpuSecondsOf(child.pid) ?? cpu;
  }, 200);
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => resolve());
  });
  clearInterval(sample);
  const wallSeconds = Math.round((performance.now() - t0) / 100) / 10;
  rmSync(dir, { recursive: true, force: true });
  let summary:
    | { settled: boolean; elapsedSeconds: number; totals: { nodeClaims: number; priceUSDPerHour: number } }
    | undefined;
  try {
    const start = out.indexOf('{');
    summary = start >= 0 ? JSON.parse(out.slice(start)) : undefined;
  } catch {
    summary = undefined;
  }
  return {
    pods,
    allRunningSeconds: allRunning,
    runningSeconds: summary?.settled ? summary.elapsedSeconds : undefined,
    wallSeconds,
    cpuSeconds: cpu,
    peakRssMB: peak,
    nodeClaims: summary?.totals.nodeClaims,
    priceUSDPerHour: summary ? Math.round(summary.totals.priceUSDPerHour * 10000) / 10000 : undefined,
    settled: summary?.settled ?? false,
    targets: { runningSeconds: 30, peakRssMB: 500 },
  };
}

/** Human-readable lines for {@link runStartBench}'s result. */
export function formatStartBench(r: StartBenchResult): string {
  const ok = (v: boolean) => (v ? 'met' : 'MISSED');
  return [
    `  ${r.pods} pods: all Running after ${r.allRunningSeconds ?? '?'} s, ${r.settled ? `settled after ${r.runningSeconds} s` : 'NOT settled'} (process wall ${r.wallSeconds} s, ${r.cpuSeconds ?? '?'} CPU s), ` +
      `${r.nodeClaims ?? '?'} NodeClaims, $${r.priceUSDPerHour ?? '?'}/h, peak RSS ${r.peakRssMB ?? '?'} MB`,
    `  target all Running < ${r.targets.runningSeconds} s: ${ok(r.allRunningSeconds !== undefined && r.allRunningSeconds < r.targets.runningSeconds)}`,
    `  target peak RSS < ${r.targets.peakRssMB} MB: ${ok(r.peakRssMB !== undefined && r.peakRssMB < r.targets.peakRssMB)}`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const podsArg = argv.indexOf('--pods');
  const timeoutArg = argv.indexOf('--timeout');
  const prof = argv.find((a) => a.startsWith('--cpu-prof-dir='))?.slice('--cpu-prof-dir='.length);
  const r = await runStartBench({
    pods: podsArg >= 0 ? Number(argv[podsArg + 1]) : undefined,
    timeoutSeconds: timeoutArg >= 0 ? Number(argv[timeoutArg + 1]) : undefined,
    cpuProfDir: prof,
  });
  process.stdout.write(argv.includes('--json') ? `${JSON.stringify(r)}\n` : `${formatStartBench(r)}\n`);
}
