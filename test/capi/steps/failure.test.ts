/**
 * A KarpenterMachinePool reconcile whose pool turns not ready after provisioning (the AWSCluster loses its S3
 * bucket), as the real CAPI v1.14.2 manager saw it (../shared/tools/realcapi/FINDINGS.md mismatch 3): the KMP
 * stays `status.ready` (CAPI reads only that field and otherwise stops copying provider IDs), and capenter keeps
 * publishing `spec.providerIDList` / `status.replicas` / `MachinePool.spec.replicas` for the nodes the NodePool
 * goes on launching.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AWSCluster, KarpenterMachinePool, MachinePool } from '../../../src/apis/capi.ts';
import type { NodeClaim } from '../../../src/apis/karpenter.ts';
import { KarpenterMachinePoolController } from '../../../src/controllers/capi/controller.ts';
import { silentLogger } from '../../../src/kube/logger.ts';
import { eventually } from '../../../src/testing/eventually.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

/** Creates NodeClaim `name` of pool `f1` with provider ID `id` in the workload cluster. */
async function launched(name: string, id: string): Promise<void> {
  const wl = s.env.workload.client;
  await wl.create({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name, labels: { 'karpenter.sh/nodepool': 'f1' } },
    spec: {
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'f1' },
      requirements: [],
    },
  } as NodeClaim);
  await wl.patchStatus('NodeClaim', name, undefined, { status: { providerID: id } }, { type: 'merge' });
}

describe('KMP reconcile after a failed step', () => {
  it('stays ready and keeps publishing provider IDs when the AWSCluster loses spec.s3Bucket', async () => {
    const controller = new KarpenterMachinePoolController({
      client: s.ctx.client,
      informers: s.ctx.informers,
      clock: s.ctx.clock,
      recorder: s.ctx.recorder,
      bootstrapStore: s.ctx.bootstrapStore,
      instances: s.ctx.instances,
      workloads: s.ctx.workloads,
      logger: silentLogger(),
    });
    await s.apply(samplePool('f1'));
    await s.env.writeKubeconfigSecret('default', 'f1-c');
    await s.pass('f1');
    await controller.reconcile('default/f1');
    await launched('f1-a', 'aws:///us-east-1a/i-0f1a');
    const wc = await s.ctx.workloads.get('default', 'f1-c');
    const claimsWithIDs = (n: number) =>
      eventually(
        () =>
          wc.informers
            .informerFor('NodeClaim')
            .cache.list()
            .filter((c) => (c as NodeClaim).status?.providerID).length === n,
        `${n} NodeClaims with provider IDs in the informer`,
      );
    await claimsWithIDs(1);
    await s.pass('f1');
    await controller.reconcile('default/f1');
    const kmp = async () => (await s.pass('f1')).kmp as KarpenterMachinePool;
    expect((await kmp()).status).toMatchObject({
      ready: true,
      replicas: 1,
      initialization: { provisioned: true },
    });

    const aws = (await s.env.mgmt.get('AWSCluster', 'f1-c', 'default')) as AWSCluster;
    const { s3Bucket: _dropped, ...rest } = aws.spec ?? {};
    await s.env.mgmt.update({ ...aws, spec: rest });
    await eventually(
      () =>
        !(s.ctx.informers.informerFor('AWSCluster').cache.getByName('f1-c', 'default') as AWSCluster).spec
          ?.s3Bucket,
      'AWSCluster without s3Bucket in the informer',
    );
    await launched('f1-b', 'aws:///us-east-1b/i-0f1b');
    await claimsWithIDs(2);
    await s.pass('f1');
    await controller.reconcile('default/f1');
    const after = await kmp();
    expect(after.spec?.providerIDList).toEqual(['aws:///us-east-1a/i-0f1a', 'aws:///us-east-1b/i-0f1b']);
    expect(after.status).toMatchObject({ ready: true, replicas: 2, initialization: { provisioned: true } });
    expect(after.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'S3BucketNotConfigured',
      severity: 'Error',
    });
    expect(((await s.env.mgmt.get('MachinePool', 'f1', 'default')) as MachinePool).spec?.replicas).toBe(2);
  });
});
