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
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { IAMClient } from '@aws-sdk/client-iam';
import { S3Client } from '@aws-sdk/client-s3';
import { parseAllDocuments } from 'yaml';
import { type KarpenterMachinePool, LabelClusterName, type MachinePool } from '../apis/capi.ts';
import type { KubeObject } from '../apis/core.ts';
import { loadManifestPaths } from '../apis/load.ts';
import { clusterNameOf } from '../controllers/capi/desired.ts';
import { S3BootstrapStore } from '../controllers/capi/s3store.ts';
import { createLogger } from '../kube/logger.ts';
import { applyObjects } from '../operator/apply.ts';
import { type CAPIStack, startCAPIStack } from '../operator/capi.ts';
import { prepareCAPAEmulator } from '../sim/capi/aws.ts';
import { sampleCAPIObjects } from '../sim/capi/environment.ts';
import {
  defaultExamplePath,
  formatSummaryTable,
  progressLine,
  readClusterView,
  type StartIO,
  type StartSummary,
  summarize,
} from './start.ts';

/** Flags of `capenter start --capi` (a subset of `start`'s, already checked by it). */
export interface StartCAPIFlags {
  filename?: string[];
  kubeconfigOut?: string;
  exitWhenSettled?: boolean;
  timeout: number;
  output: 'table' | 'json';
  region: string;
  logLevel: string;
  /** Seconds before capenter removes a lingering uninitialized taint itself (default 120). */
  uninitializedTaintTimeout?: number;
  /** Run the nodes on the aws provider against this AWS API emulator endpoint (moto) instead of kwok. */
  awsEmulatorEndpoint?: string;
}

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

/** Runs `capenter start --capi`; returns the exit code. Never throws. */
export async function runStartCAPI(flags: StartCAPIFlags, io: StartIO): Promise<number> {
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
  const workloadObjects = loaded.objects
    .map((o) => o.object as KubeObject)
    .filter((o) => !mgmtObjects.some((m) => m.kind === o.kind && m.metadata?.name === o.metadata?.name))
    .filter((o) => !useDefault || !['NodePool', 'EC2NodeClass', 'KWOKNodeClass'].includes(o.kind ?? ''));
  if (!mgmtObjects.some((o) => o.kind === 'KarpenterMachinePool'))
    mgmtObjects.push(...sampleCAPIObjects({ region: flags.region }));
  const dir = flags.kubeconfigOut
    ? resolve(flags.kubeconfigOut, '..')
    : mkdtempSync(join(tmpdir(), 'capenter-capi-'));
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
  let stack: CAPIStack | undefined;
  try {
    const clusterName =
      clusterNameOf((mgmtObjects.find((o) => o.kind === 'MachinePool') ?? { metadata: {} }) as never) ??
      'demo';
    stack = await startCAPIStack({
      ...(flags.awsEmulatorEndpoint
        ? { aws: { emulatorEndpoint: flags.awsEmulatorEndpoint, region: flags.region, clusterName } }
        : {}),
      ...(flags.awsEmulatorEndpoint
        ? {
            bootstrapStore: new S3BootstrapStore((region) => ({
              region,
              endpoint: flags.awsEmulatorEndpoint as string,
              forcePathStyle: true,
            })),
          }
        : {}),
      env: {
        workload: { kubeconfigPath: workloadKubeconfig },
        managementKubeconfigPath: mgmtKubeconfig,
        onError: (err, where) =>
          logger.debug({ where, err: String(err) }, 'simulated cluster error (retrying)'),
      },
      operator: { region: flags.region, logLevel: flags.logLevel, clusterName },
      logger,
      defaultMetrics: true,
      ...(flags.uninitializedTaintTimeout !== undefined
        ? { uninitializedTimeoutSeconds: flags.uninitializedTaintTimeout }
        : {}),
    });
    const env = stack.env;
    io.stderr(`capenter: management cluster at ${env.management.url} (kubeconfig ${mgmtKubeconfig})\n`);
    io.stderr(
      `capenter: workload cluster at ${env.workload.apiServer.url} (kubeconfig ${workloadKubeconfig})\n`,
    );
    io.stderr(
      `capenter: try  kubectl --kubeconfig ${mgmtKubeconfig} get karpentermachinepools,machinepools -A  and  kubectl --kubeconfig ${workloadKubeconfig} get nodeclaims -w\n`,
    );
    if (stack.aws && flags.awsEmulatorEndpoint) {
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
    const clusters = new Set(
      mgmtObjects
        .filter((o) => o.kind === 'MachinePool')
        .map((o) => `${o.metadata?.namespace ?? 'default'}/${clusterNameOf(o as never) ?? ''}`),
    );
    for (const c of clusters) {
      const [ns, name] = c.split('/') as [string, string];
      if (name) await env.writeKubeconfigSecret(ns, name);
    }
    for (const [client, objs, where] of [
      [env.mgmt, mgmtObjects, 'management'],
      [env.workload.client, workloadObjects, 'workload'],
    ] as const) {
      const applied = await applyObjects(client, objs as KubeObject[]);
      const failed = applied.filter((a) => a.result === 'failed');
      for (const f of failed) io.stderr(`error: ${where}: ${f.error}\n`);
      if (failed.length > 0) exitCode = 2;
      io.stderr(`capenter: applied ${applied.length - failed.length} object(s) to the ${where} cluster\n`);
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
      const kmps = (await env.mgmt.list('KarpenterMachinePool')).items as KarpenterMachinePool[];
      const kmpLine = kmps
        .map(
          (k) =>
            `${k.metadata.name}: ready=${k.status?.ready === true} replicas=${k.status?.replicas ?? 0} providerIDs=${k.spec?.providerIDList?.length ?? 0}`,
        )
        .join(', ');
      const line = `${progressLine(summary)} · ${kmpLine}`;
      const sans = line.replace(/^\[[^\]]*\] /, '');
      if (sans !== last) {
        io.stderr(`${line}\n`);
        last = sans;
      }
      const inFlight = summary.nodeClaims.some((r) => r.state !== 'Initialized');
      if (summary.settled && !inFlight && summary.pods.total > 0 && !printed) {
        io.stdout(
          flags.output === 'json'
            ? `${JSON.stringify({ ...summary, karpenterMachinePools: kmps.map((k) => ({ name: k.metadata.name, namespace: k.metadata.namespace, spec: { providerIDList: k.spec?.providerIDList ?? [] }, status: k.status })) }, null, 2)}\n`
            : formatSummaryTable(summary),
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
