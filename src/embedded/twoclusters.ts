/**
 * What the two-cluster runs of `capenter start` share (`--capi`, `./capi-start.ts`; `--cloud-provider clusterapi`,
 * `./clusterapi-start.ts`): splitting the manifests between the management cluster (objects of the Cluster API
 * groups, Secrets labelled `cluster.x-k8s.io/cluster-name`) and the workload cluster, the kubeconfig paths of both,
 * the logger and Ctrl-C, and applying each cluster's objects.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { LabelClusterName } from '../apis/capi.ts';
import type { KubeObject } from '../apis/core.ts';
import { loadManifestPaths } from '../apis/load.ts';
import type { KubeClient } from '../kube/client.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { applyObjects } from './apply.ts';
import type { EmbeddedRunFlags } from './hooks.ts';
import { type SettleExtra, type StartIO, settle } from './settle.ts';
import { defaultExamplePath, readClusterView } from './summary.ts';

const CAPIGroups = ['cluster.x-k8s.io', 'infrastructure.cluster.x-k8s.io', 'bootstrap.cluster.x-k8s.io'];

function yamlFiles(path: string): string[] {
  if (path === '-') return [];
  const st = statSync(path);
  if (!st.isDirectory()) return [path];
  return readdirSync(path)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => join(path, f));
}

/** Objects for the management cluster found in `paths` (CAPI groups, CAPI-labelled Secrets). */
export function managementObjects(paths: readonly string[]): KubeObject[] {
  const out: KubeObject[] = [];
  for (const p of paths)
    for (const f of yamlFiles(p))
      for (const doc of parseAllDocuments(readFileSync(f, 'utf8'))) {
        const o = doc.toJS() as KubeObject | null;
        if (!o || typeof o !== 'object' || typeof o.apiVersion !== 'string') continue;
        const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
        if (
          CAPIGroups.includes(group ?? '') ||
          (o.kind === 'Secret' && o.metadata?.labels?.[LabelClusterName])
        )
          out.push(o);
      }
  return out;
}

/** The manifests of a two-cluster run, split by cluster. */
export interface SplitManifests {
  /** 2 when some input was invalid (the run goes on with the valid objects), else 0. */
  exitCode: number;
  management: KubeObject[];
  workload: KubeObject[];
}

/**
 * Loads `flags.filename` (default: the bundled demo without its NodePool/NodeClass, which the run provides) and
 * splits it; prints each invalid input. Resolves `undefined` (after printing why) when the files cannot be read.
 */
export async function splitManifests(
  flags: EmbeddedRunFlags,
  io: StartIO,
): Promise<SplitManifests | undefined> {
  const useDefault = !flags.filename || flags.filename.length === 0;
  const paths = useDefault ? [defaultExamplePath()] : (flags.filename as string[]);
  const loaded = await loadManifestPaths(paths);
  for (const e of loaded.errors) io.stderr(`error: ${e.message}\n`);
  let management: KubeObject[];
  try {
    management = managementObjects(paths);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return undefined;
  }
  const workload = loaded.objects
    .map((o) => o.object as KubeObject)
    .filter((o) => !management.some((m) => m.kind === o.kind && m.metadata?.name === o.metadata?.name))
    .filter((o) => !useDefault || !['NodePool', 'EC2NodeClass', 'KWOKNodeClass'].includes(o.kind ?? ''));
  return { exitCode: loaded.errors.length > 0 ? 2 : 0, management, workload };
}

/** The process side of a two-cluster run: kubeconfig paths, logger, and the signal Ctrl-C aborts. */
export interface TwoClusterRun {
  workloadKubeconfig: string;
  managementKubeconfig: string;
  /** The environment options of the two clusters (kubeconfig paths; errors logged at debug). */
  env: {
    workload: { kubeconfigPath: string };
    managementKubeconfigPath: string;
    onError: (err: unknown, where: string) => void;
  };
  logger: Logger;
  signal: AbortSignal;
  startedMs: number;
  /**
   * The temporary folder holding both kubeconfigs (`<tmpdir>/<prefix>-*`), removed by {@link guardedRun} when the
   * run ends; undefined with `--kubeconfig-out` (the user's folder is left alone).
   */
  tmpDir: string | undefined;
  /** Stops listening for Ctrl-C. */
  release(): void;
}

/** Prepares a two-cluster run (a temporary folder `<prefix>-*` unless `--kubeconfig-out` names one). */
export function twoClusterRun(flags: EmbeddedRunFlags, io: StartIO, prefix: string): TwoClusterRun {
  const tmpDir = flags.kubeconfigOut ? undefined : mkdtempSync(join(tmpdir(), `${prefix}-`));
  const dir = tmpDir ?? resolve(flags.kubeconfigOut as string, '..');
  const ac = new AbortController();
  // a signal that aborted before this run started has already fired its event
  if (io.signal?.aborted) ac.abort();
  else io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  const onSignal = (): void => ac.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const workloadKubeconfig = flags.kubeconfigOut ? resolve(flags.kubeconfigOut) : join(dir, 'kubeconfig');
  const managementKubeconfig = join(dir, 'management.kubeconfig');
  const logger = createLogger({ level: flags.logLevel });
  return {
    workloadKubeconfig,
    managementKubeconfig,
    env: {
      workload: { kubeconfigPath: workloadKubeconfig },
      managementKubeconfigPath: managementKubeconfig,
      onError: (err, where) =>
        logger.debug({ where, err: String(err) }, 'simulated cluster error (retrying)'),
    },
    logger,
    signal: ac.signal,
    startedMs: io.now?.() ?? performance.now(),
    tmpDir,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/**
 * Applies each cluster's objects (then `after`, e.g. writing statuses) and prints how many; resolves 2 when any
 * was refused or `after` failed, else 0.
 */
export async function applyToClusters(
  targets: ReadonlyArray<readonly [KubeClient, KubeObject[], 'management' | 'workload']>,
  io: StartIO,
  after?: (client: KubeClient, objs: KubeObject[]) => Promise<void>,
): Promise<number> {
  let exitCode = 0;
  for (const [client, objs, where] of targets) {
    const applied = await applyObjects(client, objs);
    const failed = applied.filter((a) => a.result === 'failed');
    for (const f of failed) io.stderr(`error: ${where}: ${f.error}\n`);
    if (failed.length > 0) exitCode = 2;
    io.stderr(`capenter: applied ${applied.length - failed.length} object(s) to the ${where} cluster\n`);
    try {
      await after?.(client, objs);
    } catch (err) {
      io.stderr(`error: ${where}: ${(err as Error).message}\n`);
      exitCode = 2;
    }
  }
  return exitCode;
}

/**
 * Settles the workload cluster of a two-cluster run (`./settle.ts`, views read through `workload`, the mode's
 * `extra`) and resolves the run's exit code: 1 on timeout, else the worst of `inputCode` (invalid inputs, refused
 * objects: 2) and 0.
 */
export async function settleWorkload(
  run: TwoClusterRun,
  flags: EmbeddedRunFlags,
  io: StartIO,
  workload: KubeClient,
  extra: () => Promise<SettleExtra>,
  inputCode: number,
): Promise<number> {
  const code = await settle({
    io,
    signal: run.signal,
    output: flags.output,
    region: flags.region,
    kubeconfig: run.workloadKubeconfig,
    exitWhenSettled: flags.exitWhenSettled === true,
    timeoutSeconds: flags.timeout,
    startedMs: run.startedMs,
    view: () => readClusterView(workload),
    finalView: () => readClusterView(workload, true),
    extra,
  });
  return code === 1 ? 1 : inputCode;
}

/**
 * Runs `body` (the run of a two-cluster mode) and always releases Ctrl-C, stops what `stop` names and removes the
 * run's temporary kubeconfig folder (as the one-cluster `start` does); a thrown error is printed and resolves 1.
 */
export async function guardedRun(
  run: TwoClusterRun,
  io: StartIO,
  body: () => Promise<number>,
  stop: () => Promise<void>,
): Promise<number> {
  try {
    return await body();
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    run.release();
    try {
      await stop();
    } finally {
      if (run.tmpDir) rmSync(run.tmpDir, { recursive: true, force: true });
    }
  }
}
