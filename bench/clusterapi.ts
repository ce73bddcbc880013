/**
 * clusterapi benchmark (embedded two-cluster environment, the MachineDeployment stand-in, wall clock, default
 * batch windows, stand-in and scaler polling every 0.2 s):
 * - `podsRunningSeconds`: 100 pods (1 vCPU / 1 GiB) pending in the workload cluster with a ClusterAPINodeClass
 *   selecting two MachineDeployments (m5.xlarge at 0.192 USD/h, c5.2xlarge at 0.34 USD/h, max 100 each): seconds
 *   until all 100 are Running (batch window → NodeClaims → replicas → Machines → provider IDs → Nodes → bind);
 * - `replicaUpdatesPerNodeClaim`: MachineDeployment `spec.replicas` writes by the provider divided by the
 *   NodeClaims launched (batching makes it < 1; upstream's provider writes one per NodeClaim).
 * Targets (reported, never asserted): 100 pods Running < 20 s; < 0.5 replica writes per NodeClaim.
 * Run directly: `tsx bench/clusterapi.ts [--json]`; `bench/main.ts` calls {@link runClusterAPIBench}.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { MachineDeployment } from '../src/apis/capi.ts';
import type { KubeObject, Pod } from '../src/apis/core.ts';
import type { NodeClaim } from '../src/apis/karpenter.ts';
import { applyObjects } from '../src/embedded/apply.ts';
import { startClusterAPIStack } from '../src/embedded/clusterapi.ts';
import {
  DefaultSampleDeployments,
  sampleClusterAPIObjects,
  sampleClusterAPIWorkloadObjects,
  writeStatuses,
} from '../src/sim/capi/clusterapi.ts';

/** Result of {@link runClusterAPIBench}. */
export interface ClusterAPIBenchResult {
  pods: number;
  podsRunningSeconds: number;
  nodeClaims: number;
  replicaUpdates: number;
  replicaUpdatesPerNodeClaim: number;
  /** Replicas per MachineDeployment at the end (equal to the NodeClaims launched from each). */
  replicas: Record<string, number>;
  priceUSDPerHour: number;
}

async function until(fn: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs the benchmark once (about 20 s). */
export async function runClusterAPIBench(pods = 100): Promise<ClusterAPIBenchResult> {
  const stack = await startClusterAPIStack({
    env: { workload: { kubeletReadyDelaySeconds: 0, podStartDelaySeconds: 0.2 } },
    nodeClassPeriodSeconds: 5,
  });
  try {
    const mgmtObjs = sampleClusterAPIObjects({
      deployments: DefaultSampleDeployments.map((d) => ({ ...d, maxSize: 100 })),
    });
    await applyObjects(stack.env.mgmt, mgmtObjs);
    await writeStatuses(stack.env.mgmt, mgmtObjs);
    const wl = stack.env.workload.client;
    await applyObjects(wl, sampleClusterAPIWorkloadObjects({ consolidateAfter: '300s' }));
    await until(
      async () =>
        (
          (await wl.get('NodePool', 'default')) as {
            status?: { conditions?: Array<{ type: string; status: string }> };
          }
        ).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      30_000,
      'NodePool Ready',
    );
    const started = performance.now();
    await applyObjects(wl, [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'bench', namespace: 'default' },
        spec: {
          replicas: pods,
          selector: { matchLabels: { app: 'bench' } },
          template: {
            metadata: { labels: { app: 'bench' } },
            spec: {
              containers: [
                {
                  name: 'app',
                  image: 'registry.k8s.io/pause:3.10',
                  resources: { requests: { cpu: '1', memory: '1Gi' } },
                },
              ],
            },
          },
        },
      } as KubeObject,
    ]);
    await until(
      async () => {
        const ps = ((await wl.list('Pod', { namespace: 'default' })).items as Pod[]).filter(
          (p) => p.metadata.labels?.app === 'bench',
        );
        return ps.length === pods && ps.every((p) => p.status?.phase === 'Running');
      },
      180_000,
      `${pods} pods Running`,
    );
    const podsRunningSeconds = (performance.now() - started) / 1000;
    const claims = ((await wl.list('NodeClaim')).items as NodeClaim[]).filter((n) => n.status?.providerID);
    const replicaUpdates = Object.values(stack.provider.replicaUpdates()).reduce((a, b) => a + b, 0);
    const mds = (await stack.env.mgmt.list('MachineDeployment', { namespace: 'default' }))
      .items as MachineDeployment[];
    const price = claims.reduce(
      (a, n) => a + Number(n.metadata.annotations?.['karpenter.cluster.x-k8s.io/price-per-hour'] ?? 0),
      0,
    );
    return {
      pods,
      podsRunningSeconds: Math.round(podsRunningSeconds * 100) / 100,
      nodeClaims: claims.length,
      replicaUpdates,
      replicaUpdatesPerNodeClaim: Math.round((replicaUpdates / Math.max(1, claims.length)) * 1000) / 1000,
      replicas: Object.fromEntries(mds.map((m) => [m.metadata.name ?? '', m.spec.replicas ?? 0])),
      priceUSDPerHour: Math.round(price * 10000) / 10000,
    };
  } finally {
    await stack.stop();
  }
}

/** Human-readable lines. */
export function formatClusterAPIBench(r: ClusterAPIBenchResult): string {
  return [
    `  ${r.pods} pods Running in ${r.podsRunningSeconds.toFixed(2)} s (target < 20 s) on ${r.nodeClaims} NodeClaims ($${r.priceUSDPerHour}/h)`,
    `  MachineDeployment replica writes: ${r.replicaUpdates} = ${r.replicaUpdatesPerNodeClaim} per NodeClaim (target < 0.5)`,
    `  replicas: ${Object.entries(r.replicas)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await runClusterAPIBench();
  process.stdout.write(
    process.argv.includes('--json') ? `${JSON.stringify(r, null, 2)}\n` : `${formatClusterAPIBench(r)}\n`,
  );
}
