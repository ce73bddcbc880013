/** Step `generate` of the KarpenterMachinePool reconcile: the desired objects, the version skew gate. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/apis/core.ts';
import { reconcileBootstrap } from '../../../src/controllers/capi/steps/bootstrap.ts';
import { controlPlaneVersion, generateDesired } from '../../../src/controllers/capi/steps/generate.ts';
import { resolveInputs } from '../../../src/controllers/capi/steps/resolve.ts';
import { eventually } from '../../../src/testing/eventually.ts';
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

  it('controlPlaneVersion: topology version, else unknown without a control plane, else the read error', async () => {
    const cluster = { metadata: { name: 'c', namespace: 'default' } };
    expect(
      await controlPlaneVersion(s.ctx, { ...cluster, spec: { topology: { version: 'v1.32.0' } } }),
    ).toEqual({
      version: 'v1.32.0',
    });
    expect(await controlPlaneVersion(s.ctx, { ...cluster, spec: {} })).toEqual({ version: undefined });
    const missing = await controlPlaneVersion(s.ctx, {
      ...cluster,
      spec: { controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'Secret', name: 'none' } },
    });
    expect(missing.version).toBeUndefined();
    expect(missing.error).toMatch(
      /^cannot read Secret default\/none \(Cluster default\/c spec.controlPlaneRef\): /,
    );
  });

  // FINDINGS.md mismatch 4 (real CAPI v1.14.2): a KubeadmControlPlane cluster without spec.topology. The kind is
  // not in capenter's registry; the version must still be read (through discovery), and the gate must hold.
  it('reads a KubeadmControlPlane by apiGroup through discovery: the skew gate holds v1.34.0 at v1.33.1', async () => {
    await s.env.mgmt.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'kubeadmcontrolplanes.controlplane.cluster.x-k8s.io' },
      spec: {
        group: 'controlplane.cluster.x-k8s.io',
        scope: 'Namespaced',
        names: {
          plural: 'kubeadmcontrolplanes',
          singular: 'kubeadmcontrolplane',
          kind: 'KubeadmControlPlane',
          listKind: 'KubeadmControlPlaneList',
        },
        versions: [
          {
            name: 'v1beta2',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    } as KubeObject);
    const kcpRef = { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: 'g3-cp' };
    const noTopology = (o: KubeObject): KubeObject =>
      o.kind === 'Cluster'
        ? ({
            ...o,
            spec: { ...(o.spec as object), topology: undefined, controlPlaneRef: kcpRef },
          } as KubeObject)
        : o;
    await eventually(async () => {
      try {
        await s.env.mgmt.create({
          apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
          kind: 'KubeadmControlPlane',
          metadata: { name: 'g3-cp', namespace: 'default' },
          spec: { version: 'v1.33.1' },
          status: { version: 'v1.33.1' },
        } as KubeObject);
        return true;
      } catch {
        return false;
      }
    }, 'the KubeadmControlPlane CRD served');
    await s.apply(samplePool('g3', noTopology, { version: 'v1.34.0' }));
    const { pass, desired } = await s.prepare('g3');
    expect(desired.version).toBe('v1.33.1');
    expect(pass.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'False',
      reason: 'VersionNewerThanControlPlane',
    });

    // the control plane unreadable (deleted): Unknown, and the pool stays at the version it rolled out
    await s.env.mgmt.delete('KubeadmControlPlane', 'g3-cp', 'default');
    const again = await s.pass('g3');
    again.status.version = 'v1.33.1';
    const inputs = await resolveInputs(s.ctx, again);
    if (!inputs) throw new Error('not resolved');
    const d2 = await generateDesired(s.ctx, again, inputs, await reconcileBootstrap(s.ctx, again, inputs));
    expect(d2.version).toBe('v1.33.1');
    expect(again.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'Unknown',
      reason: 'ControlPlaneVersionUnknown',
    });
    expect(again.condition('VersionSkewPolicySatisfied')?.message).toMatch(
      /^cannot read KubeadmControlPlane default\/g3-cp \(Cluster default\/g3-c spec.controlPlaneRef\): .*; the pool stays at v1.33.1 until the control plane can be read$/,
    );
  });
});
