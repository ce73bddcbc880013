/**
 * `capenter controller --kubeconfig WORKLOAD --capi-management-kubeconfig MANAGEMENT`: the deployed shape of the CAPI
 * integration (one capenter per workload cluster), against the two embedded clusters with the CAPI stand-in.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { KarpenterMachinePool } from '../../src/apis/capi.ts';
import { runController } from '../../src/cli/controller.ts';
import { applyObjects } from '../../src/embedded/apply.ts';
import { type CAPIEnvironment, startCAPIEnvironment } from '../../src/embedded/cluster.ts';
import { sampleCAPIObjects } from '../../src/sim/capi/environment.ts';
import { allRunning, deploymentYaml, eventually, parseYaml } from '../e2e/harness.ts';

let env: CAPIEnvironment | undefined;
afterAll(async () => {
  await env?.stop();
});

describe('capenter controller --capi-management-kubeconfig', () => {
  it('runs the KarpenterMachinePool loop against the management cluster', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'capenter-capi-ctl-'));
    env = await startCAPIEnvironment({
      workload: {
        kubeconfigPath: join(dir, 'workload'),
        kubeletReadyDelaySeconds: 0,
        podStartDelaySeconds: 0.2,
      },
      managementKubeconfigPath: join(dir, 'management'),
      machinePoolStandIn: { periodSeconds: 0.3 },
    });
    await env.writeKubeconfigSecret('default', 'demo');
    const ac = new AbortController();
    let err = '';
    const run = runController(
      {
        kubeconfig: join(dir, 'workload'),
        capiManagementKubeconfig: join(dir, 'management'),
        leaderElect: false,
        metricsPort: '0',
        healthProbePort: '0',
        logLevel: 'error',
        dashboardPort: '0',
      },
      { stderr: (t) => (err += t), env: {}, signal: ac.signal },
    );
    try {
      await applyObjects(env.mgmt, sampleCAPIObjects());
      await env.workload.client.create(parseYaml(deploymentYaml('app', 3, '1', '1Gi'))[0]!);
      await eventually(() => allRunning(env!.workload.client, 3), 'pods running', 60_000);
      const kmp = await eventually(async () => {
        const k = (await env!.mgmt.get('KarpenterMachinePool', 'workers', 'default')) as KarpenterMachinePool;
        return (k.spec?.providerIDList?.length ?? 0) > 0 && k.status?.ready ? k : undefined;
      }, 'KMP ready with provider IDs');
      const claims = (await env.workload.client.list('NodeClaim')).items;
      expect(kmp.spec?.providerIDList).toHaveLength(claims.length);
      // the dashboard lists the pool from its own management informers
      const url = /capenter controller: dashboard (\S+)/.exec(err)?.[1] ?? '';
      const pools = await eventually(async () => {
        const v = (await (await fetch(new URL('api/view', url))).json()) as {
          machinePools: Array<{ name: string; machinePool: string; replicas: number; providerIDs: string[] }>;
        };
        const p = v.machinePools[0];
        return p && p.providerIDs.length === claims.length && p.replicas === claims.length
          ? v.machinePools
          : undefined;
      }, 'the dashboard lists the KarpenterMachinePool');
      expect(pools.map((p) => [p.name, p.machinePool, p.providerIDs])).toEqual([
        ['workers', 'workers', kmp.spec?.providerIDList],
      ]);
    } finally {
      ac.abort();
      expect(await run, err).toBe(0);
    }
  }, 90_000);
});
