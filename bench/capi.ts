/**
 * CAPI benchmark (embedded two-cluster environment, kwok, wall clock, default batch windows):
 * - `newPoolSeconds`: 50 pods pending in the workload cluster (2 Deployments, 500m/512Mi and 1/2Gi), then a new
 *   KarpenterMachinePool (+ Cluster, AWSCluster, KubeadmConfig, bootstrap Secret, MachinePool) is created in the
 *   management cluster: seconds until all 50 pods are Running (KMP reconcile → NodePool + EC2NodeClass → batch
 *   window → NodeClaims → kwok Nodes → providerIDList → CAPI stand-in removes the uninitialized taint → bind).
 * - `reconcile100`: 100 KarpenterMachinePools (each with its MachinePool and bootstrap Secret, one Cluster) created at
 *   once: seconds until all report `status.ready` (first reconcile: S3 upload, NodePool + EC2NodeClass creation), then
 *   a steady-state pass reconciling all 100 keys directly (seconds and per-KMP milliseconds).
 * - `newPoolAws`: the first measurement with the nodes on the aws provider against moto (CreateFleet, joining
 *   kubelet stand-in), bootstrap data in moto's S3.
 * Targets (reported, never asserted): 50 pods Running < 15 s; 100 KMPs ready < 30 s.
 * Run directly: `tsx bench/capi.ts [--json]`; `bench/main.ts` calls {@link runCAPIBench}.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { IAMClient } from '@aws-sdk/client-iam';
import { S3Client } from '@aws-sdk/client-s3';
import type { KarpenterMachinePool } from '../src/apis/capi.ts';
import type { KubeObject, Pod } from '../src/apis/core.ts';
import { S3BootstrapStore } from '../src/cloudprovider/aws/s3store.ts';
import { applyObjects } from '../src/embedded/apply.ts';
import { startCAPIStack } from '../src/embedded/capi.ts';
import { prepareCAPAEmulator } from '../src/sim/capi/aws.ts';
import { sampleCAPIObjects } from '../src/sim/capi/environment.ts';

/** Result of {@link runCAPIBench}. */
export interface CAPIBenchResult {
  newPool: { pods: number; seconds: number; nodeClaims: number };
  /** The same on the aws provider against moto (an error when moto could not be started). */
  newPoolAws?: { pods: number; seconds: number; nodeClaims: number } | { error: string };
  reconcile100: { kmps: number; allReadySeconds: number; steadyPassSeconds: number; perKMPMs: number };
}

async function until(fn: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function deployment(name: string, replicas: number, cpu: string, memory: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            { name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu, memory } } },
          ],
        },
      },
    },
  } as KubeObject;
}

async function newPool(emulator?: string): Promise<CAPIBenchResult['newPool']> {
  if (emulator) {
    process.env.AWS_ACCESS_KEY_ID ??= 'testing';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'testing';
  }
  const s3cfg = (region: string) => ({ region, endpoint: emulator as string, forcePathStyle: true });
  const stack = await startCAPIStack({
    env: { workload: { kubeletReadyDelaySeconds: 0, podStartDelaySeconds: 0.2 } },
    ...(emulator
      ? {
          aws: { emulatorEndpoint: emulator, region: 'us-east-1', clusterName: 'demo' },
          operator: { clusterName: 'demo' },
          bootstrapStore: new S3BootstrapStore(s3cfg),
        }
      : {}),
  });
  try {
    const { env } = stack;
    await env.writeKubeconfigSecret('default', 'demo');
    const objs = sampleCAPIObjects();
    if (stack.aws) {
      const iam = new IAMClient({ region: 'us-east-1', endpoint: emulator as string });
      const s3 = new S3Client(s3cfg('us-east-1'));
      const prepared = await prepareCAPAEmulator({
        ec2: stack.aws.clients.ec2,
        iam,
        s3,
        clusterName: 'demo',
        region: 'us-east-1',
        versions: ['v1.33.1'],
        subnets: stack.aws.seed.subnets,
        securityGroup: stack.aws.seed.securityGroups[0] as string,
      });
      iam.destroy();
      s3.destroy();
      for (const o of objs)
        if (o.kind === 'AWSCluster') Object.assign((o as { spec: object }).spec, prepared.awsClusterSpec);
    }
    await applyObjects(env.workload.client, [
      deployment('web', 30, '500m', '512Mi'),
      deployment('api', 20, '1', '2Gi'),
    ]);
    await until(async () => (await env.workload.client.list('Pod')).items.length === 50, 30_000, '50 pods');
    const t0 = performance.now();
    const res = await applyObjects(env.mgmt, objs);
    if (res.some((r) => r.result === 'failed')) throw new Error('sample objects failed to apply');
    await until(
      async () => {
        const pods = (await env.workload.client.list('Pod')).items as Pod[];
        return pods.length === 50 && pods.every((p) => p.status?.phase === 'Running');
      },
      120_000,
      '50 pods Running',
    );
    const seconds = (performance.now() - t0) / 1000;
    const nodeClaims = (await env.workload.client.list('NodeClaim')).items.length;
    return { pods: 50, seconds: Math.round(seconds * 100) / 100, nodeClaims };
  } finally {
    await stack.stop();
  }
}

async function reconcile100(): Promise<CAPIBenchResult['reconcile100']> {
  const stack = await startCAPIStack({ withOperator: false, env: { machinePoolStandIn: false } });
  try {
    const { env, kmp } = stack;
    await env.writeKubeconfigSecret('default', 'demo');
    const base = sampleCAPIObjects();
    const shared = base.filter((o) => o.kind === 'Cluster' || o.kind === 'AWSCluster');
    await applyObjects(env.mgmt, shared);
    const perPool: KubeObject[] = [];
    for (let i = 0; i < 100; i++)
      perPool.push(
        ...sampleCAPIObjects({ poolName: `pool-${String(i).padStart(3, '0')}` }).filter(
          (o) => o.kind !== 'Cluster' && o.kind !== 'AWSCluster',
        ),
      );
    const t0 = performance.now();
    const res = await applyObjects(env.mgmt, perPool);
    if (res.some((r) => r.result === 'failed')) throw new Error('KMP objects failed to apply');
    await until(
      async () => {
        const items = (await env.mgmt.list('KarpenterMachinePool')).items as KarpenterMachinePool[];
        return items.length === 100 && items.every((k) => k.status?.ready === true);
      },
      300_000,
      '100 KMPs ready',
    );
    const allReadySeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => kmp.reconcile(`default/pool-${String(i).padStart(3, '0')}`)),
    );
    const steady = (performance.now() - t1) / 1000;
    return {
      kmps: 100,
      allReadySeconds: Math.round(allReadySeconds * 100) / 100,
      steadyPassSeconds: Math.round(steady * 1000) / 1000,
      perKMPMs: Math.round((steady * 1000) / 100) / 1,
    };
  } finally {
    await stack.stop();
  }
}

/** Runs both measurements (sequentially, each in its own environment). */
export async function runCAPIBench(): Promise<CAPIBenchResult> {
  const out: CAPIBenchResult = { newPool: await newPool(), reconcile100: await reconcile100() };
  let moto: { endpoint: string; stop(): Promise<void> } | undefined;
  try {
    const { startMoto } = await import('../test/aws/moto.ts');
    moto = await startMoto({ region: 'us-east-1' });
    out.newPoolAws = await newPool(moto.endpoint);
  } catch (err) {
    out.newPoolAws = { error: (err as Error).message };
  } finally {
    await moto?.stop();
  }
  return out;
}

/** Human-readable summary. */
export function formatCAPIBench(r: CAPIBenchResult): string {
  return [
    `  new KarpenterMachinePool with ${r.newPool.pods} pending pods → all Running (kwok): ${r.newPool.seconds} s (${r.newPool.nodeClaims} NodeClaims; target < 15 s: ${r.newPool.seconds < 15 ? 'met' : 'MISSED'})`,
    r.newPoolAws && 'seconds' in r.newPoolAws
      ? `  the same on the aws provider + moto: ${r.newPoolAws.seconds} s (${r.newPoolAws.nodeClaims} NodeClaims)`
      : `  the same on the aws provider + moto: not measured (${r.newPoolAws?.error ?? 'moto unavailable'})`,
    `  ${r.reconcile100.kmps} KarpenterMachinePools created → all ready: ${r.reconcile100.allReadySeconds} s (target < 30 s: ${r.reconcile100.allReadySeconds < 30 ? 'met' : 'MISSED'})`,
    `  steady-state pass over ${r.reconcile100.kmps} KMPs: ${r.reconcile100.steadyPassSeconds} s (${r.reconcile100.perKMPMs} ms per KMP)`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await runCAPIBench();
  process.stdout.write(
    process.argv.includes('--json') ? `${JSON.stringify(r, null, 2)}\n` : `${formatCAPIBench(r)}\n`,
  );
}
