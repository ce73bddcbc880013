/** The scheduler against the real us-east-1 catalog (cloudprovider/aws/catalog), on reduced scenario cases. */
import { describe, expect, it } from 'vitest';
import type { EC2NodeClass } from '../apis/karpenter.ts';
import { getInstanceTypes } from '../cloudprovider/aws/catalog/index.ts';
import { solve } from './scheduler.ts';
import { makeDaemonSet, makeNodePool, makePod } from './testing.ts';

const nodeClass: EC2NodeClass = {
  apiVersion: 'karpenter.k8s.aws/v1',
  kind: 'EC2NodeClass',
  metadata: { name: 'default' },
  spec: { amiSelectorTerms: [{ alias: 'al2023@latest' }], role: 'KarpenterNodeRole-cluster-1' },
};
const catalog = [...getInstanceTypes({ region: 'us-east-1', nodeClass }).instanceTypes];
const onDemand = { key: 'karpenter.sh/capacity-type', operator: 'In' as const, values: ['on-demand'] };

describe('scheduler on the us-east-1 catalog', () => {
  it('1600m/3000Mi pod + 100Mi daemon on category c large/xlarge picks c6a.large, not the 3055Mi Graviton types', () => {
    const pool = makeNodePool('general', {
      requirements: [
        { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c'] },
        { key: 'karpenter.k8s.aws/instance-size', operator: 'In', values: ['large', 'xlarge'] },
        onDemand,
        { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64', 'arm64'] },
      ],
    });
    const r = solve({
      pods: [makePod('worker', { cpu: '1600m', memory: '3000Mi' })],
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { general: catalog },
      daemonSets: [
        makeDaemonSet('log-shipper', '100m', '100Mi'),
        makeDaemonSet('net-agent', '25m'),
        makeDaemonSet('proxy', '100m'),
      ],
    });
    expect(r.newNodeClaims).toHaveLength(1);
    const nc = r.newNodeClaims[0]!;
    expect(nc.cheapest.instanceType.name).toBe('c6a.large');
    expect(nc.cheapest.offering.priceUSDPerHour).toBe(0.0765);
    expect(nc.instanceTypeOptions.map((t) => t.name)).not.toContain('c6g.large');
    for (const t of nc.instanceTypeOptions) {
      expect(t.allocatable.memory!).toBeGreaterThanOrEqual(3100 * 2 ** 20);
      expect(t.allocatable.cpu!).toBeGreaterThanOrEqual(1825);
    }
  });

  it('a 1200m/600Mi daemon makes three 1-CPU replicas need two m5.xlarge', () => {
    const pool = makeNodePool('general', {
      requirements: [
        { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
        { key: 'karpenter.k8s.aws/instance-size', operator: 'In', values: ['large', 'xlarge'] },
        onDemand,
      ],
    });
    const r = solve({
      pods: [0, 1, 2].map((i) => makePod(`app-${i}`, { cpu: '1', memory: '3Gi' })),
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { general: catalog },
      daemonSets: [makeDaemonSet('node-monitor', '1200m', '600Mi')],
    });
    expect(r.newNodeClaims.map((n) => [n.cheapest.instanceType.name, n.pods.length])).toEqual([
      ['m5.xlarge', 2],
      ['m5.xlarge', 1],
    ]);
  });

  it('does not grow a NodeClaim past the efficient sizes into a huge type', () => {
    const pool = makeNodePool('default', {
      requirements: [
        onDemand,
        { key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] },
        { key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c', 'm', 'r'] },
      ],
    });
    const pods = Array.from({ length: 400 }, (_, i) => makePod(`p-${i}`, { cpu: '1', memory: '2Gi' }));
    const r = solve({
      pods,
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { default: catalog },
      daemonSets: [],
    });
    expect(r.unschedulable).toEqual([]);
    const price = r.newNodeClaims.reduce((s, n) => s + n.cheapest.offering.priceUSDPerHour, 0);
    // lower bound: 400 vCPU at c6a.48xlarge's $7.344 per 191.45 allocatable vCPU = $15.34/h. Growing one NodeClaim
    // into c8i.96xlarge ($17.99 for 346 pods) would cost $20.44 in all; two m6a.48xlarge + a c6a.8xlarge cost $17.81.
    expect(price).toBeLessThan(15.34 * 1.2);
    for (const n of r.newNodeClaims)
      expect(n.cheapest.instanceType.capacity.cpu!).toBeLessThanOrEqual(192_000);
  });
});

describe('a pod requesting vpc.amazonaws.com/efa on the us-east-1 catalog (upstream: EFA is an extended resource)', () => {
  const efaPod = (name: string) => {
    const p = makePod(name, { cpu: '1', memory: '2Gi' });
    const req = p.spec!.containers[0]!.resources!.requests!;
    req['vpc.amazonaws.com/efa'] = '1';
    p.spec!.containers[0]!.resources!.limits = { 'vpc.amazonaws.com/efa': '1' };
    return p;
  };

  it('schedules only on types with EFA: category c picks c5n.9xlarge, not the cheaper c6a.large', () => {
    const pool = makeNodePool('general', {
      requirements: [{ key: 'karpenter.k8s.aws/instance-category', operator: 'In', values: ['c'] }, onDemand],
    });
    const r = solve({
      pods: [efaPod('mpi-0')],
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { general: catalog },
      daemonSets: [],
    });
    expect(r.unschedulable).toEqual([]);
    const nc = r.newNodeClaims[0]!;
    expect(nc.cheapest.instanceType.name).toBe('c5n.9xlarge');
    expect(nc.cheapest.offering.priceUSDPerHour).toBe(1.944);
    expect(nc.instanceTypeOptions.every((t) => (t.allocatable['vpc.amazonaws.com/efa'] ?? 0) >= 1)).toBe(
      true,
    );
  });

  it('stays pending when no allowed type has EFA, the reason naming the resource', () => {
    const pool = makeNodePool('general', {
      requirements: [{ key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] }, onDemand],
    });
    const r = solve({
      pods: [efaPod('mpi-0')],
      existingNodes: [],
      nodePools: [pool],
      instanceTypes: { general: catalog },
      daemonSets: [],
    });
    expect(r.newNodeClaims).toEqual([]);
    expect(r.unschedulable.map((u) => [u.code, u.message])).toEqual([
      [
        'NoInstanceTypeFits',
        'incompatible with nodepool "general": no instance type has enough resources: pod needs cpu 1, memory 2048Mi, ' +
          'pods 1, vpc.amazonaws.com/efa 1; largest allowed type m5.large has 1930m/6903Mi/29 pods allocatable; ' +
          'no allowed instance type has vpc.amazonaws.com/efa',
      ],
    ]);
  });
});
