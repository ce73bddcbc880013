import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { EC2NodeClass } from '../../../apis/karpenter.ts';
import { formatResource, parseResource } from '../../../apis/quantity.ts';
import {
  compatibleWithNodeClass,
  computeAllocatable,
  eniLimitedPods,
  getInstanceTypeSpec,
  getInstanceTypes,
  InvalidNodeClassValueError,
  kubeReservedCPU,
  memoryCapacityBytes,
  resolveAMIFamily,
} from './index.ts';

const Mi = 2 ** 20;
const Gi = 2 ** 30;

function spec(name: string) {
  const s = getInstanceTypeSpec(name);
  if (!s) throw new Error(`no spec for ${name}`);
  return s;
}

function nodeClass(spec: Partial<EC2NodeClass['spec']> = {}): EC2NodeClass {
  return {
    apiVersion: 'karpenter.k8s.aws/v1',
    kind: 'EC2NodeClass',
    metadata: { name: 'default' },
    spec: { amiSelectorTerms: [{ alias: 'al2023@latest' }], role: 'KarpenterNodeRole-cluster-1', ...spec },
  };
}

/** Allocatable of one type for a node class, formatted as kubectl prints it. */
function alloc(name: string, nc?: EC2NodeClass) {
  const it = getInstanceTypes({ region: 'us-east-1', ...(nc ? { nodeClass: nc } : {}) }).instanceTypes.find(
    (t) => t.name === name,
  );
  if (!it) throw new Error(`${name} not offered`);
  const a = it.allocatable;
  return {
    cpu: formatResource('cpu', a.cpu!),
    memory: formatResource('memory', a.memory!),
    pods: a.pods,
    'ephemeral-storage': formatResource('ephemeral-storage', a['ephemeral-storage']!),
  };
}

describe('computeAllocatable (AL2023 defaults) — case catalog-allocatable-al2023', () => {
  it.each([
    // memory: MiB (−64 on arm64) − ceil(7.5%) − (11 × ENI pods + 255) − 100; cpu: vCPU − kube-reserved
    ['m5.large', '1930m', '6903Mi', 29], // 8192 − 615 − 574 − 100; 3 × 9 + 2
    ['a1.medium', '940m', '1392Mi', 8], // 2048 − 64 = 1984 − 149 − 343 − 100; 2 × 3 + 2
    ['c6g.large', '1930m', '3055Mi', 29], // 4096 − 64 = 4032 − 303 − 574 − 100
    ['m7i.48xlarge', '191450m', '718987Mi', 737], // 786432 − 58983 − 8362 − 100; 192000 − 550
  ])('%s → cpu %s, memory %s, pods %i', (name, cpu, memory, pods) => {
    expect(alloc(name)).toEqual({ cpu, memory, pods, 'ephemeral-storage': '17Gi' });
  });

  it('builds the pieces the way upstream does', () => {
    expect(memoryCapacityBytes(spec('c6g.large'))).toBe((4032 - 303) * Mi);
    expect(memoryCapacityBytes(spec('m5.large'))).toBe((8192 - 615) * Mi);
    expect(eniLimitedPods(spec('m7i.48xlarge'))).toBe(737);
    expect(eniLimitedPods(spec('m5.large'), 1)).toBe(2 * 9 + 2);
    expect(kubeReservedCPU(1)).toBe(60);
    expect(kubeReservedCPU(2)).toBe(70);
    expect(kubeReservedCPU(4)).toBe(80);
    expect(kubeReservedCPU(5)).toBe(82); // 2.5m for the 5th core truncates to 2
    expect(kubeReservedCPU(192)).toBe(550);
    const r = computeAllocatable(spec('m5.large'));
    expect(r.overhead.kubeReserved).toEqual({ cpu: 70, memory: 574 * Mi, 'ephemeral-storage': Gi });
    expect(r.overhead.evictionThreshold).toEqual({ memory: 100 * Mi, 'ephemeral-storage': 2 * Gi });
    expect(r.capacity).toEqual({
      cpu: 2000,
      memory: 7577 * Mi,
      'ephemeral-storage': 20 * Gi,
      pods: 29,
      'vpc.amazonaws.com/pod-eni': 9,
    });
  });

  it('adds extended resources for GPUs, Neuron and EFA', () => {
    const p4d = computeAllocatable(spec('p4d.24xlarge')).allocatable;
    expect(p4d['nvidia.com/gpu']).toBe(8);
    expect(p4d['vpc.amazonaws.com/efa']).toBe(4);
    const inf2 = computeAllocatable(spec('inf2.xlarge')).allocatable;
    expect(inf2['aws.amazon.com/neuron']).toBe(1);
    expect(inf2['aws.amazon.com/neuroncore']).toBe(2);
    expect(computeAllocatable(spec('g4ad.xlarge')).allocatable['amd.com/gpu']).toBe(1);
  });
});

describe('EC2NodeClass overrides', () => {
  it('kubelet stanza without maxPods keeps ENI-limited pods (case kubelet-stanza-without-maxpods-keeps-eni-pods)', () => {
    const nc = nodeClass({ kubelet: { imageGCLowThresholdPercent: 65 } });
    // 4 ENIs × (15 − 1) + 2 = 58 pods; 16384 − 1229 − (11 × 58 + 255 = 893) − 100 = 14162Mi
    expect(alloc('m6i.xlarge', nc)).toEqual({
      cpu: '3920m',
      memory: '14162Mi',
      pods: 58,
      'ephemeral-storage': '17Gi',
    });
  });

  it('kubelet.maxPods sets pods; AL2023 kube-reserved memory still uses the ENI-limited count', () => {
    const nc = nodeClass({ kubelet: { maxPods: 110 } });
    expect(alloc('m5.large', nc)).toEqual({
      cpu: '1930m',
      memory: '6903Mi',
      pods: 110,
      'ephemeral-storage': '17Gi',
    });
  });

  it('Bottlerocket kube-reserved memory follows maxPods (UsesENILimitedMemoryOverhead=false)', () => {
    const nc = nodeClass({ amiSelectorTerms: [{ alias: 'bottlerocket@latest' }], kubelet: { maxPods: 110 } });
    // 8192 − 615 − (11 × 110 + 255 = 1465) − 100 = 6012Mi
    expect(alloc('m5.large', nc)).toMatchObject({ memory: '6012Mi', pods: 110 });
  });

  it('kubelet.podsPerCore caps pods at podsPerCore × vCPU (min with maxPods); ignored on Bottlerocket', () => {
    expect(alloc('m5.large', nodeClass({ kubelet: { podsPerCore: 4 } })).pods).toBe(8); // min(4 × 2, 29)
    expect(alloc('m5.xlarge', nodeClass({ kubelet: { podsPerCore: 20, maxPods: 30 } })).pods).toBe(30); // min(80, 30)
    expect(alloc('m5.xlarge', nodeClass({ kubelet: { podsPerCore: 5, maxPods: 30 } })).pods).toBe(20); // min(20, 30)
    const br = nodeClass({
      amiSelectorTerms: [{ alias: 'bottlerocket@latest' }],
      kubelet: { podsPerCore: 4 },
    });
    expect(alloc('m5.large', br).pods).toBe(29);
  });

  it('kubelet.kubeReserved replaces the computed values per resource; systemReserved adds', () => {
    const nc = nodeClass({ kubelet: { kubeReserved: { cpu: '200m', memory: '1Gi' } } });
    // cpu 2000 − 200; memory 7577 − 1024 − 100; ephemeral-storage keeps the default 1Gi
    expect(alloc('m5.large', nc)).toEqual({
      cpu: '1800m',
      memory: '6453Mi',
      pods: 29,
      'ephemeral-storage': '17Gi',
    });
    const sys = nodeClass({
      kubelet: { systemReserved: { cpu: '100m', memory: '200Mi', 'ephemeral-storage': '1Gi' } },
    });
    expect(alloc('m5.large', sys)).toEqual({
      cpu: '1830m',
      memory: '6703Mi',
      pods: 29,
      'ephemeral-storage': '16Gi',
    });
  });

  it('evictionHard memory.available / nodefs.available replace the defaults, percentages of capacity', () => {
    const nc = nodeClass({
      kubelet: { evictionHard: { 'memory.available': '5%', 'nodefs.available': '15%' } },
    });
    const it = getInstanceTypes({ region: 'us-east-1', nodeClass: nc }).instanceTypes.find(
      (t) => t.name === 'm5.large',
    )!;
    const memCap = 7577 * Mi; // 7945060352 bytes
    expect(it.overhead.evictionThreshold.memory).toBe(Math.ceil((memCap / 100) * 5)); // 397253018
    expect(it.overhead.evictionThreshold.memory).toBe(397253018);
    expect(it.allocatable.memory).toBe(memCap - 574 * Mi - 397253018);
    expect(it.overhead.evictionThreshold['ephemeral-storage']).toBe(Math.ceil(((20 * Gi) / 100) * 15));
    const abs = nodeClass({
      kubelet: { evictionHard: { 'memory.available': '500Mi' }, evictionSoft: { 'memory.available': '1Gi' } },
    });
    // evictionSoft does not change allocatable (upstream only uses evictionHard)
    expect(alloc('m5.large', abs).memory).toBe(`${7577 - 574 - 500}Mi`);
    const off = nodeClass({ kubelet: { evictionHard: { 'memory.available': '100%' } } });
    expect(alloc('m5.large', off).memory).toBe(`${7577 - 574}Mi`); // 100% disables the threshold
  });

  it('blockDeviceMappings root volume of 100Gi gives 89Gi ephemeral-storage (100 − 1 kube-reserved − 10%)', () => {
    const nc = nodeClass({
      blockDeviceMappings: [
        { deviceName: '/dev/xvda', rootVolume: true, ebs: { volumeSize: '100Gi', volumeType: 'gp3' } },
      ],
    });
    expect(alloc('m5.large', nc)['ephemeral-storage']).toBe('89Gi');
    // the AL2023 ephemeral device /dev/xvda counts even without rootVolume
    const dev = nodeClass({
      blockDeviceMappings: [{ deviceName: '/dev/xvda', ebs: { volumeSize: '50Gi' } }],
    });
    expect(alloc('m5.large', dev)['ephemeral-storage']).toBe(`${50 - 1 - 5}Gi`);
    // another device does not
    const other = nodeClass({
      blockDeviceMappings: [{ deviceName: '/dev/xvdb', ebs: { volumeSize: '500Gi' } }],
    });
    expect(alloc('m5.large', other)['ephemeral-storage']).toBe('17Gi');
  });

  it('instanceStorePolicy RAID0 uses the local NVMe size (decimal GB)', () => {
    const r = computeAllocatable(spec('m5d.large'), { instanceStorePolicy: 'RAID0' });
    expect(r.capacity['ephemeral-storage']).toBe(75e9);
    expect(r.allocatable['ephemeral-storage']).toBe(75e9 - Gi - 7.5e9);
  });

  it('Windows: 110 pods, os=windows, windows-build label, 50Gi root, arm64 left out', () => {
    const nc = nodeClass({ amiSelectorTerms: [{ alias: 'windows2022@latest' }] });
    const res = getInstanceTypes({ region: 'us-east-1', nodeClass: nc });
    const m5 = res.instanceTypes.find((t) => t.name === 'm5.large')!;
    expect(m5.allocatable.pods).toBe(110);
    expect(m5.labels['kubernetes.io/os']).toBe('windows');
    expect(m5.labels['node.kubernetes.io/windows-build']).toBe('10.0.20348');
    expect(m5.capacity['ephemeral-storage']).toBe(50 * Gi);
    expect(m5.capacity['vpc.amazonaws.com/PrivateIPv4Address']).toBe(9);
    // memory reserve follows the 110 pods: 7577 − (11 × 110 + 255) − 100
    expect(m5.allocatable.memory).toBe((7577 - 1465 - 100) * Mi);
    expect(res.instanceTypes.some((t) => t.labels['kubernetes.io/arch'] === 'arm64')).toBe(false);
    expect(res.notices.some((n) => n.includes('arm64 instance types are left out'))).toBe(true);
  });

  it('rejects an invalid quantity with the field name', () => {
    const nc = nodeClass({ kubelet: { kubeReserved: { memory: 'lots' } } });
    expect(() => getInstanceTypes({ region: 'us-east-1', nodeClass: nc })).toThrow(
      InvalidNodeClassValueError,
    );
    expect(() => getInstanceTypes({ region: 'us-east-1', nodeClass: nc })).toThrow(
      /spec\.kubelet\.kubeReserved\.memory/,
    );
  });
});

describe('resolveAMIFamily', () => {
  it('follows amiFamily, then the alias, else Custom', () => {
    expect(resolveAMIFamily()).toBe('AL2023');
    expect(resolveAMIFamily(nodeClass())).toBe('AL2023');
    expect(resolveAMIFamily(nodeClass({ amiSelectorTerms: [{ alias: 'bottlerocket@v1.20.0' }] }))).toBe(
      'Bottlerocket',
    );
    expect(resolveAMIFamily(nodeClass({ amiSelectorTerms: [{ alias: 'al2@latest' }] }))).toBe('AL2');
    expect(
      resolveAMIFamily(nodeClass({ amiFamily: 'Bottlerocket', amiSelectorTerms: [{ id: 'ami-1' }] })),
    ).toBe('Bottlerocket');
    expect(resolveAMIFamily(nodeClass({ amiSelectorTerms: [{ id: 'ami-1' }] }))).toBe('Custom');
  });
});

/** Runs every `allocatable` expectation of the scenario cases (`test/cases`, vendored from `../shared/cases`). */
const casesDir = join(import.meta.dirname, '..', '..', '..', '..', 'test', 'cases');
describe('shared cases with allocatable expectations', () => {
  const cases = readdirSync(casesDir)
    .filter((f) => f.endsWith('.yaml') && f !== 'README.md')
    .map((f) => parse(readFileSync(join(casesDir, f), 'utf8')) as Record<string, unknown>)
    .filter((c) => (c.expect as Record<string, unknown> | undefined)?.allocatable !== undefined);
  it('finds the catalog case and the kubelet case', () => {
    const ids = cases.map((c) => c.id);
    expect(ids).toContain('catalog-allocatable-al2023');
    expect(ids).toContain('kubelet-stanza-without-maxpods-keeps-eni-pods');
  });
  it.each(cases.map((c) => [c.id as string, c] as const))('%s', (_id, c) => {
    const docs = parseAllDocuments(c.input as string).map((d) => d.toJS() as { kind?: string });
    const nc = docs.find((d) => d.kind === 'EC2NodeClass') as EC2NodeClass | undefined;
    const exp = (c.expect as { allocatable: unknown }).allocatable;
    const list = (Array.isArray(exp) ? exp : [exp]) as Array<{
      type: string;
      cpu: string;
      memory: string;
      pods: number;
    }>;
    const res = getInstanceTypes({
      region: (c.region as string) ?? 'us-east-1',
      ...(nc ? { nodeClass: nc } : {}),
    });
    for (const e of list) {
      const it = res.instanceTypes.find((t) => t.name === e.type)!;
      expect(it, e.type).toBeDefined();
      expect(it.allocatable.cpu, `${e.type} cpu`).toBe(parseResource('cpu', e.cpu));
      expect(it.allocatable.memory, `${e.type} memory`).toBe(parseResource('memory', e.memory));
      expect(it.allocatable.pods, `${e.type} pods`).toBe(Number(e.pods));
    }
  });
});

describe('EC2NodeClass spec.networkInterfaces (upstream v1.14.1 `efas`, `ENILimitedPods`, `networkInterfaceCheck`)', () => {
  const primary = { networkCardIndex: 0, deviceIndex: 0, interfaceType: 'interface' as const };
  const efaOnly = (networkCardIndex: number, deviceIndex = 0) => ({
    networkCardIndex,
    deviceIndex,
    interfaceType: 'efa-only' as const,
  });

  it('vpc.amazonaws.com/efa is the count of efa-only interfaces; one on card 0 takes an ENI from max pods', () => {
    // p4d.24xlarge: 4 network cards, 15 ENIs on card 0, 50 IPv4 per ENI, MaximumEfaInterfaces 4
    const base = computeAllocatable(spec('p4d.24xlarge'));
    expect(base.capacity['vpc.amazonaws.com/efa']).toBe(4);
    expect(base.capacity.pods).toBe(15 * 49 + 2);
    const cards = computeAllocatable(spec('p4d.24xlarge'), {
      networkInterfaces: [primary, efaOnly(1), efaOnly(2)],
    });
    expect(cards.capacity['vpc.amazonaws.com/efa']).toBe(2);
    expect(cards.capacity.pods).toBe(737);
    const card0 = computeAllocatable(spec('p4d.24xlarge'), { networkInterfaces: [primary, efaOnly(0, 1)] });
    expect(card0.capacity['vpc.amazonaws.com/efa']).toBe(1);
    expect(card0.capacity.pods).toBe(14 * 49 + 2);
    // a class with only the primary interface: no EFA capacity even on an EFA type
    const none = computeAllocatable(spec('p4d.24xlarge'), { networkInterfaces: [primary] });
    expect(none.capacity['vpc.amazonaws.com/efa']).toBeUndefined();
  });

  it('only types whose cards, device indices and EFA count fit the layout are compatible', () => {
    const nc = (networkInterfaces: Array<ReturnType<typeof efaOnly> | typeof primary>) =>
      nodeClass({ networkInterfaces });
    const layout = nc([primary, efaOnly(1), efaOnly(2), efaOnly(3)]);
    expect(compatibleWithNodeClass(spec('p4d.24xlarge'), layout)).toBe(true); // 4 cards, 4 EFA
    expect(compatibleWithNodeClass(spec('c6in.32xlarge'), layout)).toBe(false); // 2 cards
    expect(compatibleWithNodeClass(spec('m5.large'), nc([primary]))).toBe(true);
    expect(compatibleWithNodeClass(spec('m5.large'), nc([primary, efaOnly(0, 1)]))).toBe(false); // no EFA
    expect(compatibleWithNodeClass(spec('c5n.18xlarge'), nc([primary, efaOnly(0, 1)]))).toBe(true);
    expect(compatibleWithNodeClass(spec('m5.large'), nc([primary, { ...primary, deviceIndex: 3 }]))).toBe(
      false,
    ); // 3 ENIs
    const its = getInstanceTypes({ region: 'us-east-1', nodeClass: layout }).instanceTypes;
    expect(its.every((it) => (it.capacity['vpc.amazonaws.com/efa'] ?? 0) === 3)).toBe(true);
    expect(its.map((it) => it.name)).toContain('p4d.24xlarge');
    expect(its.map((it) => it.name)).not.toContain('m5.large');
  });
});
