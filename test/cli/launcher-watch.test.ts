/**
 * `kill <pid of npx capenter …>`: npm forwards SIGTERM only to the `sh -c` it runs the bin in, the shell exits
 * without passing it on, and the node process kept running with its ports open (issue 26 item 7). Under npm
 * (`npm_command` set) capenter now stops itself once its parent is gone (src/cli/launcher-watch.ts).
 * The end-to-end case rebuilds npm's tree (`sh` → `node`) around `capenter apiserver`, kills the shell with
 * SIGTERM, and waits for the node process's stdout to close (it is the pipe's last writer): no timing involved.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT } from '../../scripts/build.ts';
import { watchLauncher } from '../../src/cli/launcher-watch.ts';
import { eventually as pollUntil } from '../../src/testing/eventually.ts';

describe('watchLauncher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('under npm, signals once when the parent PID changes; never without npm_command', () => {
    vi.useFakeTimers();
    let ppid = 4242;
    const gone: number[] = [];
    watchLauncher({
      env: { npm_command: 'exec' },
      ppid: () => ppid,
      onParentGone: () => gone.push(ppid),
      intervalMs: 1000,
    });
    vi.advanceTimersByTime(5000);
    expect(gone).toEqual([]);
    ppid = 1; // the shell exited: reparented to init
    vi.advanceTimersByTime(1000);
    expect(gone).toEqual([1]);
    ppid = 7; // once only
    vi.advanceTimersByTime(5000);
    expect(gone).toEqual([1]);

    const direct: number[] = [];
    watchLauncher({ env: {}, ppid: () => ppid++, onParentGone: () => direct.push(ppid) });
    vi.advanceTimersByTime(10_000);
    expect(direct).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the returned stop function ends the watch', () => {
    vi.useFakeTimers();
    let ppid = 10;
    const gone: number[] = [];
    const stop = watchLauncher({
      env: { npm_command: 'run-script' },
      ppid: () => ppid,
      onParentGone: () => gone.push(ppid),
    });
    stop();
    ppid = 1;
    vi.advanceTimersByTime(5000);
    expect(gone).toEqual([]);
  });
});

/** The process's state letter from `/proc/PID/stat` (`R`, `S`, `Z`, …), or `gone`. */
function processState(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] ?? '?';
  } catch {
    return 'gone';
  }
}

describe('npm-launched capenter and the kill of its launcher', () => {
  const dir = mkdtempSync(join(tmpdir(), 'capenter-launcher-'));
  let pid = 0;
  afterAll(() => {
    // On failure the node process would outlive the test: end it (by its PID only).
    if (pid > 0 && processState(pid) !== 'gone' && processState(pid) !== 'Z') process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGTERM to the shell npm runs the bin in stops the node process cleanly', async () => {
    const main = join(ROOT, 'src', 'cli', 'main.ts');
    const kubeconfig = join(dir, 'kubeconfig');
    // npm's shape: `sh -c 'capenter …'` with the shell staying the node process's parent; `echo $!` gives its PID.
    const sh = spawn(
      'sh',
      ['-c', `"$NODE" --import tsx "$MAIN" apiserver --port 0 --kubeconfig-out "$KC" & echo "pid $!"; wait`],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NODE: process.execPath, MAIN: main, KC: kubeconfig, npm_command: 'exec' },
      },
    );
    let out = '';
    let err = '';
    sh.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const closed = new Promise<void>((resolve) => sh.stdout.on('end', resolve));
    await new Promise<void>((resolve) =>
      sh.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('embedded API server listening')) resolve();
      }),
    );
    pid = Number(/pid (\d+)/.exec(out)?.[1]);
    expect(pid).toBeGreaterThan(0);
    sh.kill('SIGTERM'); // what npm does on `kill <npx pid>`
    await closed; // every writer of the pipe, the node process included, has exited
    expect(out, err).toContain('embedded API server stopped');
    // Exited: gone, or a zombie until whatever it was reparented to reaps it (state Z in /proc/PID/stat).
    // The pipe closes during the process's teardown, a moment before it exits: poll for the exit (20 s at most).
    const state = await pollUntil(
      () => (/^(gone|Z)$/.test(processState(pid)) ? processState(pid) : undefined),
      'node process exited',
      {
        timeoutMs: 20_000,
        intervalMs: 50,
      },
    );
    expect(state).toMatch(/^(gone|Z)$/);
  }, 60_000);
});
