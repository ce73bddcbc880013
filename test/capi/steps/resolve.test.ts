/** Step `resolve` of the KarpenterMachinePool reconcile against the embedded management cluster. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MachinePool } from '../../../src/apis/capi.ts';
import { NotReady } from '../../../src/controllers/capi/steps/context.ts';
import { resolveInputs } from '../../../src/controllers/capi/steps/resolve.ts';
import { NOW, type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

describe('resolve step', () => {
  it('finds MachinePool, Cluster, AWSCluster and the bootstrap location; annotates the MachinePool', async () => {
    await s.apply(samplePool('ok'));
    const pass = await s.pass('ok');
    const inputs = await resolveInputs(s.ctx, pass);
    expect(inputs?.machinePool.metadata.name).toBe('ok');
    expect(inputs?.cluster.metadata.name).toBe('ok-c');
    expect(inputs?.awsCluster.metadata.name).toBe('ok-c');
    expect(inputs?.location).toEqual({
      region: 'us-east-1',
      bucket: 'ok-c-capa-bootstrap',
      key: 'karpenter-machine-pool/default/ok',
    });
    const mp = (await s.env.mgmt.get('MachinePool', 'ok', 'default')) as MachinePool;
    expect(mp.metadata.annotations?.['cluster.x-k8s.io/replicas-managed-by']).toBe('external-autoscaler');
    expect(pass.status.conditions ?? []).toEqual([]);
  });

  it('stops with Ready=False S3BucketNotConfigured (severity Error) when the AWSCluster has no bucket', async () => {
    await s.apply(
      samplePool('nobucket', (o) =>
        o.kind === 'AWSCluster'
          ? { ...o, spec: { ...(o as { spec: object }).spec, s3Bucket: undefined } }
          : o,
      ),
    );
    const pass = await s.pass('nobucket');
    const err = await resolveInputs(s.ctx, pass).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotReady);
    expect(pass.condition('Ready')).toEqual({
      type: 'Ready',
      status: 'False',
      severity: 'Error',
      reason: 'S3BucketNotConfigured',
      message:
        "AWSCluster default/nobucket-c has no spec.s3Bucket.name; set it (the pool's bootstrap data is stored there)",
      lastTransitionTime: new Date(NOW).toISOString(),
    });
  });

  it('stops with WaitingForMachinePool / WaitingForCluster naming what is missing', async () => {
    await s.apply(samplePool('nomp', (o) => (o.kind === 'MachinePool' ? undefined : o)));
    const noMP = await s.pass('nomp');
    await expect(resolveInputs(s.ctx, noMP)).rejects.toBeInstanceOf(NotReady);
    expect(noMP.condition('Ready')).toMatchObject({
      status: 'False',
      severity: 'Warning',
      reason: 'WaitingForMachinePool',
      message:
        'no MachinePool in namespace default has spec.template.spec.infrastructureRef {kind: KarpenterMachinePool, name: nomp}',
    });
    await s.apply(samplePool('nocl', (o) => (o.kind === 'Cluster' ? undefined : o)));
    const noCluster = await s.pass('nocl');
    await expect(resolveInputs(s.ctx, noCluster)).rejects.toBeInstanceOf(NotReady);
    expect(noCluster.condition('Ready')).toMatchObject({
      reason: 'WaitingForCluster',
      message: 'Cluster default/nocl-c of MachinePool nocl not found (spec.clusterName)',
    });
  });

  it('skips (undefined, no condition) a pool of another workload cluster', async () => {
    const pass = await s.pass('ok');
    expect(await resolveInputs({ ...s.ctx, clusterName: 'other' }, pass)).toBeUndefined();
    expect(pass.status.conditions ?? []).toEqual([]);
  });
});
