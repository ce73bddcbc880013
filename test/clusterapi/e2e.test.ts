/**
 * The clusterapi provider end to end on two embedded clusters: pending pods → NodeClaims → Machines of the
 * cheaper MachineDeployment → Nodes → pods Running; max-size holds under 200 pending pods; consolidation moves
 * pods from an expensive to a cheap deployment; a restart mid-scale leaves replicas equal to NodeClaims.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { MachineDeployment, MachineSet } from '../../src/apis/capi.ts';
import type { Node, Pod } from '../../src/apis/core.ts';
import type { NodeClaim } from '../../src/apis/karpenter.ts';
import {
  AnnotationNodeClaimMachineDeployment,
  AnnotationNodeClaimPrice,
} from '../../src/cloudprovider/clusterapi/provider.ts';
import { LabelMachineNodeClaim } from '../../src/cloudprovider/clusterapi/scaler.ts';
import { observe } from '../../src/testing/watch.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';
import { type ClusterAPIE2E, startClusterAPIE2E } from './harness.ts';

let t: ClusterAPIE2E | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('clusterapi provider on two embedded clusters', () => {
  it('pods → NodeClaims → Machines of the cheaper MachineDeployment → Nodes → Running', async () => {
    t = await startClusterAPIE2E();
    // m5.xlarge (4 vCPU, 16 GiB) at the catalog's 0.192 USD/h vs an m5.2xlarge-sized deployment priced 0.5 by annotation.
    await t.setup([
      { name: 'md-cheap', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 10 },
      { name: 'md-dear', instanceType: 'm5.2xlarge', failureDomain: 'us-east-1a', price: 0.5, maxSize: 10 },
    ]);
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 4, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 4), 'all 4 pods running', 60_000);
    const claims = await t.nodeClaims();
    expect(claims.length).toBeGreaterThan(0);
    for (const nc of claims) {
      expect(nc.metadata.annotations?.[AnnotationNodeClaimMachineDeployment]).toBe('default/md-cheap');
      expect(nc.metadata.annotations?.[AnnotationNodeClaimPrice]).toBe('0.192');
      expect(nc.metadata.labels?.['node.kubernetes.io/instance-type']).toBe('m5.xlarge');
      expect(nc.metadata.labels?.['topology.kubernetes.io/zone']).toBe('us-east-1a');
      expect(nc.status?.providerID).toMatch(/^aws:\/\/\/us-east-1a\/i-[0-9a-f]+$/);
    }
    const machines = await t.machines('md-cheap');
    expect(machines.map((m) => m.metadata.labels?.[LabelMachineNodeClaim]).sort()).toEqual(
      claims.map((c) => c.metadata.name).sort(),
    );
    expect((await t.deployment('md-cheap')).spec.replicas).toBe(claims.length);
    expect((await t.deployment('md-dear')).spec.replicas).toBe(0);
    // as the real controllers do (test/cluster/realcapi-clusterapi.test.ts): the current MachineSet carries the
    // deployment's replicas, Machines end Running, the deployment counts ready/available/up-to-date replicas
    const mgmt = t.stack.env.mgmt;
    const sets = (await mgmt.list('MachineSet', { namespace: 'default' })).items as MachineSet[];
    expect(
      sets.find((s) => s.metadata.labels?.['cluster.x-k8s.io/deployment-name'] === 'md-cheap')?.spec.replicas,
    ).toBe(claims.length);
    expect(machines.map((m) => m.status?.phase)).toEqual(machines.map(() => 'Running'));
    const st = await eventually(async () => {
      const s = (await t!.deployment('md-cheap')).status as Record<string, unknown> | undefined;
      return s?.availableReplicas === claims.length ? s : undefined;
    }, 'md-cheap availableReplicas');
    expect(st).toMatchObject({
      replicas: claims.length,
      readyReplicas: claims.length,
      upToDateReplicas: claims.length,
    });
    const nodes = (await wl.list('Node')).items as Node[];
    for (const nc of claims) {
      const node = nodes.find((n) => n.spec?.providerID === nc.status?.providerID);
      expect(node, `node of ${nc.metadata.name}`).toBeDefined();
      expect(node!.spec?.taints ?? []).not.toContainEqual(
        expect.objectContaining({ key: 'karpenter.sh/unregistered' }),
      );
    }
    // The disruption controller has looked at them (Consolidatable) and sees no drift: the NodeClaims' labels match
    // their nodes and NodePool (upstream's provider drifts in a loop here).
    const cond = (nc: NodeClaim, type: string) => nc.status?.conditions?.find((c) => c.type === type);
    await eventually(
      async () => (await t!.nodeClaims()).every((nc) => cond(nc, 'Consolidatable')?.status === 'True'),
      'disruption conditions synced',
    );
    expect((await t.nodeClaims()).map((nc) => cond(nc, 'Drifted'))).toEqual(claims.map(() => undefined));
    // A new Kubernetes version on the deployment's template: its Machines are drifted.
    await t.stack.env.mgmt.patch(
      'MachineDeployment',
      'md-cheap',
      'default',
      { spec: { template: { spec: { version: 'v1.34.0' } } } },
      { type: 'merge' },
    );
    const drifted = await eventually(async () => {
      const ncs = await t!.nodeClaims();
      return ncs.length > 0 && ncs.every((nc) => cond(nc, 'Drifted')?.status === 'True') ? ncs : undefined;
    }, 'NodeClaims Drifted');
    expect(drifted.map((nc) => cond(nc, 'Drifted')?.reason)).toEqual(
      drifted.map(() => 'MachineTemplateDrift'),
    );
  }, 90_000);

  it('max-size holds under 200 pending pods (never more replicas or Machines than the annotation allows)', async () => {
    t = await startClusterAPIE2E();
    await t.setup([
      { name: 'md-capped', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 5 },
    ]);
    const wl = t.stack.env.workload.client;
    const mgmt = t.stack.env.mgmt;
    // replicas and Machines after every change of either (watches), not every 50 ms
    const replicas = await observe(
      mgmt,
      'MachineDeployment',
      (mds) => (mds as MachineDeployment[]).find((m) => m.metadata.name === 'md-capped')?.spec.replicas ?? 0,
      { namespace: 'default' },
    );
    const machines = await observe(mgmt, 'Machine', (ms) => ms.length, {
      namespace: 'default',
      labelSelector: { 'cluster.x-k8s.io/deployment-name': 'md-capped' },
    });
    await wl.create(parseYaml(deploymentYaml('flood', 200, '1', '1Gi'))[0]!);
    // The deployment fills up: 5 Machines with Nodes, 4 one-vCPU pods on each (4 vCPU allocatable).
    await eventually(
      async () => (await t!.machines('md-capped')).filter((m) => m.status?.nodeRef).length === 5,
      '5 Machines with Nodes',
      60_000,
    );
    await eventually(
      async () => (await wl.list('Pod')).items.filter((p) => p.status?.phase === 'Running').length === 20,
      '20 pods running',
      120_000,
    ).catch(async (err: Error) => {
      // what the cluster looked like when it did not get there, for the next reader of a failed CI log
      const pods = (await wl.list('Pod')).items as Pod[];
      const nodes = (await wl.list('Node')).items as Node[];
      const claims = await t!.nodeClaims();
      throw new Error(
        `${err.message}: ${pods.filter((p) => p.status?.phase === 'Running').length} Running, ` +
          `${pods.filter((p) => p.spec?.nodeName).length} bound of ${pods.length}; nodes ` +
          nodes
            .map((n) => `${n.metadata.name}[${(n.spec?.taints ?? []).map((x) => x.key).join(',')}]`)
            .join(' ') +
          `; NodeClaims ${claims.map((c) => `${c.metadata.name}:${c.status?.providerID ? 'launched' : 'pending'}`).join(' ')}`,
      );
    });
    // The NodeClass reports the deployment full only through offerings: the provisioner keeps trying, and every
    // attempt past the cap is refused. Wait for the refusals to be visible, then check the cap held throughout.
    await eventually(
      async () =>
        ((await wl.list('Event')).items as Array<{ reason?: string }>).some(
          (e) => e.reason === 'InsufficientCapacityError',
        ) || (await t!.nodeClaims()).length === 5,
      'refused launches or a settled count',
      30_000,
    );
    expect(Math.max(...(await replicas.stop()))).toBe(5);
    expect(Math.max(...(await machines.stop()))).toBe(5);
    expect((await t.deployment('md-capped')).spec.replicas).toBe(5);
    // the full deployment's 5 Machines each end up with a launched NodeClaim (a refused launch past the cap comes
    // and goes meanwhile, so the count is waited for, not sampled)
    const launched = await eventually(
      async () => {
        const n = (await t!.nodeClaims()).filter((c) => c.status?.providerID).length;
        return n === 5 ? n : undefined;
      },
      '5 launched NodeClaims',
      30_000,
    );
    expect(launched).toBe(5);
    expect((await t.deployment('md-capped')).spec.replicas).toBe(5);
  }, 300_000);

  it('consolidation moves pods from an expensive deployment to a cheap one', async () => {
    // nominations live 2 s, not upstream's 20: the pods' node is no consolidation candidate while nominated
    t = await startClusterAPIE2E({
      tuning: { disruption: { pollSeconds: 1, validationSeconds: 1 }, nominationTTLSeconds: 2 },
    });
    // The cheap deployment starts paused: unusable (reported on the NodeClass), so the pods land on the dear one.
    await t.setup([
      { name: 'md-dear', instanceType: 'm5.2xlarge', failureDomain: 'us-east-1a', price: 0.5, maxSize: 10 },
      { name: 'md-cheap', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 10, paused: true },
    ]);
    const wl = t.stack.env.workload.client;
    const status = await eventually(async () => {
      const nc = (await wl.get('ClusterAPINodeClass', 'default')) as {
        status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
      };
      return nc.status?.conditions?.find(
        (c) => c.type === 'MachineDeploymentsReady' && c.reason === 'SomeMachineDeploymentsUnusable',
      );
    }, 'NodeClass reports the paused deployment');
    expect(status.status).toBe('True');
    expect(status.message).toContain('md-cheap: Paused');
    await wl.create(parseYaml(deploymentYaml('app', 2, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 2), 'pods running on the dear deployment', 60_000);
    const before = await t.nodeClaims();
    expect(before.map((n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual(
      before.map(() => 'default/md-dear'),
    );
    expect((await t.deployment('md-dear')).spec.replicas).toBe(before.length);

    await t.stack.env.mgmt.patch(
      'MachineDeployment',
      'md-cheap',
      'default',
      { spec: { paused: false } },
      { type: 'merge' },
    );
    await eventually(
      async () => {
        const claims = await t!.nodeClaims();
        return (
          claims.length > 0 &&
          claims.every(
            (n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment] === 'default/md-cheap',
          ) &&
          (await t!.deployment('md-dear')).spec.replicas === 0 &&
          (await t!.machines('md-dear')).length === 0 &&
          (await allRunning(wl, 2))
        );
      },
      'pods moved to md-cheap, md-dear scaled to 0',
      90_000,
    );
    const after = await t.nodeClaims();
    expect(after.map((n) => n.metadata.annotations?.[AnnotationNodeClaimPrice])).toEqual(
      after.map(() => '0.192'),
    );
    expect((await t.deployment('md-cheap')).spec.replicas).toBe(after.length);
  }, 150_000);

  it('a restart mid-scale leaves replicas equal to NodeClaims (no double scale, no leak)', async () => {
    // Slow Machines (2 s to a provider ID): the restart lands while NodeClaims wait for them.
    t = await startClusterAPIE2E({ standIn: { periodSeconds: 0.1, provisionSeconds: 2 } });
    await t.setup([{ name: 'md-slow', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 20 }]);
    const wl = t.stack.env.workload.client;
    // the deployment's replicas after every change (a watch), not every 50 ms
    const replicas = await observe(
      t.stack.env.mgmt,
      'MachineDeployment',
      (mds) => (mds as MachineDeployment[]).find((m) => m.metadata.name === 'md-slow')?.spec.replicas ?? 0,
      { namespace: 'default' },
    );
    await wl.create(parseYaml(deploymentYaml('app', 12, '1', '1Gi'))[0]!);
    await eventually(
      async () => ((await t!.deployment('md-slow')).spec.replicas ?? 0) > 0,
      'scale-up started',
      30_000,
    );
    const unlaunched = (await t.nodeClaims()).filter((n) => !n.status?.providerID).length;
    await t.stack.restart();
    await eventually(() => allRunning(wl, 12), 'all 12 pods running after the restart', 90_000);
    await eventually(
      async () => {
        const claims = await t!.nodeClaims();
        const md = await t!.deployment('md-slow');
        const machines = (await t!.machines('md-slow')).filter((m) => !m.metadata.deletionTimestamp);
        return claims.length > 0 && md.spec.replicas === claims.length && machines.length === claims.length;
      },
      'replicas == NodeClaims == Machines',
      30_000,
    );
    const maxReplicas = Math.max(...(await replicas.stop()));
    const claims = await t.nodeClaims();
    // 12 one-vCPU pods on 4-vCPU nodes: 3 nodes; the replicas never went past the NodeClaims' count.
    expect(claims.length).toBe(3);
    expect(maxReplicas).toBe(3);
    expect(unlaunched).toBeGreaterThan(0);
    const machines = await t.machines('md-slow');
    expect(machines.map((m) => m.metadata.labels?.[LabelMachineNodeClaim]).sort()).toEqual(
      claims.map((c) => c.metadata.name).sort(),
    );
  }, 150_000);

  it('a NodeClass with no usable deployment is not Ready, nor its NodePool, and nothing is scaled', async () => {
    t = await startClusterAPIE2E();
    await t.setup([
      { name: 'md-paused', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', paused: true },
    ]);
    const wl = t.stack.env.workload.client;
    type WithConds = {
      status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
    };
    const nc = await eventually(async () => {
      const o = (await wl.get('ClusterAPINodeClass', 'default')) as WithConds;
      const ready = o.status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.status === 'False' ? o : undefined;
    }, 'NodeClass not Ready');
    const md = nc.status?.conditions?.find((c) => c.type === 'MachineDeploymentsReady');
    expect(md).toMatchObject({ status: 'False', reason: 'NoUsableMachineDeployments' });
    expect(md?.message).toContain('md-paused: Paused');
    const np = await eventually(async () => {
      const o = (await wl.get('NodePool', 'default')) as WithConds;
      return o.status?.conditions?.find((c) => c.type === 'NodeClassReady' && c.status === 'False')
        ? o
        : undefined;
    }, 'NodePool NodeClassReady=False');
    expect(np.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    await wl.create(parseYaml(deploymentYaml('app', 2, '1', '1Gi'))[0]!);
    // Provisioning has looked at the pods (a FailedScheduling Event from karpenter) and launched nothing.
    type Ev = {
      reason?: string;
      message?: string;
      involvedObject?: { name?: string };
      source?: { component?: string };
      reportingComponent?: string;
    };
    const ev = await eventually(
      async () =>
        ((await wl.list('Event')).items as Ev[]).find(
          (e) =>
            e.reason === 'FailedScheduling' &&
            (e.source?.component === 'karpenter' || e.reportingComponent === 'karpenter') &&
            e.involvedObject?.name?.startsWith('app-'),
        ),
      'karpenter FailedScheduling',
    );
    expect(ev.message).toBe('Failed to schedule pod, no NodePool can provision new capacity');
    expect(await t.nodeClaims()).toEqual([]);
    expect((await t.deployment('md-paused')).spec.replicas).toBe(0);
  }, 60_000);

  it('NodePool requirements on the karpenter.cluster.x-k8s.io/instance-* labels pick the deployment', async () => {
    t = await startClusterAPIE2E();
    // m5.xlarge (4 vCPU, 0.192 USD/h) is cheaper, but the NodePool wants more than 4 vCPUs: c5.2xlarge (8, 0.34).
    await t.setup(
      [
        { name: 'md-4cpu', instanceType: 'm5.xlarge', failureDomain: 'us-east-1a', maxSize: 5 },
        { name: 'md-8cpu', instanceType: 'c5.2xlarge', failureDomain: 'us-east-1b', maxSize: 5 },
      ],
      { requirements: [{ key: 'karpenter.cluster.x-k8s.io/instance-cpu', operator: 'Gt', values: ['4'] }] },
    );
    const wl = t.stack.env.workload.client;
    await wl.create(parseYaml(deploymentYaml('app', 2, '1', '1Gi'))[0]!);
    await eventually(() => allRunning(wl, 2), 'pods running', 60_000);
    const claims = await t.nodeClaims();
    expect(claims.map((n) => n.metadata.annotations?.[AnnotationNodeClaimMachineDeployment])).toEqual(
      claims.map(() => 'default/md-8cpu'),
    );
    expect(claims.map((n) => n.metadata.labels?.['karpenter.cluster.x-k8s.io/instance-cpu'])).toEqual(
      claims.map(() => '8'),
    );
    expect(claims.map((n) => n.metadata.labels?.['topology.kubernetes.io/zone'])).toEqual(
      claims.map(() => 'us-east-1b'),
    );
    expect((await t.deployment('md-4cpu')).spec.replicas).toBe(0);
  }, 60_000);
});
