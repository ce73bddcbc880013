/**
 * `capenter start` on one embedded cluster ({@link runEmbedded}): starts the simulated cluster (API server with
 * capenter's CRDs, kube-scheduler / kubelet / workload-controller stand-ins, `src/sim/cluster.ts`), the provider
 * module's stand-ins when it has them (`./providers.ts`; aws: the emulator proxy and joining kubelet), the real
 * capenter operator with the module's provider, applies the manifests, and settles (`./settle.ts`) with one line of
 * `capenter doctor` after each summary. Returns the exit code: 0 settled or interrupted, 1 timed out or failed,
 * 2 when the API server refused objects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KubeObject } from '../apis/core.ts';
import { crdFor } from '../apis/crds.ts';
import type { LoadResult } from '../apis/load.ts';
import { ownKindsOf, type ProviderModule } from '../cloudprovider/module.ts';
import type { Dashboard } from '../dashboard/server.ts';
import { diagnose, doctorSummary, readSnapshot } from '../doctor/index.ts';
import { RealClock } from '../kube/clock.ts';
import { createLogger } from '../kube/logger.ts';
import { createOperator, type Operator } from '../operator/operator.ts';
import { embeddedOptions } from '../operator/options.ts';
import { applyObjects } from './apply.ts';
import { type SimulatedCluster, startSimulatedCluster } from './cluster.ts';
import type { EmbeddedProviderHooks, EmbeddedProviderRun, EmbeddedRunFlags } from './hooks.ts';
import { loadedProvider } from './providers.ts';
import { type StartIO, settle } from './settle.ts';
import { informerClusterView, readClusterView } from './summary.ts';

/** Checked flags of {@link runEmbedded}. */
export interface EmbeddedStartFlags extends Omit<EmbeddedRunFlags, 'filename'> {
  /** The manifests' paths (for the message) and what was loaded from them (no errors). */
  paths: string[];
  loaded: LoadResult;
  /** API server port (0: any free one). */
  port: number;
  /** Controller `/metrics` port (default any free one). */
  metricsPort?: number;
  /** `--cluster-name`. */
  clusterName?: string;
  /** Dashboard port (0: any free one); undefined: no dashboard (`--no-dashboard`). Loopback only. */
  dashboardPort?: number;
}

/** Applies the manifests; returns false (after printing each refusal) when the API server refused any. */
async function applyManifests(sim: SimulatedCluster, f: EmbeddedStartFlags, io: StartIO): Promise<boolean> {
  const applied = await applyObjects(
    sim.client,
    f.loaded.objects.map((o) => o.object as KubeObject),
  );
  const failed = applied.filter((a) => a.result === 'failed');
  for (const x of failed) io.stderr(`error: ${x.error}\n`);
  if (failed.length > 0) {
    io.stderr(`capenter: the API server refused ${failed.length} object(s); stopping\n`);
    return false;
  }
  const ignored = Object.entries(f.loaded.unknownKinds);
  io.stderr(
    `capenter: applied ${applied.length - failed.length} object(s) from ${f.paths.join(', ')}` +
      (ignored.length > 0 ? ` (ignored kinds: ${ignored.map(([k, n]) => `${k}×${n}`).join(', ')})` : '') +
      '\n',
  );
  return true;
}

/** One line from `capenter doctor` (src/doctor), on stderr (stdout stays the summary/JSON). */
async function doctorLine(sim: SimulatedCluster, io: StartIO): Promise<void> {
  try {
    const { pods, nodes, nodeClaims } = await informerClusterView(sim.informers);
    const snap = await readSnapshot(sim.client, new RealClock(), { pods, nodes, nodeClaims });
    io.stderr(`capenter: ${doctorSummary(diagnose(snap))}\n`);
  } catch (err) {
    io.stderr(`capenter: doctor could not read the cluster: ${(err as Error).message}\n`);
  }
}

/** Runs `capenter start` on one embedded cluster with `module` (see the module comment). Never throws. */
export async function runEmbedded(
  f: EmbeddedStartFlags,
  module: ProviderModule,
  hooks: EmbeddedProviderHooks,
  io: StartIO,
): Promise<number> {
  const env = io.env ?? {};
  const tmpDir = f.kubeconfigOut ? undefined : mkdtempSync(join(tmpdir(), 'capenter-'));
  const kubeconfigPath = resolve(f.kubeconfigOut ?? join(tmpDir as string, 'kubeconfig'));
  const startedMs = io.now?.() ?? performance.now();
  const logger = createLogger({ level: f.logLevel });
  const ac = new AbortController();
  // a signal that aborted before this run started has already fired its event
  if (io.signal?.aborted) ac.abort();
  else io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  const onSignal = (): void => ac.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let sim: SimulatedCluster | undefined;
  let op: Operator | undefined;
  let provider: EmbeddedProviderRun | undefined;
  let dashboard: Dashboard | undefined;
  try {
    sim = await startSimulatedCluster({
      port: f.port,
      // the CRDs of the module's own NodeClass kinds (ProviderNodeClassKind.api) beside capenter's
      extraCRDs: ownKindsOf(module.nodeClassKinds).map((k) => crdFor(k) as unknown as KubeObject),
      // the stand-ins and the operator below share this process: in-process requests between them
      loopback: true,
      kubeconfigPath,
      onError: (err, where) =>
        logger.debug({ where, err: String(err) }, 'simulated cluster error (retrying)'),
    });
    const cluster = sim;
    io.stderr(`capenter: embedded cluster at ${sim.apiServer.url}\n`);
    io.stderr(
      `capenter: kubeconfig ${kubeconfigPath}  (try: kubectl --kubeconfig ${kubeconfigPath} get nodeclaims -w)\n`,
    );
    const options = { ...embeddedOptions(), region: f.region, logLevel: f.logLevel };
    if (f.metricsPort !== undefined) options.metricsPort = f.metricsPort;
    const ctx = {
      client: sim.client,
      clock: sim.clock,
      apiServerURL: sim.apiServer.url,
      kubeconfig: sim.kubeconfig,
      region: f.region,
      clusterName: options.clusterName,
      ...(f.clusterName !== undefined ? { clusterNameFlag: f.clusterName } : {}),
      env,
      logger,
      stderr: io.stderr,
    };
    provider = hooks.start ? await hooks.start(ctx) : await loadedProvider(module, ctx);
    if (provider.clusterName) options.clusterName = provider.clusterName;
    op = createOperator({
      kubeconfig: sim.kubeconfig,
      ...(sim.transport ? { transport: sim.transport } : {}),
      logger,
      options,
      provider: provider.setup,
      ...(io.tuning ? { tuning: io.tuning } : {}),
    });
    await op.start(ac.signal);
    io.stderr(`capenter: controller metrics http://127.0.0.1:${op.metricsPort}/metrics\n`);
    if (f.dashboardPort !== undefined) {
      const { startDashboard } = await import('../dashboard/server.ts');
      dashboard = await startDashboard({ ...op, clock: sim.clock }, { port: f.dashboardPort });
      io.stderr(`capenter: dashboard ${dashboard.url}\n`);
    }
    if (!(await applyManifests(sim, f, io))) return 2;
    return await settle({
      io,
      signal: ac.signal,
      output: f.output,
      region: f.region,
      kubeconfig: kubeconfigPath,
      exitWhenSettled: f.exitWhenSettled === true,
      timeoutSeconds: f.timeout,
      startedMs,
      view: () => informerClusterView(cluster.informers),
      finalView: () => readClusterView(cluster.client, true),
      afterSummary: () => doctorLine(cluster, io),
    });
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await dashboard?.close();
    await op?.stop();
    await provider?.stop();
    await sim?.stop();
    if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  }
}
