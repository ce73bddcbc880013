import { describe, expect, it } from 'vitest';
import type { Node } from '../../apis/core.ts';
import type { NodeSelectorRequirementWithMinValues } from '../../apis/karpenter.ts';
import { parseResources } from '../../apis/quantity.ts';
import { getInstanceTypes, onDemandPrice, spotPriceEstimate } from '../aws/catalog/index.ts';
import type { InstanceType } from '../types.ts';
import { InMemoryNodeWriter } from './nodes.ts';
import {
  AnnotationKwokNodeClassHash,
  DriftInstanceTypeNotOffered,
  DriftNodeClass,
  KwokCloudProvider,
  parseKwokProviderID,
  sequentialInstanceIds,
} from './provider.ts';
import { kwokNodeClaim, kwokNodeClass, kwokTestbed } from './testing.ts';

const IT = 'node.kubernetes.io/instance-type';
const CT = 'karpenter.sh/capacity-type';
const ZONE = 'topology.kubernetes.io/zone';
const req = (key: string, ...values: string[]): NodeSelectorRequirementWithMinValues => ({
  key,
  operator: 'In',
  values,
});

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

describe('kwok provider: choice of offering (us-east-1 catalog)', () => {
  it('m5.large vs c5.large on-demand picks c5.large at the catalog price $0.085/h', async () => {
    const { provider } = kwokTestbed();
    const nc = await provider.create(
      kwokNodeClaim('od-1', [req(IT, 'm5.large', 'c5.large'), req(CT, 'on-demand')]),
    );
    expect(nc.metadata.labels?.[IT]).toBe('c5.large');
    expect(nc.metadata.labels?.[CT]).toBe('on-demand');
    const chosen = getInstanceTypes({ region: 'us-east-1' }).instanceTypes.find(
      (t) => t.name === 'c5.large',
    )!;
    const offering = chosen.offerings.find(
      (o) => o.zone === nc.metadata.labels?.[ZONE] && o.capacityType === 'on-demand',
    )!;
    expect(offering.priceUSDPerHour).toBe(0.085);
    expect(onDemandPrice('c5.large', 'us-east-1')?.priceUSDPerHour).toBe(0.085);
    expect(onDemandPrice('m5.large', 'us-east-1')?.priceUSDPerHour).toBe(0.096);
    // Ties across zones break on the zone name: the first zone offering it.
    expect(nc.metadata.labels?.[ZONE]).toBe('us-east-1a');
  });

  it('with spot allowed, m5.large wins at its Spot Advisor estimate ($0.096 × (1 − 66%) = $0.03264/h)', async () => {
    const { provider } = kwokTestbed();
    const nc = await provider.create(kwokNodeClaim('spot-1', [req(IT, 'm5.large', 'c5.large')]));
    expect(nc.metadata.labels?.[IT]).toBe('m5.large');
    expect(nc.metadata.labels?.[CT]).toBe('spot');
    expect(spotPriceEstimate('m5.large', 'us-east-1')?.priceUSDPerHour).toBe(0.03264);
    expect(spotPriceEstimate('c5.large', 'us-east-1')?.priceUSDPerHour).toBe(0.03485);
  });

  it('returns capacity/allocatable of the type (m5.large: 1930m cpu, 6903Mi memory allocatable) and all type labels', async () => {
    const { provider } = kwokTestbed();
    const nc = await provider.create(kwokNodeClaim('cap-1', [req(IT, 'm5.large'), req(CT, 'on-demand')]));
    expect(nc.status?.allocatable).toMatchObject({ cpu: '1930m', memory: '6903Mi', pods: '29' });
    expect(nc.status?.capacity).toMatchObject({ cpu: '2', pods: '29' });
    expect(nc.metadata.labels).toMatchObject({
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'karpenter.k8s.aws/instance-family': 'm5',
      'karpenter.k8s.aws/instance-cpu': '2',
      'topology.kubernetes.io/region': 'us-east-1',
      'karpenter.sh/nodepool': 'default',
    });
    expect(nc.status?.providerID).toBe('kwok://us-east-1/us-east-1a/i-00000000000000001');
    expect(parseKwokProviderID(nc.status!.providerID!)).toEqual({
      region: 'us-east-1',
      zone: 'us-east-1a',
      instanceId: 'i-00000000000000001',
    });
  });

  it('honors numeric requirements (instance-cpu Gt 2, memory Lte 8192 → c5.xlarge on-demand at $0.17/h)', async () => {
    const { provider } = kwokTestbed();
    const nc = await provider.create(
      kwokNodeClaim('num-1', [
        req('karpenter.k8s.aws/instance-family', 'c5', 'm5'),
        { key: 'karpenter.k8s.aws/instance-cpu', operator: 'Gt', values: ['2'] },
        { key: 'karpenter.k8s.aws/instance-memory', operator: 'Lte', values: ['8192'] },
        req(CT, 'on-demand'),
      ]),
    );
    expect(nc.metadata.labels?.[IT]).toBe('c5.xlarge');
    expect(onDemandPrice('c5.xlarge', 'us-east-1')?.priceUSDPerHour).toBe(0.17);
  });

  it('an instance type unknown to the region gives InsufficientCapacityError naming it', async () => {
    const { provider } = kwokTestbed();
    const err = await rejection(provider.create(kwokNodeClaim('x-1', [req(IT, 'z9.huge')])));
    expect(err.code).toBe('InsufficientCapacity');
    expect(err.message).toContain('z9.huge');
    expect(err.message).toContain('us-east-1');
  });

  it('ICE cache: after markUnavailable the next cheapest is used until the 3-minute TTL expires', async () => {
    const bed = kwokTestbed();
    const reqs = [req(IT, 'm5.large', 'c5.large'), req(CT, 'on-demand'), req(ZONE, 'us-east-1b')];
    bed.provider.markUnavailable('c5.large', 'us-east-1b', 'on-demand');
    const a = await bed.provider.create(kwokNodeClaim('ice-1', reqs));
    expect(a.metadata.labels?.[IT]).toBe('m5.large');
    await bed.advance(179);
    const b = await bed.provider.create(kwokNodeClaim('ice-2', reqs));
    expect(b.metadata.labels?.[IT]).toBe('m5.large');
    await bed.advance(1);
    const c = await bed.provider.create(kwokNodeClaim('ice-3', reqs));
    expect(c.metadata.labels?.[IT]).toBe('c5.large');
  });

  it('all compatible offerings unavailable → InsufficientCapacityError listing them with prices', async () => {
    const bed = kwokTestbed();
    bed.provider.markUnavailable('c5.large', 'us-east-1b', 'on-demand');
    bed.provider.markUnavailable('m5.large', 'us-east-1b', 'on-demand');
    const err = (await rejection(
      bed.provider.create(
        kwokNodeClaim('ice-all', [
          req(IT, 'm5.large', 'c5.large'),
          req(CT, 'on-demand'),
          req(ZONE, 'us-east-1b'),
        ]),
      ),
    )) as Error & { code?: string; offerings: unknown[] };
    expect(err.code).toBe('InsufficientCapacity');
    expect(err.offerings).toEqual([
      { instanceType: 'c5.large', zone: 'us-east-1b', capacityType: 'on-demand', priceUSDPerHour: 0.085 },
      { instanceType: 'm5.large', zone: 'us-east-1b', capacityType: 'on-demand', priceUSDPerHour: 0.096 },
    ]);
    expect(err.message).toContain('c5.large/us-east-1b/on-demand ($0.0850/h)');
    expect(bed.nodes.size).toBe(0);
    expect(bed.provider.instanceCount).toBe(0);
  });
});

describe('kwok provider: the Node', () => {
  it('is created after the KWOKNodeClass nodeRegistrationDelay, tainted unregistered, labelled, not Ready', async () => {
    const bed = kwokTestbed();
    bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '45s' }));
    const nc = kwokNodeClaim('delay-1', [req(IT, 'c5.large'), req(CT, 'on-demand')]);
    nc.spec.taints = [{ key: 'team', value: 'a', effect: 'NoSchedule' }];
    nc.spec.startupTaints = [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }];
    const launched = await bed.provider.create(nc);
    expect(await bed.nodes.getNode('delay-1')).toBeUndefined();
    // Before registration the instance is already visible to get/list.
    expect((await bed.provider.get(launched.status!.providerID!)).status?.nodeName).toBeUndefined();
    await bed.advance(44);
    expect(await bed.nodes.getNode('delay-1')).toBeUndefined();
    await bed.advance(1);
    const node = (await bed.nodes.getNode('delay-1')) as Node;
    expect(node).toBeDefined();
    expect(node.metadata.creationTimestamp).toBe(new Date(bed.clock.now()).toISOString());
    expect(node.spec?.providerID).toBe(launched.status?.providerID);
    expect(node.spec?.taints).toEqual([
      { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
      { key: 'team', value: 'a', effect: 'NoSchedule' },
      { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' },
    ]);
    expect(node.metadata.labels).toMatchObject({
      'kubernetes.io/hostname': 'delay-1',
      [IT]: 'c5.large',
      [ZONE]: 'us-east-1a',
      [CT]: 'on-demand',
      'karpenter.sh/nodepool': 'default',
      'kubernetes.io/arch': 'amd64',
      'karpenter.k8s.aws/instance-category': 'c',
      'kwok.x-k8s.io/node': 'fake',
    });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(parseResources(node.status?.allocatable)).toMatchObject({
      cpu: 1930,
      memory: 3265265664,
      pods: 29,
    });
    expect((await bed.provider.get(launched.status!.providerID!)).status?.nodeName).toBe('delay-1');
  });

  it('uses the injected registrationDelaySeconds when the NodeClass sets none; the NodeClass value wins', async () => {
    const bed = kwokTestbed({ registrationDelaySeconds: () => 10 });
    await bed.provider.create(kwokNodeClaim('fb-1', [req(IT, 'c5.large')]));
    await bed.advance(9);
    expect(await bed.nodes.getNode('fb-1')).toBeUndefined();
    await bed.advance(1);
    expect(await bed.nodes.getNode('fb-1')).toBeDefined();
    bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '1m' }));
    await bed.provider.create(kwokNodeClaim('fb-2', [req(IT, 'c5.large')]));
    await bed.advance(59);
    expect(await bed.nodes.getNode('fb-2')).toBeUndefined();
    await bed.advance(1);
    expect(await bed.nodes.getNode('fb-2')).toBeDefined();
  });

  it('with no delay the Node exists when create resolves', async () => {
    const bed = kwokTestbed();
    await bed.provider.create(kwokNodeClaim('now-1', [req(IT, 'c5.large')]));
    expect((await bed.nodes.getNode('now-1'))?.spec?.providerID).toMatch(/^kwok:\/\/us-east-1\//);
  });

  it('delete before registration cancels it: the Node never appears', async () => {
    const bed = kwokTestbed({ registrationDelaySeconds: () => 30 });
    const nc = await bed.provider.create(kwokNodeClaim('cancel-1', [req(IT, 'c5.large')]));
    await bed.advance(10);
    await bed.provider.delete(nc);
    await bed.advance(60);
    expect(await bed.nodes.getNode('cancel-1')).toBeUndefined();
    expect(bed.clock.pendingTimers()).toBe(0);
    expect(await bed.provider.list()).toEqual([]);
  });

  it('delete removes the Node', async () => {
    const bed = kwokTestbed();
    const nc = await bed.provider.create(kwokNodeClaim('del-1', [req(IT, 'c5.large')]));
    expect(bed.nodes.size).toBe(1);
    await bed.provider.delete(nc);
    expect(bed.nodes.size).toBe(0);
  });

  it('retries a failed Node write after 5 s and reports the error', async () => {
    const errors: string[] = [];
    const inner = new InMemoryNodeWriter();
    let failures = 1;
    const flaky = {
      createNode: async (n: Node) => {
        if (failures-- > 0) throw new Error('apiserver unavailable');
        return inner.createNode(n);
      },
      deleteNode: (name: string) => inner.deleteNode(name),
      getNode: (name: string) => inner.getNode(name),
      listNodes: () => inner.listNodes(),
    };
    const bed = kwokTestbed({ nodes: flaky, onError: (e) => errors.push((e as Error).message) });
    await bed.provider.create(kwokNodeClaim('retry-1', [req(IT, 'c5.large')]));
    expect(errors).toEqual(['apiserver unavailable']);
    expect(await inner.getNode('retry-1')).toBeUndefined();
    await bed.advance(5);
    expect(await inner.getNode('retry-1')).toBeDefined();
  });
});

describe('kwok provider: contract details', () => {
  it('create is idempotent per NodeClaim name', async () => {
    const { provider, nodes } = kwokTestbed();
    const a = await provider.create(kwokNodeClaim('same', [req(IT, 'c5.large')]));
    const b = await provider.create(kwokNodeClaim('same', [req(IT, 'c5.large')]));
    expect(b.status?.providerID).toBe(a.status?.providerID);
    expect(provider.instanceCount).toBe(1);
    expect(nodes.size).toBe(1);
  });

  it('a missing or not-Ready KWOKNodeClass gives NodeClassNotReadyError', async () => {
    const bed = kwokTestbed();
    const missing = await rejection(
      bed.provider.create(kwokNodeClaim('nc-1', [req(IT, 'c5.large')], 'nope')),
    );
    expect(missing.code).toBe('NodeClassNotReady');
    expect(missing.message).toBe(
      'NodeClassRef not ready, KWOKNodeClass/nope not found; create it or fix spec.template.spec.nodeClassRef.name',
    );
    const notReady = kwokNodeClass('default');
    notReady.status = { conditions: [{ type: 'Ready', status: 'False', reason: 'Broken', message: 'bad' }] };
    bed.nodeClasses.set('default', notReady);
    const err = await rejection(bed.provider.create(kwokNodeClaim('nc-2', [req(IT, 'c5.large')])));
    expect(err.code).toBe('NodeClassNotReady');
    expect(err.message).toContain('Ready=False (Broken: bad)');
    expect(bed.provider.instanceCount).toBe(0);
  });

  it('a NodeClaim pointing at another NodeClass kind, or a bad delay, gives CreateError with a reason', async () => {
    const bed = kwokTestbed();
    const nc = kwokNodeClaim('kind-1', [req(IT, 'c5.large')]);
    nc.spec.nodeClassRef = { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' };
    const err = (await rejection(bed.provider.create(nc))) as Error & {
      code: string;
      conditionReason: string;
    };
    expect(err.code).toBe('CreateError');
    expect(err.conditionReason).toBe('NodeClassNotSupported');
    bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: 'soon' }));
    const bad = (await rejection(
      bed.provider.create(kwokNodeClaim('kind-2', [req(IT, 'c5.large')])),
    )) as Error & {
      conditionReason: string;
    };
    expect(bad.conditionReason).toBe('InvalidNodeClass');
    expect(bad.message).toContain('spec.nodeRegistrationDelay "soon"');
  });

  it('isDrifted: NodeClassDrift after a NodeClass spec change', async () => {
    const bed = kwokTestbed();
    const nc = await bed.provider.create(kwokNodeClaim('drift-1', [req(IT, 'c5.large')]));
    expect(nc.metadata.annotations?.[AnnotationKwokNodeClassHash]).toMatch(/^[0-9a-f]{16}$/);
    expect(await bed.provider.isDrifted(nc)).toBeUndefined();
    bed.nodeClasses.set('default', kwokNodeClass('default', { nodeRegistrationDelay: '5s' }));
    expect(await bed.provider.isDrifted(nc)).toBe(DriftNodeClass);
  });

  it('isDrifted: InstanceTypeNotOffered when the type or its offering leaves the catalog', async () => {
    let types: InstanceType[] = [...getInstanceTypes({ region: 'us-east-1' }).instanceTypes];
    const bed = kwokTestbed({ instanceTypes: () => types });
    const nc = await bed.provider.create(
      kwokNodeClaim('drift-2', [req(IT, 'c5.large'), req(CT, 'on-demand')]),
    );
    expect(await bed.provider.isDrifted(nc)).toBeUndefined();
    types = types.map((t) =>
      t.name === 'c5.large' ? { ...t, offerings: t.offerings.filter((o) => o.zone !== 'us-east-1a') } : t,
    );
    expect(await bed.provider.isDrifted(nc)).toBe(DriftInstanceTypeNotOffered);
    types = types.filter((t) => t.name !== 'c5.large');
    expect(await bed.provider.isDrifted(nc)).toBe(DriftInstanceTypeNotOffered);
  });

  it('instanceTypes reports ICE-cached offerings as unavailable without touching the catalog', async () => {
    const bed = kwokTestbed();
    bed.provider.markUnavailable('c5.large', 'us-east-1a', 'spot');
    const np = {
      apiVersion: 'karpenter.sh/v1' as const,
      kind: 'NodePool' as const,
      metadata: { name: 'default' },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
            requirements: [],
          },
        },
        disruption: {
          consolidationPolicy: 'WhenEmptyOrUnderutilized' as const,
          consolidateAfter: '0s',
          budgets: [{ nodes: '10%' }],
        },
      },
    };
    const c5 = (await bed.provider.instanceTypes(np)).find((t) => t.name === 'c5.large')!;
    expect(c5.offerings.filter((o) => !o.available)).toEqual([
      expect.objectContaining({ zone: 'us-east-1a', capacityType: 'spot', available: false }),
    ]);
    const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes.find(
      (t) => t.name === 'c5.large',
    )!;
    expect(catalog.offerings.every((o) => o.available)).toBe(true);
    np.spec.template.spec.nodeClassRef.name = 'missing';
    expect((await rejection(bed.provider.instanceTypes(np))).code).toBe('NodeClassNotReady');
  });

  it('rejects an unsupported region up front when using the embedded catalog', () => {
    expect(
      () =>
        new KwokCloudProvider({
          region: 'mars-1',
          nodes: new InMemoryNodeWriter(),
          clock: { now: () => 0, setTimeout: () => 0, clearTimeout: () => {} },
        }),
    ).toThrow(/region "mars-1" is not in capenter's embedded AWS catalog/);
    expect(sequentialInstanceIds(255)()).toBe('i-000000000000000ff');
  });
});

describe('kwok provider: restarts and failures', () => {
  it('a new provider adopts the kwok Nodes of its region: get, list and delete keep working', async () => {
    const first = kwokTestbed();
    const a = await first.provider.create(
      kwokNodeClaim('keep-1', [req(IT, 'c5.large'), req(CT, 'on-demand')]),
    );
    // A Node of another region and a non-kwok Node are left alone.
    first.nodes.put({
      metadata: { name: 'other-region', labels: { 'kwok.x-k8s.io/node': 'fake' } },
      spec: { providerID: 'kwok://eu-west-1/eu-west-1a/i-1' },
    });
    first.nodes.put({ metadata: { name: 'real' }, spec: { providerID: 'aws:///us-east-1a/i-0abc' } });
    const second = new KwokCloudProvider({
      region: 'us-east-1',
      nodes: first.nodes,
      clock: first.clock,
      instanceId: sequentialInstanceIds(100),
    });
    const listed = await second.list();
    expect(listed.map((n) => n.status?.providerID)).toEqual([a.status?.providerID]);
    const got = await second.get(a.status!.providerID!);
    expect(got.metadata.name).toBe('keep-1');
    expect(got.metadata.labels).toMatchObject({ [IT]: 'c5.large', [CT]: 'on-demand', [ZONE]: 'us-east-1a' });
    expect(got.metadata.labels?.['kubernetes.io/hostname']).toBeUndefined();
    expect(got.spec.nodeClassRef).toEqual({
      group: 'karpenter.kwok.sh',
      kind: 'KWOKNodeClass',
      name: 'default',
    });
    expect(got.status?.allocatable).toMatchObject({ cpu: '1930m' });
    // Re-creating the same NodeClaim returns the adopted instance instead of launching a second one.
    const again = await second.create(kwokNodeClaim('keep-1', [req(IT, 'c5.large')]));
    expect(again.status?.providerID).toBe(a.status?.providerID);
    await second.delete(got);
    expect(await first.nodes.getNode('keep-1')).toBeUndefined();
    expect((await rejection(second.delete(got))).code).toBe('NodeClaimNotFound');
  });

  it('when deleting the Node fails, delete rethrows and a retry deletes it', async () => {
    const inner = new InMemoryNodeWriter();
    let fail = true;
    const writer = {
      createNode: (n: Node) => inner.createNode(n),
      deleteNode: async (name: string) => {
        if (fail) throw new Error('etcd timeout');
        return inner.deleteNode(name);
      },
      getNode: (name: string) => inner.getNode(name),
      listNodes: (sel?: Record<string, string>) => inner.listNodes(sel),
    };
    const { provider } = kwokTestbed({ nodes: writer });
    const nc = await provider.create(kwokNodeClaim('del-retry', [req(IT, 'c5.large')]));
    expect((await rejection(provider.delete(nc))).message).toBe('etcd timeout');
    // Terminating: hidden from get/list, but still deletable.
    expect((await rejection(provider.get(nc.status!.providerID!))).code).toBe('NodeClaimNotFound');
    expect(await provider.list()).toEqual([]);
    fail = false;
    await provider.delete(nc);
    expect(await inner.getNode('del-retry')).toBeUndefined();
    expect((await rejection(provider.delete(nc))).code).toBe('NodeClaimNotFound');
  });
});

describe('kwok provider: concurrency', () => {
  it('two concurrent creates of one NodeClaim launch a single instance', async () => {
    const { provider, nodes } = kwokTestbed();
    const [a, b] = await Promise.all([
      provider.create(kwokNodeClaim('dup', [req(IT, 'c5.large')])),
      provider.create(kwokNodeClaim('dup', [req(IT, 'c5.large')])),
    ]);
    expect(a.status?.providerID).toBe(b.status?.providerID);
    expect(provider.instanceCount).toBe(1);
    expect(nodes.size).toBe(1);
  });
});
