/**
 * E2E robustness of the real operator in the simulated cluster: a controller restart mid-launch (no duplicate
 * NodeClaims, no leaked nodes), a Node that never registers (deleted after the 15 min registration TTL, on a
 * FakeClock), invalid NodePools (status condition + Event, no crash) and leader election between two operators.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EmbeddedCloudProvider } from '../../src/cloudprovider/kwok/embedded.ts';
import { FakeClock } from '../../src/kube/clock.ts';
import {
  allRunning,
  deploymentYaml,
  type E2E,
  eventually,
  kwokNodeClassYaml,
  nodeClaims,
  nodePoolYaml,
  scale,
  startE2E,
} from './harness.ts';

let env: E2E | undefined;
let ticker: NodeJS.Timeout | undefined;
afterEach(async () => {
  if (ticker) clearInterval(ticker);
  ticker = undefined;
  await env?.stop();
  env = undefined;
});

async function metricValue(text: string, name: string, labels: Record<string, string>): Promise<number> {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(' ').pop());
  }
  return 0;
}

describe('operator e2e: lifecycle and robustness', () => {
  it('restarting the controller mid-launch creates no duplicate NodeClaims and leaks no nodes', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    const a = await env.startOperator();
    await env.apply(
      `${kwokNodeClassYaml('default', '{nodeRegistrationDelay: 2s}')}---\n${nodePoolYaml('default')}---\n${deploymentYaml('app', 4, '500m', '512Mi')}`,
    );
    let maxLive = 0;
    const watchCount = setInterval(() => {
      void nodeClaims(client).then((l) => {
        maxLive = Math.max(maxLive, l.length);
      });
    }, 50);
    try {
      await eventually(
        async () =>
          (await nodeClaims(client)).some((n) =>
            n.status?.conditions?.some((c) => c.type === 'Launched' && c.status === 'True'),
          ),
        'a launched NodeClaim',
      );
      expect((await client.list('Node')).items).toHaveLength(0); // still registering
      await a.stop();
      expect(a.isLeader()).toBe(false);
      const b = await env.startOperator({ gcPeriodSeconds: 2 });
      await eventually(() => b.isLeader(), 'second operator leads', 10_000);
      await eventually(() => allRunning(client, 4), 'all pods running after restart', 30_000);
      // no pod is pending any more, so nothing can create a NodeClaim from here on: one last count suffices
      maxLive = Math.max(maxLive, (await nodeClaims(client)).length);
    } finally {
      clearInterval(watchCount);
    }
    const ncs = await nodeClaims(client);
    expect(ncs).toHaveLength(1);
    expect(maxLive).toBe(1);
    const nodes = (await client.list('Node')).items;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]!.spec?.providerID).toBe(ncs[0]!.status?.providerID);
  }, 60_000);

  it('a Node that never registers is removed after the 15 min registration TTL (FakeClock)', async () => {
    const clock = new FakeClock(Date.now());
    env = await startE2E({ clock, operator: { leaderElect: false } });
    const { client } = env;
    const op = env.operators[0]!;
    const provider = op.cloudProvider as EmbeddedCloudProvider;
    ticker = setInterval(() => clock.advance(100), 10); // fake time runs 10× real time
    await env.apply(
      `${kwokNodeClassYaml('default', '{nodeRegistrationDelay: 20m}')}---\n${nodePoolYaml('default')}---\n${deploymentYaml('stuck', 1, '500m', '512Mi')}`,
    );
    const first = await eventually(
      async () =>
        (await nodeClaims(client)).find((n) =>
          n.status?.conditions?.some((c) => c.type === 'Launched' && c.status === 'True'),
        ),
      'a launched NodeClaim',
    );
    expect(provider.instanceCount).toBe(1);
    const created = Date.parse(first.metadata.creationTimestamp ?? '');
    // jump 15 minutes after its launch (the Node would only appear after 20)
    clock.set(created + 15 * 60 * 1000 + 2000);
    await eventually(
      async () => !(await client.tryGet('NodeClaim', first.metadata.name ?? '')),
      'NodeClaim deleted',
      20_000,
    );
    expect(
      (await client.list('Node')).items.filter((n) => n.metadata.name === first.metadata.name),
    ).toHaveLength(0);
    const text = await op.registry.metrics();
    expect(
      await metricValue(text, 'karpenter_nodeclaims_disrupted_total', { reason: 'registration_timeout' }),
    ).toBe(1);
    // its instance is gone; at most the replacement NodeClaim's instance is live
    const live = await nodeClaims(client);
    expect(provider.instanceCount).toBeLessThanOrEqual(live.length);
    expect(live.every((n) => n.metadata.name !== first.metadata.name)).toBe(true);
  }, 60_000);

  it('invalid NodePools get a status condition and a Warning Event, and the operator keeps provisioning', async () => {
    env = await startE2E();
    const { client } = env;
    await env.apply(
      `${kwokNodeClassYaml()}---\n${nodePoolYaml('orphan', { nodeClass: 'does-not-exist' })}---\n` +
        `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: foreign}
spec:
  template:
    spec:
      nodeClassRef: {group: infrastructure.example.com, kind: AzureNodeClass, name: x}
      requirements: [{key: kubernetes.io/os, operator: In, values: [linux]}]
---
${nodePoolYaml('good')}---
${deploymentYaml('ok', 2, '500m', '512Mi')}`,
    );
    const cond = async (np: string, type: string) =>
      ((await client.get('NodePool', np)).status?.conditions ?? []).find((c) => c.type === type);
    await eventually(
      async () => (await cond('orphan', 'NodeClassReady'))?.status === 'False',
      'orphan NodeClassReady=False',
    );
    expect((await cond('orphan', 'NodeClassReady'))?.reason).toBe('NodeClassNotFound');
    expect((await cond('orphan', 'Ready'))?.status).toBe('False');
    await eventually(
      async () => (await cond('foreign', 'NodeClassReady'))?.reason === 'NodeClassNotSupported',
      'foreign not supported',
    );
    const events = await eventually(async () => {
      const evs = (await client.list('Event')).items.filter(
        (e) =>
          e.involvedObject.kind === 'NodePool' && e.involvedObject.name === 'orphan' && e.type === 'Warning',
      );
      return evs.length > 0 ? evs : undefined;
    }, 'Warning Event on the orphan NodePool');
    expect(events[0]!.reason).toBe('NodeClassNotFound');
    expect(events[0]!.source?.component ?? events[0]!.reportingComponent).toBe('karpenter');
    await eventually(() => allRunning(client, 2), 'pods of the good NodePool running');
    const ncs = await nodeClaims(client);
    expect(ncs.map((n) => n.metadata.labels?.['karpenter.sh/nodepool'])).toEqual(['good']);
    expect(env.operators[0]!.isLeader()).toBe(true);
  }, 60_000);

  it('leader election: of two operators only the leader creates NodeClaims; the other takes over on release', async () => {
    env = await startE2E({ operator: false });
    const { client } = env;
    const a = await env.startOperator();
    await eventually(() => a.isLeader(), 'first operator leads');
    const b = await env.startOperator();
    await eventually(() => b.readiness() === undefined, 'standby ready (election decided)');
    expect(b.isLeader()).toBe(false);
    // leading(): what gates the controllers built outside the operator (the KarpenterMachinePool controller)
    const aLeading = await a.leading();
    expect(aLeading?.aborted).toBe(false);
    const bLeading: { resolved: boolean; signal?: AbortSignal | undefined } = { resolved: false };
    void b.leading().then((s) => {
      bLeading.resolved = true;
      bLeading.signal = s;
    });
    await env.apply(
      `${kwokNodeClassYaml()}---\n${nodePoolYaml('default')}---\n${deploymentYaml('le', 3, '500m', '512Mi')}`,
    );
    await eventually(() => allRunning(client, 3), 'pods running');
    const created = async (op: typeof a) =>
      metricValue(await op.registry.metrics(), 'karpenter_nodeclaims_created_total', { nodepool: 'default' });
    expect(await created(a)).toBe((await nodeClaims(client)).length);
    expect(await created(b)).toBe(0);
    // client-go's leader_election_master_status{name}: 1 on the leader, 0 on the standby
    const master = async (op: typeof a) =>
      metricValue(await op.registry.metrics(), 'leader_election_master_status', {
        name: 'karpenter-leader-election',
      });
    expect([await master(a), await master(b)]).toEqual([1, 0]);
    expect(await b.registry.metrics()).toContain(
      'leader_election_master_status{name="karpenter-leader-election"} 0',
    );
    const lease = await client.get('Lease', 'karpenter-leader-election', 'kube-system');
    expect(lease.spec?.holderIdentity).toBe(a.identity);

    expect(bLeading.resolved).toBe(false); // the standby's gated controllers have not started
    await a.stop(); // releases the Lease
    expect(aLeading?.aborted).toBe(true);
    await eventually(() => b.isLeader(), 'standby takes over', 15_000);
    expect([await master(a), await master(b)]).toEqual([0, 1]);
    await eventually(() => bLeading.resolved, "standby's leading() resolves");
    expect(bLeading.signal?.aborted).toBe(false);
    await scale(client, 'le', 12);
    await eventually(() => allRunning(client, 12), 'scaled pods running', 30_000);
    expect(await created(b)).toBeGreaterThan(0);
  }, 60_000);
});
