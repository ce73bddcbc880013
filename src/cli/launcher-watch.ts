/**
 * Stops capenter when the npm process that launched it (`npx capenter …`, `npm run capenter -- …`) is gone.
 *
 * npm runs a package bin as `sh -c 'capenter …'`, so the process tree is `npm exec` → `sh` → `node`. On
 * `kill <pid of npx>` npm forwards SIGTERM to its shell only; the shell exits without passing it on, and the node
 * process used to keep running, reparented, with its ports open (Ctrl-C was fine: the terminal signals the whole
 * foreground process group). Under npm (`npm_command` set in the environment) capenter therefore watches its
 * parent PID and, once it changes (the shell exited, the process was reparented), sends itself SIGTERM: the
 * command's own handler stops it as `kill <node pid>` would (the controller releases its leader Lease, `start`
 * removes its temporary kubeconfig). Started directly (`node bin/capenter.js`, a container, a supervisor) nothing
 * is watched, so a process deliberately left running after its shell exits is not stopped.
 */

/** What {@link watchLauncher} needs; injectable for tests. */
export interface LauncherWatchOptions {
  /** The process environment; the watch starts only when `npm_command` is set (npm / npx launched us). */
  env: Record<string, string | undefined>;
  /** The current parent PID (`process.ppid`, read fresh on each call). */
  ppid: () => number;
  /** Called once when the parent PID changed; default: `process.kill(process.pid, 'SIGTERM')`. */
  onParentGone?: () => void;
  /** How often the parent PID is read, in milliseconds (default 1000). */
  intervalMs?: number;
}

/**
 * Starts the watch when launched by npm; returns a function that stops it (a no-op when nothing is watched).
 * The timer is unref'd: it never keeps a finished command alive.
 */
export function watchLauncher(opts: LauncherWatchOptions): () => void {
  if (!opts.env.npm_command) return () => {};
  const first = opts.ppid();
  const gone = opts.onParentGone ?? (() => process.kill(process.pid, 'SIGTERM'));
  const timer = setInterval(() => {
    if (opts.ppid() === first) return;
    clearInterval(timer);
    gone();
  }, opts.intervalMs ?? 1000);
  timer.unref();
  return () => clearInterval(timer);
}
