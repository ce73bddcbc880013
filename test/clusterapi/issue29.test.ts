/**
 * Issue 29, the clusterapi provider against the MachineDeployment stand-in modelling real Cluster API v1.14:
 * CABPK's `node.cluster.x-k8s.io/uninitialized` taint on every Node until the Machine controller syncs it away,
 * unclaimed Machines of a min-size, paused MachineDeployments.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MachineDeployment } from '../../src/apis/capi.ts';
import type { Node, Pod } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import { validateObject } from '../../src/apis/validation.ts';
import { AnnotationNodeClaimMachineDeployment } from '../../src/cloudprovider/clusterapi/provider.ts';
import { observe } from '../../src/testing/watch.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type ClusterAPIE2E, startClusterAPIE2E } from './harness.ts';

let t: ClusterAPIE2E | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const cond = (nc: NodeClaim, type: string) => nc.status?.conditions?.find((c) => c.type === type);

function replicasOf(e: ClusterAPIE2E, name: string) {
  return observe(
    e.stack.env.mgmt,
    'MachineDeployment',
    (mds) => (mds as MachineDeployment[]).find((m) => m.metadata.name === name)?.spec.replicas ?? 0,
    { namespace: 'default' },
  );
}

describe('issue 29: clusterapi provider vs real Cluster API behaviour', () => {
  it('#1 a Node still carrying node.cluster.x-k8s.io/uninitialized keeps its NodeClaim uninitialized and its pods; no second NodeClaim', async () => {
    let hold = true;
    t = await startClusterAPIE2E({
      standIn: { periodSeconds: 0.1, holdUninitialized: () => hold },
      tuning: {
        nominationTTLSeconds: 2,
        provisioningResyncSeconds: 1,
        disruption: { pollSeconds: 1, validationSeconds: 1 },
      },
    });
    await t.setup([{ name: 'md-a', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 20 }]);
    const replicas = await replicasOf(t, 'md-a');
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 4, '1', '1Gi'))[0]!);
    // Every NodeClaim has a Ready Node that still carries CAPI's taint.
    const first = await eventually(
      async () => {
        const ncs = await t!.nodeClaims();
        const nodes = (await wl.list('Node')).items as Node[];
        const ok =
          ncs.length > 0 &&
          ncs.every((nc) => {
            const n = nodes.find((x) => x.spec?.providerID && x.spec.providerID === nc.status?.providerID);
            return (
              n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
              n.spec?.taints?.some((x) => x.key === 'node.cluster.x-k8s.io/uninitialized')
            );
          });
        return ok ? ncs : undefined;
      },
      'NodeClaims with Ready, still uninitialized Nodes',
      60_000,
    );
    // The lifecycle controller has looked at every NodeClaim with its Ready Node: not initialized while CAPI's taint
    // stays, so the pods' nominations hold (on main it turned Initialized, the 2 s nominations ran out and the
    // provisioner launched a second NodeClaim per pod).
    // (NotLaunched, NodeNotFound and NodeNotReady are what a reconcile before the Ready Node left: under load the
    // lifecycle controller can still be behind the Nodes, CI 2026-12-03 saw NodeNotFound here)
    const before = new Set(['NotLaunched', 'NodeNotFound', 'NodeNotReady']);
    const held = await eventually(async () => {
      const ncs = await t!.nodeClaims();
      return ncs.every((nc) => cond(nc, 'Initialized') && !before.has(cond(nc, 'Initialized')?.reason ?? ''))
        ? ncs
        : undefined;
    }, 'Initialized evaluated on Ready Nodes');
    expect(held.map((nc) => cond(nc, 'Initialized')?.reason)).toEqual(
      held.map(() => 'KnownEphemeralTaintsExist'),
    );
    expect(held.length).toBe(first.length);
    expect((await t.deployment('md-a')).spec.replicas).toBe(first.length);
    // CAPI's Machine controller catches up: the taint goes, the pods run on the same Nodes.
    hold = false;
    await eventually(() => allRunning(wl, 4), 'all 4 pods running', 60_000);
    const done = await t.nodeClaims();
    expect(done.map((nc) => nc.metadata.name).sort()).toEqual(first.map((nc) => nc.metadata.name).sort());
    await eventually(
      async () => (await t!.nodeClaims()).every((nc) => cond(nc, 'Initialized')?.status === 'True'),
      'NodeClaims Initialized',
    );
    expect(Math.max(...(await replicas.stop()))).toBe(first.length);
  }, 120_000);

  it('#2 a Node of a Machine no NodeClaim owns is not capacity: a NodeClaim takes that Machine and the pod runs', async () => {
    t = await startClusterAPIE2E();
    await t.setup([
      {
        name: 'md-min',
        instanceType: 'm5.xlarge',
        failureDomain: 'us-east-1a',
        minSize: 1,
        maxSize: 5,
        replicas: 1,
      },
    ]);
    const wl = t.stack.env.workload.client;
    // CAPI made the min-size Machine before capenter claimed anything: its Node keeps karpenter.sh/unregistered.
    const spare = await eventually(async () => {
      const ms = await t!.machines('md-min');
      const nodes = (await wl.list('Node')).items as Node[];
      return ms.length === 1 && ms[0]!.status?.nodeRef && nodes.length === 1 ? ms[0] : undefined;
    }, 'the unclaimed min-size Machine with its Node');
    await wl.create(parseYaml(deploymentYaml('app', 1, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 1), 'the pod running', 60_000);
    const claims = await t.nodeClaims();
    expect(claims.length).toBe(1);
    // The NodeClaim took the spare Machine (the oldest unclaimed one): no second Machine.
    expect(claims[0]!.status?.providerID).toBe(spare.spec.providerID);
    expect((await t.deployment('md-min')).spec.replicas).toBe(1);
    const pod = ((await wl.list('Pod', { namespace: 'default' })).items as Pod[]).find((p) =>
      p.metadata.name?.startsWith('app-'),
    );
    expect(pod?.spec?.nodeName).toBe(spare.status?.nodeRef?.name);
    const node = (await wl.get('Node', spare.status!.nodeRef!.name)) as Node;
    expect(node.spec?.taints ?? []).toEqual([]);
    expect(claims[0]!.metadata.annotations?.[AnnotationNodeClaimMachineDeployment]).toBe('default/md-min');
  }, 90_000);

  it('#4 pausing a MachineDeployment leaves its running nodes alone and one pending pod gets one NodeClaim elsewhere', async () => {
    t = await startClusterAPIE2E();
    await t.setup([
      { name: 'md-cheap', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 10 },
      { name: 'md-dear', instanceType: 'm5.2xlarge', failureDomain: 'us-east-1a', price: 0.5, maxSize: 10 },
    ]);
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 2, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 2), 'pods running on md-cheap', 60_000);
    const before = await t.nodeClaims();
    expect(before.map((n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual(
      before.map(() => 'default/md-cheap'),
    );
    await eventually(
      async () => (await t!.nodeClaims()).every((nc) => cond(nc, 'Consolidatable')),
      'disruption conditions synced',
    );
    const dear = await replicasOf(t, 'md-dear');
    // A maintenance pause of the cheap deployment.
    await t.stack.env.mgmt.patch(
      'MachineDeployment',
      'md-cheap',
      'default',
      { spec: { paused: true } },
      { type: 'merge' },
    );
    await eventually(async () => {
      const nc = (await wl.get('ClusterAPINodeClass', 'default')) as {
        status?: { conditions?: Array<{ type: string; message?: string }> };
      };
      return nc.status?.conditions?.find(
        (c) => c.type === 'MachineDeploymentsReady' && c.message?.includes('md-cheap: Paused'),
      );
    }, 'NodeClass reports md-cheap paused');
    // One pending pod that fits no running node (3 CPU): exactly one NodeClaim, on md-dear.
    await wl.create(parseYaml(deploymentYaml('big', 1, '3', '1Gi'))[0]!);
    await eventually(
      async () =>
        ((await wl.list('Pod', { namespace: 'default' })).items as Pod[]).filter(
          (p) => p.metadata.name?.startsWith('big-') && p.status?.phase === 'Running',
        ).length === 1,
      'the big pod running',
      60_000,
    );
    // Several disruption passes later the paused deployment's NodeClaims are still there and not drifted.
    await eventually(
      async () => (await t!.nodeClaims()).every((nc) => cond(nc, 'Consolidatable')?.status === 'True'),
      'disruption conditions synced again',
    );
    const after = await t.nodeClaims();
    const cheap = after.filter(
      (n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment] === 'default/md-cheap',
    );
    expect(cheap.map((n) => n.metadata.name).sort()).toEqual(before.map((n) => n.metadata.name).sort());
    expect(after.map((nc) => cond(nc, 'Drifted')?.status)).toEqual(after.map(() => undefined));
    expect(after.length - before.length).toBe(1);
    expect(Math.max(...(await dear.stop()))).toBe(1);
    expect((await t.deployment('md-cheap')).spec.replicas).toBe(before.length);
    expect(await allRunning(wl, 2)).toBeTruthy();
  }, 120_000);

  it('#6 node.cluster.x-k8s.io labels CAPI propagates: NodePools may require them, pods may select them', async () => {
    const np = {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'special' },
      spec: {
        template: {
          spec: {
            nodeClassRef: {
              group: 'karpenter.cluster.x-k8s.io',
              kind: 'ClusterAPINodeClass',
              name: 'default',
            },
            requirements: [{ key: 'node.cluster.x-k8s.io/pool', operator: 'Exists' }],
          },
        },
      },
    };
    expect(validateObject(np as never)).toMatchObject({ ok: true });
    t = await startClusterAPIE2E();
    await t.setup([
      { name: 'md-plain', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 5 },
      {
        name: 'md-special',
        instanceType: 'm5.xlarge',
        failureDomain: 'us-east-1a',
        price: 0.4,
        maxSize: 5,
        templateLabels: { 'node.cluster.x-k8s.io/pool': 'special' },
      },
    ]);
    const wl = t.stack.env.workload.client;
    const [dep] = parseYaml(deploymentYaml('picky', 1, '1', '1Gi')) as Array<{
      spec: { template: { spec: { nodeSelector?: Record<string, string> } } };
    }>;
    dep!.spec.template.spec.nodeSelector = { 'node.cluster.x-k8s.io/pool': 'special' };
    await wl.create(dep as never);
    await eventually(() => allRunning(wl, 1), 'the picky pod running', 60_000);
    const claims = await t.nodeClaims();
    expect(claims.map((c) => c.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual([
      'default/md-special',
    ]);
    const pod = ((await wl.list('Pod', { namespace: 'default' })).items as Pod[]).find((p) =>
      p.metadata.name?.startsWith('picky-'),
    );
    const node = (await wl.get('Node', pod!.spec!.nodeName!)) as Node;
    expect(node.metadata.labels?.['node.cluster.x-k8s.io/pool']).toBe('special');
  }, 90_000);

  it('#5 preflight checks that block a scale-up: the increment is rolled back early, the NodeClass names it, the next deployment launches', async () => {
    let blocked = false;
    t = await startClusterAPIE2E({
      standIn: {
        periodSeconds: 0.1,
        // The control plane starts upgrading right after md-a is scaled up (latched).
        preflightBlocked: (md) => {
          if (md.metadata.name !== 'md-a') return false;
          if ((md.spec.replicas ?? 0) > 0) blocked = true;
          return blocked;
        },
      },
    });
    await t.setup([
      { name: 'md-a', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 5 },
      { name: 'md-b', instanceType: 'm5.xlarge', failureDomain: 'us-east-1b', price: 0.3, maxSize: 5 },
    ]);
    const a = await replicasOf(t, 'md-a');
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 1, '1', '1Gi'))[0]!);
    // Well inside the 60 s machine timeout of the harness.
    await eventually(() => allRunning(wl, 1), 'the pod running', 20_000);
    const claims = await t.nodeClaims();
    expect(claims.map((c) => c.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual([
      'default/md-b',
    ]);
    expect((await t.deployment('md-a')).spec.replicas).toBe(0);
    expect(Math.max(...(await a.stop()))).toBe(1);
    // The refusal is on the ClusterAPINodeClass status (reason and MachineSet message).
    expect(await nodeClassMessage(t)).toContain('md-a: PreflightChecksBlocked (MachineSet "md-a-');
  }, 90_000);

  it('#11 a MachineDeployment without capacity annotations or template capacity: condition, Event, nothing launched', async () => {
    t = await startClusterAPIE2E();
    await t.setup([{ name: 'md-blind', failureDomain: 'us-east-1a', maxSize: 5 }]);
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 1, '1', '1Gi'))[0]!);
    const msg = await nodeClassMessage(t, 'md-blind: CapacityUnknown');
    expect(msg).toMatch(/^no usable MachineDeployment: md-blind: CapacityUnknown \(.+\)/);
    const ev = await eventually(
      async () =>
        (
          (await wl.list('Event')).items as Array<{
            involvedObject?: { kind?: string };
            type?: string;
            reason?: string;
            message?: string;
          }>
        ).find((e) => e.involvedObject?.kind === 'ClusterAPINodeClass' && e.type === 'Warning'),
      'Warning Event on the NodeClass',
    );
    expect(ev.reason).toBe('NoUsableMachineDeployments');
    expect(ev.message).toContain('md-blind: CapacityUnknown');
    expect(await t.nodeClaims()).toEqual([]);
    expect((await t.deployment('md-blind')).spec.replicas).toBe(0);
  }, 60_000);

  it('#3 at min-size an empty node is not consolidated (CAPI would only replace its Machine with an unclaimed one)', async () => {
    t = await startClusterAPIE2E();
    await t.setup([
      { name: 'md-floor', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', minSize: 1, maxSize: 5 },
    ]);
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 1, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 1), 'the pod running', 60_000);
    const [claim] = await t.nodeClaims();
    const [machine] = await t.machines('md-floor');
    expect(machine?.metadata.labels?.['karpenter.cluster.x-k8s.io/nodeclaim']).toBe(claim!.metadata.name);
    await wl.delete('Deployment', 'app', 'default');
    // The disruption controller looks at the empty node and is told why it may not remove it.
    const blocked = await eventually(
      async () =>
        (
          (await wl.list('Event')).items as Array<{
            involvedObject?: { kind?: string; name?: string };
            reason?: string;
            message?: string;
          }>
        ).find(
          (e) =>
            e.reason === 'DisruptionBlocked' &&
            e.involvedObject?.kind === 'NodeClaim' &&
            e.involvedObject.name === claim!.metadata.name,
        ),
      'DisruptionBlocked on the NodeClaim',
      30_000,
    );
    expect(blocked.message).toContain('karpenter.sh/do-not-disrupt');
    const after = await t.nodeClaims();
    expect(after.map((c) => c.metadata.name)).toEqual([claim!.metadata.name]);
    expect(after[0]!.metadata.annotations?.['karpenter.cluster.x-k8s.io/min-size-guard']).toBe('true');
    expect((await t.machines('md-floor')).map((m) => m.metadata.name)).toEqual([machine!.metadata.name]);
    expect((await t.deployment('md-floor')).spec.replicas).toBe(1);
  }, 90_000);
});

async function nodeClassMessage(e: ClusterAPIE2E, contains = ''): Promise<string> {
  return eventually(async () => {
    const nc = (await e.stack.env.workload.client.get('ClusterAPINodeClass', 'default')) as {
      status?: { conditions?: Array<{ type: string; message?: string }> };
    };
    const m = nc.status?.conditions?.find((c) => c.type === 'MachineDeploymentsReady')?.message;
    return m?.includes(contains) ? m : undefined;
  }, `NodeClass MachineDeploymentsReady message with "${contains}"`);
}
