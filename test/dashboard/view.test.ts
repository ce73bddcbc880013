/**
 * The dashboard's pure parts (issue 30): the view model from cluster state (instance type, price USD/hour from the
 * catalog, requested vs allocatable millicores and bytes, lifecycle state, candidate reasons, pending pods and
 * their NodeClaim, NodePool limits and budgets), the secrets guarantee, the decision log entries (chosen type and
 * why not a cheaper one; disruption commands and blocks), the row patches and the wrong-token message.
 */
import { describe, expect, it } from 'vitest';
import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import type { KubeObject, Node, Pod } from '../../src/apis/core.ts';
import type { NodeClaim, NodePool } from '../../src/apis/karpenter.ts';
import { getInstanceTypes } from '../../src/cloudprovider/aws/catalog/index.ts';
import type { DisruptionPass } from '../../src/controllers/disruption/controller.ts';
import type { ProvisioningResult } from '../../src/controllers/provisioning/provisioner.ts';
import {
  DecisionLog,
  disruptionEntries,
  excludedBy,
  provisioningEntries,
} from '../../src/dashboard/decisions.ts';
import { probeError } from '../../src/dashboard/hub.ts';
import { applyPatch, diffView } from '../../src/dashboard/patch.ts';
import { buildDashboardView, type DashboardInput, machinePoolViews } from '../../src/dashboard/view.ts';
import type { Candidate, Command } from '../../src/disruption/types.ts';
import { KubeApiError } from '../../src/kube/errors.ts';
import type { NodeClaimPlan } from '../../src/scheduling/types.ts';
import type { ClusterSnapshot, StateNode } from '../../src/state/cluster.ts';
import { testStateNode } from '../../src/state/testing.ts';

const NOW = Date.parse('2026-12-03T04:00:00Z');
const catalog = getInstanceTypes({ region: 'us-east-1' }).instanceTypes;
const type = (n: string) => catalog.find((t) => t.name === n)!;

const pool: NodePool = {
  apiVersion: 'karpenter.sh/v1',
  kind: 'NodePool',
  metadata: { name: 'general' },
  spec: {
    weight: 10,
    limits: { cpu: '100' },
    disruption: {
      consolidationPolicy: 'WhenEmptyOrUnderutilized',
      consolidateAfter: '0s',
      budgets: [{ nodes: '50%' }],
    },
    template: {
      spec: {
        requirements: [],
        nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      },
    },
  },
} as NodePool;

function claim(name: string, it: string, created: string, extra: Partial<NodeClaim['spec']> = {}): NodeClaim {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: {
      name,
      creationTimestamp: created,
      labels: {
        'karpenter.sh/nodepool': 'general',
        'node.kubernetes.io/instance-type': it,
        'topology.kubernetes.io/zone': 'us-east-1a',
        'karpenter.sh/capacity-type': 'on-demand',
      },
      annotations: { 'capenter.dev/secret-ish': 'TOKEN-IN-ANNOTATION' },
    },
    spec: {
      requirements: [],
      nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
      ...extra,
    },
    status: { providerID: `kwok://${name}` },
  } as NodeClaim;
}

function nodeOf(nc: NodeClaim, allocatable: Record<string, string>): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: nc.metadata.name,
      creationTimestamp: nc.metadata.creationTimestamp,
      labels: nc.metadata.labels,
    },
    spec: { providerID: nc.status?.providerID },
    status: { allocatable },
  } as Node;
}

function pod(name: string, o: { node?: string; message?: string; token?: string } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(o.node ? { nodeName: o.node } : {}),
      containers: [{ name: 'c', image: 'x', env: o.token ? [{ name: 'TOKEN', value: o.token }] : [] }],
    },
    status: o.message
      ? {
          phase: 'Pending',
          conditions: [
            { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: o.message },
          ],
        }
      : { phase: o.node ? 'Running' : 'Pending' },
  } as Pod;
}

function fixture(): { input: DashboardInput; nodes: StateNode[] } {
  const a = claim('general-a', 'm5.large', '2026-12-03T03:00:00Z');
  const b = claim('general-b', 'c6a.large', '2026-12-03T03:20:00Z', { expireAfter: '30m' });
  const c = claim('general-c', 'm5.xlarge', '2026-12-03T03:59:50Z');
  const onA = [
    pod('web-1', { node: 'general-a', token: 'TOKEN-IN-ENV' }),
    pod('web-2', { node: 'general-a' }),
  ];
  const nodes = [
    testStateNode({
      name: 'general-a',
      nodeClaim: a,
      node: nodeOf(a, { cpu: '1930m', memory: '7068672Ki' }),
      pods: onA,
      podRequests: { cpu: 1500, memory: 2 * 1024 ** 3 },
    }),
    testStateNode({
      name: 'general-b',
      nodeClaim: b,
      node: nodeOf(b, { cpu: '1930m', memory: '3188736Ki' }),
    }),
    testStateNode({ name: 'general-c', nodeClaim: c }),
  ];
  const pending = pod('api-1', { message: '0/2 nodes are available: 2 Insufficient cpu.' });
  const snapshot = {
    takenAt: NOW,
    stateNodes: nodes,
    pods: [...onA, pending],
    nodePools: [pool],
    nodeClaims: [a, b, c],
    nodes: nodes.flatMap((n) => (n.node ? [n.node] : [])),
    daemonSets: [],
    podDisruptionBudgets: [],
    nodeClasses: [
      {
        apiVersion: 'karpenter.k8s.aws/v1',
        kind: 'EC2NodeClass',
        metadata: { name: 'default' },
        spec: { userData: 'SECRET-USER-DATA' },
      },
    ],
    namespaces: {},
    nominations: new Map([
      [
        'default/api-1',
        { target: { kind: 'nodeclaim' as const, name: 'general-c' }, until: NOW + 20_000, ttlSeconds: 20 },
      ],
    ]),
  } as ClusterSnapshot;
  const input: DashboardInput = {
    snapshot,
    instanceTypes: { general: catalog },
    disruption: {
      commands: [],
      blocked: [
        {
          node: 'general-a',
          reason: 'pod default/web-1 has a PodDisruptionBudget that allows no disruption',
        },
      ],
    },
    usage: { general: { cpu: 8000 } },
  };
  return { input, nodes };
}

describe('buildDashboardView', () => {
  it('gives each node its type, catalog price, requested vs allocatable, pods, age, state and candidate reason', () => {
    const v = buildDashboardView(fixture().input);
    expect(v.nodes.map((n) => [n.name, n.instanceType, n.priceUSDPerHour, n.state])).toEqual([
      ['general-a', 'm5.large', 0.096, 'initialized'],
      ['general-b', 'c6a.large', 0.0765, 'expiring'], // created 03:20, expireAfter 30m, now 04:00
      ['general-c', 'm5.xlarge', 0.192, 'launching'],
    ]);
    const a = v.nodes[0]!;
    expect(a.cpu).toEqual({ requested: 1500, allocatable: 1930 });
    expect(a.memory).toEqual({ requested: 2147483648, allocatable: 7068672 * 1024 });
    expect([a.pods, a.ageSeconds, a.zone, a.capacityType, a.nodeClaim]).toEqual([
      2,
      3600,
      'us-east-1a',
      'on-demand',
      'general-a',
    ]);
    expect(a.candidate).toBe(false);
    expect(a.candidateReason).toBe('pod default/web-1 has a PodDisruptionBudget that allows no disruption');
    // a launching NodeClaim takes its allocatable from the instance type
    expect(v.nodes[2]!.cpu).toEqual({ requested: 0, allocatable: 3920 });
    expect(v.totals).toEqual({ at: NOW, costUSDPerHour: 0.096 + 0.0765 + 0.192, nodes: 3, pendingPods: 1 });
  });

  it('lists pending pods with the scheduler reason and the NodeClaim they wait for; NodePools with limits and budgets', () => {
    const v = buildDashboardView(fixture().input);
    expect(v.pendingPods).toEqual([
      {
        pod: 'default/api-1',
        reason: '0/2 nodes are available: 2 Insufficient cpu.',
        waitingFor: 'nodeclaim/general-c',
      },
    ]);
    // 2 initialized nodes, budget 50% → 1 allowed per reason; cpu limit 100 cores, 8 used
    expect(v.nodePools).toEqual([
      {
        name: 'general',
        weight: 10,
        limits: { cpu: { used: 8000, limit: 100000 } },
        budgets: { Empty: 1, Drifted: 1, Underutilized: 1 },
        nodes: 3,
        costUSDPerHour: 0.096 + 0.0765 + 0.192,
      },
    ]);
  });

  it('marks the nodes of the last pass’s command as candidates with the method and savings', () => {
    const { input, nodes } = fixture();
    const cand = { name: 'general-a', instanceType: type('m5.large'), priceUSDPerHour: 0.096 } as Candidate;
    const cmd = {
      decision: 'delete',
      reason: 'Empty',
      method: 'Emptiness',
      candidates: [cand],
      replacements: [],
      savingsUSDPerHour: 0.096,
    } as Command;
    input.disruption = { commands: [cmd], blocked: [] };
    nodes[1]!.markedForDeletion = true;
    const v = buildDashboardView(input);
    expect(v.nodes[0]).toMatchObject({
      candidate: true,
      candidateReason: 'Emptiness: delete, saves $0.0960/h',
    });
    expect(v.nodes[1]!.state).toBe('disrupting');
  });

  it('never carries user data, annotations or env values (secrets) and says why it cannot read the cluster', () => {
    const { input } = fixture();
    input.error = probeError(
      KubeApiError.fromResponse(
        401,
        { kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' },
        'GET /api/v1/nodes',
      ),
    );
    const json = JSON.stringify(buildDashboardView(input));
    for (const secret of ['SECRET-USER-DATA', 'TOKEN-IN-ENV', 'TOKEN-IN-ANNOTATION', 'userData'])
      expect(json).not.toContain(secret);
    expect(buildDashboardView(input).error).toBe(
      "the API server refused the controller's credentials (401 Unauthorized): fix the token or client certificate of the kubeconfig the controller runs with",
    );
  });
});

describe('machinePoolViews', () => {
  it('pairs each KarpenterMachinePool with its MachinePool, replicas and provider IDs', () => {
    const kmp = (name: string, owner?: string): KarpenterMachinePool =>
      ({
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
        kind: 'KarpenterMachinePool',
        metadata: {
          name,
          namespace: 'capi',
          ...(owner
            ? {
                ownerReferences: [
                  { kind: 'MachinePool', name: owner, apiVersion: 'cluster.x-k8s.io/v1beta1', uid: 'u' },
                ],
              }
            : {}),
        },
        spec: { providerIDList: [`aws:///us-east-1a/i-${name}`] },
        status: { replicas: 2 },
      }) as KarpenterMachinePool;
    const mp = {
      apiVersion: 'cluster.x-k8s.io/v1beta1',
      kind: 'MachinePool',
      metadata: { name: 'mp-b', namespace: 'capi' },
      spec: { template: { spec: { infrastructureRef: { kind: 'KarpenterMachinePool', name: 'kmp-b' } } } },
    } as KubeObject;
    expect(machinePoolViews([kmp('kmp-b'), kmp('kmp-a', 'mp-a')], [mp])).toEqual([
      {
        name: 'kmp-a',
        namespace: 'capi',
        machinePool: 'mp-a',
        replicas: 2,
        providerIDs: ['aws:///us-east-1a/i-kmp-a'],
      },
      {
        name: 'kmp-b',
        namespace: 'capi',
        machinePool: 'mp-b',
        replicas: 2,
        providerIDs: ['aws:///us-east-1a/i-kmp-b'],
      },
    ]);
  });
});

describe('decision log', () => {
  const plan = (): NodeClaimPlan =>
    ({
      nodePool: 'general',
      requirements: [],
      instanceTypeOptions: [type('m5.large'), type('m5.xlarge')],
      pods: [pod('web-1'), pod('web-2')],
      requests: { cpu: 1500, memory: 4 * 1024 ** 3, pods: 2 },
      daemonOverhead: {},
      cheapest: {
        instanceType: type('m5.large'),
        offering: type('m5.large').offerings.find(
          (o) => o.zone === 'us-east-1a' && o.capacityType === 'on-demand',
        )!,
      },
    }) as NodeClaimPlan;

  it('logs the chosen type and why a cheaper one was not chosen (too small first)', () => {
    const r: ProvisioningResult = {
      synced: true,
      created: [{ plan: plan(), nodeClaim: claim('general-x', 'm5.large', '2026-12-03T04:00:00Z') }],
      skipped: [],
      skippedNodePools: [],
      input: {
        instanceTypes: { general: [type('t3.medium'), type('c6a.large'), type('m5.large')] },
      } as unknown as NonNullable<ProvisioningResult['input']>,
    };
    const [e] = provisioningEntries(r, NOW);
    expect(e!.summary).toBe(
      'NodeClaim general-x (NodePool general): m5.large on-demand in us-east-1a at $0.0960/h for 2 pod(s)',
    );
    expect(e!.details).toContain('requests: cpu 1500m, memory 4294967296 bytes');
    expect(e!.details).toContain(
      'not c6a.large ($0.0291/h spot): too small: memory 4294967296 bytes requested > 3265265664 bytes allocatable',
    );
    expect(e!.details).toContain(
      'not t3.medium ($0.0183/h spot): too small: memory 4294967296 bytes requested > 3403677696 bytes allocatable',
    );
  });

  it('names the requirement that excluded a cheaper type big enough for the pods', () => {
    const p = {
      ...plan(),
      requirements: [
        { key: 'karpenter.k8s.aws/instance-family', operator: 'In', values: ['m5'] },
        { key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large', 'm5.xlarge'] },
      ],
    } as NodeClaimPlan;
    expect(excludedBy(p, type('c6a.xlarge'))).toBe(
      'excluded by requirement karpenter.k8s.aws/instance-family In [m5] (its karpenter.k8s.aws/instance-family is c6a)',
    );
    expect(
      excludedBy({ ...p, requirements: [p.requirements[1]!] } as NodeClaimPlan, type('c6a.xlarge')),
    ).toBe('excluded by the NodePool or pod requirements');
    const r: ProvisioningResult = {
      synced: true,
      created: [{ plan: p, nodeClaim: claim('general-x', 'm5.large', '2026-12-03T04:00:00Z') }],
      skipped: [],
      skippedNodePools: [],
      input: { instanceTypes: { general: [type('c6a.xlarge'), type('m5.large')] } } as unknown as NonNullable<
        ProvisioningResult['input']
      >,
    };
    const [e] = provisioningEntries(r, NOW);
    expect(e!.details.find((d) => d.startsWith('not c6a.xlarge'))).toMatch(
      /^not c6a\.xlarge \(\$0\.\d{4}\/h (spot|on-demand)\): excluded by requirement karpenter\.k8s\.aws\/instance-family In \[m5\]/,
    );
  });

  it('logs an executed command and a PDB block once, newest first, in a bounded ring', () => {
    const cand = { name: 'general-a', instanceType: type('m5.xlarge'), priceUSDPerHour: 0.192 } as Candidate;
    const cmd = {
      decision: 'replace',
      reason: 'Underutilized',
      method: 'SingleNodeConsolidation',
      candidates: [cand],
      replacements: [plan()],
      savingsUSDPerHour: 0.096,
    } as Command;
    const pass: DisruptionPass = {
      at: NOW,
      result: {
        commands: [cmd],
        blocked: [
          { node: 'general-b', reason: 'pod default/db-0 is blocked by PodDisruptionBudget default/db' },
        ],
      },
      chosen: cmd,
      executed: cmd,
    };
    const blocks = new Map<string, string>();
    const log = new DecisionLog(3);
    for (const e of disruptionEntries(pass, blocks)) log.add(e);
    expect(log.entries().map((e) => [e.kind, e.summary])).toEqual([
      ['blocked', 'disruption blocked on 1 node(s)'],
      ['disruption', 'SingleNodeConsolidation: replace general-a, saves $0.0960/h'],
    ]);
    expect(log.entries()[1]!.details).toEqual([
      'candidates: general-a (m5.xlarge, $0.1920/h)',
      'replacements: m5.large on-demand $0.0960/h',
    ]);
    // the same block again is not logged again; the ring keeps 3
    expect(disruptionEntries({ at: NOW + 1, result: { ...pass.result, commands: [] } }, blocks)).toEqual([]);
    for (let i = 0; i < 3; i++)
      log.add({ at: NOW + i, kind: 'unschedulable', summary: `s${i}`, details: [] });
    expect(log.entries().map((e) => e.summary)).toEqual(['s2', 's1', 's0']);
  });
});

describe('row patches', () => {
  it('carry only the changed rows and rebuild the next view', () => {
    const { input, nodes } = fixture();
    const before = buildDashboardView(input);
    nodes[0]!.podRequests = { cpu: 500, memory: 1024 ** 3 };
    input.snapshot.pods = input.snapshot.pods.filter((p) => p.spec?.nodeName);
    const after = buildDashboardView(input);
    const p = diffView(before, after)!;
    expect(p.nodes?.upsert.map((n) => [n.name, n.cpu.requested])).toEqual([['general-a', 500]]);
    expect(p.pendingPods).toEqual({ upsert: [], remove: ['default/api-1'] });
    expect(applyPatch(before, p)).toEqual(after);
    expect(diffView(after, after)).toBeUndefined();
  });
});
