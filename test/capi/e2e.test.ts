/**
 * Two clusters as CAPI runs them (embedded management + workload cluster, kwok): Cluster + AWSCluster +
 * MachinePool + KarpenterMachinePool + bootstrap Secret → NodePool + EC2NodeClass in the workload cluster →
 * pending pods → NodeClaims → Nodes → providerIDList → CAPI stand-in removes the uninitialized taint → pods Running;
 * secret rotation rewrites only the stored bootstrap data; a version bump rolls every node replacements first;
 * deleting the KarpenterMachinePool leaves nothing behind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MachinePool } from '../../src/apis/capi.ts';
import type { Node } from '../../src/apis/core.ts';
import type { EC2NodeClass, NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { fakeBootstrapData } from '../../src/sim/capi/environment.ts';
import { observe } from '../../src/testing/watch.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type CAPIE2E, sampleCAPIObjects, startCAPIE2E } from './harness.ts';

let t: CAPIE2E;
beforeAll(async () => {
  // nominations live 2 s, not upstream's 20: the roll below replaces a node only once its pods' nominations expired
  t = await startCAPIE2E({ nominationTTLSeconds: 2 });
});
afterAll(async () => {
  await t?.stop();
});

const wl = () => t.env.workload.client;
const claimsOf = async (pool = 'workers') =>
  (
    (await wl().list('NodeClaim', { labelSelector: { 'karpenter.sh/nodepool': pool } })).items as NodeClaim[]
  ).filter((n) => !n.metadata.deletionTimestamp);

describe('KarpenterMachinePool on two embedded clusters (kwok)', () => {
  it('provisions from pending pods and reports provider IDs to CAPI', async () => {
    await t.apply(sampleCAPIObjects());
    const kmp = await eventually(async () => {
      const k = await t.getKMP();
      return k?.status?.ready ? k : undefined;
    }, 'KMP ready');
    expect(kmp.metadata.finalizers).toContain('capenter.sh/karpentermachinepool');
    expect(kmp.status?.initialization?.provisioned).toBe(true);
    expect(kmp.status?.version).toBe('v1.33.1');
    expect(kmp.status?.conditions?.find((c) => c.type === 'RegistrationTaintConfigured')?.status).toBe(
      'True',
    );
    const np = (await wl().get('NodePool', 'workers')) as NodePool;
    expect(np.metadata.labels).toMatchObject({
      'capenter.sh/karpentermachinepool': 'workers',
      'app.kubernetes.io/managed-by': 'capenter',
      'cluster.x-k8s.io/cluster-name': 'demo',
    });
    expect(np.spec.template.spec.nodeClassRef).toEqual({
      group: 'karpenter.k8s.aws',
      kind: 'EC2NodeClass',
      name: 'workers',
    });
    expect(np.spec.template.spec.startupTaints).toEqual([
      { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
    ]);
    const nc = (await wl().get('EC2NodeClass', 'workers')) as EC2NodeClass;
    expect(nc.spec.amiFamily).toBe('Custom');
    expect(nc.spec.amiSelectorTerms).toEqual([
      { name: 'capa-ami-ubuntu-24.04-?1.33.1-*', owner: '258751437250' },
    ]);
    expect(nc.spec.subnetSelectorTerms).toEqual([{ id: 'subnet-0a1' }, { id: 'subnet-0b1' }]);
    expect(nc.spec.securityGroupSelectorTerms).toEqual([{ id: 'sg-0node' }]);
    expect(nc.spec.instanceProfile).toBe('nodes-demo');
    expect(nc.spec.tags).toMatchObject({ team: 'platform', 'cluster.x-k8s.io/cluster-name': 'demo' });
    expect(nc.spec.userData).toContain('s3://demo-capa-bootstrap/karpenter-machine-pool/default/workers');
    expect(nc.spec.userData).not.toContain('abcdef.0123456789abcdef');
    const stored = await t.store.get({
      region: 'us-east-1',
      bucket: 'demo-capa-bootstrap',
      key: 'karpenter-machine-pool/default/workers',
    });
    expect(stored?.toString()).toBe(fakeBootstrapData());
    const mp = (await t.env.mgmt.get('MachinePool', 'workers', 'default')) as MachinePool;
    expect(mp.metadata.annotations?.['cluster.x-k8s.io/replicas-managed-by']).toBe('external-autoscaler');

    await wl().create(parseYaml(deploymentYaml('app', 6, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl(), 6), 'all 6 pods running', 60_000);
    const claims = await claimsOf();
    expect(claims.length).toBeGreaterThan(0);
    const ids = claims.map((c) => c.status?.providerID).sort();
    const after = await eventually(async () => {
      const k = await t.getKMP();
      return JSON.stringify(k?.spec?.providerIDList) === JSON.stringify(ids) &&
        k?.status?.replicas === claims.length
        ? k
        : undefined;
    }, 'providerIDList and replicas');
    expect(after.spec?.providerIDList).toEqual(ids);
    const mp2 = await eventually(async () => {
      const m = (await t.env.mgmt.get('MachinePool', 'workers', 'default')) as MachinePool;
      return JSON.stringify(m.spec?.providerIDList) === JSON.stringify(ids) &&
        (m.status as { replicas?: number })?.replicas === claims.length
        ? m
        : undefined;
    }, 'MachinePool providerIDList');
    expect(
      (mp2.status as { initialization?: { infrastructureProvisioned?: boolean } }).initialization
        ?.infrastructureProvisioned,
    ).toBe(true);
    const nodes = (await wl().list('Node')).items as Node[];
    for (const n of nodes) {
      expect(n.spec?.taints?.some((x) => x.key === 'node.cluster.x-k8s.io/uninitialized')).toBe(false);
      expect(n.metadata.annotations?.['cluster.x-k8s.io/owner-kind']).toBe('MachinePool');
      expect(n.metadata.annotations?.['cluster.x-k8s.io/owner-name']).toBe('workers');
    }
    expect((await t.taints.counts()).uninitialized).toBe(0);
  }, 90_000);

  it('a bootstrap Secret rotation rewrites only the stored user data: no spec change, no drift', async () => {
    const before = (await wl().get('EC2NodeClass', 'workers')) as EC2NodeClass;
    const claims = (await claimsOf()).map((c) => c.metadata.name).sort();
    const writes = t.store.writes;
    const rotated = fakeBootstrapData('zyxwvu.9876543210fedcba');
    await t.env.mgmt.patch(
      'Secret',
      'workers-bootstrap',
      'default',
      { data: { value: Buffer.from(rotated).toString('base64') } },
      { type: 'merge' },
    );
    await eventually(async () => {
      const got = await t.store.get({
        region: 'us-east-1',
        bucket: 'demo-capa-bootstrap',
        key: 'karpenter-machine-pool/default/workers',
      });
      return got?.toString() === rotated;
    }, 'rotated data stored');
    expect(t.store.writes).toBe(writes + 1);
    const k = await eventually(async () => {
      const x = await t.getKMP();
      return x?.metadata.annotations?.['capenter.sh/userdata-hash'] !== undefined ? x : undefined;
    }, 'hash annotation');
    expect(k.metadata.annotations?.['capenter.sh/userdata-hash']).toMatch(/^[0-9a-f]{64}$/);
    const after = (await wl().get('EC2NodeClass', 'workers')) as EC2NodeClass;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.spec.userData).toBe(before.spec.userData);
    const now = await claimsOf();
    expect(now.map((c) => c.metadata.name).sort()).toEqual(claims);
    expect(
      now.every((c) => !c.status?.conditions?.some((x) => x.type === 'Drifted' && x.status === 'True')),
    ).toBe(true);
  }, 60_000);

  it('holds a version newer than the control plane, then rolls every node replacements first', async () => {
    // MachinePool ahead of the control plane: gated, with a condition.
    await t.env.mgmt.patch(
      'MachinePool',
      'workers',
      'default',
      { spec: { template: { spec: { version: 'v1.34.2' } } } },
      { type: 'merge' },
    );
    const gated = await eventually(async () => {
      const k = await t.getKMP();
      const c = k?.status?.conditions?.find((x) => x.type === 'VersionSkewPolicySatisfied');
      return c?.status === 'False' ? { k, c } : undefined;
    }, 'skew condition');
    expect(gated.c.reason).toBe('VersionNewerThanControlPlane');
    expect(gated.c.message).toContain('v1.34.2 is newer than the control plane (v1.33.1)');
    expect(gated.k?.status?.version).toBe('v1.33.1');
    expect(
      ((await wl().get('EC2NodeClass', 'workers')) as EC2NodeClass).spec.amiSelectorTerms?.[0]?.name,
    ).toContain('1.33.1');

    const old = await claimsOf();
    const oldNames = new Set(old.map((c) => c.metadata.name));
    const initialized = (cs: NodeClaim[]) =>
      cs.filter((c) => c.status?.conditions?.some((x) => x.type === 'Initialized' && x.status === 'True'))
        .length;
    // the Initialized count after every change of the pool's NodeClaims (a watch), not every 50 ms
    const initializedCounts = await observe(
      wl(),
      'NodeClaim',
      (cs) => initialized(cs.filter((c) => !c.metadata.deletionTimestamp)),
      { labelSelector: { 'karpenter.sh/nodepool': 'workers' } },
    );
    // Control plane upgraded: the pool follows.
    await t.env.mgmt.patch(
      'Cluster',
      'demo',
      'default',
      { spec: { topology: { version: 'v1.34.2' } } },
      { type: 'merge' },
    );
    await eventually(async () => {
      const np = (await wl().get('NodePool', 'workers')) as NodePool;
      return np.spec.template.metadata?.annotations?.['capenter.sh/kubernetes-version'] === 'v1.34.2';
    }, 'NodePool at v1.34.2');
    expect(
      ((await wl().get('EC2NodeClass', 'workers')) as EC2NodeClass).spec.amiSelectorTerms?.[0]?.name,
    ).toBe('capa-ami-ubuntu-24.04-?1.34.2-*');
    await eventually(
      async () => {
        const cs = await claimsOf();
        const all = (await wl().list('NodeClaim')).items as NodeClaim[];
        return (
          cs.length > 0 &&
          cs.every((c) => !oldNames.has(c.metadata.name)) &&
          all.every((c) => !oldNames.has(c.metadata.name)) &&
          (await allRunning(wl(), 6))
        );
      },
      'every node replaced',
      90_000,
    );
    expect(Math.min(...(await initializedCounts.stop()))).toBeGreaterThanOrEqual(old.length);
    const k = await eventually(async () => {
      const x = await t.getKMP();
      return x?.status?.conditions?.find((c) => c.type === 'VersionSkewPolicySatisfied')?.status === 'True'
        ? x
        : undefined;
    }, 'skew satisfied');
    expect(k.status?.version).toBe('v1.34.2');
    const ids = (await claimsOf()).map((c) => c.status?.providerID).sort();
    await eventually(
      async () => JSON.stringify((await t.getKMP())?.spec?.providerIDList) === JSON.stringify(ids),
      'providerIDList follows the roll',
    );
  }, 120_000);

  it('deleting the KarpenterMachinePool removes NodePool, nodes, instances, EC2NodeClass and user data', async () => {
    await t.env.mgmt.delete('KarpenterMachinePool', 'workers', 'default');
    await eventually(async () => !(await t.getKMP()), 'KMP gone', 90_000);
    expect(await wl().tryGet('NodePool', 'workers')).toBeUndefined();
    expect(await wl().tryGet('EC2NodeClass', 'workers')).toBeUndefined();
    expect(await claimsOf()).toEqual([]);
    expect(
      (await t.op.cloudProvider.list()).filter(
        (c) => c.metadata.labels?.['karpenter.sh/nodepool'] === 'workers',
      ),
    ).toEqual([]);
    expect(
      ((await wl().list('Node')).items as Node[]).filter(
        (n) => n.metadata.labels?.['karpenter.sh/nodepool'] === 'workers',
      ),
    ).toEqual([]);
    expect(t.store.size).toBe(0);
  }, 120_000);
});
