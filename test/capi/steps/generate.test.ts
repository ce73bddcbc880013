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

  it('issue 29 #7: a control plane of Machines gates the pool at its oldest Machine version', async () => {
    await s.apply(
      samplePool('g7m', (o) => (o.kind === 'Cluster' ? withoutTopology(o) : o), { version: 'v1.34.0' }),
    );
    for (const [name, version] of [
      ['g7m-cp-a', 'v1.33.1'],
      ['g7m-cp-b', 'v1.32.4'],
    ] as const)
      await s.env.mgmt.create(controlPlaneMachine(name, 'g7m-c', version));
    const { pass, desired } = await s.prepare('g7m');
    expect(desired.version).toBe('v1.32.4');
    expect(pass.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'False',
      reason: 'VersionNewerThanControlPlane',
    });
    expect(pass.condition('VersionSkewPolicySatisfied')?.message).toContain('control plane (v1.32.4)');
  });

  it('issue 29 #7: a KubeadmControlPlane without spec.topology is read by discovery (status.version)', async () => {
    await s.env.mgmt.create(kcpCRD());
    await s.apply(
      samplePool(
        'g7k',
        (o) =>
          o.kind === 'Cluster'
            ? {
                ...withoutTopology(o),
                spec: {
                  ...(withoutTopology(o) as { spec: Record<string, unknown> }).spec,
                  controlPlaneRef: {
                    apiGroup: 'controlplane.cluster.x-k8s.io',
                    kind: 'KubeadmControlPlane',
                    name: 'g7k-cp',
                  },
                },
              }
            : o,
        { version: 'v1.34.0' },
      ),
    );
    // Raw requests: the test's client must not register the kind (the product has to discover it).
    const base = '/apis/controlplane.cluster.x-k8s.io/v1beta2/namespaces/default/kubeadmcontrolplanes';
    await eventually(
      () =>
        s.env.mgmt
          .request('POST', base, {
            body: {
              apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
              kind: 'KubeadmControlPlane',
              metadata: { name: 'g7k-cp', namespace: 'default' },
              spec: { version: 'v1.34.0' },
            },
          })
          .then(() => true)
          .catch(() => false),
      'KubeadmControlPlane served',
    );
    await s.env.mgmt.request('PATCH', `${base}/g7k-cp/status`, {
      body: { status: { version: 'v1.33.1' } },
      contentType: 'application/merge-patch+json',
    });
    const { pass, desired } = await s.prepare('g7k');
    expect(desired.version).toBe('v1.33.1');
    expect(pass.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'False',
      reason: 'VersionNewerThanControlPlane',
    });
  });

  it('issue 29 #7: an unreadable control plane fails closed (condition, Event, nothing generated)', async () => {
    await s.apply(
      samplePool(
        'g7u',
        (o) =>
          o.kind === 'Cluster'
            ? {
                ...o,
                spec: {
                  ...(withoutTopology(o) as { spec: Record<string, unknown> }).spec,
                  controlPlaneRef: { apiGroup: 'controlplane.example.com', kind: 'NoSuchPlane', name: 'cp' },
                },
              }
            : o,
        { version: 'v1.34.0' },
      ),
    );
    await expect(s.prepare('g7u')).rejects.toThrow(/cannot be read/);
    const pass = await s.pass('g7u');
    const inputs = (await resolveInputs(s.ctx, pass))!;
    await expect(
      generateDesired(s.ctx, pass, inputs, await reconcileBootstrap(s.ctx, pass, inputs)),
    ).rejects.toThrow(/NoSuchPlane default\/cp/);
    expect(pass.condition('VersionSkewPolicySatisfied')).toMatchObject({
      status: 'False',
      reason: 'ControlPlaneVersionUnknown',
    });
    expect(pass.condition('Ready')).toMatchObject({ status: 'False', reason: 'ControlPlaneVersionUnknown' });
    await eventually(
      async () => (await s.events('g7u')).some((e) => e.startsWith('ControlPlaneVersionUnknown: ')),
      'the Warning Event',
    );
  });

  it('issue 29 #7: user amiSelectorTerms do not skip the gate (nothing applied while the pool is ahead)', async () => {
    await s.apply(
      samplePool(
        'g7a',
        (o) =>
          o.kind === 'KarpenterMachinePool'
            ? {
                ...o,
                spec: {
                  ...(o as { spec: Record<string, unknown> }).spec,
                  ec2NodeClass: { amiFamily: 'AL2023', amiSelectorTerms: [{ alias: 'al2023@latest' }] },
                },
              }
            : o,
        { version: 'v1.34.0', controlPlaneVersion: 'v1.33.1' },
      ),
    );
    await expect(s.prepare('g7a')).rejects.toThrow(
      /newer than the control plane \(v1\.33\.1\) and spec\.ec2NodeClass\.amiSelectorTerms choose the AMI/,
    );
  });
});

function withoutTopology(o: KubeObject): KubeObject {
  const { topology: _t, ...spec } = (o as { spec: Record<string, unknown> }).spec;
  return { ...o, spec } as KubeObject;
}

function controlPlaneMachine(name: string, cluster: string, version: string): KubeObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name,
      namespace: 'default',
      labels: { 'cluster.x-k8s.io/cluster-name': cluster, 'cluster.x-k8s.io/control-plane': '' },
    },
    spec: {
      clusterName: cluster,
      version,
      bootstrap: { dataSecretName: `${name}-bootstrap` },
      infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'AWSMachine', name },
    },
  } as KubeObject;
}

/** A minimal KubeadmControlPlane CRD (the vendored CRDs have no control-plane provider). */
function kcpCRD(): KubeObject {
  const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'kubeadmcontrolplanes.controlplane.cluster.x-k8s.io' },
    spec: {
      group: 'controlplane.cluster.x-k8s.io',
      names: { plural: 'kubeadmcontrolplanes', kind: 'KubeadmControlPlane', singular: 'kubeadmcontrolplane' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1beta2',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', properties: { spec: open, status: open } } },
        },
      ],
    },
  } as KubeObject;
}
