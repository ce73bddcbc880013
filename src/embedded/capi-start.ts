/**
 * `capenter start --capi`: two clusters as Cluster API runs them, in one process (sim/capi/environment.ts): a
 * management API server with the real Cluster API v1.14 / CAPA v2.11 CRDs (vendored in `crds/capi/`) and capenter's
 * KarpenterMachinePool CRD, and a simulated workload cluster. capenter runs as CAPI deploys it: the
 * KarpenterMachinePool controller against the management cluster (reaching the workload cluster through the
 * `<cluster>-kubeconfig` Secret), the provisioning operator and the CAPI taint controller against the workload
 * cluster (kwok provider; nodes are kwok Nodes with the AWS catalog of the generated EC2NodeClass). A stand-in for
 * CAPI's MachinePool controller copies `providerIDList` and removes the uninitialized taint.
 *
 * Manifests (`-f`): objects of the Cluster API groups (`cluster.x-k8s.io`, `infrastructure.cluster.x-k8s.io`,
 * `bootstrap.cluster.x-k8s.io`) and Secrets labelled `cluster.x-k8s.io/cluster-name` go to the management cluster,
 * everything else to the workload cluster. Without a KarpenterMachinePool among them, a sample
 * Cluster/AWSCluster/KubeadmConfig/bootstrap Secret/MachinePool/KarpenterMachinePool is created. The default
 * manifests are the bundled microservices demo without its NodePool/NodeClass (the KMP provides the NodePool).
 * Bootstrap data is kept in an in-process object store standing in for the cluster's S3 bucket. With
 * `--cloud-provider aws` (AWS_ENDPOINT_URL: an emulator such as moto) the nodes are EC2 instances of the aws
 * provider instead, the bootstrap data goes to the emulator's S3, and the emulator gets the cluster's bucket,
 * worker instance profile and CAPA images for the MachinePool versions (sim/capi/aws.ts).
 */
import { IAMClient } from '@aws-sdk/client-iam';
import { S3Client } from '@aws-sdk/client-s3';
import type { KarpenterMachinePool, MachinePool } from '../apis/capi.ts';
import type { KubeObject } from '../apis/core.ts';
import { S3BootstrapStore } from '../cloudprovider/aws/s3store.ts';
import { clusterNameOf } from '../controllers/capi/desired.ts';
import type { Dashboard } from '../dashboard/server.ts';
import { prepareCAPAEmulator } from '../sim/capi/aws.ts';
import { sampleCAPIObjects } from '../sim/capi/environment.ts';
import { type CAPIStack, startCAPIStack } from './capi.ts';
import type { CAPIProviderOptions, EmbeddedRunFlags } from './hooks.ts';
import type { SettleExtra, StartIO } from './settle.ts';
import { applyToClusters, guardedRun, settleWorkload, splitManifests, twoClusterRun } from './twoclusters.ts';

/** Flags of `capenter start --capi` (a subset of `start`'s, already checked by it) and the provider's options. */
export interface StartCAPIFlags extends EmbeddedRunFlags, CAPIProviderOptions {
  /** Seconds before capenter removes a lingering uninitialized taint itself (default 120). */
  uninitializedTaintTimeout?: number;
  /** Dashboard port (0: any free one); undefined: no dashboard. */
  dashboardPort?: number;
}

/**
 * Serves the dashboard of the workload cluster's operator with the management cluster's KarpenterMachinePools and
 * MachinePools (from the stack's management informers); undefined without a port or an operator.
 */
async function capiDashboard(
  stack: CAPIStack,
  port: number | undefined,
  io: StartIO,
): Promise<Dashboard | undefined> {
  if (port === undefined || !stack.op) return undefined;
  const [{ startDashboard }, { machinePoolSource }] = await Promise.all([
    import('../dashboard/server.ts'),
    import('../dashboard/capi.ts'),
  ]);
  const source = machinePoolSource(stack.env.mgmtInformers);
  const d = await startDashboard(
    { ...stack.op, clock: stack.env.clock, machinePools: source.machinePools },
    { port },
  );
  source.follow(d.hub);
  io.stderr(`capenter: dashboard ${d.url}\n`);
  return d;
}

/** Prepares the emulator for CAPA (bucket, instance profile, images) and points the AWSClusters at it. */
async function prepareCAPA(
  stack: CAPIStack,
  flags: StartCAPIFlags,
  mgmtObjects: KubeObject[],
  clusterName: string,
  io: StartIO,
): Promise<void> {
  if (!stack.aws || !flags.awsEmulatorEndpoint) return;
  const iam = new IAMClient({ region: flags.region, endpoint: flags.awsEmulatorEndpoint });
  const s3 = new S3Client({
    region: flags.region,
    endpoint: flags.awsEmulatorEndpoint,
    forcePathStyle: true,
  });
  try {
    const versions = mgmtObjects
      .filter((o) => o.kind === 'MachinePool')
      .map((o) => (o as MachinePool).spec?.template?.spec?.version)
      .filter((v): v is string => !!v);
    const prepared = await prepareCAPAEmulator({
      ec2: stack.aws.clients.ec2,
      iam,
      s3,
      clusterName,
      region: flags.region,
      versions,
      subnets: stack.aws.seed.subnets,
      securityGroup: stack.aws.seed.securityGroups[0] as string,
    });
    for (const o of mgmtObjects)
      if (o.kind === 'AWSCluster') Object.assign((o as { spec: object }).spec, prepared.awsClusterSpec);
    io.stderr(
      `capenter: aws provider against the emulator at ${flags.awsEmulatorEndpoint}: bucket, instance profile and CAPA images for ${versions.join(', ')} prepared\n`,
    );
  } finally {
    iam.destroy();
    s3.destroy();
  }
}

/** The KarpenterMachinePools for the progress line and the JSON summary. */
async function kmpExtra(stack: CAPIStack): Promise<SettleExtra> {
  const kmps = (await stack.env.mgmt.list('KarpenterMachinePool')).items as KarpenterMachinePool[];
  return {
    line: kmps
      .map(
        (k) =>
          `${k.metadata.name}: ready=${k.status?.ready === true} replicas=${k.status?.replicas ?? 0} providerIDs=${k.spec?.providerIDList?.length ?? 0}`,
      )
      .join(', '),
    json: {
      karpenterMachinePools: kmps.map((k) => ({
        name: k.metadata.name,
        namespace: k.metadata.namespace,
        spec: { providerIDList: k.spec?.providerIDList ?? [] },
        status: k.status,
      })),
    },
    table: '',
  };
}

/** Runs `capenter start --capi`; returns the exit code. Never throws. */
export async function runStartCAPI(flags: StartCAPIFlags, io: StartIO): Promise<number> {
  const split = await splitManifests(flags, io);
  if (!split) return 2;
  const mgmtObjects = split.management;
  if (!mgmtObjects.some((o) => o.kind === 'KarpenterMachinePool'))
    mgmtObjects.push(...sampleCAPIObjects({ region: flags.region }));
  const run = twoClusterRun(flags, io, 'capenter-capi');
  const { logger } = run;
  let stack: CAPIStack | undefined;
  let dashboard: Dashboard | undefined;
  return guardedRun(
    run,
    io,
    async () => {
      const clusterName =
        clusterNameOf((mgmtObjects.find((o) => o.kind === 'MachinePool') ?? { metadata: {} }) as never) ??
        'demo';
      const endpoint = flags.awsEmulatorEndpoint;
      stack = await startCAPIStack({
        ...(endpoint
          ? {
              aws: { emulatorEndpoint: endpoint, region: flags.region, clusterName },
              bootstrapStore: new S3BootstrapStore((region) => ({ region, endpoint, forcePathStyle: true })),
            }
          : {}),
        env: run.env,
        operator: { region: flags.region, logLevel: flags.logLevel, clusterName },
        logger,
        defaultMetrics: true,
        ...(flags.uninitializedTaintTimeout !== undefined
          ? { uninitializedTimeoutSeconds: flags.uninitializedTaintTimeout }
          : {}),
      });
      const started = stack;
      const env = stack.env;
      const mgmtKubeconfig = run.managementKubeconfig;
      const workloadKubeconfig = run.workloadKubeconfig;
      io.stderr(`capenter: management cluster at ${env.management.url} (kubeconfig ${mgmtKubeconfig})\n`);
      io.stderr(
        `capenter: workload cluster at ${env.workload.apiServer.url} (kubeconfig ${workloadKubeconfig})\n`,
      );
      io.stderr(
        `capenter: try  kubectl --kubeconfig ${mgmtKubeconfig} get karpentermachinepools,machinepools -A  and  kubectl --kubeconfig ${workloadKubeconfig} get nodeclaims -w\n`,
      );
      dashboard = await capiDashboard(stack, flags.dashboardPort, io);
      await prepareCAPA(stack, flags, mgmtObjects, clusterName, io);
      const clusters = new Set(
        mgmtObjects
          .filter((o) => o.kind === 'MachinePool')
          .map((o) => `${o.metadata?.namespace ?? 'default'}/${clusterNameOf(o as never) ?? ''}`),
      );
      for (const c of clusters) {
        const [ns, name] = c.split('/') as [string, string];
        if (name) await env.writeKubeconfigSecret(ns, name);
      }
      const applied = await applyToClusters(
        [
          [env.mgmt, mgmtObjects, 'management'],
          [env.workload.client, split.workload, 'workload'],
        ],
        io,
      );
      return await settleWorkload(
        run,
        flags,
        io,
        env.workload.client,
        () => kmpExtra(started),
        Math.max(split.exitCode, applied),
      );
    },
    async () => {
      await dashboard?.close();
      await stack?.stop();
    },
  );
}
