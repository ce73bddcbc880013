/**
 * The shipped program: `bin/capenter.js` on the compiled bundle (`scripts/build.ts` → `dist/capenter.mjs`), run as a
 * child process exactly as a user or supervisor runs it. `kill PID` (SIGTERM) stops the controller in that very
 * process and releases its leader Lease; usage and setting errors exit 2 at once.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, ROOT } from '../../scripts/build.ts';
import { startSimulatedCluster } from '../../src/embedded/cluster.ts';
import type { Lease } from '../../src/kube/types.ts';

const BIN = join(ROOT, 'bin', 'capenter.js');

/** Runs the compiled CLI to completion. */
function run(
  args: string[],
  env: Record<string, string> = {},
): { code: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

beforeAll(async () => {
  await buildCli();
}, 120_000);

describe('the compiled CLI', () => {
  let dir: string;
  let sim: Awaited<ReturnType<typeof startSimulatedCluster>> | undefined;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'capenter-compiled-'));
  });
  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kill PID stops the controller and releases the leader Lease', async () => {
    const kubeconfigPath = join(dir, 'kubeconfig');
    sim = await startSimulatedCluster({ kubeconfigPath });
    let stderr = '';
    child = spawn(
      process.execPath,
      [
        BIN,
        'controller',
        '--kubeconfig',
        kubeconfigPath,
        '--metrics-port',
        '0',
        '--health-probe-port',
        '0',
        '--dashboard-port',
        '0',
      ],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info' } },
    );
    const exited = new Promise<number | null>((r) => child?.once('exit', (code) => r(code)));
    // wait until the child says it holds the Lease (logged once its write of the Lease succeeded), as it says so
    const acquired = new Promise<void>((resolve, reject) => {
      child?.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (stderr.includes('acquired leader lease') && stderr.includes('dashboard http')) resolve();
      });
      void exited.then((code) => reject(new Error(`controller exited early (${code}): ${stderr}`)));
    });
    await acquired;
    // ... and the Lease (observable through the API) names it
    const lease = (await sim.client.get('Lease', 'karpenter-leader-election', 'kube-system')) as Lease;
    const holder = lease.spec?.holderIdentity;
    expect(holder).toBeTruthy();
    expect(stderr).toContain('acquired leader lease');
    // the bundle serves the dashboard's page and uPlot (read from node_modules: packages stay external)
    const url = /capenter controller: dashboard (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stderr)?.[1] ?? '';
    expect(url).not.toBe('');
    expect(await (await fetch(url)).text()).toContain('<title>capenter dashboard</title>');
    const uplot = await fetch(new URL('assets/uplot.js', url));
    expect(uplot.status).toBe(200);
    expect(await uplot.text()).toContain('uPlot');
    // the PID we started is the controller itself (no wrapper process in between)
    expect(child.kill('SIGTERM')).toBe(true);
    expect(await exited).toBe(0);
    const after = (await sim.client.get('Lease', 'karpenter-leader-election', 'kube-system')) as Lease;
    expect(holder).toMatch(/_[0-9a-f]{8}$/);
    expect(after.spec?.holderIdentity ?? '').toBe('');
    expect(stderr).toContain('stopping operator');
  }, 60_000);

  it('npm start path: the compiled start runs the bundled example to settled, exit 0', async () => {
    // asynchronously, with the whole run in the child (it embeds its own API server)
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((res) => {
      const p = spawn(
        process.execPath,
        [BIN, 'start', '--exit-when-settled', '-o', 'json', '--timeout', '90'],
        {
          cwd: tmpdir(), // not the repository: the example is found next to the program
        },
      );
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('exit', (code) => res({ code, stdout, stderr }));
    });
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout) as { settled: boolean; nodeClaims: Array<{ instanceType: string }> };
    expect(s.settled).toBe(true);
    expect(s.nodeClaims.map((n) => n.instanceType)).toEqual(['c6a.large']);
  }, 120_000);

  it('the compiled start --cloud-provider clusterapi finds the vendored CAPI CRDs and settles', async () => {
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((res) => {
      const p = spawn(
        process.execPath,
        [
          BIN,
          'start',
          '--cloud-provider',
          'clusterapi',
          '--exit-when-settled',
          '-o',
          'json',
          '--timeout',
          '90',
        ],
        { cwd: tmpdir() },
      );
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('exit', (code) => res({ code, stdout, stderr }));
    });
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout) as {
      settled: boolean;
      nodeClaims: Array<{ instanceType: string }>;
      machineDeployments: Array<{ name: string; replicas: number }>;
    };
    expect(s.settled).toBe(true);
    expect(s.nodeClaims.map((n) => n.instanceType)).toEqual(['m5.xlarge']);
    expect(s.machineDeployments).toEqual([
      expect.objectContaining({ name: 'md-c5-2xlarge', replicas: 0 }),
      expect.objectContaining({ name: 'md-m5-xlarge', replicas: 1 }),
    ]);
  }, 120_000);

  it('exits 2 at once on an invalid setting, naming it and what it accepts (flags and env)', () => {
    const a = run(['controller', '--kubeconfig', '/nonexistent', '--batch-idle-duration', 'soon']);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain(
      'error: --batch-idle-duration: "soon" is not valid (not a duration); BATCH_IDLE_DURATION accepts a duration',
    );
    const b = run(['controller', '--kubeconfig', '/nonexistent'], { MIN_VALUES_POLICY: 'Loose' });
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('MIN_VALUES_POLICY: "Loose" is not valid (not one of Strict, BestEffort)');
  });

  it('usage errors exit 2 everywhere; --help and --version exit 0', () => {
    const missing = run(['simulate']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '-f, --filename <paths\.\.\.>' not specified/);
    const unknown = run(['start', '--no-such-flag']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option '--no-such-flag'/);
    const cmd = run(['frobnicate']);
    expect(cmd.code).toBe(2);
    expect(run(['--help']).code).toBe(0);
    expect(run(['--version']).stdout.trim()).toBe('0.1.0');
  });
});
