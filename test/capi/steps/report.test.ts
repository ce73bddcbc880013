/** Step `report` of the KarpenterMachinePool reconcile: provider IDs and replicas back to CAPI. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KarpenterMachinePool, MachinePool } from '../../../src/apis/capi.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { applyDesired } from '../../../src/controllers/capi/steps/apply.ts';
import { reportReplicas } from '../../../src/controllers/capi/steps/report.ts';
import { WorkloadClusters } from '../../../src/controllers/capi/workload.ts';
import { eventually } from '../../../src/testing/eventually.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

/** Creates NodeClaim `name` of `pool` in the workload cluster with `status.providerID` = `id`. */
async function launched(name: string, pool: string, id: string): Promise<void> {
  const wl = s.env.workload.client;
  const nc: NodeClaim = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': pool } },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: pool },
      requirements: [],
    },
  };
  await wl.create(nc);
  await wl.patchStatus('NodeClaim', name, undefined, { status: { providerID: id } }, { type: 'merge' });
}

describe('report step', () => {
  it('writes the NodeClaims provider IDs to spec.providerIDList and counts replicas; Ready once bootstrapped', async () => {
    await s.apply(samplePool('r1'));
    await s.env.writeKubeconfigSecret('default', 'r1-c');
    const { pass, desired, inputs } = await s.prepare('r1');
    const wc = await applyDesired(s.ctx, pass, desired);
    await launched('r1-b', 'r1', 'aws:///us-east-1b/i-0b');
    await launched('r1-a', 'r1', 'aws:///us-east-1a/i-0a');
    await launched('other', 'not-r1', 'aws:///us-east-1a/i-0c');
    await eventually(
      () => WorkloadClusters.nodeClaims(wc, 'r1').filter((c) => c.status?.providerID).length === 2,
      'NodeClaims in the workload informer',
    );
    await reportReplicas(s.ctx, pass, wc, inputs.machinePool);
    const kmp = (await s.env.mgmt.get('KarpenterMachinePool', 'r1', 'default')) as KarpenterMachinePool;
    expect(kmp.spec?.providerIDList).toEqual(['aws:///us-east-1a/i-0a', 'aws:///us-east-1b/i-0b']);
    expect(pass.status).toMatchObject({ replicas: 2, ready: true, initialization: { provisioned: true } });
    expect(pass.condition('Ready')).toMatchObject({ status: 'True' });
    expect(pass.condition('Ready')?.reason).toBeUndefined();
    expect(((await s.env.mgmt.get('MachinePool', 'r1', 'default')) as MachinePool).spec?.replicas).toBe(2);

    // without BootstrapDataReady in the pass: replicas still counted, not ready
    const bare = await s.pass('r1');
    await reportReplicas(s.ctx, bare, wc, inputs.machinePool);
    expect(bare.status).toMatchObject({ replicas: 2, ready: false, initialization: { provisioned: false } });
    expect(bare.condition('Ready')).toMatchObject({ status: 'False', reason: 'BootstrapDataNotReady' });
  });

  // real CAPI v1.14.2 (../shared/tools/realcapi/FINDINGS.md mismatches 1 and 2): status.replicas counts only what
  // CAPI can see (provider IDs), and MachinePool.spec.replicas follows it down to 0 (else phase Scaling forever and
  // stale nodeRefs at zero)
  it('counts only NodeClaims with a provider ID; MachinePool spec.replicas follows, down to 0', async () => {
    await s.apply(
      samplePool('r2', (o) =>
        o.kind === 'MachinePool' ? { ...o, spec: { ...(o.spec as object), replicas: 3 } } : o,
      ),
    );
    await s.env.writeKubeconfigSecret('default', 'r2-c');
    const { pass, desired, inputs } = await s.prepare('r2');
    const wc = await applyDesired(s.ctx, pass, desired);
    const mpReplicas = async () =>
      ((await s.env.mgmt.get('MachinePool', 'r2', 'default')) as MachinePool).spec?.replicas;
    const kmpList = async () =>
      ((await s.env.mgmt.get('KarpenterMachinePool', 'r2', 'default')) as KarpenterMachinePool).spec
        ?.providerIDList;
    const wl = s.env.workload.client;
    await wl.create({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'r2-a', labels: { 'karpenter.sh/nodepool': 'r2' } },
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'r2' },
        requirements: [],
      },
    } as NodeClaim);
    await eventually(() => WorkloadClusters.nodeClaims(wc, 'r2').length === 1, 'NodeClaim in the informer');
    await reportReplicas(s.ctx, pass, wc, inputs.machinePool);
    expect(pass.status.replicas).toBe(0);
    expect(await mpReplicas()).toBe(0);

    await wl.patchStatus(
      'NodeClaim',
      'r2-a',
      undefined,
      { status: { providerID: 'aws:///us-east-1a/i-0r2' } },
      { type: 'merge' },
    );
    await eventually(
      () => WorkloadClusters.nodeClaims(wc, 'r2')[0]?.status?.providerID,
      'provider ID in the informer',
    );
    const p2 = await s.pass('r2');
    await reportReplicas(s.ctx, p2, wc, inputs.machinePool);
    expect(await kmpList()).toEqual(['aws:///us-east-1a/i-0r2']);
    expect(p2.status.replicas).toBe(1);
    expect(await mpReplicas()).toBe(1);

    await wl.delete('NodeClaim', 'r2-a');
    await eventually(
      () => WorkloadClusters.nodeClaims(wc, 'r2').length === 0,
      'NodeClaim gone from the informer',
    );
    const p3 = await s.pass('r2');
    await reportReplicas(s.ctx, p3, wc, {
      ...inputs.machinePool,
      spec: { ...inputs.machinePool.spec, replicas: 1 },
    });
    expect(await kmpList()).toEqual([]);
    expect(p3.status.replicas).toBe(0);
    expect(await mpReplicas()).toBe(0);
  });

  // mismatch 3: CAPI v1.14.2 reads only status.ready; provisioning is one-way, trouble shows in Ready only
  it('keeps status.ready and initialization.provisioned true once provisioned; Ready=False tells the trouble', async () => {
    await s.apply(samplePool('r3'));
    await s.env.writeKubeconfigSecret('default', 'r3-c');
    const { pass, desired, inputs } = await s.prepare('r3');
    const wc = await applyDesired(s.ctx, pass, desired);
    await s.env.mgmt.patchStatus(
      'KarpenterMachinePool',
      'r3',
      'default',
      { status: { ready: true, initialization: { provisioned: true } } },
      { type: 'merge' },
    );
    await eventually(
      async () => (await s.pass('r3')).kmp.status?.ready === true,
      'provisioned status in the cache',
    );
    const p = await s.pass('r3');
    await reportReplicas(s.ctx, p, wc, inputs.machinePool);
    expect(p.status).toMatchObject({ ready: true, initialization: { provisioned: true } });
    expect(p.condition('Ready')).toMatchObject({ status: 'False', reason: 'BootstrapDataNotReady' });
  });
});
