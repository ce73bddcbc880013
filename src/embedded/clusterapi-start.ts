/**
 * `capenter start --cloud-provider clusterapi`: the `clusterapi` cloud provider on two clusters in one process
 * (`./clusterapi.ts`): a management API server with the real Cluster API v1.14 / CAPA v2.11 CRDs and a
 * stand-in for CAPI's MachineDeployment/MachineSet/Machine controllers (replicas → Machines → provider IDs → Nodes),
 * and a simulated workload cluster where capenter runs with a ClusterAPINodeClass and a NodePool.
 *
 * Manifests (`-f`): objects of the Cluster API groups go to the management cluster, everything else to the workload
 * cluster. Without MachineDeployments among them, a sample Cluster with two MachineDeployments of different instance
 * types and prices (m5.xlarge at 0.192 USD/h and c5.2xlarge at 0.34 USD/h, embedded AWS catalog) is created; without
 * a ClusterAPINodeClass, a `default` one and a NodePool `default` using it. The default manifests are the bundled
 * microservices demo without its NodePool/NodeClass.
 */
import type { MachineDeployment } from '../apis/capi.ts';
import {
  sampleClusterAPIObjects,
  sampleClusterAPIWorkloadObjects,
  writeStatuses,
} from '../sim/capi/clusterapi.ts';
import { type ClusterAPIStack, startClusterAPIStack } from './clusterapi.ts';
import type { EmbeddedProviderHooks, EmbeddedRunFlags } from './hooks.ts';
import type { SettleExtra, StartIO } from './settle.ts';
import { applyToClusters, guardedRun, settleWorkload, splitManifests, twoClusterRun } from './twoclusters.ts';

/** The MachineDeployments (and the provider's replica updates) for the progress line and the summary. */
async function machineDeploymentExtra(stack: ClusterAPIStack, namespace: string): Promise<SettleExtra> {
  const mds = (
    (await stack.env.mgmt.list('MachineDeployment', { namespace })).items as MachineDeployment[]
  ).map((md) => ({
    name: md.metadata.name,
    replicas: md.spec.replicas ?? 0,
    readyReplicas: md.status?.readyReplicas ?? 0,
    price: md.metadata.annotations?.['capenter.io/price-per-hour'],
  }));
  return {
    line: mds.map((m) => `${m.name}: ${m.readyReplicas}/${m.replicas}`).join(', '),
    json: { machineDeployments: mds, replicaUpdates: stack.provider.replicaUpdates() },
    table: `MachineDeployments: ${mds.map((m) => `${m.name} replicas=${m.replicas}`).join(', ')}\n`,
  };
}

/** Runs `capenter start --cloud-provider clusterapi`; returns the exit code. Never throws. */
export async function runStartClusterAPI(flags: EmbeddedRunFlags, io: StartIO): Promise<number> {
  const split = await splitManifests(flags, io);
  if (!split) return 2;
  const mgmtObjects = split.management;
  let workloadObjects = split.workload;
  if (!mgmtObjects.some((o) => o.kind === 'MachineDeployment'))
    mgmtObjects.push(...sampleClusterAPIObjects());
  if (!workloadObjects.some((o) => o.kind === 'ClusterAPINodeClass'))
    workloadObjects = [...sampleClusterAPIWorkloadObjects({ consolidateAfter: '30s' }), ...workloadObjects];
  const firstMD = mgmtObjects.find((o) => o.kind === 'MachineDeployment') as MachineDeployment | undefined;
  const namespace = firstMD?.metadata.namespace ?? 'default';
  const clusterName = firstMD?.spec?.clusterName ?? 'demo';
  const run = twoClusterRun(flags, io, 'capenter-clusterapi');
  const { logger } = run;
  let stack: ClusterAPIStack | undefined;
  return guardedRun(
    run,
    io,
    async () => {
      stack = await startClusterAPIStack({
        env: run.env,
        namespace,
        clusterName,
        provider: { region: flags.region },
        operator: { region: flags.region, logLevel: flags.logLevel, clusterName },
        logger,
      });
      const started = stack;
      const env = stack.env;
      io.stderr(
        `capenter: management cluster at ${env.management.url} (kubeconfig ${run.managementKubeconfig})\n`,
      );
      io.stderr(
        `capenter: workload cluster at ${env.workload.apiServer.url} (kubeconfig ${run.workloadKubeconfig})\n`,
      );
      io.stderr(
        `capenter: try  kubectl --kubeconfig ${run.managementKubeconfig} get machinedeployments,machines -A  and  kubectl --kubeconfig ${run.workloadKubeconfig} get nodeclaims -w\n`,
      );
      // The API server drops `status` on create: write it (the AWSMachineTemplates' status.capacity).
      const applied = await applyToClusters(
        [
          [env.mgmt, mgmtObjects, 'management'],
          [env.workload.client, workloadObjects, 'workload'],
        ],
        io,
        writeStatuses,
      );
      return await settleWorkload(
        run,
        flags,
        io,
        env.workload.client,
        () => machineDeploymentExtra(started, namespace),
        Math.max(split.exitCode, applied),
      );
    },
    async () => {
      await stack?.stop();
    },
  );
}

/** clusterapi runs `capenter start` on its own two clusters (see the module comment). */
export const clusterAPIEmbedded: EmbeddedProviderHooks = { run: runStartClusterAPI };
