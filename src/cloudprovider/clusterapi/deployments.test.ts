import { describe, expect, it } from 'vitest';
import type { AWSMachineTemplate, CAPICluster, MachineDeployment, MachineSet } from '../../apis/capi.ts';
import type { Node } from '../../apis/core.ts';
import { sampleClusterAPIObjects } from '../../sim/capi/clusterapi.ts';
import {
  DefaultUnknownPriceUSDPerHour,
  type DeploymentInputs,
  instanceTypesOf,
  isPropagatedLabel,
  parseTaintList,
  type ResolvedDeployment,
  resolveDeployment,
  taintsCovered,
  ZoneUnspecified,
} from './deployments.ts';

const GiB = 1024 ** 3;

function objects(d: Parameters<typeof sampleClusterAPIObjects>[0]) {
  const objs = sampleClusterAPIObjects(d);
  const md = objs.find((o) => o.kind === 'MachineDeployment') as MachineDeployment;
  const template = objs.find((o) => o.kind === 'AWSMachineTemplate') as AWSMachineTemplate | undefined;
  const cluster = objs.find((o) => o.kind === 'Cluster') as CAPICluster;
  return { md, template, cluster };
}

function ok(inp: DeploymentInputs): ResolvedDeployment {
  const r = resolveDeployment(inp);
  if (!r.ok) throw new Error(`${r.reason}: ${r.message}`);
  return r.deployment;
}

describe('resolveDeployment', () => {
  it('CAPA deployment: capacity from the AWSMachineTemplate status, catalog price, failure domain as zone', () => {
    const { md, template } = objects({
      deployments: [{ name: 'md', instanceType: 'm5.xlarge', failureDomain: 'us-east-1b' }],
    });
    const d = ok({ deployment: md, template });
    expect(d.instanceTypeName).toBe('m5.xlarge');
    expect(d.capacity).toEqual({ cpu: 4000, memory: 16 * GiB, pods: 110 });
    expect(d.allocatable).toEqual(d.capacity);
    expect(d.capacitySource).toBe('template');
    expect(d.priceUSDPerHour).toBe(0.192);
    expect(d.priceSource).toBe('aws-catalog');
    expect(d.zone).toBe('us-east-1b');
    expect(d.capacityType).toBe('on-demand');
    expect(d.labels).toMatchObject({
      'node.kubernetes.io/instance-type': 'm5.xlarge',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'karpenter.cluster.x-k8s.io/instance-cpu': '4',
      'karpenter.cluster.x-k8s.io/instance-memory': '16384',
    });
    // Template labels CAPI does not propagate to Nodes stay off the instance type.
    expect(d.labels['capenter.io/md']).toBeUndefined();
  });

  it('spot CAPA deployment is priced with the spot estimate, below on-demand', () => {
    const { md, template } = objects({ deployments: [{ name: 'md', instanceType: 'm5.large', spot: true }] });
    const d = ok({ deployment: md, template });
    expect(d.capacityType).toBe('spot');
    expect(d.priceUSDPerHour).toBeGreaterThan(0);
    expect(d.priceUSDPerHour).toBeLessThan(0.096);
    expect(d.zone).toBe(ZoneUnspecified);
  });

  it('scale-from-zero annotations win: cpu, memory, disk, maxPods, GPUs, labels, taints; the price annotation wins', () => {
    const { md, template } = objects({
      deployments: [
        {
          name: 'gpu',
          instanceType: 'g5.xlarge',
          price: 1.25,
          capacityAnnotations: {
            cpu: '8',
            memory: '32Gi',
            'ephemeral-disk': '100Gi',
            maxPods: '58',
            'gpu-count': '1',
            'gpu-type': 'nvidia.com/gpu',
            labels: 'team=ml,node-role.kubernetes.io/gpu=',
            taints: 'nvidia.com/gpu=present:NoSchedule',
          },
          taints: [{ key: 'dedicated', value: 'ml', effect: 'NoExecute' }],
          labels: {},
        },
      ],
    });
    md.spec.template.metadata = { labels: { 'node-role.kubernetes.io/worker': '', 'app.example/x': 'y' } };
    const d = ok({ deployment: md, template });
    expect(d.capacitySource).toBe('annotations');
    expect(d.capacity).toEqual({
      cpu: 8000,
      memory: 32 * GiB,
      'ephemeral-storage': 100 * GiB,
      pods: 58,
      'nvidia.com/gpu': 1,
    });
    expect(d.priceUSDPerHour).toBe(1.25);
    expect(d.priceSource).toBe('annotation');
    expect(d.labels).toMatchObject({
      team: 'ml',
      'node-role.kubernetes.io/gpu': '',
      'node-role.kubernetes.io/worker': '',
      'karpenter.cluster.x-k8s.io/instance-gpu-count': '1',
      'karpenter.cluster.x-k8s.io/instance-gpu-type': 'nvidia.com.gpu',
    });
    expect(d.labels['app.example/x']).toBeUndefined();
    expect(d.taints).toEqual([
      { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' },
      { key: 'dedicated', value: 'ml', effect: 'NoExecute' },
    ]);
  });

  it('a Node of the deployment is the last capacity source (with its overhead); an unknown price ranks last', () => {
    const { md } = objects({ deployments: [{ name: 'docker-md' }] });
    const r0 = resolveDeployment({ deployment: md });
    expect(r0).toMatchObject({ ok: false, reason: 'CapacityUnknown' });
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1', labels: { 'kubernetes.io/arch': 'arm64' } },
      status: {
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        allocatable: { cpu: '3800m', memory: '7Gi', pods: '110' },
      },
    } as Node;
    const d = ok({ deployment: md, node });
    expect(d.capacitySource).toBe('node');
    expect(d.overhead).toEqual({ cpu: 200, memory: GiB });
    expect(d.allocatable.cpu).toBe(3800);
    expect(d.labels['kubernetes.io/arch']).toBe('arm64');
    expect(d.instanceTypeName).toBe('docker-md');
    expect(d.priceUSDPerHour).toBe(DefaultUnknownPriceUSDPerHour);
    expect(d.priceSource).toBe('default');
    expect(d.notices[0]).toContain('price unknown');
  });

  it('unusable: paused, topology-managed replicas, preflight-blocked MachineSet, bad annotations', () => {
    const base = objects({ deployments: [{ name: 'md', instanceType: 'm5.large' }] });
    const paused = structuredClone(base.md);
    paused.spec.paused = true;
    expect(resolveDeployment({ deployment: paused, template: base.template })).toMatchObject({
      ok: false,
      reason: 'Paused',
    });
    const topo = structuredClone(base.md);
    topo.metadata.labels = {
      ...topo.metadata.labels,
      'topology.cluster.x-k8s.io/owned': '',
      'topology.cluster.x-k8s.io/deployment-name': 'md-0',
    };
    const cluster = structuredClone(base.cluster) as CAPICluster;
    cluster.spec = {
      ...cluster.spec,
      topology: { workers: { machineDeployments: [{ name: 'md-0', replicas: 3 }] } } as never,
    };
    const r = resolveDeployment({ deployment: topo, template: base.template, cluster });
    expect(r).toMatchObject({ ok: false, reason: 'ReplicasManagedByTopology' });
    // Without replicas in the topology the autoscaler owns them: usable.
    delete (cluster.spec!.topology as { workers: { machineDeployments: Array<{ replicas?: number }> } })
      .workers.machineDeployments[0]!.replicas;
    expect(resolveDeployment({ deployment: topo, template: base.template, cluster }).ok).toBe(true);
    const ms = {
      metadata: { name: 'md-abc' },
      spec: {},
      status: {
        deprecated: {
          v1beta1: {
            conditions: [
              {
                type: 'MachinesCreated',
                status: 'False',
                reason: 'PreflightCheckFailed',
                message: 'ControlPlaneIsStable',
                lastTransitionTime: '',
              },
            ],
          },
        },
      },
    } as unknown as MachineSet;
    expect(
      resolveDeployment({ deployment: base.md, template: base.template, machineSets: [ms] }),
    ).toMatchObject({
      ok: false,
      reason: 'PreflightChecksBlocked',
    });
    const bad = structuredClone(base.md);
    bad.metadata.annotations = { ...bad.metadata.annotations, 'capenter.io/price-per-hour': 'cheap' };
    const rb = resolveDeployment({ deployment: bad, template: base.template });
    expect(rb).toMatchObject({ ok: false, reason: 'InvalidAnnotation' });
    expect(rb.ok ? '' : rb.message).toContain('capenter.io/price-per-hour "cheap"');
    const minmax = structuredClone(base.md);
    minmax.metadata.annotations = {
      'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size': '3',
      'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': '2',
    };
    expect(resolveDeployment({ deployment: minmax, template: base.template })).toMatchObject({
      ok: false,
      reason: 'InvalidAnnotation',
    });
  });
});

describe('instanceTypesOf', () => {
  it('one instance type per shape, one offering per deployment; a different shape gets the deployment name', () => {
    const objs = sampleClusterAPIObjects({
      deployments: [
        { name: 'a', instanceType: 'm5.large', failureDomain: 'z1' },
        { name: 'b', instanceType: 'm5.large', failureDomain: 'z2' },
        { name: 'c', instanceType: 'm5.large', failureDomain: 'z2', price: 0.01 },
        { name: 'odd', instanceType: 'm5.large', failureDomain: 'z3', capacity: { cpu: '3', memory: '8Gi' } },
      ],
    });
    const mds = objs.filter((o) => o.kind === 'MachineDeployment') as MachineDeployment[];
    const tpl = (md: MachineDeployment) =>
      objs.find(
        (o) =>
          o.kind === 'AWSMachineTemplate' &&
          o.metadata?.name === md.spec.template.spec.infrastructureRef.name,
      ) as AWSMachineTemplate;
    const ds = mds.map((md) => ok({ deployment: md, template: tpl(md) }));
    const full = new Set(['c']);
    const { instanceTypes, offerings } = instanceTypesOf(ds, (d) => !full.has(d.name));
    expect(instanceTypes.map((t) => t.name)).toEqual(['m5.large', 'odd']);
    const m5 = instanceTypes[0]!;
    expect(m5.offerings.map((o) => [o.zone, o.priceUSDPerHour, o.available]).sort()).toEqual([
      ['z1', 0.096, true],
      // z2: c (0.01) is full, so b prices and serves it.
      ['z2', 0.096, true],
    ]);
    expect(offerings.find((o) => o.zone === 'z2')!.deployments.map((d) => d.name)).toEqual(['c', 'b']);
    expect(instanceTypes[1]!.labels['node.kubernetes.io/instance-type']).toBe('odd');
    expect(instanceTypes[1]!.capacity.cpu).toBe(3000);
  });

  it('taints: a deployment is offered only to NodePools whose NodeClaims carry its taints', () => {
    expect(parseTaintList('a=b:NoSchedule,c:NoExecute')).toEqual([
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      { key: 'c', effect: 'NoExecute' },
    ]);
    expect(() => parseTaintList('a=b')).toThrow(/key\[=value\]:NoSchedule/);
    const t = [{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' as const }];
    expect(taintsCovered(t, [])).toBe(false);
    expect(taintsCovered(t, [{ key: 'dedicated', value: 'ml', effect: 'NoSchedule' }])).toBe(true);
    expect(taintsCovered(t, [{ key: 'dedicated', value: 'other', effect: 'NoSchedule' }])).toBe(false);
    expect(isPropagatedLabel('node-role.kubernetes.io/worker')).toBe(true);
    expect(isPropagatedLabel('foo.node.cluster.x-k8s.io/x')).toBe(true);
    expect(isPropagatedLabel('node.kubernetes.io/instance-type')).toBe(false);
  });
});
