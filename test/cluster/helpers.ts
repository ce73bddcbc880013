/**
 * Helpers of the real-control-plane tests (`npm run test:cluster`): the cluster from the global setup,
 * kubectl v1.34.4 from the same cache, `capenter controller` as a real process through the CLI, and a
 * wait-for-an-observable-state helper. Environment is read here, in test code only.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The real cluster's admin kubeconfig (set by test/cluster/global-setup.ts). */
export function clusterKubeconfig(): string {
  const k = process.env.CAPENTER_TEST_KUBECONFIG;
  if (!k) throw new Error('CAPENTER_TEST_KUBECONFIG is not set: run these tests with `npm run test:cluster`');
  return k;
}

/** True when the cluster exists only for this run (tests may delete and install CRDs). */
export function clusterDisposable(): boolean {
  return process.env.CAPENTER_TEST_CLUSTER_DISPOSABLE === '1';
}

/** Result of one kubectl run. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the cache's kubectl (v1.34.4; else `kubectl` on PATH) against `kubeconfig`; never throws on exit codes. */
export function kubectl(kubeconfig: string, args: string[], input?: string): Promise<KubectlResult> {
  const bin = process.env.CAPENTER_TEST_KUBECTL || 'kubectl';
  return new Promise((res, rej) => {
    const p = spawn(bin, ['--kubeconfig', kubeconfig, ...args], { cwd: root });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', rej);
    p.on('close', (code) => res({ code: code ?? -1, stdout, stderr }));
    p.stdin.end(input ?? '');
  });
}

/** Polls `fn` (every `intervalMs`) until it returns a truthy value; throws after `timeoutMs` naming `what`. */
export async function until<T>(
  fn: () => T | Promise<T>,
  what: string,
  timeoutMs = 120_000,
  intervalMs = 100,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** One JSON log line of the controller (pino, messageKey `message`). */
export interface LogLine {
  level: string;
  message: string;
  [k: string]: unknown;
}

/** A `capenter controller` process. */
export interface ControllerProcess {
  proc: ChildProcess;
  /** Parsed JSON log lines so far. */
  logs: LogLine[];
  /** Non-JSON stderr text so far (the CLI's own lines). */
  text: () => string;
  /** The bound health-probe port (after {@link startController} resolves). */
  healthPort: number;
  /** GET /readyz: status and body. */
  readyz(): Promise<{ status: number; body: string }>;
  /** SIGTERM (SIGKILL 30 s later if still running), then the exit code. */
  stop(): Promise<number>;
}

/**
 * Starts `capenter controller` through the CLI entry point (src/cli/main.ts under Node with tsx's loader: one
 * process, so signals reach it) against `kubeconfig`, endpoints on 127.0.0.1 at free ports, leader election
 * off. Resolves once it printed its endpoints line. `env` (e.g. a rendered chart Deployment's variables) replaces the
 * test defaults (leader election off, LOG_LEVEL=info) on top of this process's environment.
 */
export async function startController(
  kubeconfig: string,
  extraArgs: string[] = [],
  env?: Record<string, string>,
): Promise<ControllerProcess> {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'src', 'cli', 'main.ts'),
      'controller',
      '--kubeconfig',
      kubeconfig,
      '--metrics-port',
      '0',
      '--health-probe-port',
      '0',
      '--bind-address',
      '127.0.0.1',
      ...extraArgs,
    ],
    {
      cwd: root,
      // both spellings of "no leader election" (LEADER_ELECT=false today, upstream's DISABLE_LEADER_ELECTION)
      env: {
        ...process.env,
        ...(env ?? { LEADER_ELECT: 'false', DISABLE_LEADER_ELECTION: 'true', LOG_LEVEL: 'info' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const logs: LogLine[] = [];
  let text = '';
  let buf = '';
  const onData = (d: Buffer): void => {
    buf += d.toString();
    for (;;) {
      const i = buf.indexOf('\n');
      if (i < 0) break;
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('{')) {
        try {
          logs.push(JSON.parse(line) as LogLine);
          continue;
        } catch {
          // not JSON after all
        }
      }
      text += `${line}\n`;
    }
  };
  proc.stderr?.on('data', onData);
  proc.stdout?.on('data', onData);
  const exited = new Promise<number>((r) => proc.on('exit', (code, sig) => r(code ?? (sig ? 128 : -1))));
  let exitCode: number | undefined;
  void exited.then((c) => {
    exitCode = c;
  });
  const healthPort = await until(
    () => {
      if (exitCode !== undefined) throw new Error(`capenter controller exited ${exitCode}:\n${text}`);
      const m = /health :(\d+)\/healthz/.exec(text);
      return m ? Number(m[1]) : undefined;
    },
    'capenter controller to serve its endpoints',
    60_000,
  );
  return {
    proc,
    logs,
    text: () => text,
    healthPort,
    readyz() {
      // no keep-alive agent: nothing stays open once the controller exits
      return new Promise((res, rej) => {
        const req = get({ host: '127.0.0.1', port: healthPort, path: '/readyz', agent: false }, (r) => {
          let body = '';
          r.on('data', (d) => (body += d));
          r.on('end', () => res({ status: r.statusCode ?? 0, body }));
        });
        req.on('error', rej);
      });
    },
    async stop() {
      if (exitCode === undefined) proc.kill('SIGTERM');
      // a controller that cannot stop cleanly (its API server gone) is killed after 30 s
      const kill = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(kill);
      return code;
    },
  };
}
