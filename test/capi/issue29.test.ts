/**
 * Issue 29, the KarpenterMachinePool against the MachinePool stand-in modelling real Cluster API v1.14
 * (shared/tools/realcapi/FINDINGS.md): `spec.replicas` kept equal to the launched NodeClaims, so the MachinePool is
 * `Running` and, at zero, its `status.nodeRefs` empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KarpenterMachinePool, MachinePool } from '../../src/apis/capi.ts';
import type { KubeObject } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type CAPIE2E, sampleCAPIObjects, startCAPIE2E } from './harness.ts';

let t: CAPIE2E;
beforeAll(async () => {
  t = await startCAPIE2E();
});
afterAll(async () => {
  await t?.stop();
});

type MPStatus = { phase?: string; replicas?: number; nodeRefs?: Array<{ name: string }> };
const wl = () => t.env.workload.client;
const mpOf = async (name = 'workers') =>
  (await t.env.mgmt.get('MachinePool', name, 'default')) as MachinePool;
const claimsOf = async (pool = 'workers') =>
  (
    (await wl().list('NodeClaim', { labelSelector: { 'karpenter.sh/nodepool': pool } })).items as NodeClaim[]
  ).filter((n) => !n.metadata.deletionTimestamp);

/** The sample pool as CAPI's webhook leaves it: `spec.replicas` defaulted to 1, a fast consolidation. */
function pool(): KubeObject[] {
  const objs = sampleCAPIObjects({
    nodePool: {
      disruption: { consolidateAfter: '1s', budgets: [{ nodes: '100%' }] },
      template: {
        spec: {
          expireAfter: '720h',
          requirements: [
            { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
            { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['m'] },
          ],
        },
      },
    },
  });
  const mp = objs.find((o) => o.kind === 'MachinePool') as MachinePool;
  mp.spec!.replicas = 1;
  return objs;
}

describe('issue 29: KarpenterMachinePool vs real Cluster API behaviour', () => {
  it('#9 MachinePool.spec.replicas follows the launched NodeClaims: phase Running, and at zero no stale nodeRefs', async () => {
    await t.apply(pool());
    await eventually(async () => (await t.getKMP())?.status?.ready, 'KMP ready');
    await wl().create(parseYaml(deploymentYaml('app', 3, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl(), 3), 'pods running', 60_000);
    const claims = await claimsOf();
    const up = await eventually(
      async () => {
        const mp = await mpOf();
        const st = mp.status as MPStatus;
        return st?.phase === 'Running' && st.nodeRefs?.length === claims.length ? mp : undefined;
      },
      'MachinePool Running with its nodes',
      30_000,
    );
    expect(up.spec?.replicas).toBe(claims.length);
    expect((up.status as MPStatus).replicas).toBe(claims.length);
    const kmp = (await t.getKMP()) as KarpenterMachinePool;
    expect(kmp.status?.replicas).toBe(claims.length);

    // Scale to zero: consolidation removes every node; CAPI must see replicas 0 to drop its node refs.
    await wl().delete('Deployment', 'app', 'default');
    await eventually(async () => (await claimsOf()).length === 0, 'NodeClaims gone', 60_000);
    const down = await eventually(
      async () => {
        const mp = await mpOf();
        const st = mp.status as MPStatus;
        return st?.phase === 'Running' && st.nodeRefs?.length === 0 ? mp : undefined;
      },
      'MachinePool Running at zero without node refs',
      30_000,
    );
    expect(down.spec?.replicas).toBe(0);
    expect(down.spec?.providerIDList ?? []).toEqual([]);
    expect((await t.getKMP())?.status?.replicas).toBe(0);
  }, 150_000);

  it('#10 the <cluster>-kubeconfig Secret goes into a namespace the manifests have not made yet', async () => {
    await t.env.writeKubeconfigSecret('team-a', 'prod');
    const secret = await t.env.mgmt.get('Secret', 'prod-kubeconfig', 'team-a');
    expect(secret.metadata?.labels?.['cluster.x-k8s.io/cluster-name']).toBe('prod');
    expect((await t.env.mgmt.get('Namespace', 'team-a')).metadata?.name).toBe('team-a');
  });

  it('#11 bad input: missing MachinePool, paused Cluster, wrong kubeconfig Secret → condition, Event, nothing launched', async () => {
    const readyOf = async (name: string) => {
      const k = await t.getKMP(name);
      return k?.status?.conditions?.find((c) => c.type === 'Ready');
    };
    const eventsOf = async (name: string) =>
      (
        (await t.env.mgmt.list('Event', { namespace: 'default' })).items as Array<{
          involvedObject?: { name?: string };
          type?: string;
          reason?: string;
          message?: string;
        }>
      ).filter((e) => e.involvedObject?.name === name && e.type === 'Warning');
    // A KMP whose MachinePool is missing.
    await t.apply(
      sampleCAPIObjects({ poolName: 'orphan', clusterName: 'orphan-c' }).filter(
        (o) => o.kind === 'KarpenterMachinePool',
      ),
    );
    // A paused Cluster.
    await t.apply(
      sampleCAPIObjects({ poolName: 'held', clusterName: 'held-c' }).map((o) =>
        o.kind === 'Cluster'
          ? ({ ...o, spec: { ...(o as MachinePool).spec, paused: true } } as KubeObject)
          : o,
      ),
    );
    await t.env.writeKubeconfigSecret('default', 'held-c');
    // A kubeconfig Secret that is no kubeconfig.
    await t.apply([
      ...sampleCAPIObjects({ poolName: 'badkc', clusterName: 'badkc-c' }),
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: 'badkc-c-kubeconfig',
          namespace: 'default',
          labels: { 'cluster.x-k8s.io/cluster-name': 'badkc-c' },
        },
        type: 'cluster.x-k8s.io/secret',
        data: { value: Buffer.from('not: a kubeconfig').toString('base64') },
      } as KubeObject,
    ]);
    for (const [name, reason, text] of [
      ['orphan', 'WaitingForMachinePool', 'no MachinePool in namespace default'],
      ['held', 'ClusterPaused', 'Cluster default/held-c is paused'],
      ['badkc', 'WorkloadClusterUnavailable', 'badkc-c-kubeconfig'],
    ] as const) {
      const c = await eventually(async () => {
        const r = await readyOf(name);
        return r?.status === 'False' && r.reason === reason ? r : undefined;
      }, `${name}: Ready=False ${reason}`);
      expect(c.message).toContain(text);
      const ev = await eventually(
        async () => (await eventsOf(name)).find((e) => e.reason === reason),
        `${name}: Warning Event ${reason}`,
      );
      expect(ev.message).toBe(c.message);
      expect(await wl().tryGet('NodePool', name)).toBeUndefined();
    }
  });
});
