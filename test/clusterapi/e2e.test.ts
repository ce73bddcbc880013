/**
 * The clusterapi provider end to end on two embedded clusters: pending pods → NodeClaims → Machines of the
 * cheaper MachineDeployment → Nodes → pods Running; max-size holds under 200 pending pods; consolidation moves
 * pods from an expensive to a cheap deployment; a restart mid-scale leaves replicas equal to NodeClaims.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Node } from '../../src/apis/core.ts';
import {
  AnnotationNodeClaimMachineDeployment,
  AnnotationNodeClaimPrice,
} from '../../src/cloudprovider/clusterapi/provider.ts';
import { LabelMachineNodeClaim } from '../../src/cloudprovider/clusterapi/scaler.ts';
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
    const nodes = (await wl.list('Node')).items as Node[];
    for (const nc of claims) {
      const node = nodes.find((n) => n.spec?.providerID === nc.status?.providerID);
      expect(node, `node of ${nc.metadata.name}`).toBeDefined();
      expect(node!.spec?.taints ?? []).not.toContainEqual(
        expect.objectContaining({ key: 'karpenter.sh/unregistered' }),
      );
    }
  }, 90_000);
});
