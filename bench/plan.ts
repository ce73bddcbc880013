/**
 * `capenter plan` on the 10,000-pod cluster of `bench/start.ts`: `capenter start` (bundled, its own process) runs
 * the workload until it settles and keeps serving; then `capenter plan --kubeconfig K -f changed.yaml -o json`
 * (bundled, its own process) plans a NodePool change that drifts most nodes: instance categories c/m/r → c only.
 * Measures the plan process's wall time (process start to exit: read every object, drift, waves, one end-state
 * scheduling pass over the drifted nodes' pods) and peak RSS. Reported, never asserted.
 *
 * Run directly: `npx tsx bench/plan.ts [--json] [--pods N]`; `npm run bench -- --only plan`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleController, kwokNodePoolYaml, peakRssMB } from './provisioning.ts';
import { startManifests } from './start.ts';

/** What {@link runPlanBench} measures. */
export interface PlanBenchResult {
  pods: number;
  /** Seconds until `capenter start` settled (the cluster being planned). */
  clusterSettledSeconds: number | undefined;
  /** Wall seconds of the `capenter plan` process, start to exit. */
  planSeconds: number;
  /** Peak RSS of the plan process, MB (Linux VmHWM). */
  planPeakRssMB: number | undefined;
  exitCode: number | null;
  /** From the plan's JSON: drifted nodes, waves, replacements, unschedulable pods, cost. */
  driftedNodes: number | undefined;
  waves: number | undefined;
  replacements: number | undefined;
  unschedulable: number | undefined;
  cost: { beforeUSDPerHour: number; afterUSDPerHour: number } | undefined;
}

/** Resolves with the seconds of `Settled after Ns` once `child` prints it (stdout or stderr). */
function settled(child: ChildProcess): Promise<number | undefined> {
  return new Promise((resolve) => {
    let buf = '';
    const on = (d: Buffer) => {
      buf += d.toString();
      const m = /Settled after ([\d.]+)s/.exec(buf);
      if (m) resolve(Number(m[1]));
      if (buf.length > 1e6) buf = buf.slice(-1000);
    };
    child.stdout?.on('data', on);
    child.stderr?.on('data', on);
    child.on('close', () => resolve(undefined));
  });
}

/** Runs the benchmark (`pods` default 10,000). */
export async function runPlanBench(opts: { pods?: number | undefined } = {}): Promise<PlanBenchResult> {
  const pods = opts.pods ?? 10000;
  const dir = mkdtempSync(join(tmpdir(), 'capenter-bench-plan-'));
  const manifest = join(dir, 'workload.yaml');
  const kubeconfig = join(dir, 'kubeconfig');
  const changed = join(dir, 'changed.yaml');
  writeFileSync(manifest, startManifests(pods));
  writeFileSync(
    changed,
    kwokNodePoolYaml('        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}\n')
      .replace('values: [c, m, r]', 'values: [c]')
      .split('---\n')[1] as string,
  );
  const entry = await bundleController();
  const start = spawn(process.execPath, [entry, 'start', '-f', manifest, '--kubeconfig-out', kubeconfig], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const clusterSettledSeconds = await settled(start);
    const t0 = performance.now();
    const plan = spawn(
      process.execPath,
      [entry, 'plan', '--kubeconfig', kubeconfig, '-f', changed, '-o', 'json'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    plan.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    let peak: number | undefined;
    const sample = setInterval(() => {
      const v = peakRssMB(plan.pid);
      if (v !== undefined) peak = Math.max(peak ?? 0, v);
    }, 100);
    const exitCode = await new Promise<number | null>((r) => plan.on('close', (c) => r(c)));
    clearInterval(sample);
    const planSeconds = Math.round((performance.now() - t0) / 100) / 10;
    let j: Record<string, unknown[]> & { cost?: PlanBenchResult['cost'] } = {};
    try {
      j = JSON.parse(out);
    } catch {
      j = {};
    }
    return {
      pods,
      clusterSettledSeconds,
      planSeconds,
      planPeakRssMB: peak,
      exitCode,
      driftedNodes: j.nodes?.length,
      waves: j.waves?.length,
      replacements: j.replacements?.length,
      unschedulable: j.unschedulable?.length,
      cost: j.cost,
    };
  } finally {
    start.kill('SIGTERM');
    await new Promise((r) => start.on('close', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Human-readable lines for {@link runPlanBench}'s result. */
export function formatPlanBench(r: PlanBenchResult): string {
  const c = r.cost;
  return [
    `  ${r.pods} pods (cluster settled after ${r.clusterSettledSeconds ?? '?'} s): plan ${r.planSeconds} s wall (exit ${r.exitCode}), peak RSS ${r.planPeakRssMB ?? '?'} MB`,
    `  ${r.driftedNodes ?? '?'} nodes drift in ${r.waves ?? '?'} waves, ${r.replacements ?? '?'} replacements, ${r.unschedulable ?? '?'} pods unschedulable, $${c?.beforeUSDPerHour ?? '?'}/h → $${c?.afterUSDPerHour ?? '?'}/h`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const podsArg = argv.indexOf('--pods');
  const r = await runPlanBench({ pods: podsArg >= 0 ? Number(argv[podsArg + 1]) : undefined });
  process.stdout.write(argv.includes('--json') ? `${JSON.stringify(r)}\n` : `${formatPlanBench(r)}\n`);
}
