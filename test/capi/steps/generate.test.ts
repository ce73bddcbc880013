/** Step `generate` of the KarpenterMachinePool reconcile: the desired objects, the version skew gate. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneVersion } from '../../../src/controllers/capi/steps/generate.ts';
import { type StepEnv, samplePool, startStepEnv } from './harness.ts';

let s: StepEnv;
beforeAll(async () => {
  s = await startStepEnv();
});
afterAll(async () => s?.stop());

describe('generate step', () => {
  it('builds NodePool + EC2NodeClass named after the KMP, at the MachinePool version', async () => {
    await s.apply(samplePool('g1'));
    const { pass, desired } = await s.prepare('g1');
    expect(desired.clusterName).toBe('g1-c');
    expect(desired.nodePool.metadata.name).toBe('g1');
    expect(desired.ec2NodeClass.metadata.name).toBe('g1');
    expect(desired.nodePool.spec.template.spec.nodeClassRef).toEqual({
      group: 'karpenter.k8s.aws',
      kind: 'EC2NodeClass',
      name: 'g1',
    });
    expect(desired.version).toBe('v1.33.1');
    expect(desired.skew).toBeUndefined();
    expect(pass.condition('VersionSkewPolicySatisfied')?.status).toBe('True');
  });

  it('holds a MachinePool version newer than the control plane: VersionSkewPolicySatisfied=False', async () => {
    await s.apply(samplePool('g2', (o) => o, { version: 'v1.34.0', controlPlaneVersion: 'v1.33.1' }));
    const { pass, desired } = await s.prepare('g2');
    expect(desired.version).toBe('v1.33.1');
    expect(pass.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'False',
      reason: 'VersionNewerThanControlPlane',
      message:
        'MachinePool version v1.34.0 is newer than the control plane (v1.33.1); nodes stay at v1.33.1 until the control plane is upgraded',
    });
  });

  it('controlPlaneVersion: topology version, else unknown without a readable control plane', async () => {
    const cluster = { metadata: { name: 'c', namespace: 'default' } };
    expect(await controlPlaneVersion(s.ctx, { ...cluster, spec: { topology: { version: 'v1.32.0' } } })).toBe(
      'v1.32.0',
    );
    expect(await controlPlaneVersion(s.ctx, { ...cluster, spec: {} })).toBeUndefined();
    expect(
      await controlPlaneVersion(s.ctx, {
        ...cluster,
        spec: {
          controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'Secret', name: 'none' },
        },
      }),
    ).toBeUndefined();
  });
});
