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
  it('writes the NodeClaims provider IDs to spec.providerIDList, counts launched replicas into the KMP and MachinePool.spec.replicas; Ready once bootstrapped', async () => {
    await s.apply(samplePool('r1'));
    await s.env.writeKubeconfigSecret('default', 'r1-c');
    const { pass, desired, inputs } = await s.prepare('r1');
    const wc = await applyDesired(s.ctx, pass, desired);
    await launched('r1-b', 'r1', 'aws:///us-east-1b/i-0b');
    await launched('r1-a', 'r1', 'aws:///us-east-1a/i-0a');
    await launched('other', 'not-r1', 'aws:///us-east-1a/i-0c');
    await launched('r1-pending', 'r1', '');
    await eventually(
      () => WorkloadClusters.nodeClaims(wc, 'r1').length === 3,
      'NodeClaims in the workload informer',
    );
    await reportReplicas(s.ctx, pass, wc, inputs.machinePool);
    const kmp = (await s.env.mgmt.get('KarpenterMachinePool', 'r1', 'default')) as KarpenterMachinePool;
    expect(kmp.spec?.providerIDList).toEqual(['aws:///us-east-1a/i-0a', 'aws:///us-east-1b/i-0b']);
    expect(pass.status).toMatchObject({ replicas: 2, ready: true, initialization: { provisioned: true } });
    expect(pass.condition('Ready')).toMatchObject({ status: 'True' });
    expect(pass.condition('Ready')?.reason).toBeUndefined();
    // issue 29 #9: the MachinePool's replicas follow the launched NodeClaims (the one without a provider ID does
    // not count, neither in status.replicas).
    const mp = (await s.env.mgmt.get(
      'MachinePool',
      inputs.machinePool.metadata.name!,
      'default',
    )) as MachinePool;
    expect(mp.spec?.replicas).toBe(2);

    // without BootstrapDataReady in the pass: replicas still counted, not ready
    const bare = await s.pass('r1');
    await reportReplicas(s.ctx, bare, wc, mp);
    expect(bare.status).toMatchObject({ replicas: 2, ready: false, initialization: { provisioned: false } });
    expect(bare.condition('Ready')).toMatchObject({ status: 'False', reason: 'BootstrapDataNotReady' });
  });
});
