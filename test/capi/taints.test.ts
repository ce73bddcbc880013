/**
 * The CAPI taint loop on two embedded clusters: when no CAPI controller removes `node.cluster.x-k8s.io/uninitialized`
 * (cluster-api#9858), capenter removes it from its initialized nodes after the configured time and pods run; a
 * `karpenter.sh/unregistered` taint written back onto a registered node (cluster-api#11401) is removed again and
 * counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type CAPIE2E, sampleCAPIObjects, startCAPIE2E } from './harness.ts';

let t: CAPIE2E;
beforeAll(async () => {
  t = await startCAPIE2E({
    env: { machinePoolStandIn: { periodSeconds: 0.3, removeUninitializedTaint: false } },
    uninitializedTimeoutSeconds: 1,
  });
});
afterAll(async () => {
  await t?.stop();
});

describe('CAPI taints on capenter nodes', () => {
  it('removes the uninitialized taint itself when CAPI does not, then re-removes a re-added registration taint', async () => {
    const wl = t.env.workload.client;
    await t.apply(sampleCAPIObjects());
    await eventually(async () => (await t.getKMP())?.status?.ready, 'KMP ready');
    await wl.create(parseYaml(deploymentYaml('app', 2, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 2), 'pods running without CAPI removing the taint', 60_000);
    const nodes = ((await wl.list('Node')).items as Node[]).filter(
      (n) => n.metadata.labels?.['karpenter.sh/nodepool'],
    );
    expect(nodes.length).toBeGreaterThan(0);
    for (const n of nodes)
      expect(n.spec?.taints?.map((x) => x.key) ?? []).not.toContain('node.cluster.x-k8s.io/uninitialized');
    // At least one removal per node that registered: an extra node launched while the first was still coming up
    // (and emptied away later) counts too, so the total is compared with every node created, not the ones left.
    // An extra node may still be inside its 1-s wait here, hence eventually. More removals than nodes happen when
    // the registration step runs twice for a node (its NodeClaim status write conflicted): like upstream's
    // `syncNode` it merges the startup taints again, CAPI's uninitialized taint among them, and it is removed again.
    const [created, removed] = await eventually(async () => {
      // one series per zone (label `zone`, upstream v1.14)
      const text = await t.op.registry.metrics();
      const created = [
        ...text.matchAll(/karpenter_nodes_created_total\{nodepool="workers",zone="[^"]*"\} (\d+)/g),
      ];
      const total = created.length > 0 ? created.reduce((n, m) => n + Number(m[1]), 0) : Number.NaN;
      const pair = [total, (await t.taints.counts()).uninitialized] as const;
      if (!(pair[1] >= pair[0]))
        throw new Error(`nodes created ${pair[0]}, uninitialized-taint removals ${pair[1]}`);
      return pair;
    }, 'an uninitialized-taint removal for every node created');
    expect(created).toBeGreaterThanOrEqual(nodes.length);
    expect(removed).toBeGreaterThanOrEqual(created);

    // CAPI writes a stale taint list back (cluster-api#11401).
    const node = nodes[0]!;
    await wl.patch(
      'Node',
      node.metadata.name as string,
      undefined,
      {
        spec: {
          taints: [...(node.spec?.taints ?? []), { key: 'karpenter.sh/unregistered', effect: 'NoExecute' }],
        },
      },
      { type: 'merge' },
    );
    await eventually(async () => {
      const n = (await wl.get('Node', node.metadata.name as string)) as Node;
      return !(n.spec?.taints ?? []).some((x) => x.key === 'karpenter.sh/unregistered');
    }, 'unregistered taint removed again');
    expect((await t.taints.counts()).unregistered).toBe(1);
    const metrics = await t.op.registry.metrics();
    expect(metrics).toMatch(/capenter_capi_unregistered_taint_removed_total\{nodepool="workers"\} 1/);
  }, 90_000);

  it('reports a bootstrap config without the registration taint (condition + Event)', async () => {
    await t.apply(
      sampleCAPIObjects({ poolName: 'noreg', registrationTaint: false }).filter(
        (o) => o.kind !== 'Cluster' && o.kind !== 'AWSCluster',
      ),
    );
    const k = await eventually(async () => {
      const x = await t.getKMP('noreg');
      const c = x?.status?.conditions?.find((y) => y.type === 'RegistrationTaintConfigured');
      return c?.status === 'False' ? c : undefined;
    }, 'RegistrationTaintConfigured=False');
    expect(k.reason).toBe('RegistrationTaintMissing');
    expect(k.message).toContain(
      'KubeadmConfig/noreg does not register nodes with karpenter.sh/unregistered:NoExecute',
    );
    const ev = await eventually(async () => {
      const evs = (await t.env.mgmt.list('Event', { namespace: 'default' })).items as Array<{
        reason?: string;
        involvedObject?: { name?: string };
      }>;
      return evs.find((e) => e.reason === 'RegistrationTaintMissing' && e.involvedObject?.name === 'noreg');
    }, 'Warning event');
    expect(ev).toBeDefined();
  }, 60_000);

  it('a deleted Cluster: deleting the KMP terminates what remains (live read), then drops the finalizer', async () => {
    const wl = t.env.workload.client;
    const before = (await t.op.cloudProvider.list()).filter(
      (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === 'workers',
    );
    expect(before.length).toBeGreaterThan(0);
    await t.env.mgmt.delete('Cluster', 'demo', 'default');
    await t.env.mgmt.delete('KarpenterMachinePool', 'workers', 'default');
    await eventually(async () => !(await t.getKMP()), 'KMP finalized', 60_000);
    expect(
      (await t.op.cloudProvider.list()).filter(
        (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === 'workers',
      ),
    ).toEqual([]);
    expect(await wl.tryGet('NodePool', 'workers')).toBeUndefined();
    expect(await wl.tryGet('EC2NodeClass', 'workers')).toBeUndefined();
  }, 90_000);
});
