/**
 * The soak's budget and duplicate-launch rules (test/soak/invariants.ts) on hand-built objects: each case is one of
 * the states the CI soak reported as a violation on 2026-11-30 and that upstream Karpenter does not count.
 */
import { describe, expect, it } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { budgetCount, describeDisrupting, duplicateLaunches, firstOfEach } from './invariants.ts';

const NOW = Date.parse('2026-12-01T10:00:00Z');

function nodeClaim(
  name: string,
  o: {
    node?: string;
    initialized?: boolean;
    deleting?: boolean;
    nominated?: string[];
    expireAfter?: string;
    providerID?: string;
  } = {},
): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      creationTimestamp: '2026-12-01T09:30:00Z',
      labels: { 'karpenter.sh/nodepool': 'pool' },
      ...(o.deleting ? { deletionTimestamp: '2026-12-01T09:59:00Z' } : {}),
      ...(o.nominated ? { annotations: { 'capenter.dev/nominated-pods': o.nominated.join(',') } } : {}),
    },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: [],
      expireAfter: o.expireAfter ?? '720h',
    },
    status: {
      ...(o.node ? { nodeName: o.node } : {}),
      providerID: o.providerID ?? `kwok://${name}`,
      conditions: o.initialized
        ? [
            {
              type: 'Initialized',
              status: 'True',
              reason: 'Initialized',
              lastTransitionTime: '2026-12-01T09:31:00Z',
            },
          ]
        : [],
    },
  } as NodeClaim;
}

function node(
  name: string,
  o: { disrupted?: boolean; initializedLabel?: boolean; providerID?: string } = {},
): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: o.initializedLabel ? { 'karpenter.sh/initialized': 'true' } : {} },
    spec: {
      ...(o.disrupted ? { taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] } : {}),
      ...(o.providerID ? { providerID: o.providerID } : {}),
    },
  } as Node;
}

const pool = (budget: string): NodePool =>
  ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'pool' },
    spec: { disruption: { budgets: [{ nodes: budget }] }, template: { spec: {} } },
  }) as unknown as NodePool;

const byName = (...nodes: Node[]) => new Map(nodes.map((n) => [n.metadata.name, n]));

describe('soak invariant: disruption budget', () => {
  it('counts deleting and disrupted-tainted initialized NodeClaims whose Node exists; not those whose Node is gone, expired or vanished ones', () => {
    const ncs = [
      nodeClaim('draining', { node: 'n1', initialized: true, deleting: true }),
      nodeClaim('tainted', { node: 'n2', initialized: true }),
      // drained and its Node deleted, only the finalizer left: upstream no longer counts it
      nodeClaim('finalizing', { node: 'n3', initialized: true, deleting: true }),
      nodeClaim('expired', { node: 'n4', initialized: true, deleting: true, expireAfter: '10m' }),
      nodeClaim('vanished', { node: 'n5', initialized: true, deleting: true, providerID: 'kwok://gone' }),
      nodeClaim('launching', { deleting: true }),
      nodeClaim('running', { node: 'n6', initialized: true }),
    ];
    const nodes = byName(node('n1'), node('n2', { disrupted: true }), node('n4'), node('n5'), node('n6'));
    const c = budgetCount(pool('2'), ncs, nodes, NOW, new Set(['kwok://gone']));
    expect(c.disrupting.map((n) => n.metadata.name)).toEqual(['draining', 'tainted']);
    expect(c.nodeGone).toBe(1);
    expect(c.allowed).toBe(2);
    // percentages round up over every NodeClaim of the pool: 20% of 7 → 2
    expect(budgetCount(pool('20%'), ncs, nodes, NOW, new Set()).allowed).toBe(2);
  });

  it("takes the Node's karpenter.sh/initialized label as initialized before the condition is written", () => {
    const ncs = [nodeClaim('a', { node: 'n1', deleting: true })];
    expect(budgetCount(pool('1'), ncs, byName(node('n1')), NOW, new Set()).disrupting).toEqual([]);
    expect(
      budgetCount(pool('1'), ncs, byName(node('n1', { initializedLabel: true })), NOW, new Set()).disrupting,
    ).toHaveLength(1);
  });
});

describe('soak invariant: describing a disrupting NodeClaim', () => {
  it('names deletion age, taint, disruption reason, age, expireAfter, provider ID and the Node', () => {
    const nc = nodeClaim('a', { node: 'n1', initialized: true, deleting: true });
    nc.status?.conditions?.push({
      type: 'DisruptionReason',
      status: 'True',
      reason: 'Underutilized',
      lastTransitionTime: '2026-12-01T09:58:00Z',
    });
    const n = node('n1', { disrupted: true });
    n.status = { conditions: [{ type: 'Ready', status: 'True' }] } as NonNullable<Node['status']>;
    expect(describeDisrupting(nc, byName(n), NOW)).toBe(
      'a deleting since 60 s ago tainted disrupted reason Underutilized created 1800 s ago expireAfter 720h kwok://a Node n1 Ready=True',
    );
    expect(describeDisrupting(nodeClaim('b'), byName(), NOW)).toBe(
      'b not deleting not tainted reason none created 1800 s ago expireAfter 720h kwok://b Node ? Ready=?',
    );
  });
});

describe('soak invariant: duplicate launches', () => {
  it('reports a pending pod listed by two live, uninitialized NodeClaims only', () => {
    const pending = new Set(['p1', 'p2', 'p3']);
    const ncs = [
      nodeClaim('a', { nominated: ['p1', 'p2', 'bound'] }),
      nodeClaim('b', { nominated: ['p1', 'bound'] }),
      nodeClaim('c', { nominated: ['p2'], deleting: true }),
      // Node initialized (label), condition not written yet: its pods may need new capacity, as upstream
      nodeClaim('d', { node: 'n1', nominated: ['p3'] }),
      nodeClaim('e', { nominated: ['p3'] }),
    ];
    expect([...duplicateLaunches(ncs, byName(node('n1', { initializedLabel: true })), pending)]).toEqual([
      ['p1', ['a', 'b']],
    ]);
    // without the label, d is still launching: p3 is claimed twice
    expect([...duplicateLaunches(ncs, byName(node('n1')), pending)]).toEqual([
      ['p1', ['a', 'b']],
      ['p3', ['d', 'e']],
    ]);
  });

  it('finds the Node by provider ID when a failed status write left no status.nodeName (kwok soak seed 5, CI of 671ecd7)', () => {
    const pending = new Set(['jrdkt']);
    const ncs = [
      // registered and initialized, but the status PATCH got a 500: no nodeName, conditions Unknown
      nodeClaim('soak-p0-hqwt2', { nominated: ['jrdkt'], providerID: 'kwok://us-east-1/us-east-1f/i-16' }),
      nodeClaim('soak-p0-6v8n7', { nominated: ['jrdkt'] }),
    ];
    const n = node('soak-p0-hqwt2', {
      initializedLabel: true,
      providerID: 'kwok://us-east-1/us-east-1f/i-16',
    });
    expect([...duplicateLaunches(ncs, byName(n), pending)]).toEqual([]);
    // its Node not initialized yet: still launching, so the pod is claimed twice
    const launching = node('soak-p0-hqwt2', { providerID: 'kwok://us-east-1/us-east-1f/i-16' });
    expect([...duplicateLaunches(ncs, byName(launching), pending)]).toEqual([
      ['jrdkt', ['soak-p0-hqwt2', 'soak-p0-6v8n7']],
    ]);
  });
});

describe('firstOfEach', () => {
  it('keeps the first violation of each invariant, not the last (the CI report of 2026-12-02 printed step 349, the last of 189 violations)', () => {
    const vs = [
      { step: 296, invariant: 'registration-ttl', detail: 'unregistered 1205 s' },
      { step: 297, invariant: 'registration-ttl', detail: 'unregistered 1215 s' },
      { step: 349, invariant: 'eventually-runs', detail: '5 pods' },
      { step: 349, invariant: 'registration-ttl', detail: 'unregistered 1748 s' },
    ];
    expect(firstOfEach(vs).map((v) => `${v.step} ${v.invariant} ${v.detail}`)).toEqual([
      '296 registration-ttl unregistered 1205 s',
      '349 eventually-runs 5 pods',
    ]);
  });
});
