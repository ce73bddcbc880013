/**
 * `capenter start --cloud-provider clusterapi`: the `clusterapi` cloud provider on two clusters in one process
 * (operator/clusterapi.ts): a management API server with the real Cluster API v1.14 / CAPA v2.11 CRDs and a
 * stand-in for CAPI's MachineDeployment/MachineSet/Machine controllers (replicas → Machines → provider IDs → Nodes),
 * and a simulated workload cluster where capenter runs with a ClusterAPINodeClass and a NodePool.
 *
 * Manifests (`-f`): objects of the Cluster API groups go to the management cluster, everything else to the workload
 * cluster. Without MachineDeployments among them, a sample Cluster with two MachineDeployments of different instance
 * types and prices (m5.xlarge at 0.192 USD/h and c5.2xlarge at 0.34 USD/h, embedded AWS catalog) is created; without
 * a ClusterAPINodeClass, a `default` one and a NodePool `default` using it. The default manifests are the bundled
 * microservices demo without its NodePool/NodeClass.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { MachineDeployment } from '../apis/capi.ts';
import type { KubeObject } from '../apis/core.ts';
import { loadManifestPaths } from '../apis/load.ts';
import { createLogger } from '../kube/logger.ts';
import { applyObjects } from '../operator/apply.ts';
import { type ClusterAPIStack, startClusterAPIStack } from '../operator/clusterapi.ts';
import {
  sampleClusterAPIObjects,
  sampleClusterAPIWorkloadObjects,
  writeStatuses,
} from '../sim/capi/clusterapi.ts';
import {
  defaultExamplePath,
  formatSummaryTable,
  progressLine,
  readClusterView,
  type StartIO,
  type StartSummary,
  summarize,
} from './start.ts';
import { managementObjects } from './start-capi.ts';

/** Flags of `capenter start --cloud-provider clusterapi` (a subset of `start`'s, already checked by it). */
export interface StartClusterAPIFlags {
  filename?: string[];
  kubeconfigOut?: string;
  exitWhenSettled?: boolean;
  timeout: number;
  output: 'table' | 'json';
  region: string;
  logLevel: string;
}

/** Runs `capenter start --cloud-provider clusterapi`; returns the exit code. Never throws. */
export async function runStartClusterAPI(flags: StartClusterAPIFlags, io: StartIO): Promise<number> {
  const useDefault = !flags.filename || flags.filename.length === 0;
  const paths = useDefault ? [defaultExamplePath()] : (flags.filename as string[]);
  const loaded = await loadManifestPaths(paths);
  for (const e of loaded.errors) io.stderr(`error: ${e.message}\n`);
  let exitCode = loaded.errors.length > 0 ? 2 : 0;
  let mgmtObjects: KubeObject[];
  try {
    mgmtObjects = managementObjects(paths);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  let workloadObjects = loaded.objects
    .map((o) => o.object as KubeObject)
    .filter((o) => !mgmtObjects.some((m) => m.kind === o.kind && m.metadata?.name === o.metadata?.name))
    .filter((o) => !useDefault || !['NodePool', 'EC2NodeClass', 'KWOKNodeClass'].includes(o.kind ?? ''));
  if (!mgmtObjects.some((o) => o.kind === 'MachineDeployment'))
    mgmtObjects.push(...sampleClusterAPIObjects());
  if (!workloadObjects.some((o) => o.kind === 'ClusterAPINodeClass'))
    workloadObjects = [...sampleClusterAPIWorkloadObjects({ consolidateAfter: '30s' }), ...workloadObjects];
  const firstMD = mgmtObjects.find((o) => o.kind === 'MachineDeployment') as MachineDeployment | undefined;
  const namespace = firstMD?.metadata.namespace ?? 'default';
  const clusterName = firstMD?.spec?.clusterName ?? 'demo';
  const dir = flags.kubeconfigOut
    ? resolve(flags.kubeconfigOut, '..')
    : mkdtempSync(join(tmpdir(), 'capenter-clusterapi-'));
  const workloadKubeconfig = flags.kubeconfigOut ? resolve(flags.kubeconfigOut) : join(dir, 'kubeconfig');
  const mgmtKubeconfig = join(dir, 'management.kubeconfig');
  const logger = createLogger({ level: flags.logLevel });
  const ac = new AbortController();
  io.signal?.addEventListener('abort', () => ac.abort(), { once: true });
  const onSignal = (): void => ac.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;
  let stack: ClusterAPIStack | undefined;
  try {
    stack = await startClusterAPIStack({
      env: {
        workload: { kubeconfigPath: workloadKubeconfig },
        managementKubeconfigPath: mgmtKubeconfig,
        onError: (err, where) =>
          logger.debug({ where, err: String(err) }, 'simulated cluster error (retrying)'),
      },
      namespace,
      clusterName,
      provider: { region: flags.region },
      operator: { region: flags.region, logLevel: flags.logLevel, clusterName },
      logger,
    });
    const env = stack.env;
    io.stderr(`capenter: management cluster at ${env.management.url} (kubeconfig ${mgmtKubeconfig})\n`);
    io.stderr(
      `capenter: workload cluster at ${env.workload.apiServer.url} (kubeconfig ${workloadKubeconfig})\n`,
    );
    io.stderr(
      `capenter: try  kubectl --kubeconfig ${mgmtKubeconfig} get machinedeployments,machines -A  and  kubectl --kubeconfig ${workloadKubeconfig} get nodeclaims -w\n`,
    );
    for (const [client, objs, where] of [
      [env.mgmt, mgmtObjects, 'management'],
      [env.workload.client, workloadObjects, 'workload'],
    ] as const) {
      const applied = await applyObjects(client, objs);
      const failed = applied.filter((a) => a.result === 'failed');
      for (const f of failed) io.stderr(`error: ${where}: ${f.error}\n`);
      if (failed.length > 0) exitCode = 2;
      io.stderr(`capenter: applied ${applied.length - failed.length} object(s) to the ${where} cluster\n`);
      // The API server drops `status` on create: write it (the AWSMachineTemplates' status.capacity).
      try {
        await writeStatuses(client, objs);
      } catch (err) {
        io.stderr(`error: ${where}: ${(err as Error).message}\n`);
        exitCode = 2;
      }
    }
    const deadline = performance.now() + flags.timeout * 1000;
    let last = '';
    let summary: StartSummary | undefined;
    let printed = false;
    while (!ac.signal.aborted) {
      await new Promise((r) => setTimeout(r, 1000));
      if (ac.signal.aborted) break;
      summary = summarize(
        await readClusterView(env.workload.client),
        flags.region,
        workloadKubeconfig,
        elapsed(),
      );
      const mds = (
        (await env.mgmt.list('MachineDeployment', { namespace })).items as MachineDeployment[]
      ).map((md) => ({
        name: md.metadata.name,
        replicas: md.spec.replicas ?? 0,
        readyReplicas: md.status?.readyReplicas ?? 0,
        price: md.metadata.annotations?.['capenter.io/price-per-hour'],
      }));
      const line = `${progressLine(summary)} · ${mds.map((m) => `${m.name}: ${m.readyReplicas}/${m.replicas}`).join(', ')}`;
      const sans = line.replace(/^\[[^\]]*\] /, '');
      if (sans !== last) {
        io.stderr(`${line}\n`);
        last = sans;
      }
      const inFlight = summary.nodeClaims.some((r) => r.state !== 'Initialized');
      if (summary.settled && !inFlight && summary.pods.total > 0 && !printed) {
        const updates = stack.provider.replicaUpdates();
        io.stdout(
          flags.output === 'json'
            ? `${JSON.stringify({ ...summary, machineDeployments: mds, replicaUpdates: updates }, null, 2)}\n`
            : `${formatSummaryTable(summary)}MachineDeployments: ${mds.map((m) => `${m.name} replicas=${m.replicas}`).join(', ')}\n`,
        );
        printed = true;
        if (flags.exitWhenSettled) break;
      }
      if (flags.exitWhenSettled && performance.now() > deadline) {
        io.stderr(
          `capenter: timed out after ${flags.timeout}s with ${summary.pods.pending} pod(s) not running\n`,
        );
        io.stdout(
          flags.output === 'json' ? `${JSON.stringify(summary, null, 2)}\n` : formatSummaryTable(summary),
        );
        exitCode = 1;
        break;
      }
    }
    return exitCode;
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await stack?.stop();
  }
}
