import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../apis/core.ts';
import type { EC2NodeClass } from '../apis/karpenter.ts';
import type { InstanceType } from '../cloudprovider/types.ts';
import {
  buildSchedulingInput,
  type CatalogFunction,
  DEFAULT_NODEPOOL,
  expandWorkload,
  templateHash,
} from './input.ts';

const fakeType = (name: string): InstanceType => ({
  name,
  labels: { 'node.kubernetes.io/instance-type': name },
  capacity: { cpu: 2000, memory: 8 * 2 ** 30, pods: 29 },
  overhead: { kubeReserved: {}, systemReserved: {}, evictionThreshold: {} },
  allocatable: { cpu: 1930, memory: 7 * 2 ** 30, pods: 29 },
  offerings: [
    {
      zone: 'us-east-1a',
      capacityType: 'on-demand',
      priceUSDPerHour: 0.1,
      available: true,
      priceSource: 'on-demand',
    },
  ],
});

function recordingCatalog() {
  const calls: Array<EC2NodeClass | undefined> = [];
  const catalog: CatalogFunction = ({ nodeClass }) => {
    calls.push(nodeClass);
    return {
      instanceTypes: [fakeType(`t-${nodeClass?.metadata.name ?? 'none'}`)],
      notices: ['catalog notice'],
    };
  };
  return { calls, catalog };
}

const template = (labels: Record<string, string>, cpu = '100m') => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image: 'registry.example/app:1', resources: { requests: { cpu } } }] },
});

const nodeClass = (name: string): KubeObject => ({
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name },
  spec: { amiSelectorTerms: [{ alias: 'al2023@latest' }] },
});
const nodePool = (name: string, ref: string): KubeObject => ({
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name },
  spec: {
    template: {
      spec: {
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: ref },
        requirements: [],
      },
    },
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '10%' }],
    },
  },
});

describe('expandWorkload', () => {
  it('Deployment: replicas pods named <name>-<hash>-<i>, labelled with the template hash, namespace kept', () => {
    const d: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'team-a' },
      spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }) },
    };
    const pods = expandWorkload(d)!;
    const hash = templateHash((d.spec as { template: unknown }).template);
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{10}$/);
    expect(pods.map((p) => p.metadata.name)).toEqual([`web-${hash}-0`, `web-${hash}-1`, `web-${hash}-2`]);
    expect(pods[0]!.metadata.namespace).toBe('team-a');
    expect(pods[0]!.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash });
    expect(pods[0]!.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ReplicaSet', name: `web-${hash}` });
    expect(pods[0]!.spec.nodeName).toBeUndefined();
    // Deterministic: same input, same names and uids.
    expect(expandWorkload(d)!.map((p) => p.metadata.uid)).toEqual(pods.map((p) => p.metadata.uid));
  });

  it('replicas default to 1, 0 gives none; StatefulSet <name>-<i> with its claims; Job min(parallelism, completions)', () => {
    const base = { selector: {}, template: template({ app: 'x' }) };
    expect(expandWorkload({ kind: 'Deployment', metadata: { name: 'a' }, spec: base })).toHaveLength(1);
    expect(
      expandWorkload({ kind: 'Deployment', metadata: { name: 'a' }, spec: { ...base, replicas: 0 } }),
    ).toHaveLength(0);
    const sts = expandWorkload({
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: { ...base, replicas: 2, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {} }] },
    })!;
    expect(sts.map((p) => p.metadata.name)).toEqual(['db-0', 'db-1']);
    expect(sts[1]!.spec.volumes).toEqual([
      { name: 'data', persistentVolumeClaim: { claimName: 'data-db-1' } },
    ]);
    expect(sts[1]!.metadata.labels?.['statefulset.kubernetes.io/pod-name']).toBe('db-1');
    expect(
      expandWorkload({
        kind: 'Job',
        metadata: { name: 'j' },
        spec: { ...base, parallelism: 5, completions: 2 },
      }),
    ).toHaveLength(2);
    expect(expandWorkload({ kind: 'Job', metadata: { name: 'j' }, spec: base })).toHaveLength(1);
    expect(expandWorkload({ kind: 'Service', metadata: { name: 's' } })).toBeUndefined();
  });
});

describe('buildSchedulingInput', () => {
  it('uses the default NodePool and EC2NodeClass when none is given, with a notice', async () => {
    const { calls, catalog } = recordingCatalog();
    const built = await buildSchedulingInput(
      [{ object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: template({}).spec } }],
      { region: 'us-east-1', catalog },
    );
    expect(built.usedDefaultNodePool).toBe(true);
    expect(built.input.nodePools.map((n) => n.metadata.name)).toEqual(['default']);
    expect(built.input.nodePools[0]!.spec.template.spec.requirements).toEqual(
      DEFAULT_NODEPOOL.spec.template.spec.requirements,
    );
    expect(calls[0]?.spec.amiSelectorTerms).toEqual([{ alias: 'al2023@latest' }]);
    expect(built.input.instanceTypes.default?.map((t) => t.name)).toEqual(['t-default']);
    expect(built.notices[0]).toContain('No NodePool in the input');
    expect(built.notices).toContain('catalog notice');
    expect(built.input.pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['default/p']);
    expect(built.errors).toEqual([]);
  });

  it('a NodePool with a missing EC2NodeClass is an error naming the field; the other NodePool stays', async () => {
    const { catalog } = recordingCatalog();
    const built = await buildSchedulingInput(
      [
        { file: 'a.yaml', index: 0, object: nodePool('broken', 'nope') },
        { file: 'a.yaml', index: 1, object: nodePool('ok', 'nc') },
        { file: 'a.yaml', index: 2, object: nodeClass('nc') },
      ],
      { region: 'us-east-1', catalog },
    );
    expect(built.input.nodePools.map((n) => n.metadata.name)).toEqual(['ok']);
    expect(built.input.instanceTypes).toEqual({ ok: [expect.objectContaining({ name: 't-nc' })] });
    expect(built.errors).toEqual([
      expect.objectContaining({
        file: 'a.yaml',
        index: 0,
        kind: 'NodePool',
        name: 'broken',
        fieldPath: 'spec.template.spec.nodeClassRef.name',
      }),
    ]);
    expect(built.errors[0]!.message).toBe(
      'a.yaml (document 0): NodePool "broken": spec.template.spec.nodeClassRef.name: EC2NodeClass "nope" is not in the input (found: nc). Add that EC2NodeClass or fix nodeClassRef.name; this NodePool is not simulated.',
    );
  });

  it('existing nodes: bound pods, one daemon pod per matching DaemonSet unless listed, NodePool usage from capacity', async () => {
    const { catalog } = recordingCatalog();
    const node = (name: string, labels: Record<string, string>, taints: unknown[] = []): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
      spec: { taints },
      status: {
        capacity: { cpu: '4', memory: '15155Mi', pods: '58' },
        allocatable: { cpu: '3920m', memory: '14162Mi', pods: '58' },
      },
    });
    const ds = (name: string, spec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace: 'kube-system' },
      spec: {
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { ...template({}).spec, ...spec } },
      },
    });
    const built = await buildSchedulingInput(
      [
        { object: nodePool('pool', 'nc') },
        { object: nodeClass('nc') },
        { object: node('managed-1', { 'karpenter.sh/nodepool': 'pool' }) },
        { object: node('tainted', {}, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]) },
        { object: ds('everywhere', { tolerations: [{ operator: 'Exists' }] }) },
        { object: ds('untolerating', {}) },
        { object: ds('pool-only', { nodeSelector: { 'karpenter.sh/nodepool': 'pool' } }) },
        {
          object: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'everywhere-xyz', namespace: 'kube-system', labels: { app: 'everywhere' } },
            spec: { ...template({}).spec, nodeName: 'managed-1' },
          },
        },
        {
          object: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'app' },
            spec: { ...template({}).spec, nodeName: 'tainted' },
          },
        },
        {
          object: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'lost' },
            spec: { ...template({}).spec, nodeName: 'gone' },
          },
        },
      ],
      { region: 'us-east-1', catalog },
    );
    const byNode = Object.fromEntries(
      built.input.existingNodes.map((n) => [n.node.metadata.name, n.pods.map((p) => p.metadata.name).sort()]),
    );
    const h = (n: string) => templateHash(n).slice(0, 5);
    expect(byNode['managed-1']).toEqual([
      'everywhere-xyz',
      `pool-only-${h('managed-1')}`,
      `untolerating-${h('managed-1')}`,
    ]);
    expect(byNode.tainted).toEqual(['app', `everywhere-${h('tainted')}`]);
    const managed = built.input.existingNodes.find((n) => n.node.metadata.name === 'managed-1')!;
    expect(managed.nodeClaim?.metadata.name).toBe('managed-1');
    expect(
      built.input.existingNodes.find((n) => n.node.metadata.name === 'tainted')!.nodeClaim,
    ).toBeUndefined();
    expect(built.input.nodePoolUsage).toEqual({
      pool: { cpu: 4000, memory: 15155 * 2 ** 20, pods: 58, nodes: 1 },
    });
    expect(built.input.pods).toEqual([]);
    expect(built.notices.some((n) => n.includes('"gone"'))).toBe(true);
    expect(built.input.daemonSets).toHaveLength(3);
  });

  it('pods owned by a DaemonSet are ignored with a reason; duplicates are errors; namespaces get their name label', async () => {
    const { catalog } = recordingCatalog();
    const dsPod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'agent-1',
        namespace: 'ops',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'u', controller: true },
        ],
      },
      spec: template({}).spec,
    };
    const built = await buildSchedulingInput(
      [
        { object: dsPod },
        { object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ops', labels: { team: 'a' } } } },
        { file: 'x.yaml', index: 0, object: nodePool('p', 'nc') },
        { file: 'y.yaml', index: 3, object: nodePool('p', 'nc') },
        { object: nodeClass('nc') },
      ],
      { region: 'us-east-1', catalog },
    );
    expect(built.input.pods).toEqual([]);
    expect(built.ignored.map((i) => [i.pod.metadata.name, i.code])).toEqual([
      ['agent-1', 'OwnedByDaemonSet'],
    ]);
    expect(built.errors).toHaveLength(1);
    expect(built.errors[0]).toMatchObject({ file: 'y.yaml', index: 3, kind: 'NodePool', name: 'p' });
    expect(built.errors[0]!.message).toContain('already defined at x.yaml (document 0)');
    expect(built.input.namespaces?.ops).toEqual({ team: 'a', 'kubernetes.io/metadata.name': 'ops' });
  });
});

describe('applyLimitRanges', () => {
  it('fills missing requests from defaultRequest (or default) and missing limits from default, only in its namespace', async () => {
    const { catalog } = recordingCatalog();
    const lr: KubeObject = {
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'defaults', namespace: 'team-a' },
      spec: {
        limits: [
          { type: 'Container', default: { cpu: '1', memory: '1Gi' }, defaultRequest: { cpu: '250m' } },
        ],
      },
    };
    const pod = (name: string, ns: string, resources: Record<string, unknown>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { containers: [{ name: 'c', image: 'registry.example/app:1', resources }] },
    });
    const built = await buildSchedulingInput(
      [
        { object: lr },
        { object: pod('bare', 'team-a', {}) },
        { object: pod('limited', 'team-a', { limits: { cpu: '2' } }) },
        { object: pod('other-ns', 'team-b', {}) },
      ],
      { region: 'us-east-1', catalog },
    );
    const res = Object.fromEntries(
      built.input.pods.map((p) => [p.metadata.name, p.spec.containers[0]!.resources]),
    );
    expect(res.bare).toEqual({
      requests: { cpu: '250m', memory: '1Gi' },
      limits: { cpu: '1', memory: '1Gi' },
    });
    // cpu has a limit (the API server defaults its request to it); memory gets the defaults.
    expect(res.limited).toEqual({ requests: { memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } });
    expect(res['other-ns']).toEqual({});
  });
});

describe('listed pods', () => {
  it('a pod with only generateName gets a deterministic name; terminal pods are skipped', async () => {
    const { catalog } = recordingCatalog();
    const objects = [
      {
        file: 'p.yaml',
        index: 0,
        object: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { generateName: 'job-' },
          spec: template({}).spec,
        },
      },
      {
        file: 'p.yaml',
        index: 1,
        object: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'done' },
          spec: template({}).spec,
          status: { phase: 'Succeeded' },
        },
      },
    ];
    const a = await buildSchedulingInput(objects, { region: 'us-east-1', catalog });
    const b = await buildSchedulingInput(objects, { region: 'us-east-1', catalog });
    expect(a.input.pods).toHaveLength(1);
    expect(a.input.pods[0]!.metadata.name).toMatch(/^job-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(b.input.pods[0]!.metadata.name).toBe(a.input.pods[0]!.metadata.name);
  });
});
